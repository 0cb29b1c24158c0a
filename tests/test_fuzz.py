"""Fuzzing: valid profiles mutated at the SQL level (tables and columns dropped, values
nulled and retyped, rows deleted, repeated and reordered, names rewritten), held against
tests/support/spec_oracle.py: extract gives the oracle's summary byte for byte, or -- where the
oracle refuses the data -- one line `<profile>: <problem>`; never another exception, a
hang, or a change to the input.

Bounded for CI (a few seconds). A longer run of the same properties:

    EXTRACT_FUZZ_EXAMPLES=8000 .venv/bin/python -m pytest -q tests/test_fuzz.py

(docs/fuzzing.md records the last long run). EXTRACT_FUZZ_SEED pins hypothesis's seed.
"""

import os
import shutil
import signal
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from test_bad_input import folder_state

from support import badinput as bad
from support.checks import json_bytes
from support.cli import pva_double, run_extract
from support.paths import EDGE
from support.spec_oracle import REQUIRED, Refused, Unreadable, oracle_summary

EXAMPLES = int(os.environ.get("EXTRACT_FUZZ_EXAMPLES", "60"))
CLI_EXAMPLES = max(4, EXAMPLES // 15)
LONG = "EXTRACT_FUZZ_EXAMPLES" in os.environ

TABLES = sorted(REQUIRED) + ["meta", "tiles", "runs", "debug_contexts"]
COLUMNS = sorted((t, c) for t, cs in REQUIRED.items() for c in cs)
ROWS = st.one_of(st.just(None), st.integers(1, 40))  # None: every row; else rowid k

SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
NAMES = st.one_of(
    SAFE_TEXT,
    st.sampled_from(
        [
            "/m/blocks/blocks.0/attn/qkv/Convolve",
            "copyFromHost",
            "copyToHost",
            "/m/blocks/blocks.0/mlp/fc1/Convolve",
            "",
            "\n",
            "/attn/qkv/\n",
        ]
    ),
    st.builds(lambda a, b: a + "/Convolve" + b, SAFE_TEXT, st.sampled_from(["", "\n", "x"])),
)
NEW_VALUES = st.one_of(
    st.just("NULL"),
    st.just("'text'"),
    st.just("x'00ff'"),
    st.just("1.5"),
    st.just("1e30"),
    st.just("-1"),
    st.just("0"),
    st.just("4611686018427387904"),
    st.just("9223372036854775807"),
    st.integers(-5, 2000).map(str),
    st.sampled_from(
        [
            "{c} + 1",
            "-{c}",
            "{c} * 1000003",
            "{c} || ''",
            "'x' || {c}",
            "CAST({c} AS BLOB)",
            "{c} + 0.5",
            "{c} * 1e19",
        ]
    ),
)

SET = st.tuples(st.just("set"), st.sampled_from(COLUMNS), NEW_VALUES, ROWS)
NAME = st.tuples(
    st.just("name"),
    st.sampled_from(
        [
            ("programs", "name"),
            ("compute_sets", "name"),
            ("steps", "type"),
            ("var_categories", "name"),
        ]
    ),
    NAMES,
    ROWS,
)
# Drops end every extraction at the schema check: drawn less often than value changes.
MUTATION = st.one_of(
    st.tuples(st.just("drop table"), st.sampled_from(TABLES)),
    st.tuples(st.just("drop column"), st.sampled_from(COLUMNS)),
    SET,
    SET,
    SET,
    NAME,
    NAME,
    st.tuples(st.just("delete"), st.sampled_from(sorted(REQUIRED)), ROWS),
    st.tuples(st.just("repeat"), st.sampled_from(sorted(REQUIRED)), ROWS),
    st.tuples(st.just("reorder"), st.sampled_from(sorted(REQUIRED)), st.integers(2, 97)),
)


def apply(profile: Path, mutations) -> None:
    db = sqlite3.connect(str(profile), isolation_level=None)
    try:
        for mutation in mutations:
            kind, target = mutation[0], mutation[1]
            table = target if isinstance(target, str) else target[0]
            exists = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            if not exists:
                continue
            columns = [r[1] for r in db.execute('PRAGMA table_info("{}")'.format(table))]
            if not isinstance(target, str) and target[1] not in columns:
                continue
            if kind == "drop table":
                db.execute("DROP TABLE {}".format(table))
                continue
            for statement in bad.loosen(table).split("; "):
                db.execute(statement)
            where = (
                ""
                if mutation[-1] is None or kind in ("drop column", "reorder")
                else " WHERE rowid = {}".format(mutation[-1])
            )
            if kind == "drop column":
                if len(columns) > 1:
                    db.execute("ALTER TABLE {} DROP COLUMN {}".format(table, target[1]))
            elif kind == "set":
                value = mutation[2].format(c=target[1])
                db.execute("UPDATE {} SET {} = {}{}".format(table, target[1], value, where))
            elif kind == "name":
                db.execute("UPDATE {} SET {} = ?{}".format(table, target[1], where), (mutation[2],))
            elif kind == "delete":
                db.execute("DELETE FROM {}{}".format(table, where))
            elif kind == "repeat":
                db.execute("INSERT INTO {0} SELECT * FROM {0}{1}".format(table, where))
            elif kind == "reorder":
                db.execute(
                    "CREATE TABLE shuffled AS SELECT * FROM {} ORDER BY (rowid * 7919) % {}".format(
                        table, mutation[2]
                    )
                )
                db.execute("DELETE FROM {}".format(table))
                db.execute("INSERT INTO {} SELECT * FROM shuffled".format(table))
                db.execute("DROP TABLE shuffled")
    finally:
        db.close()


@contextmanager
def time_limit(seconds: int):
    def hang(*_):
        raise TimeoutError("extraction took more than {} s: a hang".format(seconds))

    if not hasattr(signal, "SIGALRM"):  # not POSIX: the command test's timeout remains
        yield
        return
    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-bases")
    base = bad.write_base(root / "base")
    multi = root / "multi"
    multi.mkdir()
    for name in ("profile.pop", "pva-double.json"):
        shutil.copyfile(str(EDGE / "multi-ipu" / name), str(multi / name))
    return {"base": base, "multi-ipu": multi / "profile.pop"}


def fresh_copy(bases, which: str, folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(str(folder))
    folder.mkdir(parents=True)
    for name in ("profile.pop", "pva-double.json"):
        shutil.copyfile(str(bases[which].parent / name), str(folder / name))
    return folder / "profile.pop"


def maybe_seed(test):
    value = os.environ.get("EXTRACT_FUZZ_SEED")
    return seed(int(value))(test) if value else test


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)


@maybe_seed
@FUZZ_SETTINGS
@given(
    which=st.sampled_from(["base", "multi-ipu"]),
    mutations=st.lists(MUTATION, min_size=1, max_size=4),
)
def test_mutated_profiles_give_the_spec_summary_or_one_line(
    bases, tmp_path_factory, which, mutations
):
    pva = pva_double()
    from extractor import summarize
    from extractor.core.summary_json import summary_bytes
    from extractor.errors import ExtractorError

    folder = tmp_path_factory.getbasetemp() / "fuzz-case"
    profile = fresh_copy(bases, which, folder)
    apply(profile, mutations)
    before = folder_state(folder)
    try:
        expected = json_bytes(oracle_summary(profile, "p"))
    except Refused:
        expected = None
    with time_limit(30):
        try:
            got = summary_bytes(summarize(profile, pva=pva, profile_label="p").summary)
        except ExtractorError as exc:
            got = None
            message = str(exc)
            assert message.startswith(str(profile) + ": ") and "\n" not in message
    assert folder_state(folder) == before
    if expected is None:
        assert got is None, "the oracle refuses this profile, extract summarised it"
    else:
        assert got == expected, message if got is None else "a different summary"


@maybe_seed
@settings(FUZZ_SETTINGS, max_examples=CLI_EXAMPLES)
@given(
    which=st.sampled_from(["base", "multi-ipu"]),
    mutations=st.lists(MUTATION, min_size=1, max_size=4),
)
def test_mutated_profiles_through_the_command(bases, tmp_path_factory, which, mutations):
    folder = tmp_path_factory.getbasetemp() / "fuzz-cli"
    profile = fresh_copy(bases, which, folder)
    apply(profile, mutations)
    before = folder_state(folder)
    result = run_extract(profile, "-o", "-", timeout=60)  # a hang fails as a timeout
    assert folder_state(folder) == before
    assert "Traceback" not in result.stderr
    if result.code == 0:
        try:
            expected = json_bytes(oracle_summary(profile, str(profile)))
        except Refused:
            pytest.fail("the oracle refuses this profile, extract summarised it")
        assert result.stdout == expected
    else:
        assert result.code == 1, result
        errors = [line for line in result.stderr.splitlines() if line.startswith("extract: error")]
        assert errors == result.stderr.splitlines()[-1:] and len(errors) == 1, result
        assert errors[0].startswith("extract: error: {}: ".format(profile))
        assert "unexpected failure" not in errors[0]
        assert result.stdout == b""


@maybe_seed
@FUZZ_SETTINGS
@given(
    which=st.sampled_from(["base", "multi-ipu"]),
    flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 7)), min_size=1, max_size=40),
)
def test_flipped_bits_give_a_summary_of_what_sqlite_reads_or_one_line(
    bases, tmp_path_factory, which, flips
):
    """Byte-level damage: SQLite has no checksums, so a flip it cannot notice gives the
    summary of what it reads (the oracle's, read through the same SQLite); anything
    else must be the one-line error."""
    pva = pva_double()
    from extractor import summarize
    from extractor.core.summary_json import summary_bytes
    from extractor.errors import ExtractorError

    folder = tmp_path_factory.getbasetemp() / "fuzz-flip"
    profile = fresh_copy(bases, which, folder)
    data = bytearray(profile.read_bytes())
    for at, bit in flips:
        data[at % len(data)] ^= 1 << bit
    profile.write_bytes(bytes(data))
    before = folder_state(folder)
    with time_limit(30):
        try:
            got = summary_bytes(summarize(profile, pva=pva, profile_label="p").summary)
        except ExtractorError as exc:
            got = None
            assert str(exc).startswith(str(profile) + ": ") and "\n" not in str(exc)
    assert folder_state(folder) == before
    if got is not None:
        try:
            expected = json_bytes(oracle_summary(profile, "p"))
        except Unreadable:
            # Damage in pages only a whole-table read meets (extract reads what it needs):
            # SQLite has no checksums, so only the bytes rule can be checked.
            import json

            expected = json_bytes(json.loads(got))
        except Refused:
            pytest.fail("the oracle refuses this profile, extract summarised it")
        assert got == expected
