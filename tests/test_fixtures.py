"""The committed fixtures are what fixtures/generate.py makes, and hold what they claim.

- Regenerating every fixture into a temporary folder gives the same SQL content (table by
  table, row by row), the same pva-double.json bytes and the same expected.json bytes.
- The golden fixture's expected.json is the reference summary, byte for byte, and its data
  give the reference's numbers when recomputed here directly from the JSON and the SQL
  (independently of the extractor).
- The recompiled fixture's first body differs from the golden one exactly as its README
  lists (read from the SQL and JSON directly), and its times move as the README says.
- edited_spec keeps masked names when renumbering, and edited specs (explicit and
  random edits) are profiles extract --no-pva reads.
- The pva stand-in behaves as fixtures.md says.
"""

import json
import random
import re
import sqlite3
from pathlib import Path

import pytest

from support.cases import generator, sha256
from support.cli import invoke_extract
from support.paths import REFERENCE_SHA256

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
GOLDEN = FIXTURES / "vit-f8weight"
GOLDEN_CASE = GOLDEN / "poprt" / "profile_logs_f8weight" / "inference"
RECOMPILED = FIXTURES / "vit-f8weight-recompiled"
EDGE_NAMES = [
    "no-anchors",
    "one-anchor",
    "no-output-begins",
    "empty-inference",
    "empty-code-bytes",
    "compile-only",
    "no-aggregate-rows",
    "multi-ipu",
    "unicode-names",
    "name-rules",
]
KNOWN_COLUMNS = {
    "steps": {"id", "type", "program", "compute_set"},
    "steps_by_ipu": {
        "step_id",
        "cycles",
        "active_tiles",
        "cycles_base",
        "active_cycles_from_min",
        "active_cycles_to_max",
    },
    "programs": {"id", "name"},
    "compute_sets": {"compute_set", "name"},
    "vars_info": {"tile", "category", "size_bytes"},
    "var_categories": {"id", "name"},
    "memory_by_tile": {"total"},
}


generate = generator()


def _pva():
    # Imported without staying on sys.path: the in-process runs without pva rely on that.
    from support.cli import pva_double

    return pva_double()


def _connect(path):
    return sqlite3.connect("file:{}?mode=ro".format(path), uri=True)


def _dump(path):
    """{table: (create sql, rows in rowid order)} of an SQLite file."""
    connection = _connect(path)
    try:
        tables = connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
        return {
            name: (
                sql,
                connection.execute('SELECT * FROM "{}" ORDER BY rowid'.format(name)).fetchall(),
            )
            for name, sql in tables
        }
    finally:
        connection.close()


def _case_folders(root):
    folders = {
        "vit-f8weight": root / "vit-f8weight" / "poprt" / "profile_logs_f8weight" / "inference",
        "vit-f8weight-recompiled": root / "vit-f8weight-recompiled",
        "tile-memory": root / "tile-memory",
    }
    folders.update({name: root / "edge" / name for name in EDGE_NAMES})
    return folders


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("fixtures")
    generate.generate(out)
    return out


def test_edge_case_list_is_complete():
    assert sorted(generate.EDGE_CASES) == sorted(EDGE_NAMES)
    committed = sorted(p.name for p in (FIXTURES / "edge").iterdir() if p.is_dir())
    assert committed == sorted(EDGE_NAMES)


GENERATED = ["vit-f8weight", "vit-f8weight-recompiled", "tile-memory", *EDGE_NAMES]


@pytest.mark.parametrize("name", GENERATED)
def test_committed_fixture_is_regenerated_identically(regenerated, name):
    committed, fresh = _case_folders(FIXTURES)[name], _case_folders(regenerated)[name]
    committed_db, fresh_db = _dump(committed / "profile.pop"), _dump(fresh / "profile.pop")
    assert sorted(committed_db) == sorted(fresh_db)
    for table in fresh_db:
        assert committed_db[table][0] == fresh_db[table][0], table
        assert committed_db[table][1] == fresh_db[table][1], table
    assert (committed / "pva-double.json").read_bytes() == (fresh / "pva-double.json").read_bytes()
    files = sorted(p.name for p in committed.iterdir())
    if name in ("vit-f8weight-recompiled", "tile-memory"):  # README.md by hand, no summary
        assert files == ["README.md", "profile.pop", "pva-double.json"]
        assert sorted(p.name for p in fresh.iterdir()) == ["profile.pop", "pva-double.json"]
        return
    if name == "vit-f8weight":
        assert files == ["profile.pop", "pva-double.json"]
        expected = (GOLDEN / "expected.json", regenerated / "vit-f8weight" / "expected.json")
    else:
        assert files == ["expected.json", "profile.pop", "pva-double.json"]
        expected = (committed / "expected.json", fresh / "expected.json")
    assert expected[0].read_bytes() == expected[1].read_bytes()


