"""The bad-input corpus: damaged, odd and hostile copies of one small good profile.

Every case is code: `damage(folder)` changes a fresh copy of the baseline case (the
11-step trace of fixtures/edge/README.md, `profile.pop` + `pva-double.json`), and
`expect` says what extract must answer (docs/errors.md gives the reasons):

- `Error(pattern)`: exit 1, one line `extract: error: <profile>: <problem>` matching it;
- `Summary(change)`: exit 0 and exactly the baseline's hand-worked summary, changed by
  `change(summary)` (worked out by hand from the damage, in the comments);
- `Oracle()`: whatever tests/support/spec_oracle.py derives from the spec (a summary, or
  Refused: then a one-line error);
- `Either()`: a summary obeying the bytes rule, or a one-line error (flipped bytes:
  SQLite may read garbage consistently; nobody can say which in advance).
"""

import json
import random
import sqlite3
import sys
from pathlib import Path
from typing import Callable, NamedTuple

from support.paths import FIXTURES

sys.path.insert(0, str(FIXTURES))
import generate as g

BASE_KERNELS = [g.K4, g.K7]


def base_summary(label: str) -> dict:
    """The baseline's summary, as fixtures/edge/README.md works it out by hand."""
    summary = {"profile": label}
    summary.update(
        g._summary([dict(k) for k in BASE_KERNELS], [g.X_QKV0], g.B_STATS, [1100], 2, g.MEM_STATS)
    )
    return summary


_BASE = []


def write_base(folder: Path) -> Path:
    """A copy of the baseline case in `folder` (built once, then copied)."""
    import shutil
    import tempfile

    if not _BASE:
        _BASE.append(g.write_case(g._mini_base(), Path(tempfile.mkdtemp(prefix="base-"))))
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("profile.pop", "pva-double.json"):
        shutil.copyfile(str(_BASE[0].parent / name), str(folder / name))
    return folder / "profile.pop"


class Error(NamedTuple):
    pattern: str


class Summary(NamedTuple):
    change: Callable = lambda s: None


class Oracle(NamedTuple):
    pass


class Either(NamedTuple):
    pass


class Case(NamedTuple):
    name: str
    damage: Callable
    expect: object
    batch: bool = True  # also run inside the batch


# ---- helpers that damage a case folder ------------------------------------------------


def sql(*statements):
    def damage(folder: Path):
        db = sqlite3.connect(str(folder / "profile.pop"), isolation_level=None)
        try:
            for statement in statements:
                db.execute(statement)
        finally:
            db.close()

    return damage


def loosen(table: str) -> str:
    """SQL rebuilding `table` without its constraints (NOT NULL, PRIMARY KEY), rows and
    row order kept, so that NULLs and repeats can be stored."""
    return (
        "CREATE TABLE loose AS SELECT * FROM {0} ORDER BY rowid; DROP TABLE {0}; "
        "ALTER TABLE loose RENAME TO {0}".format(table)
    )


def loose_sql(table, *statements):
    return sql(*(loosen(table).split("; ") + list(statements)))


def write_bytes(data: bytes):
    def damage(folder: Path):
        (folder / "profile.pop").write_bytes(data)

    return damage


def truncate_at(offset: int):
    def damage(folder: Path):
        path = folder / "profile.pop"
        path.write_bytes(path.read_bytes()[:offset])

    return damage


def flip_pages(seed: int, pages: int = 3, flips: int = 24):
    def damage(folder: Path):
        path = folder / "profile.pop"
        data = bytearray(path.read_bytes())
        rng = random.Random(seed)
        count = len(data) // 4096
        for page in rng.sample(range(count), min(pages, count)):
            for _ in range(flips):
                at = page * 4096 + rng.randrange(4096)
                data[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))

    return damage


def edit_double(change):
    def damage(folder: Path):
        path = folder / "pva-double.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        change(data)
        path.write_text(json.dumps(data), encoding="utf-8")

    return damage


def kernel(summary, step):
    return next(k for k in summary["kernels"] if k["step"] == step)


PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00"
    b"\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe"
    b"\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"
)
FC1 = g.FC1
LONG_NAME = "/m/blocks/blocks.0/mlp/fc1/" + "x" * (1 << 20) + "/Convolve"
NEWLINE_NAME = "/m/blocks/blocks.0/mlp/fc1/first line\nsecond line/Convolve"
CONTROL_NAME = "/m/blocks/blocks.0/mlp/fc1/\x00\x01\x07\x1b[31m\x7f\t\r/Convolve"
# The name below with the bytes ff 80 c0 inside, as extract reads it (and, for these
# tests, as pva is taken to read it: how the real one decodes such bytes is unknown).
INVALID_UTF8_READ = "/m/blocks/blocks.0/mlp/fc1/\ufffd\ufffd\ufffd/Convolve"


def rename_fc1(name_sql: str, pva_name: str):
    """Compute set 3 renamed in SQL (by an SQL expression) and, as pva reads the same
    file, in pva-double.json (`pva_name`: the text pva would give)."""
    rename = sql("UPDATE compute_sets SET name = {} WHERE compute_set = 3".format(name_sql))

    def damage(folder: Path):
        rename(folder)
        edit_double(lambda d: _rename_compute_set(d, 3, pva_name))(folder)

    return damage


def _rename_compute_set(double, compute_set, name):
    for entry in double["computeSets"]:
        if entry["id"] == compute_set:
            entry["name"] = name


def renamed_fc1(name):
    def change(s):
        kernel(s, 7)["name"] = name

    return change


def sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _step_column(step, column, value, table="steps_by_ipu", key="step_id"):
    return loose_sql(
        table, "UPDATE {} SET {} = {} WHERE {} = {}".format(table, column, value, key, step)
    )


# ---- the corpus ---------------------------------------------------------------------------


