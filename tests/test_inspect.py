"""`extract inspect PROFILE [--json] [--exact] [--no-pva]`, through the real console script."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from extractor.diagnose.inspection import EXACT_COUNT_LIMIT
from support.cases import copy_case, golden_case_folder, sha256
from support.cli import invoke_extract
from support.paths import EDGE, PVA_DOUBLE

REQUIRED = {  # docs/formats/summary.md, "What a profile must hold"
    "steps": ["id", "type", "program", "compute_set"],
    "steps_by_ipu": [
        "step_id",
        "cycles",
        "active_tiles",
        "cycles_base",
        "active_cycles_from_min",
        "active_cycles_to_max",
    ],
    "programs": ["id", "name"],
    "compute_sets": ["compute_set", "name"],
    "vars_info": ["tile", "category", "size_bytes"],
    "var_categories": ["id", "name"],
    "memory_by_tile": ["total"],
}


def inspect_json(*args, **kwargs) -> dict:
    result = invoke_extract("inspect", *args, "--json", **kwargs)
    assert result.code == 0, result
    assert result.stderr == ""
    return json.loads(result.stdout)


def make_db(path: Path, script: str, rows=()) -> Path:
    """An SQLite file from an SQL script, then (table, row tuples) inserted."""
    db = sqlite3.connect(str(path))
    db.executescript(script)
    for table, given in rows:
        values = list(given)
        marks = ", ".join("?" * len(values[0]))
        db.executemany("INSERT INTO {} VALUES ({})".format(table, marks), values)
    db.commit()
    db.close()
    return path


def fake_pva(folder: Path, body: str) -> Path:
    """A folder holding a module `pva` with this source, for PYTHONPATH."""
    (folder / "pva").mkdir(parents=True)
    (folder / "pva" / "__init__.py").write_text(body, encoding="utf-8")
    return folder


@pytest.fixture
def golden(tmp_path):
    return copy_case(golden_case_folder(), tmp_path / "case")


def by_name(answer: dict) -> dict:
    return {table["name"]: table for table in answer["tables"]}


# --- tables, columns, counts -----------------------------------------------------------


def test_golden_profile_tables_columns_and_counts(golden):
    before, mtime = sha256(golden), golden.stat().st_mtime_ns
    answer = inspect_json(golden, pva=False)
    assert answer["profile"] == str(golden)
    assert answer["file_bytes"] == golden.stat().st_size
    assert answer["sqlite"]["page_size"] == 4096  # the generator writes 4 KiB pages
    assert answer["sqlite"]["page_size"] * answer["sqlite"]["pages"] == answer["file_bytes"]

    tables = by_name(answer)
    db = sqlite3.connect("file:{}?mode=ro".format(golden), uri=True)
    names = [
        r[0]
        for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    assert [t["name"] for t in answer["tables"]] == names
    assert set(REQUIRED) < set(names) and "debug_contexts" in names  # plus tables to ignore
    for name in names:  # a small file: every table is counted exactly
        count = db.execute('SELECT count(*) FROM "{}"'.format(name)).fetchone()[0]
        assert tables[name]["rows"] == count, name
        assert tables[name]["rows_method"] == "count"
        assert tables[name]["rows_estimated"] is False
    db.close()
    assert tables["memory_by_tile"]["rows"] == 1472  # one row per tile
    # the generator's schema, extra columns included, in table order
    assert tables["steps"]["columns"] == [
        "run",
        "id",
        "type",
        "program",
        "compute_set",
        "debug_context",
    ]
    assert tables["compute_sets"]["columns"] == ["id", "compute_set", "name", "num_vertex_types"]

    assert answer["required"]["ok"] is True
    assert answer["required"]["problems"] == []
    assert [t["table"] for t in answer["required"]["tables"]] == list(REQUIRED)
    assert all(t["present"] and t["missing_columns"] == [] for t in answer["required"]["tables"])
    assert sha256(golden) == before and golden.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in golden.parent.iterdir()) == ["profile.pop", "pva-double.json"]


def test_text_output_lists_tables_and_the_required_ones(golden):
    result = invoke_extract("inspect", golden, pva=False)
    assert result.code == 0, result
    text = result.stdout.decode("utf-8")
    assert text.startswith("{}: {:,} bytes, SQLite".format(golden, golden.stat().st_size))
    assert "extractor's tables and columns: all present" in text
    lines = text.splitlines()
    memory = [line.split() for line in lines if line.split()[:1] == ["memory_by_tile"]]
    assert ["memory_by_tile", "ok"] in memory
    assert ["memory_by_tile", "1,472", "tile,", "ipu,", "total,", "gaps"] in memory
    assert "~" not in text  # nothing estimated in a small file
    assert "pva: not importable" in text
    assert "report:" not in text


def test_missing_tables_and_columns_are_reported_not_fatal(tmp_path, golden):
    db = sqlite3.connect(str(golden))
    db.execute("ALTER TABLE steps_by_ipu RENAME COLUMN cycles TO cycles_total")
    db.execute("DROP TABLE memory_by_tile")
    db.commit()
    db.close()
    answer = inspect_json(golden, pva=False)
    assert answer["required"]["ok"] is False
    assert answer["required"]["problems"] == [
        "table 'steps_by_ipu' has no column 'cycles'",
        "no table 'memory_by_tile'",
    ]
    status = {t["table"]: t for t in answer["required"]["tables"]}
    assert status["steps_by_ipu"] == {
        "table": "steps_by_ipu",
        "present": True,
        "missing_columns": ["cycles"],
    }
    assert status["memory_by_tile"]["present"] is False
    assert status["steps"]["missing_columns"] == []

    text = invoke_extract("inspect", golden, pva=False).stdout.decode("utf-8")
    assert (
        "extractor's tables and columns: MISSING: table 'steps_by_ipu' has no column "
        "'cycles'; no table 'memory_by_tile'"
    ) in text
    assert "  steps_by_ipu     missing columns: cycles" in text.splitlines()
    assert "  memory_by_tile   missing" in text.splitlines()


def test_large_tables_are_estimated_from_rowids_and_exact_counts_them(tmp_path):
    # Two rows whose rowids span a million: a cheap answer must not count them.
    path = make_db(
        tmp_path / "gaps.pop",
        "CREATE TABLE steps (id INTEGER PRIMARY KEY, type TEXT); CREATE TABLE small (x);",
        [("steps", [(1, "a"), (1000000, "b")]), ("small", [(1,), (2,), (3,)])],
    )
    tables = by_name(inspect_json(path, pva=False))
    assert tables["steps"]["rows"] == 1000000
    assert tables["steps"]["rows_estimated"] is True
    assert tables["steps"]["rows_method"] == "rowid span"
    assert tables["small"]["rows"] == 3 and tables["small"]["rows_method"] == "count"

    exact = by_name(inspect_json(path, "--exact", pva=False))
    assert exact["steps"]["rows"] == 2 and exact["steps"]["rows_estimated"] is False
    assert exact["steps"]["rows_method"] == "count"

    text = invoke_extract("inspect", path, pva=False).stdout.decode("utf-8")
    assert "~ or > marks an estimated count" in text
    assert ["steps", "~1,000,000", "id,", "type"] in [line.split() for line in text.splitlines()]
    assert "rowid span: ~ counts are max(rowid) - min(rowid) + 1" in text
    text = invoke_extract("inspect", path, "--exact", pva=False).stdout.decode("utf-8")
    assert "~" not in text
    assert ["steps", "2", "id,", "type"] in [line.split() for line in text.splitlines()]


def test_a_span_within_the_limit_is_counted_exactly(tmp_path):
    path = make_db(tmp_path / "p.pop", "CREATE TABLE t (v)", [("t", [(i,) for i in range(5)])])
    db = sqlite3.connect(str(path))
    db.execute("DELETE FROM t WHERE v IN (1, 3)")  # a gap inside the span
    db.execute("INSERT INTO t(rowid, v) VALUES (?, 9)", (EXACT_COUNT_LIMIT,))
    db.commit()
    db.close()
    assert by_name(inspect_json(path, pva=False))["t"]["rows"] == 4


def test_large_tables_are_not_read_through(tmp_path):
    # Spoil a leaf page in the middle of a large table: a count must read it and fail, the
    # default answer must not touch it. This is what keeps inspect fast on a 1 GB file.
    path = tmp_path / "big.pop"
    db = sqlite3.connect(str(path))
    db.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, v INTEGER)")
    db.executemany(
        "INSERT INTO big VALUES (?, ?)", ((i, 7 * i) for i in range(1, EXACT_COUNT_LIMIT + 50001))
    )
    db.commit()
    try:
        leaves = [
            r[0]
            for r in db.execute(
                "SELECT pageno FROM dbstat WHERE name = 'big' AND pagetype = 'leaf' ORDER BY path"
            )
        ]
    except sqlite3.OperationalError:
        pytest.skip("this SQLite has no dbstat table to find a leaf page with")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with open(str(path), "r+b") as handle:
        handle.seek((leaves[len(leaves) // 2] - 1) * page_size)
        handle.write(b"\xff" * page_size)
    before = sha256(path)

    big = by_name(inspect_json(path, pva=False))["big"]
    assert big["rows"] == EXACT_COUNT_LIMIT + 50000 and big["rows_estimated"] is True
    exact = invoke_extract("inspect", path, "--exact", pva=False)
    assert exact.code == 1
    assert (
        exact.stderr
        == "extract: error: {}: damaged or truncated SQLite file (database "
        "disk image is malformed)\n".format(path)
    )
    assert sha256(path) == before


def test_tables_without_rowid(tmp_path):
    over = EXACT_COUNT_LIMIT + 7
    path = make_db(
        tmp_path / "w.pop",
        "CREATE TABLE few (k INTEGER PRIMARY KEY, v) WITHOUT ROWID;"
        "CREATE TABLE many (k INTEGER PRIMARY KEY) WITHOUT ROWID;",
        [("few", [(1, "a"), (5, "b")]), ("many", [(i,) for i in range(over)])],
    )
    tables = by_name(inspect_json(path, pva=False))
    assert (tables["few"]["rows"], tables["few"]["rows_method"]) == (2, "count")
    many = tables["many"]
    assert many["rows"] == EXACT_COUNT_LIMIT + 1  # counting stopped past the limit
    assert many["rows_method"] == "lower bound" and many["rows_estimated"] is True
    text = invoke_extract("inspect", path, pva=False).stdout.decode("utf-8")
    assert ["many", ">{:,}".format(EXACT_COUNT_LIMIT), "k"] in [
        line.split() for line in text.splitlines()
    ]
    assert "> counts are lower bounds" in text
    exact = by_name(inspect_json(path, "--exact", pva=False))["many"]
    assert (exact["rows"], exact["rows_method"]) == (over, "count")

    # Analysed: the stored statistics are the estimate.
    db = sqlite3.connect(str(path))
    db.execute("ANALYZE")
    db.execute("INSERT INTO many VALUES (-1)")  # after ANALYZE: the estimate lags
    db.commit()
    db.close()
    many = by_name(inspect_json(path, pva=False))["many"]
    assert (many["rows"], many["rows_method"], many["rows_estimated"]) == (
        over,
        "sqlite_stat1",
        True,
    )
    assert "sqlite_stat1" not in by_name(inspect_json(path, pva=False))  # SQLite's own


def test_odd_tables_do_not_break_it(tmp_path):
    path = make_db(
        tmp_path / "odd.pop",
        'CREATE TABLE "we""ird name" (rowid, _rowid_, oid);'
        "CREATE VIRTUAL TABLE texts USING fts5(body);"
        "CREATE TABLE empty (x);",
        [('"we""ird name"', [(1, 2, 3)])],
    )
    db = sqlite3.connect(str(path))
    db.execute("PRAGMA writable_schema = ON")  # a virtual table of a module nobody has
    db.execute(
        "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES "
        "('table', 'ghost', 'ghost', 0, 'CREATE VIRTUAL TABLE ghost USING "
        "nosuchmodule(a, b)')"
    )
    db.commit()
    db.close()
    tables = by_name(inspect_json(path, pva=False))
    assert tables['we"ird name']["rows"] == 1
    assert tables['we"ird name']["columns"] == ["rowid", "_rowid_", "oid"]
    assert tables["empty"]["rows"] == 0 and tables["empty"]["rows_method"] == "count"
    assert tables["texts"]["rows"] is None and tables["texts"]["rows_method"] == "not counted"
    assert tables["texts"]["columns"] == ["body"]
    assert tables["ghost"]["columns"] is None and tables["ghost"]["rows"] is None
    assert "texts_data" in tables  # fts5's own tables are ordinary ones
    text = invoke_extract("inspect", path, "--exact", pva=False).stdout.decode("utf-8")
    assert "(unknown: a virtual table this SQLite cannot open)" in text
    assert "? marks a virtual table, never counted" in text


# --- bad files --------------------------------------------------------------------------


def _truncated(tmp_path):
    data = (golden_case_folder() / "profile.pop").read_bytes()
    path = tmp_path / "truncated.pop"
    path.write_bytes(data[: len(data) // 3])
    return path, "damaged or truncated SQLite file (database disk image is malformed)"


def _not_sqlite(tmp_path):
    path = tmp_path / "text.pop"
    path.write_text("not a database, just text\n" * 200)
    return path, "not an SQLite database"


def _missing(tmp_path):
    return tmp_path / "nowhere" / "profile.pop", "no such file"


def _folder(tmp_path):
    return tmp_path, "is a directory, not a profile"


def _empty(tmp_path):
    # An empty file is a valid empty SQLite database: no tables, nothing the extractor needs.
    path = tmp_path / "empty.pop"
    path.write_bytes(b"")
    return path, None


@pytest.mark.parametrize(
    "make, as_json",
    [(_truncated, False), (_not_sqlite, True), (_missing, False), (_folder, True)],
    ids=["truncated", "not-sqlite", "missing", "folder"],
)
def test_bad_files_give_one_line_and_exit_1(tmp_path, make, as_json):
    path, problem = make(tmp_path)
    before = sha256(path) if path.is_file() else None
    result = invoke_extract("inspect", path, *(["--json"] if as_json else []), pva=True)
    assert result.code == 1
    assert result.stderr == "extract: error: {}: {}\n".format(path, problem)
    assert result.stdout == b""
    if before is not None:
        assert sha256(path) == before
        assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_an_empty_file_has_no_tables(tmp_path):
    path, _ = _empty(tmp_path)
    answer = inspect_json(path, pva=False)
    assert answer["tables"] == [] and answer["required"]["ok"] is False
    assert len(answer["required"]["problems"]) == len(REQUIRED)
    assert path.read_bytes() == b""


def test_usage_errors_exit_2():
    assert invoke_extract("inspect").code == 2
    result = invoke_extract("inspect", "a.pop", "--count-everything")
    assert result.code == 2 and "--count-everything" in result.stderr


def test_help_lists_the_commands():
    text = invoke_extract("--help").stdout.decode("utf-8")
    assert "inspect" in text and "stages" in text
    text = invoke_extract("inspect", "--help").stdout.decode("utf-8")
    for option in ("--json", "--exact", "--no-pva"):
        assert option in text


# --- what pva says ----------------------------------------------------------------------


def test_without_pva(golden):
    answer = inspect_json(golden, pva=False)
    assert answer["pva"]["asked"] is True
    assert answer["pva"]["importable"] is False
    assert answer["pva"]["version"] is None and answer["pva"]["module"] is None
    assert "No module named 'pva'" in answer["pva"]["error"]
    assert answer["report"] is None
    text = invoke_extract("inspect", golden, pva=False).stdout.decode("utf-8")
    assert (
        "pva: not importable (ModuleNotFoundError: No module named 'pva'); the Poplar "
        "SDK's enable.sh provides it" in text
    )


def test_with_the_stand_in(golden):
    answer = inspect_json(golden, pva=True)
    assert answer["pva"]["importable"] is True
    assert answer["pva"]["version"] == "3.3.0+stand-in"
    assert Path(answer["pva"]["module"]).resolve().parent.parent == PVA_DOUBLE.resolve()
    assert answer["report"]["opened"] is True
    assert answer["report"]["poplar_version"] == "3.3.0 (stand-in)"
    text = invoke_extract("inspect", golden, pva=True).stdout.decode("utf-8")
    assert (
        "pva: importable, version 3.3.0+stand-in, from {}".format(answer["pva"]["module"]) in text
    )
    assert "report: Poplar 3.3.0 (stand-in), profile format " in text


def test_no_pva_does_not_import_it(golden):
    answer = inspect_json(golden, "--no-pva", pva=True)
    assert answer["pva"] == {
        "asked": False,
        "importable": None,
        "version": None,
        "module": None,
        "error": None,
    }
    assert answer["report"] is None
    text = invoke_extract("inspect", "--no-pva", golden, pva=True).stdout.decode("utf-8")
    assert "pva: not asked (--no-pva)" in text
    # and the SQL part is the same either way
    full = inspect_json(golden, pva=True)
    assert {k: v for k, v in answer.items() if k not in ("pva", "report")} == {
        k: v for k, v in full.items() if k not in ("pva", "report")
    }


def test_pva_that_cannot_open_the_report(tmp_path):
    profile = tmp_path / "profile.pop"
    shutil.copy2(str(golden_case_folder() / "profile.pop"), str(profile))  # no pva-double
    answer = inspect_json(profile, pva=True)
    report = answer["report"]
    assert report["opened"] is False
    assert report["poplar_version"] is None and report["format_version"] is None
    assert len(report["errors"]) == 1 and report["errors"][0].startswith("openReport: ")
    assert "pva-double.json" in report["errors"][0]
    assert answer["required"]["ok"] is True
    text = invoke_extract("inspect", profile, pva=True).stdout.decode("utf-8")
    assert "report: pva could not open it: openReport: " in text


FULL_PVA = """
__version__ = "9.8.7"