@pytest.mark.parametrize("name", GENERATED)
def test_fixture_is_small_and_carries_unknown_tables_and_columns(name):
    folder = _case_folders(FIXTURES)[name]
    assert sum(p.stat().st_size for p in folder.iterdir()) < 700 * 1024
    assert not list(folder.glob("*-journal")) and not list(folder.glob("*-wal"))
    connection = _connect(folder / "profile.pop")
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        tables = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        assert set(KNOWN_COLUMNS) < tables and len(tables - set(KNOWN_COLUMNS)) >= 3
        for table, known in KNOWN_COLUMNS.items():
            columns = [row[1] for row in connection.execute("PRAGMA table_info({})".format(table))]
            assert known <= set(columns)
            positions = [columns.index(c) for c in known]
            # unknown columns before and after the known ones
            assert min(positions) > 0 and max(positions) < len(columns) - 1, table
    finally:
        connection.close()


def test_edge_expected_files_are_summary_bytes():
    for name in EDGE_NAMES:
        text = (FIXTURES / "edge" / name / "expected.json").read_text(encoding="ascii")
        summary = json.loads(text)
        assert text == json.dumps(summary, indent=2) + "\n"
        assert summary["profile"] == "fixtures/edge/{}/profile.pop".format(name)
        assert list(summary) == [
            "profile",
            "kernels",
            "attention_exchanges",
            "exchange_memory_per_tile",
            "device_spans",
            "qkv_executions",
            "allocated_memory",
        ]


# --------------------------------------------------------------------------- golden


@pytest.fixture(scope="module")
def golden():
    return json.loads((GOLDEN / "expected.json").read_text(encoding="ascii"))


def test_golden_expected_is_the_reference():
    assert sha256(GOLDEN / "expected.json") == REFERENCE_SHA256


def test_golden_attention_exchange_arrays(golden):
    data = json.loads((GOLDEN_CASE / "pva-double.json").read_text(encoding="ascii"))
    rows = []
    for program in data["programs"]:
        if program["type"] == "DoExchange" and re.search(r"/blocks\.0/attn/", program["name"]):
            per_tile = program["codeBytesByTile"]
            assert len(per_tile) == 1472
            rows.append(
                {
                    "name": program["name"],
                    "maximum": max(per_tile),
                    "mean": sum(per_tile) / len(per_tile),
                }
            )
    assert rows == golden["attention_exchanges"]
    assert [type(row["mean"]) for row in rows] == [float] * 17
    # exchanges a looser selector would report, and non-exchanges that match it, exist
    names = [(p["type"], p["name"]) for p in data["programs"]]
    assert any(t == "DoExchange" and "/blocks.1/attn/" in n for t, n in names)
    assert any(t == "DoExchange" and "/blocks.0/mlp/" in n for t, n in names)
    assert any(t != "DoExchange" and "/blocks.0/attn/" in n for t, n in names)


def test_golden_sql_aggregates(golden):
    connection = _connect(GOLDEN_CASE / "profile.pop")
    try:
        memory = connection.execute(
            "SELECT min(total), avg(total), max(total), count(*) FROM memory_by_tile"
        ).fetchone()
        exchange = connection.execute(
            "SELECT min(b), avg(b), max(b) FROM (SELECT sum(v.size_bytes) AS b FROM vars_info v "
            "JOIN var_categories c ON c.id = v.category WHERE c.name = 'internalExchangeCode' "
            "GROUP BY v.tile)"
        ).fetchone()
        other_categories = connection.execute(
            "SELECT count(*) FROM vars_info v JOIN var_categories c ON c.id = v.category "
            "WHERE c.name != 'internalExchangeCode'"
        ).fetchone()[0]
    finally:
        connection.close()
    assert memory == (86179, 550544.296875, 596494, 1472)
    assert list(exchange) == list(golden["exchange_memory_per_tile"].values())
    assert other_categories > 0