def corpus():
    cases = [
        # Not SQLite at all.
        Case(
            "text file",
            write_bytes(b"step,cycles\n1,40\n" * 200),
            Error(r"not an SQLite database$"),
        ),
        Case("png", write_bytes(PNG), Error(r"not an SQLite database$")),
        Case(
            "gzip",
            write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 8),
            Error(r"not an SQLite database$"),
        ),
        Case("empty file", write_bytes(b""), Error(r"empty file \(0 bytes\)")),
    ]
    # Truncated at many offsets: inside the magic, inside the header, at and around page
    # boundaries, half way, one page and one byte short.
    for offset in (1, 15, 16, 99, 100, 4095, 4096, 4097, 8192, 20000, -4096, -1):
        name = (
            "truncated at {}".format(offset)
            if offset > 0
            else "truncated {} bytes short".format(-offset)
        )
        cases.append(Case(name, truncate_at(offset), Error(r"truncated: \d+ bytes")))
    # A damaged schema whose SQLite error message quotes bytes that are not UTF-8 (found
    # by the bit-flip fuzz: Python raised UnicodeDecodeError decoding the message).
    cases.append(
        Case(
            "schema text not UTF-8",
            sql(
                "PRAGMA writable_schema = ON",
                "UPDATE sqlite_master SET sql = CAST(x'{}' AS TEXT) WHERE name = 'tiles'".format(
                    b"CREATE TABLE tiles (tile, ipu) \xcb\xcb".hex()
                ),
            ),
            Error(r"^damaged SQLite file \(SQLite's message about it is not readable text\)$"),
        )
    )
    for seed in range(6):
        cases.append(Case("flipped bytes {}".format(seed), flip_pages(seed), Either()))
    # Tables and columns.
    for table, columns in sorted(g_required().items()):
        cases.append(
            Case(
                "no table {}".format(table),
                sql("DROP TABLE {}".format(table)),
                Error(r"no table '{}'".format(table)),
            )
        )
        for column in columns:
            cases.append(
                Case(
                    "no column {}.{}".format(table, column),
                    loose_sql(table, "ALTER TABLE {} DROP COLUMN {}".format(table, column)),
                    Error(r"table '{}' has no column '{}'".format(table, column)),
                )
            )
        cases.append(
            Case(
                "empty table {}".format(table),
                sql("DELETE FROM {}".format(table)),
                Summary(EMPTY[table]),
            )
        )
    cases += [
        # NULL in one value (the spec's SQL meaning: unknown; skipped by aggregates, null
        # where reported). Each worked out by hand from fixtures/edge/README.md's table.
        Case(
            "null steps.program", _step_column(3, "program", "NULL", "steps", "id"), Summary()
        ),  # step 3 loses its name (no compute set): nothing reported changes
        Case(
            "null steps.compute_set",
            _step_column(7, "compute_set", "NULL", "steps", "id"),
            Summary(lambda s: s["kernels"].remove(kernel(s, 7))),
        ),  # named OnTileExecute_cs3
        Case(
            "null steps.type",
            _step_column(4, "type", "NULL", "steps", "id"),
            Summary(lambda s: kernel(s, 4).update(kind=None)),
        ),  # span still 100..1200
        Case(
            "null cycles",
            _step_column(7, "cycles", "NULL"),
            Summary(lambda s: kernel(s, 7).update(cycles=None)),
        ),
        Case(
            "null active_tiles",
            _step_column(4, "active_tiles", "NULL"),
            Summary(lambda s: kernel(s, 4).update(active_tiles=None)),
        ),
        Case(
            "null cycles_base",
            loose_sql(
                "steps_by_ipu", "UPDATE steps_by_ipu SET cycles_base = NULL WHERE step_id = 3"
            ),
            Summary(lambda s: s.update(device_spans=[1200 - 130])),
        ),  # step 4 starts first
        Case(
            "null active_cycles_from_min",
            loose_sql(
                "steps_by_ipu",
                "UPDATE steps_by_ipu SET active_cycles_from_min = NULL WHERE step_id = 4",
            ),
            Summary(lambda s: kernel(s, 4).update(start=None)),
        ),
        Case(
            "null active_cycles_to_max",
            loose_sql(
                "steps_by_ipu",
                "UPDATE steps_by_ipu SET active_cycles_to_max = NULL WHERE step_id = 9",
            ),
            Summary(lambda s: s.update(device_spans=[920 - 100])),
        ),  # step 8 ends last
        Case(
            "null step_id",
            loose_sql("steps_by_ipu", "UPDATE steps_by_ipu SET step_id = NULL WHERE step_id = 7"),
            Summary(lambda s: s["kernels"].remove(kernel(s, 7))),
        ),  # row joins no step
        Case(
            "null steps.id",
            loose_sql("steps", "UPDATE steps SET id = NULL WHERE id = 9"),
            # anchor 9 gone: one anchor, body to the end; span up to step 8's end 920
            Summary(lambda s: s.update(qkv_executions=1, device_spans=[920 - 100])),
        ),
        Case(
            "null programs.name",
            loose_sql("programs", "UPDATE programs SET name = NULL WHERE id = 21"),
            # step 2 (copyFromHost) loses its name: no input delivered, no span
            Summary(lambda s: s.update(device_spans=[])),
        ),
        Case(
            "null compute_sets.name",
            loose_sql("compute_sets", "UPDATE compute_sets SET name = NULL WHERE compute_set = 3"),
            Summary(lambda s: s["kernels"].remove(kernel(s, 7))),
        ),
        Case(
            "null compute_sets.compute_set",
            loose_sql(
                "compute_sets", "UPDATE compute_sets SET compute_set = NULL WHERE compute_set = 3"
            ),
            Summary(lambda s: s["kernels"].remove(kernel(s, 7))),
        ),
        Case(
            "null size_bytes",
            loose_sql("vars_info", "UPDATE vars_info SET size_bytes = NULL WHERE size_bytes = 100"),
            # b: tile 0 = 20, tile 1 = 60, tile 3 = 30 -> 110 / 3
            Summary(
                lambda s: s.update(
                    exchange_memory_per_tile={"min(b)": 20, "avg(b)": 110 / 3, "max(b)": 60}
                )
            ),
        ),
        Case(
            "null tile",
            loose_sql("vars_info", "UPDATE vars_info SET tile = NULL WHERE size_bytes = 30"),
            # tile 3's only exchange row has no tile: b = 120, 60
            Summary(
                lambda s: s.update(
                    exchange_memory_per_tile={"min(b)": 60, "avg(b)": 90.0, "max(b)": 120}
                )
            ),
        ),
        Case(
            "null category",
            loose_sql("vars_info", "UPDATE vars_info SET category = NULL WHERE size_bytes = 60"),
            Summary(
                lambda s: s.update(
                    exchange_memory_per_tile={  # b = 120, 30
                        "min(b)": 30,
                        "avg(b)": 75.0,
                        "max(b)": 120,
                    }
                )
            ),
        ),
        # Two categories of that name: the rows of both count (b = 120, 60, 30 + 1000).
        Case(
            "two internalExchangeCode categories",
            sql("UPDATE var_categories SET name = 'internalExchangeCode' WHERE id = 6"),
            Summary(
                lambda s: s.update(
                    exchange_memory_per_tile={"min(b)": 60, "avg(b)": 1210 / 3, "max(b)": 1030}
                )
            ),
        ),
        Case(
            "no internalExchangeCode category",
            sql("UPDATE var_categories SET name = 'renamed' WHERE id = 5"),
            Summary(
                lambda s: s.update(
                    exchange_memory_per_tile=dict.fromkeys(("min(b)", "avg(b)", "max(b)"))
                )
            ),
        ),
        Case(
            "null var_categories.name",
            loose_sql("var_categories", "UPDATE var_categories SET name = NULL WHERE id = 5"),
            Summary(
                lambda s: s.update(
                    exchange_memory_per_tile=dict.fromkeys(("min(b)", "avg(b)", "max(b)"))
                )
            ),
        ),
        Case(
            "null total",
            loose_sql(
                "memory_by_tile", "UPDATE memory_by_tile SET total = NULL WHERE total = 1201"
            ),
            Summary(
                lambda s: s.update(
                    allocated_memory={  # 1000, 900, 1100
                        "min(total)": 900,
                        "avg(total)": 1000.0,
                        "max(total)": 1100,
                    }
                )
            ),
        ),
        # Wrong storage classes.
        Case(
            "text cycles_base",
            _step_column(3, "cycles_base", "'soon'"),
            Error(r"step 3: steps_by_ipu.cycles_base is text 'soon', not a number"),
        ),
        Case(
            "text offsets concatenate",
            sql(
                "UPDATE steps_by_ipu SET cycles_base = 'a', active_cycles_from_min = 'b', "
                "active_cycles_to_max = 'c' WHERE step_id = 5"
            ),
            Error(r"step 5: steps_by_ipu.cycles_base is text 'a', not a number"),
        ),
        Case(
            "blob active_cycles_to_max",
            _step_column(6, "active_cycles_to_max", "x'00ff'"),
            Error(r"step 6: steps_by_ipu.active_cycles_to_max is a blob of 2 bytes"),
        ),
        Case(
            "text kernel cycles",
            _step_column(7, "cycles", "'many'"),
            Error(r"step 7: steps_by_ipu.cycles is text 'many', not a whole number"),
        ),
        Case(
            "real kernel active_tiles",
            _step_column(4, "active_tiles", "3.5"),
            Error(r"step 4: steps_by_ipu.active_tiles is the real number 3.5"),
        ),
        # cycles of a step that is no kernel are not used by the spec: not looked at.
        Case("text unused cycles", _step_column(5, "cycles", "'many'"), Summary()),
        Case(
            "text steps.id",
            loose_sql(
                "steps",
                "UPDATE steps SET id = 'nine' WHERE id = 9",
                "UPDATE steps_by_ipu SET step_id = 'nine' WHERE step_id = 9",
            ),
            Error(r"steps.id is text 'nine', not a whole number"),
        ),
        Case(
            "text size_bytes",
            sql("UPDATE vars_info SET size_bytes = 'big' WHERE size_bytes = 60"),
            Error(
                r"table 'vars_info', column 'size_bytes' holds text 'big' where a whole "
                r"number belongs"
            ),
        ),
        # Two faults: the start/end check (at opening, before the pass) is
        # reported before a fault the pass meets, and before one of the memory queries;
        # a fault of the pass is reported before one of the memory queries.
        Case(
            "text cycles_base and text kernel cycles",
            sql(
                "UPDATE steps_by_ipu SET cycles_base = 'soon' WHERE step_id = 3",
                "UPDATE steps_by_ipu SET cycles = 'many' WHERE step_id = 7",
            ),
            Error(r"step 3: steps_by_ipu.cycles_base is text 'soon', not a number"),
        ),
        Case(
            "text cycles_base and text size_bytes",
            sql(
                "UPDATE steps_by_ipu SET cycles_base = 'soon' WHERE step_id = 3",
                "UPDATE vars_info SET size_bytes = 'big' WHERE size_bytes = 60",
            ),
            Error(r"step 3: steps_by_ipu.cycles_base is text 'soon', not a number"),
        ),
        Case(
            "text kernel cycles and text total",
            sql(
                "UPDATE steps_by_ipu SET cycles = 'many' WHERE step_id = 7",
                "UPDATE memory_by_tile SET total = 'lots' WHERE total = 900",
            ),
            Error(r"step 7: steps_by_ipu.cycles is text 'many', not a whole number"),
        ),
        # A size of another category is not summed: not looked at.
        Case(
            "text unused size_bytes",
            sql("UPDATE vars_info SET size_bytes = 'big' WHERE size_bytes = 512"),
            Summary(),
        ),
        Case(
            "text total",
            sql("UPDATE memory_by_tile SET total = 'lots' WHERE total = 900"),
            Error(r"table 'memory_by_tile', column 'total' holds text 'lots'"),
        ),
        Case(
            "real total",
            sql("UPDATE memory_by_tile SET total = 900.5 WHERE total = 900"),
            Error(r"column 'total' holds the real number 900.5"),
        ),
        Case(
            "text kernel program",
            sql("UPDATE steps SET program = 'p34' WHERE id = 7"),
            Error(r"program 'p34' of the trace is not in PopVision's report"),
        ),
        # Negative and enormous numbers.
        Case(
            "negative cycles",
            _step_column(7, "cycles", "-410"),
            Summary(lambda s: kernel(s, 7).update(cycles=-410)),
        ),
        Case(
            "negative cycles_base",
            _step_column(4, "cycles_base", "-1000"),
            # step 4: start -1000 + 10, end -1000 + 280; span 1200 - (-990)
            Summary(
                lambda s: (kernel(s, 4).update(start=-990, end=-720), s.update(device_spans=[2190]))
            ),
        ),
        Case(
            "beyond 2**63 as REAL",
            _step_column(7, "cycles", "1180591620717411303424.0"),
            Error(
                r"step 7: steps_by_ipu.cycles is the real number 1\.1805916207174113e\+21, "
                r"not a whole number"
            ),
        ),
        # A kernel outside any inference (step 12 after the output began) whose start is
        # a REAL beyond 2**63: the kernel's start is refused.
        Case(
            "beyond 2**63 as REAL, in a kernel's start",
            _late_kernel_start,
            Error(
                r"step 12: its start \(cycles_base \+ active_cycles_from_min\) is the "
                r"real number 1\.1805916207174113e\+21, not a whole number"
            ),
        ),
        Case(
            "beyond 2**63 as REAL, in a span only",
            _step_column(6, "cycles_base", "1180591620717411303424.0"),
            Error(r"device span of the inference whose input arrived at step 2 is the real"),
        ),
        # step 9: base 2**62, to_max 2**62 -> end 2**63, beyond SQLite's 64-bit sum, which
        # gives a REAL: no whole number for the span.
        Case(
            "start and end beyond 2**63",
            sql(
                "UPDATE steps_by_ipu SET cycles_base = 4611686018427387904, "
                "active_cycles_to_max = 4611686018427387904 WHERE step_id = 9"
            ),
            Error(
                r"the device span of the inference whose input arrived at step 2 is the "
                r"real number 9\.2233720368547\d+e\+18, not a whole number"
            ),
        ),
        # ... and a start beyond 2**63 on a step no rule uses is not looked at (step 11).
        Case(
            "start beyond 2**63 unused",
            sql("UPDATE steps_by_ipu SET cycles_base = 9223372036854775807 WHERE step_id = 11"),
            Summary(),
        ),
        Case(
            "exchange code sum beyond 64 bits",
            sql(
                "UPDATE vars_info SET size_bytes = 9223372036854775807 "
                "WHERE size_bytes IN (100, 20)"
            ),
            Error(r"a sum overflows 64-bit integers"),
        ),
        # Repeated rows.
        Case(
            "repeated program id",
            loose_sql("programs", "INSERT INTO programs SELECT * FROM programs WHERE id = 34"),
            Error(r"table 'programs' has more than one row with id 34"),
        ),
        Case(
            "repeated compute set",
            loose_sql(
                "compute_sets",
                "INSERT INTO compute_sets SELECT * FROM compute_sets WHERE compute_set = 2",
            ),
            Error(r"table 'compute_sets' has more than one row with compute_set 2"),
        ),
        Case(
            "repeated step",
            loose_sql("steps", "INSERT INTO steps SELECT * FROM steps WHERE id = 5"),
            Error(r"table 'steps' has more than one row with id 5"),
        ),
        # A repeated steps_by_ipu row is one more step row (the spec's join): K7 twice.
        Case(
            "repeated steps_by_ipu row",
            sql("INSERT INTO steps_by_ipu SELECT * FROM steps_by_ipu WHERE step_id = 7"),
            Summary(lambda s: s["kernels"].append(dict(kernel(s, 7)))),
        ),
        Case(
            "repeated vars_info row",
            sql("INSERT INTO vars_info SELECT * FROM vars_info WHERE size_bytes = 30"),
            Summary(
                lambda s: s.update(
                    exchange_memory_per_tile={  # b = 120, 60, 60
                        "min(b)": 60,
                        "avg(b)": 80.0,
                        "max(b)": 120,
                    }
                )
            ),
        ),
        # Row order: steps_by_ipu written backwards. One row per step: nothing changes.
        Case(
            "rows reversed",
            sql(
                "CREATE TABLE r AS SELECT * FROM steps_by_ipu ORDER BY rowid DESC",
                "DELETE FROM steps_by_ipu",
                "INSERT INTO steps_by_ipu SELECT * FROM r",
                "DROP TABLE r",
            ),
            Summary(),
        ),
        # Odd names: still labels.
        Case(
            "1 MB name", rename_fc1(sql_text(LONG_NAME), LONG_NAME), Summary(renamed_fc1(LONG_NAME))
        ),
        Case(
            "name with newlines",
            rename_fc1(sql_text(NEWLINE_NAME), NEWLINE_NAME),
            Summary(renamed_fc1(NEWLINE_NAME)),
        ),
        Case(
            "name with control characters",
            rename_fc1("CAST(x'{}' AS TEXT)".format(CONTROL_NAME.encode().hex()), CONTROL_NAME),
            Summary(renamed_fc1(CONTROL_NAME)),
        ),
        Case(
            "name with invalid UTF-8",
            rename_fc1(
                "CAST(x'{}ff80c0{}' AS TEXT)".format(
                    b"/m/blocks/blocks.0/mlp/fc1/".hex(), b"/Convolve".hex()
                ),
                INVALID_UTF8_READ,
            ),
            Summary(renamed_fc1(INVALID_UTF8_READ)),
        ),
        Case(
            "name stored as a blob", rename_fc1("x'{}'".format(FC1.encode().hex()), FC1), Summary()
        ),
        Case(
            "name stored as a number",
            sql("UPDATE programs SET name = 42 WHERE id = 21"),
            Summary(lambda s: s.update(device_spans=[])),
        ),  # "42" delivers no input
        # pva.
        Case(
            "pva raises on openReport",
            edit_double(
                lambda d: d.update(
                    _test_open_error="report.cpp:42: bad magic\nin section 'programs'"
                )
            ),
            Error(
                r"PopVision could not open the report: report.cpp:42: bad magic in "
                r"section 'programs'$"
            ),
        ),
        Case(
            "pva unknown program types",
            edit_double(_unknown_types),
            # program 30 is no longer an exchange: no attention exchange to report
            Summary(lambda s: s.update(attention_exchanges=[])),
        ),
        Case(
            "codeBytesByTile of the wrong length",
            edit_double(_six_tiles),
            # [8, 0, 4, 12, 99, 1] on a 4-tile profile: max 99, mean 124 / 6
            Summary(lambda s: s["attention_exchanges"][0].update(maximum=99, mean=124 / 6)),
        ),
        Case(
            "compute set id out of range",
            edit_double(
                lambda d: d.update(computeSets=[c for c in d["computeSets"] if c["id"] != 3])
            ),
            Error(r"compute set 3 of the trace is not in PopVision's report"),
        ),
        Case(
            "negative compute set id",
            sql(
                "UPDATE compute_sets SET compute_set = -1 WHERE compute_set = 3",
                "UPDATE steps SET compute_set = -1 WHERE id = 7",
            ),
            Error(r"compute set -1 of the trace is not in PopVision's report"),
        ),
    ]
    # NULL in every column that can hold one, in every row: the oracle's answer.
    for table, columns in sorted(g_required().items()):
        for column in columns:
            cases.append(
                Case(
                    "null everywhere in {}.{}".format(table, column),
                    loose_sql(table, "UPDATE {} SET {} = NULL".format(table, column)),
                    Oracle(),
                )
            )
    return cases


