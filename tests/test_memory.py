"""`extract memory` through the real CLI (docs/commands/memory.md, docs/formats/memory.md).

- memory.json is, byte for byte, what a second reading of the format page gives
  (support/memory_oracle.py, which imports nothing from extractor), on every committed
  fixture, with pva and without, with --top and --bytes-per-tile;
- the tile-memory fixture's answers, as its README works them out by hand;
- the markdown's headline and the CSV, exactly;
- the edge cases: no memory_by_tile rows, a bad total (one line naming file and tile,
  nothing written), stray vars_info rows, a category without a name, a limit of one's own.
"""

import json
import shutil
import sqlite3

import pytest

from support.cases import golden_case_folder
from support.checks import json_bytes, one_error
from support.cli import invoke_extract
from support.memory_oracle import oracle_memory
from support.paths import EDGE, FIXTURES

TILE_MEMORY = FIXTURES / "tile-memory"
CASES = {
    "tile-memory": TILE_MEMORY,
    "golden": golden_case_folder(),
    **{p.name: p for p in sorted(EDGE.iterdir()) if p.is_dir()},
}
ARGS = {
    "plain": [],
    "top 2": ["--top", "2"],
    "top 0": ["--top", "0"],
    "limit": ["--bytes-per-tile", "600000"],
}


@pytest.fixture
def case(tmp_path):
    """A private copy of the tile-memory fixture, to change."""
    for name in ("profile.pop", "pva-double.json"):
        shutil.copyfile(str(TILE_MEMORY / name), str(tmp_path / name))
    return tmp_path


def _change(profile, *statements):
    db = sqlite3.connect(str(profile))
    with db:
        for statement in statements:
            db.execute(statement)
    db.close()


#: vars_info as three columns with no type or constraint, so that any value stays as written.
_LOOSE_VARS_INFO = (
    "ALTER TABLE vars_info RENAME TO old_vars",
    "CREATE TABLE vars_info (tile, category, size_bytes)",
    "INSERT INTO vars_info SELECT tile, category, size_bytes FROM old_vars",
)


def _memory(profile, *args, pva=True, cwd=None):
    return invoke_extract("memory", str(profile), *args, pva=pva, cwd=cwd)


# Every case with every option set, with pva and without; the golden profile (1472
# tiles, its vars_info the largest) with the defaults only.
RUNS = [
    (name, args, pva)
    for name in sorted(CASES)
    for args in sorted(ARGS)
    for pva in (True, False)
    if name != "golden" or args == "plain"
]


@pytest.mark.parametrize("name,args,pva", RUNS)
def test_memory_json_is_the_oracles(name, args, pva):
    folder = CASES[name]
    profile = folder / "profile.pop"
    options = ARGS[args] + ([] if pva else ["--no-pva"])
    result = _memory(profile, "--format", "json", *options, pva=pva)
    assert result.code == 0, result
    top = int(ARGS[args][1]) if args.startswith("top") else 5
    limit = 600000 if args == "limit" else None
    expected = oracle_memory(
        profile, folder / "pva-double.json" if pva else None, top=top, bytes_per_tile=limit
    )
    assert result.stdout == json_bytes(expected)


def test_the_tile_memory_fixture_as_its_readme_works_it_out():
    result = _memory(TILE_MEMORY / "profile.pop", "--format", "json")
    memory = json.loads(result.stdout)
    assert list(memory) == [
        "profile",
        "tiles",
        "ipus",
        "tiles_per_ipu",
        "bytes_per_tile",
        "total",
        "balance",
        "limit",
        "histogram",
        "categories",
        "fullest",
        "per_ipu",
        "liveness",
        "exchanges",
        "stray_rows",
    ]
    assert (memory["tiles"], memory["ipus"], memory["tiles_per_ipu"]) == (64, 2, 32)
    assert memory["bytes_per_tile"] == 638976
    assert memory["limit"] == {"over": 3, "headroom": 638976 - 707628, "used": 707628 / 638976}
    assert [(t["tile"], t["ipu"], t["total"]) for t in memory["fullest"]] == [
        (40, 1, 707628),
        (17, 0, 661603),
        (5, 0, 658365),
        (50, 1, 638976),
        (14, 0, 485699),
    ]
    # tile 40: variable 300000 + (40 * 7919 % 97) * 1000 + 262000, gaps 40 * 131 % 257
    assert memory["fullest"][0]["categories"][0] == {"category": "variable", "bytes": 617000}
    assert memory["fullest"][0]["unattributed"] == 100
    assert memory["fullest"][3]["headroom"] == 0  # at the limit, not over it
    # w = ceil(638976 / 16) = 39936: the 17th bucket from 638976 holds 40, 17, 5 and 50
    assert memory["histogram"][16] == {"from": 638976, "to": None, "tiles": 4}
    assert memory["histogram"][0] == {"from": 0, "to": 39936, "tiles": 1}  # tile 62: 1024
    assert len(memory["histogram"]) == 17
    assert memory["total"]["min_tile"] == 62 and memory["total"]["min"] == 1024
    assert [i["max_tile"] for i in memory["per_ipu"]] == [17, 40]
    assert memory["liveness"]["peak_not_always_live"] == 512000
    assert memory["liveness"]["peak_step"] == 2  # 512000 also at step 4: the lowest
    assert memory["stray_rows"] == 0
    assert {c["category"]: c["tiles"] for c in memory["categories"]}["hostExchangeCode"] == 8