def _golden_rows(folder=GOLDEN_CASE):
    """Step rows of the golden fixture (or of the one in `folder`): (step, kind, name,
    compute set, start, end, cycles, active tiles), straight from SQL."""
    connection = _connect(folder / "profile.pop")
    try:
        return connection.execute(
            "SELECT s.id, s.type, coalesce(nullif(c.name, ''), p.name, ''), s.compute_set, "
            "i.cycles_base + i.active_cycles_from_min, i.cycles_base + i.active_cycles_to_max, "
            "i.cycles, i.active_tiles FROM steps s JOIN steps_by_ipu i ON i.step_id = s.id "
            "LEFT JOIN programs p ON p.id = s.program "
            "LEFT JOIN compute_sets c ON c.compute_set = s.compute_set "
            "ORDER BY s.id, i.rowid"
        ).fetchall()
    finally:
        connection.close()


def test_golden_trace(golden):
    rows = _golden_rows()
    kernels = [r for r in rows if re.search(r"/Convolve$", r[2])]
    anchors = [r[0] for r in kernels if re.search(r"/attn/qkv/", r[2])]
    assert len(anchors) == golden["qkv_executions"] == 54
    body = [r for r in rows if anchors[0] <= r[0] < anchors[1]]
    assert [r[0] for r in body if r in kernels] == [k["step"] for k in golden["kernels"]]
    by_step = {r[0]: r for r in rows}
    data = json.loads((GOLDEN_CASE / "pva-double.json").read_text(encoding="ascii"))
    vertices = {c["id"]: "; ".join(c["vertices"]) for c in data["computeSets"]}
    for k in golden["kernels"]:
        _step, kind, name, cs, start, end, cycles, tiles = by_step[k["step"]]
        assert (kind, name, start, end, cycles, tiles, vertices[cs]) == (
            k["kind"],
            k["name"],
            k["start"],
            k["end"],
            k["cycles"],
            k["active_tiles"],
            k["vertices"],
        )
    # every stage label appears among the body's non-kernel rows
    labels = [
        r"/attn/Softmax/",
        r"/attn/MatMul_1",
        r"/attn/MatMul/",
        r"/attn/qkv/",
        r"/attn/proj/",
        r"/attn/",
        r"/mlp/fc1/",
        r"/mlp/fc2/",
        r"/mlp/",
    ]
    stages = set()
    for r in body:
        if r not in kernels:
            stages.add(next((p for p in labels if re.search(p, r[2])), "other"))
    assert stages == set(labels) | {"other"}
    # device spans: input delivered .. output begins, exchange and compute rows only
    spans = []
    for i, r in enumerate(rows):
        if r[1] == "StreamCopyEnd" and re.search(r"^copyFromHost$", r[2]):
            window = []
            for later in rows[i + 1 :]:
                if later[1] == "StreamCopyBegin" and re.search(r"copyToHost$", later[2]):
                    break
                window.append(later)
            counted = [w for w in window if w[1] in ("DoExchange", "OnTileExecute")]
            spans.append(max(w[5] for w in counted) - min(w[4] for w in counted))
            # rows of other kinds inside the window reach beyond it: they must not count
            others = [w for w in window if w[1] not in ("DoExchange", "OnTileExecute")]
            assert min(w[4] for w in others) < min(w[4] for w in counted)
            assert max(w[5] for w in others) > max(w[5] for w in counted)
    assert spans == golden["device_spans"]


# --------------------------------------------------------------------------- recompiled

