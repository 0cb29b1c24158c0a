"""`extract breakdown` against an independent reading of its spec
(tests/support/breakdown_oracle.py: SQLite's own GROUP BYs over a plain view of the
step rows, the keys written anew), through the real CLI, on the committed fixtures:
the JSON's exact bytes, one profile and two, and the sums that must add up."""

import json
import os
import sqlite3

import pytest

from support.breakdown_oracle import (
    check_invariants,
    oracle_breakdown,
    oracle_compared,
    tiles_per_ipu,
    with_tiles_per_ipu,
)
from support.cases import copy_case
from support.cli import invoke_extract
from support.paths import EDGE, FIXTURES, REPO

GOLDEN = "fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop"
RECOMPILED = "fixtures/vit-f8weight-recompiled/profile.pop"
EDGES = sorted(
    "fixtures/edge/{}/profile.pop".format(case.name)
    for case in EDGE.iterdir()
    if (case / "profile.pop").is_file()
)


def _bytes(result) -> bytes:
    return (json.dumps(result, indent=2) + "\n").encode("ascii")


def _json(*args, pva=False):
    result = invoke_extract("breakdown", *args, "--format", "json", "-q", cwd=REPO, pva=pva)
    assert result.code == 0, result
    return result.stdout


# (profile, options, runs, --all, depth)
CASES = (
    [
        (GOLDEN, [], (), False, 5),
        (GOLDEN, ["--run", "2"], (2,), False, 5),
        (GOLDEN, ["--run", "2", "--run", "1", "--depth", "2"], (2, 1), False, 2),
        (GOLDEN, ["--all", "--depth", "64"], (), True, 64),
        (RECOMPILED, ["--depth", "1"], (), False, 1),
    ]
    + [(edge, [], (), False, 5) for edge in EDGES]
    + [(edge, ["--all"], (), True, 5) for edge in EDGES]
)


@pytest.mark.parametrize(
    "profile,options,runs,every,depth",
    CASES,
    ids=["{} {}".format(os.path.basename(os.path.dirname(c[0])), " ".join(c[1])) for c in CASES],
)
def test_one_profile_is_the_spec_read_plainly(profile, options, runs, every, depth):
    want = oracle_breakdown(REPO / profile, profile, runs=runs, every=every, depth=depth)
    check_invariants(want)
    assert _json(profile, *options, "--no-pva") == _bytes(want)


def test_the_tile_balance_with_pva(tmp_path):
    # the golden fixture's stand-in has numTiles and numIPUs, no tilesPerIpu: given here
    profile = copy_case((REPO / GOLDEN).parent, tmp_path / "golden")
    assert tiles_per_ipu(profile) is None
    with_tiles_per_ipu(profile, 1472)
    tiles = tiles_per_ipu(profile)
    assert tiles == 1472
    want = oracle_breakdown(profile, str(profile), tiles=tiles)
    assert 0 < want["windows"][0]["ipus"][0]["tile_balance"] < 1
    assert _json(str(profile), pva=True) == _bytes(want)


def test_no_tiles_per_ipu_no_tile_balance():
    got = json.loads(_json(GOLDEN, pva=True))
    assert got["windows"][0]["ipus"][0]["tile_balance"] is None


@pytest.mark.parametrize("options,runs", [([], ()), (["--run", "2", "--run", "1"], (2, 1))])
def test_two_profiles_are_joined_as_the_spec_says(options, runs):
    base = oracle_breakdown(REPO / GOLDEN, GOLDEN, runs=runs)
    candidate = oracle_breakdown(REPO / RECOMPILED, RECOMPILED, runs=runs)
    want = oracle_compared(base, candidate)
    check_invariants(want)
    # the recompile: 15178 fewer cycles in inference 1, as extract diff finds in block 0
    if not runs:
        assert want["windows"][0]["ipus"][0]["change"] == -15178
    assert _json(GOLDEN, RECOMPILED, *options, "--no-pva") == _bytes(want)


def test_a_profile_against_itself_changes_nothing():
    got = json.loads(_json(GOLDEN, GOLDEN, "--all", "--no-pva"))
    ipu = got["windows"][0]["ipus"][0]
    assert ipu["change"] == 0 and ipu["base"] == ipu["candidate"] > 0
    for table in ("kinds", "stages", "ops", "layers"):
        assert {row["status"] for row in ipu[table]} == {"same"}, table


def test_the_oracle_can_fail():
    # a row's cycles changed in the oracle's answer: the bytes differ
    want = oracle_breakdown(REPO / GOLDEN, GOLDEN)
    want["windows"][0]["ipus"][0]["ops"][0]["max"] += 1
    assert _json(GOLDEN, "--no-pva") != _bytes(want)


def test_rows_stored_out_of_order_and_rules_of_its_own(tmp_path):
    # With --all the walk reads the rows as stored, meets one out of step order (the
    # last row stored 1000th: after three batches of rows already summed) and starts
    # again on sorted rows: the consumer starts afresh (the runs are read sorted, by
    # their steps, from the start). The rules: a label given twice, one beyond ASCII,
    # another fallback, and no output-begins step (each inference to the end).
    from support.blocks_oracle import read_rules
    from support.cases import NO_OUTPUT_RULES, copy_case

    profile = copy_case(
        FIXTURES / "vit-f8weight/poprt/profile_logs_f8weight/inference", tmp_path / "p"
    )
    db = sqlite3.connect(str(profile), isolation_level=None)
    db.execute(
        "CREATE TABLE moved AS SELECT * FROM steps_by_ipu ORDER BY CASE WHEN rowid = "
        "(SELECT max(rowid) FROM steps_by_ipu) THEN 999.5 ELSE rowid END"
    )
    db.execute("DROP TABLE steps_by_ipu")
    db.execute("ALTER TABLE moved RENAME TO steps_by_ipu")
    db.close()
    rules = tmp_path / "rules.toml"
    rules.write_text(NO_OUTPUT_RULES, encoding="utf-8")
    want = oracle_breakdown(profile, str(profile), runs=(2, 1), rules=read_rules(rules))
    check_invariants(want)
    assert [w["last_step"] for w in want["windows"]] == [1106, 1106]  # to the end
    assert {s["stage"] for s in want["windows"][0]["ipus"][0]["stages"]} == {
        "attention",
        'mlp "\u2191"',
        "rest",
    }
    result = invoke_extract(
        "breakdown", profile, "--run", "2", "--run", "1", "--rules", rules, "-f", "json",
        "--no-pva", "-q", pva=False,
    )  # fmt: skip
    assert result.code == 0, result
    assert result.stdout == _bytes(want)
    every = oracle_breakdown(profile, str(profile), every=True, rules=read_rules(rules))
    result = invoke_extract(
        "breakdown", profile, "--all", "--rules", rules, "-f", "json", "--no-pva", pva=False
    )
    assert result.code == 0 and result.stderr == "", result
    assert result.stdout == _bytes(every)
