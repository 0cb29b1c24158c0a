"""The generator's size knobs (used by bench/size.py) give the rows asked for, and change
nothing a summary reads."""

import sqlite3
from pathlib import Path

from extractor.core.summary import summarize
from support.cases import generator

REPO = Path(__file__).resolve().parent.parent


def _count(db, table):
    return db.execute("SELECT count(*) FROM {}".format(table)).fetchone()[0]


def test_size_knobs_give_the_rows_asked_for(tmp_path):
    generate = generator()
    spec = generate.vit_spec(blocks=2, runs=3, tiles=8, seed=5, vars_per_tile=6, unknown_rows=11)
    listed_vars = len(spec.vars_info)
    profile = generate.write_case(spec, tmp_path / "big")
    db = sqlite3.connect("file:{}?mode=ro".format(profile), uri=True)
    try:
        assert _count(db, "vars_info") == listed_vars + 8 * 6
        assert _count(db, "lowered_vars") == 11
        assert _count(db, "steps_by_ipu") == len(spec.steps_by_ipu) == len(spec.steps)
        assert db.execute("SELECT count(DISTINCT run) FROM steps").fetchone()[0] == 3
        per_tile = db.execute(
            "SELECT tile, count(*) FROM vars_info WHERE rowid > ? GROUP BY tile", (listed_vars,)
        ).fetchall()
        assert per_tile == [(tile, 6) for tile in range(8)]
        exchange_code = db.execute(
            "SELECT count(*) FROM vars_info WHERE rowid > ? AND category = (SELECT id FROM "
            "var_categories WHERE name = 'internalExchangeCode')",
            (listed_vars,),
        ).fetchone()[0]
        assert exchange_code == 0
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        db.close()
    assert not list((tmp_path / "big").glob("*-journal"))


def test_size_knobs_change_no_summary(tmp_path):
    generate = generator()
    plain = generate.write_case(
        generate.vit_spec(blocks=2, runs=2, tiles=8, seed=9), tmp_path / "plain"
    )
    padded = generate.write_case(
        generate.vit_spec(blocks=2, runs=2, tiles=8, seed=9, vars_per_tile=20, unknown_rows=50),
        tmp_path / "padded",
    )
    assert plain.stat().st_size < padded.stat().st_size
    first = summarize(plain, use_pva=False, profile_label="p").summary
    second = summarize(padded, use_pva=False, profile_label="p").summary
    assert first == second
    assert first["qkv_executions"] == 4 and len(first["device_spans"]) == 2