# vit-f8weight-recompiled/README.md, by hand: the first body's changes, golden step ->
# (step here, {fact: (golden, here)}); the steps added and removed.
HALF_CONV = "poplin::ConvPartial1x1Out<half,half,true,false,16,4,false>"
QUARTER_CONV = "poplin::ConvPartial1x1Out<quarter,half,true,false,16,4,false>"
RECOMPILED_CHANGED = {
    101: (1101, {"cycles": (37277, 33541), "vertices": (HALF_CONV, QUARTER_CONV)}),
    120: (1121, {"code_bytes": (248, 400)}),
    146: (1147, {"tiles": (1440, 1472)}),
    157: (1158, {"cycles": (14153, 12021)}),
    211: (1212, {"cycles": (48248, 41012)}),
    240: (1241, {"cycles": (52187, 46968)}),
}
# step: (kind, masked name, cycles, tiles, vertices, max codeBytesByTile)
CAST = "/visual/trunk/blocks/blocks.0/attn/qkv/MatMul/#/matmulGrouped/Conv_1/castWeights/Cast"
RECOMPILED_ADDED = {
    1102: ("DoExchange", "cs#_" + CAST + "/ExchangePre", 1187, 1472, "", 96),
    1103: ("OnTileExecute", CAST, 2954, 1216, "popops::Cast1D<half,quarter>", 0),
}
RECOMPILED_REMOVED = {
    107: (
        "DoExchange",
        "cs#_/visual/trunk/blocks/blocks.0/attn/Mul_1/#/Op/Multiply/ExchangePre",
        996,
        1472,
        "",
        16,
    )
}


def _recompiled_step(step):
    """The README's table: golden step (run 0) -> the step here."""
    assert step != 107
    return step + (1000 if step <= 101 else 1002 if step <= 106 else 1001)


def _first_body(folder):
    """Anchors, and {step: (kind, masked name, cycles, tiles, vertices, max code bytes)} of
    the first body, from the SQL and pva-double.json directly."""
    connection = _connect(folder / "profile.pop")
    try:
        rows = connection.execute(
            "SELECT s.id, s.type, coalesce(nullif(c.name, ''), p.name, ''), s.program, "
            "s.compute_set, i.cycles, i.active_tiles FROM steps s "
            "JOIN steps_by_ipu i ON i.step_id = s.id LEFT JOIN programs p ON p.id = s.program "
            "LEFT JOIN compute_sets c ON c.compute_set = s.compute_set ORDER BY s.id, i.rowid"
        ).fetchall()
    finally:
        connection.close()
    data = json.loads((folder / "pva-double.json").read_text(encoding="ascii"))
    vertices = {c["id"]: "; ".join(c["vertices"]) for c in data["computeSets"]}
    code = {
        p["id"]: max(p.get("codeBytesByTile") or [0])
        for p in data["programs"]
        if p["type"] == "DoExchange"
    }
    anchors = [r[0] for r in rows if re.search(r"/attn/qkv/.*/Convolve$", r[2])]
    body = {
        step: (kind, _masked(name), cycles, tiles, vertices.get(cs, ""), code.get(program, 0))
        for step, kind, name, program, cs, cycles, tiles in rows
        if anchors[0] <= step < anchors[1]
    }
    return anchors, body


def test_recompiled_first_body_has_the_readme_changes_and_no_other():
    golden_anchors, golden = _first_body(GOLDEN_CASE)
    anchors, here = _first_body(RECOMPILED)
    assert (golden_anchors[:2], anchors[:2]) == ([101, 252], [1101, 1253])
    assert len(golden_anchors) == len(anchors) == 54
    assert {s: golden[s] for s in RECOMPILED_REMOVED} == RECOMPILED_REMOVED
    paired = {
        _recompiled_step(s): unit for s, unit in golden.items() if s not in RECOMPILED_REMOVED
    }
    assert sorted(set(here) - set(paired)) == sorted(RECOMPILED_ADDED)
    assert {s: here[s] for s in RECOMPILED_ADDED} == RECOMPILED_ADDED
    facts = ("cycles", "tiles", "vertices", "code_bytes")
    changed = {}
    for step, unit in paired.items():
        assert here[step][:2] == unit[:2], step  # kind, masked name
        if here[step] != unit:
            changed[step] = {
                fact: (unit[i], here[step][i])
                for i, fact in enumerate(facts, start=2)
                if unit[i] != here[step][i]
            }
    assert changed == dict(RECOMPILED_CHANGED.values())
    assert all(_recompiled_step(s) == new for s, (new, _) in RECOMPILED_CHANGED.items())
    assert sum(u[2] for u in golden.values()) == 861887
    assert sum(u[2] for u in here.values()) == 846709 == 861887 - 15178