def test_the_markdown_answers_first_and_the_csv_has_every_tile(case):
    profile = case / "profile.pop"
    result = _memory(profile, cwd=case)
    assert result.code == 0 and result.stderr == "", result
    lines = result.stdout.decode("utf-8").splitlines()
    assert lines[0] == (
        "fullest tile 40: 707628 of 638976 bytes (110.7%), -68652 free; 3 tiles over the limit"
    )
    unlimited = _memory(profile, "--no-pva", pva=False)
    # 707628 / (28495370 / 64) = 1.589...
    assert unlimited.stdout.decode("utf-8").splitlines()[0] == (
        "fullest tile 40: 707628 bytes, 1.59 x the mean"
    )
    one_over = _memory(profile, "--bytes-per-tile", "700000")
    assert one_over.stdout.decode("utf-8").splitlines()[0] == (
        "fullest tile 40: 707628 of 700000 bytes (101.1%), -7628 free; 1 tile over the limit"
    )
    csv_run = _memory(profile, "--format", "csv")
    text = csv_run.stdout.decode("utf-8")
    rows = text.split("\r\n")
    assert rows[0] == "tile,ipu,category,bytes" and rows[-1] == ""
    assert rows[1] == "0,0,controlCode,20000"
    # tile 63: 326000 + 46000 + 20000 + 10560 + 512 + 16384 bytes of variables, 29 of gaps
    assert rows[-2] == "63,1,total,419485"
    totals = [r for r in rows[1:-1] if ",total," in r]
    assert len(totals) == 64 and totals[62] == "62,1,total,1024"
    assert not any(r.startswith("62,") for r in rows[1:-1] if ",total," not in r)


def test_hostile_names_are_escaped_in_markdown_and_csv(case):
    profile = case / "profile.pop"
    _change(profile, "UPDATE var_categories SET name = '=HYPERLINK(1)|<b>*x*' WHERE id = 8")
    markdown = _memory(profile).stdout.decode("utf-8")
    assert "| =HYPERLINK(1)\\|&lt;b&gt;\\*x\\* | 1032192 |" in markdown
    csv_text = _memory(profile, "-f", "csv").stdout.decode("utf-8")
    assert "\r\n0,0,'=HYPERLINK(1)|<b>*x*,16384\r\n" in csv_text


def test_no_memory_by_tile_rows_is_no_error():
    profile = EDGE / "no-aggregate-rows" / "profile.pop"
    result = _memory(profile, "-f", "json", "--no-pva", pva=False)
    assert result.code == 0, result
    memory = json.loads(result.stdout)
    assert memory["tiles"] == 0 and memory["total"] is None and memory["balance"] is None
    assert memory["limit"] is None and memory["per_ipu"] is None
    assert memory["histogram"] == memory["categories"] == memory["fullest"] == []
    assert memory["stray_rows"] == 4  # every vars_info row: no tile to belong to
    assert result.stderr == (
        "extract: warning: {}: memory_by_tile has no rows: no tile memory to show\n".format(profile)
    )
    markdown = _memory(profile, "--no-pva", "-q", pva=False)
    assert markdown.stderr == ""
    assert markdown.stdout.decode("utf-8").splitlines()[0] == "no tiles: memory_by_tile has no rows"