def _late_kernel_start(folder: Path):
    # one-anchor's step 12 (/m/head/Convolve, after the output began) on the baseline:
    # with a single anchor the body runs to the end, so step 12 is a kernel. pva reads the
    # same file: compute set 5 renamed and compute set 6 added there too.
    def pva_side(double):
        _rename_compute_set(double, 5, "/m/blocks/blocks.1/mlp/fc2/Convolve")
        double["computeSets"].append({"id": 6, "name": "/m/head/Convolve", "vertices": [g.CONV]})

    edit_double(pva_side)(folder)
    sql(
        "UPDATE compute_sets SET name = '/m/blocks/blocks.1/mlp/fc2/Convolve' "
        "WHERE compute_set = 5",
        "INSERT INTO compute_sets VALUES (99, 6, '/m/head/Convolve', 1)",
        "INSERT INTO programs VALUES (0, 37, 'OnTileExecute_cs6', 0, 0)",
        "INSERT INTO steps VALUES (0, 12, 'OnTileExecute', 37, 6, 0)",
        "INSERT INTO steps_by_ipu VALUES (0, 12, 90, 1, 1180591620717411303424.0, 5, 5, "
        "100, 100, 0)",
    )(folder)


def _unknown_types(double):
    for program in double["programs"]:
        if program["id"] in (30, 31):
            program["type"] = "DoExchangeV2" if program["id"] == 30 else "NewKind"