def _spans(rows):
    """Device spans (docs/formats/summary.md) of _golden_rows' rows."""
    spans = []
    for i, r in enumerate(rows):
        if r[1] == "StreamCopyEnd" and r[2] == "copyFromHost":
            counted = []
            for later in rows[i + 1 :]:
                if later[1] == "StreamCopyBegin" and later[2].endswith("copyToHost"):
                    break
                if later[1] in ("DoExchange", "OnTileExecute"):
                    counted.append(later)
            spans.append(max(w[5] for w in counted) - min(w[4] for w in counted))
    return spans


def test_recompiled_times_move_as_its_readme_says(golden):
    rows = _golden_rows(RECOMPILED)
    assert all(end - start >= cycles for _s, _k, _n, _c, start, end, cycles, _t in rows)
    assert _spans(rows) == [15987664 - 16034, 15987659 - 48285] == [15971630, 15939374]
    by_step = {r[0]: r for r in rows}
    moves = [(0, -3736), (-1447, -1447), (-1447, -1447), (-1447, -3579), (-3579, -10815)]
    moves.append((-10815, -16034))
    for kernel, (start, end) in zip(golden["kernels"], moves):
        row = by_step[_recompiled_step(kernel["step"])]
        assert (row[4] - kernel["start"], row[5] - kernel["end"]) == (start, end)


def test_recompiled_attention_exchanges(golden):
    data = json.loads((RECOMPILED / "pva-double.json").read_text(encoding="ascii"))
    found = [
        (_masked(p["name"]), max(p["codeBytesByTile"]), sum(p["codeBytesByTile"]) / 1472)
        for p in data["programs"]
        if p["type"] == "DoExchange" and re.search(r"/blocks\.0/attn/", p["name"])
    ]
    expected = [
        (_masked(e["name"]), e["maximum"], e["mean"]) for e in golden["attention_exchanges"]
    ]
    del expected[4]  # cs26_ .../attn/Mul_1/...: removed
    expected.insert(2, ("cs#_" + CAST + "/ExchangePre", 96, 61.25))  # after cs23_ (cs30_)
    assert expected[7][1:] == (248, 149.04347826086956)  # cs28_ (cs35_)
    expected[7] = (expected[7][0], 400, 149.14673913043478)
    assert found == expected


# --------------------------------------------------------------------------- the stand-in


def test_pva_double_serves_the_json():
    pva = _pva()
    report = pva.openReport(str(GOLDEN_CASE / "profile.pop"))
    assert report.poplarVersion.string == "3.3.0 (stand-in)"
    data = json.loads((GOLDEN_CASE / "pva-double.json").read_text(encoding="ascii"))
    programs = list(report.compilation.programs)
    assert [p._id for p in programs] == [p["id"] for p in data["programs"]]
    assert [p.type.name for p in programs] == [p["type"] for p in data["programs"]]
    exchanges = [p for p in programs if p.type == pva.Program.Type.DoExchange]
    assert exchanges and all(p.type.name == "DoExchange" for p in exchanges)
    pva.reset_access_counts()
    first = exchanges[0]
    assert first.codeBytesByTile == data["programs"][
        [p["id"] for p in data["programs"]].index(first._id)
    ].get("codeBytesByTile", [])
    _ = first.codeBytesByTile  # a second access, counted
    assert pva.access_counts[("codeBytesByTile", first._id)] == 2
    compute_set = data["computeSets"][-1]
    vertices = report.compilation.computeSets[compute_set["id"]].vertices
    assert [v.type.name for v in vertices] == compute_set["vertices"]
    assert pva.access_counts[("vertices", compute_set["id"])] == 1
    pva.reset_access_counts()
    assert not pva.access_counts