class _Version:
    major, minor, point, isUnstableFormat = 2, 5, 1, {unstable}

class _Poplar:
    string = "3.4.0 (d2e6fb6b5c)"

class _Report:
    poplarVersion = _Poplar()
    version = _Version()

opened = []

def openReport(path, debug_cbor=None):
    return _Report()
"""

PARTIAL_PVA = """
class _Poplar:
    @property
    def string(self):
        raise RuntimeError("no version\\nrecorded")

class _Report:
    poplarVersion = _Poplar()

def openReport(path):
    return _Report()
"""


@pytest.mark.parametrize("unstable", [True, False])
def test_format_version_from_pva(tmp_path, golden, unstable):
    path = fake_pva(tmp_path / "sdk", FULL_PVA.format(unstable=unstable))
    answer = inspect_json(golden, pva=False, env={"PYTHONPATH": str(path)})
    assert answer["pva"]["version"] == "9.8.7"
    assert answer["pva"]["module"] == str(path / "pva" / "__init__.py")
    assert answer["report"] == {
        "opened": True,
        "poplar_version": "3.4.0 (d2e6fb6b5c)",
        "format_version": "2.5.1",
        "unstable_format": unstable,
        "errors": [],
    }
    text = invoke_extract(
        "inspect", golden, pva=False, env={"PYTHONPATH": str(path)}
    ).stdout.decode("utf-8")
    assert (
        "report: Poplar 3.4.0 (d2e6fb6b5c), profile format 2.5.1{}\n".format(
            " (unstable format)" if unstable else ""
        )
        in text
    )


def test_what_pva_cannot_tell_is_null_and_said(tmp_path, golden):
    path = fake_pva(tmp_path / "sdk", PARTIAL_PVA)
    answer = inspect_json(golden, pva=False, env={"PYTHONPATH": str(path)})
    assert answer["pva"]["importable"] is True and answer["pva"]["version"] is None
    report = answer["report"]
    assert report["opened"] is True
    assert report["poplar_version"] is None and report["format_version"] is None
    assert report["unstable_format"] is None
    assert report["errors"] == [
        "poplarVersion: RuntimeError: no version recorded",
        "version: AttributeError: '_Report' object has no attribute 'version'",
    ]
    text = invoke_extract(
        "inspect", golden, pva=False, env={"PYTHONPATH": str(path)}
    ).stdout.decode("utf-8")
    assert "pva: importable, version unknown (the module has no __version__)" in text
    assert "report: Poplar unknown, profile format unknown" in text
    assert "  pva could not tell poplarVersion: RuntimeError: no version recorded" in text


def test_pva_that_fails_to_load(tmp_path, golden):
    # The SDK's module found but its native library not: not an ImportError.
    path = fake_pva(
        tmp_path / "sdk", 'raise OSError("libpva.so: cannot open shared object file")\n'
    )
    answer = inspect_json(golden, pva=False, env={"PYTHONPATH": str(path)})
    assert answer["pva"]["importable"] is False
    assert answer["pva"]["error"] == "OSError: libpva.so: cannot open shared object file"
    assert answer["report"] is None


@pytest.mark.parametrize("case", ["compile-only", "multi-ipu"])
def test_edge_profiles_inspect_cleanly(case):
    answer = inspect_json(EDGE / case / "profile.pop", pva=True)
    assert answer["required"]["ok"] is True
    assert answer["report"]["opened"] is True
    steps = by_name(answer)["steps"]["rows"]
    assert (steps == 0) == (case == "compile-only")


def test_table_names_match_as_sqlite_matches_them(tmp_path):
    # SQLite (and so the extractor) finds "STEPS" when asked for "steps"; column names are
    # compared as the spec writes them.
    path = make_db(
        tmp_path / "case.pop",
        "CREATE TABLE STEPS (ID, type, program, compute_set); CREATE TABLE Programs (id, name)",
    )
    answer = inspect_json(path, pva=False)
    status = {t["table"]: t for t in answer["required"]["tables"]}
    assert status["steps"] == {"table": "steps", "present": True, "missing_columns": ["id"]}
    assert status["programs"] == {"table": "programs", "present": True, "missing_columns": []}
    assert "no table 'steps'" not in answer["required"]["problems"]
    assert "table 'steps' has no column 'id'" in answer["required"]["problems"]
