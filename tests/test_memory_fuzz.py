"""A fuzz of `extract memory`'s SQL input: hostile `memory_by_tile` and `vars_info` rows
(NULLs, negatives, reals, text, blobs, huge numbers, tiles past the last, categories
without a name), in tables without types so that each value stays as drawn.

Each example, through the real CLI with `-o`: when every value is one the format page
accepts, memory.json is the oracle's (support/memory_oracle.py); otherwise one error
line naming the file, exit 1, and nothing written. Modest examples: CI's time is short
(`MEMORY_FUZZ_EXAMPLES` for a longer run, `MEMORY_FUZZ_SEED` to repeat one).
"""

import json
import sqlite3

from hypothesis import example, given
from hypothesis import strategies as st

from support.checks import json_bytes, one_error
from support.cli import invoke_extract
from support.fuzzruns import FuzzRuns
from support.memory_oracle import oracle_memory

RUNS = FuzzRuns("MEMORY_FUZZ", default=30)

HOSTILE = st.one_of(
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=4),
    st.binary(max_size=3),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
# Values a profile may hold (small, so that groups and ties form, and stray tiles)...
TOTAL = st.one_of(st.integers(min_value=0, max_value=1000), st.just(2**40))
TILE = st.one_of(st.integers(min_value=-2, max_value=9), st.none())
SIZE = st.one_of(st.integers(min_value=0, max_value=500), st.none())
CATEGORY = st.one_of(st.integers(min_value=0, max_value=5), st.none(), st.text(max_size=2))
# ... and, in about half the examples, one hostile value put in one place.
NEGATIVE = st.integers(min_value=-(2**63), max_value=-1)
PLACES = ["total", "tile", "size"]
NAMES = ["variable", "=1+1", "a|b*c", "caf\u00e9", None]


def _whole(value):
    return type(value) is int


def _acceptable(totals, rows):
    """Whether every value is one docs/formats/memory.md accepts (no error)."""
    if not all(_whole(t) and t >= 0 for t in totals):
        return False
    for tile, _category, size in rows:
        if tile is not None and not _whole(tile):
            return False
        if tile is None or tile < 0 or tile >= len(totals):
            continue  # a stray row: takes no part, its size not looked at
        if size is not None and not (_whole(size) and size >= 0):
            return False
    return True


def _write(path, totals, rows, names):
    db = sqlite3.connect(str(path))
    with db:
        db.execute("CREATE TABLE memory_by_tile (tile, total, gaps)")
        db.execute("CREATE TABLE vars_info (var, tile, category, size_bytes)")
        db.execute("CREATE TABLE var_categories (id INTEGER PRIMARY KEY, name)")
        db.executemany(
            "INSERT INTO memory_by_tile VALUES (?, ?, 0)", [(i, t) for i, t in enumerate(totals)]
        )
        db.executemany("INSERT INTO vars_info VALUES (0, ?, ?, ?)", rows)
        db.executemany(
            "INSERT INTO var_categories VALUES (?, ?)", [(i, n) for i, n in enumerate(names)]
        )
    db.close()


@RUNS.seeded
@RUNS.settings
@given(
    totals=st.lists(TOTAL, max_size=8),
    rows=st.lists(st.tuples(TILE, CATEGORY, SIZE), max_size=16),
    hostile=st.one_of(
        st.none(),
        st.tuples(st.sampled_from(PLACES), st.integers(0, 15), st.one_of(HOSTILE, NEGATIVE)),
    ),
    named=st.integers(min_value=0, max_value=len(NAMES)),
    top=st.integers(min_value=0, max_value=3),
    limit=st.one_of(st.none(), st.integers(min_value=1, max_value=2**41)),
)
# Besides the drawn examples, one of each kind of refusal, every run.
@example([5, 7], [(0, 1, 3), (1, 1, 4)], ("size", 1, -3), 2, 1, None)
@example([5, 7], [(0, 1, 3)], ("total", 1, None), 2, 1, None)
@example([5, 7], [(0, 1, 3)], ("tile", 0, "one"), 2, 1, 6)
@example([5, 7], [(0, 1, 3), (1, 2, 4)], ("size", 0, 1.5), 2, 1, None)
def test_hostile_rows_give_the_oracles_file_or_one_error_line(
    tmp_path_factory, totals, rows, hostile, named, top, limit
):
    if hostile is not None:
        place, index, value = hostile
        if place == "total" and totals:
            totals[index % len(totals)] = value
        elif rows:
            tile, category, size = rows[index % len(rows)]
            rows[index % len(rows)] = (
                (value, category, size) if place == "tile" else (tile, category, value)
            )
    folder = tmp_path_factory.mktemp("memory")
    profile = folder / "profile.pop"
    _write(profile, totals, rows, NAMES[:named])
    before = profile.read_bytes()
    out = folder / "memory.json"
    args = ["memory", str(profile), "--no-pva", "-f", "json", "-o", str(out), "--top", str(top)]
    if limit is not None:
        args += ["--bytes-per-tile", str(limit)]
    result = invoke_extract(*args, pva=False)
    assert profile.read_bytes() == before  # the input is never changed
    if _acceptable(totals, rows):
        assert result.code == 0, result
        assert out.read_bytes() == json_bytes(
            oracle_memory(profile, None, top=top, bytes_per_tile=limit)
        )
        json.loads(out.read_bytes())  # strict JSON: no NaN can be in it
    else:
        one_error(result, 1, str(profile))
        assert not out.exists()
        assert sorted(p.name for p in folder.iterdir()) == ["profile.pop"]