def test_pva_double_serves_the_memory_facts_as_given(tmp_path):
    pva = _pva()
    report = pva.openReport(str(FIXTURES / "tile-memory" / "profile.pop"))
    target = report.compilation.target
    assert (target.numTiles, target.numIPUs, target.tilesPerIpu, target.bytesPerTile) == (
        64,
        2,
        32,
        638976,
    )
    tiles = report.compilation.tiles
    assert len(tiles) == 64
    assert tiles[40].memory.total.includingGaps == 707628
    assert tiles[40].memory.total.excludingGaps == 707628 - (40 * 131) % 257
    assert tiles[62].memory.alwaysLiveBytes == 0
    steps = report.compilation.livenessProgramSteps
    assert [step.notAlwaysLiveMemory.bytes for step in steps] == [
        120000,
        350000,
        512000,
        498000,
        512000,
        64000,
    ]
    # A part the JSON leaves out is no attribute (tilesPerIpu is never derived), and
    # without "tiles" or "livenessProgramSteps" both lists are empty.
    (tmp_path / "profile.pop").write_bytes(b"")
    (tmp_path / "pva-double.json").write_text(
        '{"programs": [], "computeSets": [], "target": {"numTiles": 8, "numIPUs": 2}}'
    )
    bare_report = pva.openReport(str(tmp_path / "profile.pop"))
    bare = bare_report.compilation
    assert bare.target.numTiles == 8 and not hasattr(bare.target, "tilesPerIpu")
    assert not hasattr(bare.target, "bytesPerTile")
    assert bare.tiles == [] and bare.livenessProgramSteps == []


def test_tile_memory_fixture_holds_what_its_readme_says():
    connection = _connect(FIXTURES / "tile-memory" / "profile.pop")
    try:
        totals = [
            row[0] for row in connection.execute("SELECT total FROM memory_by_tile ORDER BY rowid")
        ]
        tiles_with_rows = {
            row[0] for row in connection.execute("SELECT DISTINCT tile FROM vars_info")
        }
    finally:
        connection.close()
    assert len(totals) == 64
    over = sorted((total, tile) for tile, total in enumerate(totals) if total > 638976)
    assert over == [(658365, 5), (661603, 17), (707628, 40)]
    assert totals[50] == 638976 and totals[62] == 1024
    assert tiles_with_rows == set(range(64)) - {62}


def test_pva_double_sparse_compute_sets_and_empty_code_bytes():
    pva = _pva()
    report = pva.openReport(
        str(FIXTURES / "edge" / "empty-code-bytes" / "profile.pop"), "debug.cbor"
    )
    sets = report.compilation.computeSets
    assert len(sets) == 6 and next(c.name for c in sets).endswith("/attn/qkv/Convolve")
    with pytest.raises(IndexError):
        sets[4]  # ids 1, 2, 3, 5: 4 is missing
    with pytest.raises(IndexError):
        sets[6]
    empty = [p for p in report.compilation.programs if p._id in (30, 38)]
    assert [p.codeBytesByTile for p in empty] == [[], []]


@pytest.mark.parametrize("problem", ["missing profile", "no json", "bad json"])
def test_pva_double_raises_when_it_cannot_open(tmp_path, problem):
    pva = _pva()
    profile = tmp_path / "profile.pop"
    if problem != "missing profile":
        profile.write_bytes(b"")
    if problem == "bad json":
        (tmp_path / "pva-double.json").write_text("{not json")
    with pytest.raises(Exception) as caught:
        pva.openReport(str(profile))
    assert type(caught.value) is not ImportError
    assert str(caught.value).startswith("Could not open report {}: ".format(profile))


# --------------------------------------------------------------------------- edited specs

# The ids mask_ids masks (extractor/core/metrics.py), restated here to check the renaming.
_PREFIX_ID = re.compile(r"(?<![^{,/])(cs|copy)[0-9]+_")
_NUMERIC_PART = re.compile(r"(?<=/)[0-9]+(?=[/,{}]|\Z)")


def _masked(name):
    return _NUMERIC_PART.sub("#", _PREFIX_ID.sub(r"\1#_", name))


def _keys(path):
    """(kind, masked name, cycles, active tiles) of every step row, in step order."""
    connection = _connect(path)
    try:
        rows = connection.execute(
            "SELECT s.type, coalesce(nullif(c.name, ''), p.name, ''), i.cycles, i.active_tiles "
            "FROM steps s JOIN steps_by_ipu i ON i.step_id = s.id "
            "LEFT JOIN programs p ON p.id = s.program "
            "LEFT JOIN compute_sets c ON c.compute_set = s.compute_set ORDER BY s.id, i.rowid"
        ).fetchall()
    finally:
        connection.close()
    return [(kind, _masked(name), cycles, tiles) for kind, name, cycles, tiles in rows]


@pytest.fixture(scope="module")
def small_vit():
    return generate.vit_spec(blocks=3, runs=2, tiles=16, seed=5, detailed_blocks=(0,))