@pytest.mark.parametrize(
    "value,shown",
    [
        ("NULL", "the total of tile 3 is NULL: not a whole number"),
        ("-1", "the total of tile 3 is -1: negative"),
        ("1.5", "the total of tile 3 is the real number 1.5: not a whole number"),
        ("'lots'", "the total of tile 3 is text 'lots': not a whole number"),
    ],
)
def test_a_bad_total_is_one_line_naming_file_and_tile(case, value, shown):
    profile = case / "profile.pop"
    # A fresh table without NOT NULL or a type, so that any value stays as written.
    _change(
        profile,
        "ALTER TABLE memory_by_tile RENAME TO old_memory",
        "CREATE TABLE memory_by_tile (tile, total)",
        "INSERT INTO memory_by_tile SELECT tile, total FROM old_memory ORDER BY rowid",
        "UPDATE memory_by_tile SET total = {} WHERE rowid = 4".format(value),
    )
    out = case / "out.json"
    result = _memory(profile, "-f", "json", "-o", str(out), cwd=case)
    line = one_error(result, 1)
    expected = "memory_by_tile: {} (a tile's total is a whole number of bytes)".format(shown)
    assert line == "extract: error: {}: {}".format(profile, expected)
    assert not out.exists()


def test_stray_rows_and_a_category_without_a_name(case):
    profile = case / "profile.pop"
    _change(
        profile,
        *_LOOSE_VARS_INFO,
        "INSERT INTO vars_info VALUES (-1, 1, 100), (NULL, 1, 100), (64, 1, 100), (1000, 9, 5)",
        "INSERT INTO vars_info VALUES (3, 99, 77), (3, 99, NULL), (4, NULL, 11)",
    )
    result = _memory(profile, "-f", "json")
    assert result.code == 0, result
    memory = json.loads(result.stdout)
    assert memory["stray_rows"] == 4
    assert result.stderr == (
        "extract: warning: {}: 4 vars_info rows name no tile of memory_by_tile (NULL, "
        "negative or past tile 63): left out, counted in stray_rows\n".format(profile)
    )
    named = {c["category"]: c for c in memory["categories"]}
    assert named["category 99"]["sum"] == 77 and named["category 99"]["tiles"] == 1
    assert named["category null"]["sum"] == 11
    assert memory == oracle_memory(profile, profile.parent / "pva-double.json")


def test_a_tiles_sizes_that_overflow_are_one_line(case):
    # Two sizes of 2**62 on tile 3: their sum is past 64 bits and cannot be written.
    profile = case / "profile.pop"
    _change(
        profile,
        *_LOOSE_VARS_INFO,
        "INSERT INTO vars_info VALUES (3, 1, 4611686018427387904), (3, 1, 4611686018427387904)",
    )
    out = case / "out.json"
    result = _memory(profile, "-f", "json", "-o", str(out), cwd=case)
    assert one_error(result, 1) == "extract: error: {}: {}".format(
        profile, "a sum overflows 64-bit integers: values too large for a real profile (damaged?)"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "statement,problem",
    [
        (
            "INSERT INTO vars_info VALUES (3, 1, -8)",
            "vars_info: a size_bytes of tile 3 is negative (-8)",
        ),
        (
            "INSERT INTO vars_info VALUES (3, 1, 'big')",
            "vars_info: a size_bytes of tile 3 is text 'big', not a whole number",
        ),
        (
            "INSERT INTO vars_info VALUES (2.5, 1, 8)",
            "vars_info: a tile is the real number 2.5, not a whole number",
        ),
    ],
)
def test_a_bad_vars_info_row_is_one_line(case, statement, problem):
    profile = case / "profile.pop"
    _change(
        profile,
        *_LOOSE_VARS_INFO,
        statement,
    )
    out = case / "out.md"
    result = _memory(profile, "-o", str(out), cwd=case)
    assert one_error(result, 1) == "extract: error: {}: {}".format(profile, problem)
    assert not out.exists()