def _six_tiles(double):
    for program in double["programs"]:
        if program["id"] == 30:
            program["codeBytesByTile"] = [8, 0, 4, 12, 99, 1]


def g_required():
    from extractor.core.profile import REQUIRED_COLUMNS

    return REQUIRED_COLUMNS


NO_STATS_B = dict.fromkeys(("min(b)", "avg(b)", "max(b)"))
EMPTY = {
    # no steps: a compile-only profile (the spec's table)
    "steps": lambda s: s.update(kernels=[], device_spans=[], qkv_executions=0),
    "steps_by_ipu": lambda s: s.update(kernels=[], device_spans=[], qkv_executions=0),
    # no program names: step 2 is not copyFromHost, so no inference; kernels keep
    # their compute set names
    "programs": lambda s: s.update(device_spans=[]),
    # names fall back to OnTileExecute_csN: no kernel, no anchor
    "compute_sets": lambda s: s.update(kernels=[], qkv_executions=0),
    "vars_info": lambda s: s.update(exchange_memory_per_tile=dict(NO_STATS_B)),
    "var_categories": lambda s: s.update(exchange_memory_per_tile=dict(NO_STATS_B)),
    "memory_by_tile": lambda s: s.update(
        allocated_memory=dict.fromkeys(("min(total)", "avg(total)", "max(total)"))
    ),
}