def test_renumbered_spec_has_the_same_masked_steps(small_vit, tmp_path):
    renumber = generate.Renumber(steps_from=40, programs=13, compute_sets=5, copies=9, paths=77)
    edited = generate.edited_spec(small_vit, generate.Edits(renumber=renumber))
    before = generate.write_case(small_vit, tmp_path / "before")
    after = generate.write_case(edited, tmp_path / "after")
    assert _keys(after) == _keys(before)
    assert edited.steps[0].id == 40 and small_vit.steps[0].id == 1  # the input is kept
    names = {p.name for p in edited.programs} - {p.name for p in small_vit.programs}
    assert any(n.startswith("cs") for n in names) and any(n.startswith("copy") for n in names)


def test_edited_spec_inserts_removes_and_changes(small_vit, tmp_path):
    steps = {s.id: s for s in small_vit.steps}
    names = {c.id: c.name for c in small_vit.compute_sets}
    anchors = [
        s.id
        for s in small_vit.steps
        if s.compute_set is not None and re.search(r"/attn/qkv/.*/Convolve$", names[s.compute_set])
    ]
    first, second = anchors[0], anchors[1]
    removed = next(i for i in range(first + 4, second) if steps[i].type == "DoExchange")
    edits = generate.Edits(
        changes=(
            generate.Change(first, cycles=123, vertices=("v<quarter>",)),
            generate.Change(first + 2, name="/renamed/Op/Add", active_tiles=3),
        ),
        inserts=(generate.Insert(first + 1, "OnTileExecute", "/new/Cast", 77, 5, ("c",)),),
        removals=(removed,),
        renumber=generate.Renumber(programs=1000),
    )
    edited = generate.edited_spec(small_vit, edits)
    assert len(edited.steps) == len(small_vit.steps)  # one in, one out
    profile = generate.write_case(edited, tmp_path / "edited")
    before = _keys(generate.write_case(small_vit, tmp_path / "base"))
    after = _keys(profile)
    # rows by index (step id - 1): the anchor, the inserted step, the anchor's next step,
    # then the renamed one
    assert after[first - 1][2] == 123
    assert after[first][:4] == ("OnTileExecute", "/new/Cast", 77, 5)
    assert after[first + 1] == before[first]
    assert after[first + 2][1:] == ("/renamed/Op/Add", before[first + 1][2], 3)
    assert after[: first - 1] == before[: first - 1]
    assert after[first + 3 : removed] == before[first + 2 : removed - 1]
    assert after[removed:] == before[removed:]  # one step in, one out: the same ids again
    result = invoke_extract(profile, "--no-pva", "-o", tmp_path / "summary.json", pva=False)
    assert result.code == 0, result
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="ascii"))
    assert summary["kernels"][0]["cycles"] == 123 and summary["qkv_executions"] == 6
    data = json.loads((tmp_path / "edited" / "pva-double.json").read_text(encoding="ascii"))
    assert "c" in [v for c in data["computeSets"] for v in c["vertices"]]
    assert "v<quarter>" in [v for c in data["computeSets"] for v in c["vertices"]]
    # each step still lasts at least its cycles
    rows = [(r.start, r.end, r.cycles) for r in edited.steps_by_ipu]
    assert all(end - start >= cycles for start, end, cycles in rows)


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_give_profiles_extract_reads(small_vit, tmp_path, seed):
    rng = random.Random(seed)
    edits = generate.random_edits(small_vit, rng, count=5)
    assert edits == generate.random_edits(small_vit, random.Random(seed), count=5)
    edited = generate.edited_spec(small_vit, edits)
    assert edited == generate.edited_spec(small_vit, edits)  # deterministic
    profile = generate.write_case(edited, tmp_path)
    result = invoke_extract(profile, "--no-pva", "-o", tmp_path / "summary.json", pva=False)
    assert result.code == 0, result


def test_edits_that_make_no_valid_spec_are_refused(small_vit):
    for edits in (
        generate.Edits(removals=(10**6,)),
        generate.Edits(changes=(generate.Change(5, cycles=0),)),
        generate.Edits(inserts=(generate.Insert(5, "Nop", "x", 1, 1),)),
        generate.Edits(renumber=generate.Renumber(paths=-(10**6))),
    ):
        with pytest.raises(ValueError):
            generate.edited_spec(small_vit, edits)