def test_a_limit_given_wins_over_pvas_and_serves_without_pva(case):
    profile = case / "profile.pop"
    with_pva = json.loads(_memory(profile, "-f", "json", "--bytes-per-tile", "700000").stdout)
    without = json.loads(
        _memory(profile, "-f", "json", "--bytes-per-tile", "700000", "--no-pva", pva=False).stdout
    )
    assert with_pva["bytes_per_tile"] == without["bytes_per_tile"] == 700000
    assert (
        with_pva["limit"]
        == without["limit"]
        == {
            "over": 1,
            "headroom": -7628,
            "used": 707628 / 700000,
        }
    )
    assert without["ipus"] is None and without["per_ipu"] is None
    assert without["liveness"] is None and without["exchanges"] is None
    assert [t["ipu"] for t in without["fullest"]] == [None] * 5
    assert len(without["histogram"]) == 17  # the limit's histogram: the 17th from 16 * w
    usage = _memory(profile, "--bytes-per-tile", "0")
    assert usage.code == 2, usage


def test_output_written_atomically_and_never_over_the_profile(case):
    profile = case / "profile.pop"
    before = profile.read_bytes()
    out = case / "sub" / "memory.json"
    result = _memory(profile, "-f", "json", "-o", str(out), cwd=case)
    assert result.code == 0 and result.stdout == b"", result
    assert out.read_bytes() == json_bytes(oracle_memory(profile, case / "pva-double.json"))
    refused = _memory(profile, "-o", str(profile), cwd=case)
    assert refused.code == 2, refused
    assert profile.read_bytes() == before


def test_histogram_edges_are_from_inclusive_to_exclusive():
    # w = ceil(16385 / 16) = 1025: tile 62's 1024 bytes fall in [0, 1025), every other
    # tile (over 300000 bytes) in the 17th bucket, from 16400 up.
    result = _memory(TILE_MEMORY / "profile.pop", "-f", "json", "--bytes-per-tile", "16385")
    histogram = json.loads(result.stdout)["histogram"]
    assert histogram[0] == {"from": 0, "to": 1025, "tiles": 1}
    assert histogram[1:16] == [
        {"from": 1025 * k, "to": 1025 * (k + 1), "tiles": 0} for k in range(1, 16)
    ]
    assert histogram[16] == {"from": 16400, "to": None, "tiles": 63}


# ---- extract doctor's checks of what extract memory assumes ------------------------------


def _doctor(profile):
    result = invoke_extract("doctor", str(profile), "--json")
    answer = json.loads(result.stdout)
    return {c["name"]: c for c in answer["checks"]}


def _edit_tiles(case, edit):
    path = case / "pva-double.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_doctor_finds_the_totals_are_including_gaps_and_the_rows_one_per_tile(case):
    checks = _doctor(case / "profile.pop")
    assert checks["memory_by_tile_rows"]["status"] == "ok"
    assert checks["memory_by_tile_rows"]["data"] == {"rows": 64, "target_tiles": 64}
    assert checks["memory_totals"]["status"] == "ok"
    assert checks["memory_totals"]["data"]["which"] == "includingGaps"
    assert checks["vars_info_tiles"]["data"] == {"highest_tile": 63, "target_tiles": 64}


def test_doctor_says_excluding_gaps_and_the_first_tile_that_is_neither(case):
    def excluding(data):
        for tile in data["tiles"]:
            tile["excludingGaps"], tile["includingGaps"] = tile["includingGaps"], 1

    _edit_tiles(case, excluding)
    totals = _doctor(case / "profile.pop")["memory_totals"]
    assert (totals["status"], totals["data"]["which"]) == ("ok", "excludingGaps")

    def off_on_tile_7(data):
        data["tiles"][7]["excludingGaps"] += 1  # the one that matched

    _edit_tiles(case, off_on_tile_7)
    totals = _doctor(case / "profile.pop")["memory_totals"]
    assert totals["status"] == "warn"
    assert totals["detail"].startswith("tile 7's total is ")
    assert totals["data"]["neither"] == [7]


def test_doctor_warns_of_rows_and_vars_info_tiles_the_target_does_not_have(case):
    profile = case / "profile.pop"
    _change(
        profile,
        "DELETE FROM memory_by_tile WHERE rowid = (SELECT max(rowid) FROM memory_by_tile)",
        "INSERT INTO vars_info VALUES (0, 'x', 70, 1, 8, 8)",
    )
    checks = _doctor(profile)
    assert checks["memory_by_tile_rows"]["status"] == "warn"
    assert checks["memory_by_tile_rows"]["detail"] == "63 rows; the target has 64 tiles"
    assert checks["vars_info_tiles"]["status"] == "warn"
    assert checks["vars_info_tiles"]["detail"] == "vars_info names tile 70; the target has 64 tiles"
