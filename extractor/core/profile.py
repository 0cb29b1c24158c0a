"""The SQL side of a profile: the spec's tables checked, and the spec's queries.

The file's own checks, before and after SQLite opens it, are sqlitefile.py's. Only the
tables and columns of docs/formats/summary.md are used; anything else in the file is ignored.
Aggregates are left to SQLite; step rows are streamed from a cursor.
"""

import itertools
import sqlite3
from typing import Any, Generator, Iterable, List, Optional, Tuple

from ..errors import ProfileError, StrPath
from .model import ALLOCATED_MEMORY_FIELDS, EXCHANGE_MEMORY_FIELDS
from .sqlitefile import SQL_ERRORS, SQLiteFile, lenient_text, storage_class

#: The tables and columns the extractor reads, and nothing more.
REQUIRED_COLUMNS = {
    "steps": ("id", "type", "program", "compute_set"),
    "steps_by_ipu": (
        "step_id",
        "cycles",
        "active_tiles",
        "cycles_base",
        "active_cycles_from_min",
        "active_cycles_to_max",
    ),
    "programs": ("id", "name"),
    "compute_sets": ("compute_set", "name"),
    "vars_info": ("tile", "category", "size_bytes"),
    "var_categories": ("id", "name"),
    "memory_by_tile": ("total",),
}

#: A row of `Profile.step_rows`: (step, kind, cycles, program, compute_set, active_tiles,
#: start, end), as SQLite gives them (a column may hold any storage class: the reader
#: checks what it uses); `step_row_batches(times=False)`: the first five only.
RawStepRow = Tuple[Any, ...]

#: The tables the step rows come from (all blocks.json needs).
STEP_TABLES = ("steps", "steps_by_ipu", "programs", "compute_sets")

EXCHANGE_CODE_CATEGORY = "internalExchangeCode"

# More to say of a missing table than "not a PopVision profile".
_MISSING_HINTS = {
    "vars_info": " (or one made without autoReport.outputLoweredVars, which writes the "
    "per-tile variables: profile again with it set to true)",
}

# One row per (step, IPU row), with the ids of the step's program and compute set; their
# names come from the two small tables, read once (`names`), and are joined in Python.
# Joining them here costs a lookup per row (compute_sets has no index on compute_set:
# SQLite builds an automatic one) and a new string per row for names that repeat every
# run. Driving from steps instead (SCAN s) needs an automatic index on
# steps_by_ipu.step_id. Both are slower (BENCHMARKS.md, query plans).
#
# The spec's order is by step id, rows of one step in their stored order (`i.rowid`).
# ORDER BY s.id, i.rowid gives it on any file (EXPLAIN QUERY PLAN: SCAN i, SEARCH s USING
# INTEGER PRIMARY KEY, USE TEMP B-TREE FOR ORDER BY); the sort is a third of the query.
# Where steps_by_ipu is stored in step order, as Poplar writes it, ORDER BY i.rowid gives
# the same rows in the same order with no sort (SCAN i, SEARCH s; BENCHMARKS.md has the
# figures), but SQLite cannot know that: the reader checks it row by row and falls back
# to the sorted query (`step_row_batches(stored_order=True)`).
_STEP_ROWS = """
SELECT s.id, s.type, i.cycles, s.program, s.compute_set, i.active_tiles,
       i.cycles_base + i.active_cycles_from_min,
       i.cycles_base + i.active_cycles_to_max
FROM steps_by_ipu AS i
JOIN steps AS s ON s.id = i.step_id{}
ORDER BY {}
"""

# The same rows with only what blocks.json needs (no tiles, start or end: no sums per
# row; each more column costs as much as a fifth of the loop over the rows).
_BODY_ROWS = """
SELECT s.id, s.type, i.cycles, s.program, s.compute_set
FROM steps_by_ipu AS i
JOIN steps AS s ON s.id = i.step_id{}
ORDER BY {}
"""

# The rows of a range of steps (one body, for extract diff): a filter on i.step_id is
# tested before the join, in the scan of steps_by_ipu.
_STEP_RANGE = "\nWHERE i.step_id >= ?{}"

# Whole scans of small tables (a row per program, per compute set). A name stored as a
# number or a blob is still a label: read as SQLite's text of it.
_PROGRAM_NAMES = "SELECT id, CAST(name AS TEXT) FROM programs"
_COMPUTE_SET_NAMES = "SELECT compute_set, CAST(name AS TEXT) FROM compute_sets"

# start and end are summed by SQLite, which reads text or a blob as a number (0 for
# 'abc'): one look at the three columns refuses that first. SQLite sorts text and blobs
# after every number, so only they (and REALs beyond 64 bits) exceed the largest
# integer: a scan with no function call per value (SCAN steps_by_ipu), at opening.
_START_END_PARTS = ("cycles_base", "active_cycles_from_min", "active_cycles_to_max")
_MAYBE_NOT_NUMBERS = "SELECT 1 FROM steps_by_ipu WHERE {} LIMIT 1".format(
    " OR ".join("{} > 9223372036854775807".format(column) for column in _START_END_PARTS)
)

# Per tile, the bytes of its exchange code; then min/avg/max over the tiles that have any.
# The category's ids are looked up first (_CATEGORY_IDS) and bound: vars_info (millions of
# rows) is then scanned once with no join (SCAN vars_info), comparing each row's category
# with a constant, and only the rows of that category reach the GROUP BY's temp B-tree, a
# few per tile, so its cost and memory stay small. Resolving the name inside the query
# costs a probe of an ephemeral index per row (IN (SELECT ...), LIST SUBQUERY), and a
# scalar subquery (= (SELECT ...)) sits between the two (BENCHMARKS.md has the figures).
_CATEGORY_IDS = "SELECT id FROM var_categories WHERE name = ? AND id IS NOT NULL"
_EXCHANGE_MEMORY = """
SELECT min(b), avg(b), max(b), max(typeof(b) = 'real') FROM (
    SELECT sum(size_bytes) AS b FROM vars_info
    WHERE category {} AND tile IS NOT NULL
    GROUP BY tile
)
"""
_NO_ROWS = dict.fromkeys(EXCHANGE_MEMORY_FIELDS)

# One scan of a table of a row per tile; the last column: a total is not a whole number.
_ALLOCATED_MEMORY = """
SELECT min(total), avg(total), max(total), max(typeof(total) NOT IN ('integer', 'null'))
FROM memory_by_tile
"""


class Profile(SQLiteFile):
    """An open profile.pop, read-only. Use as a context manager, or call close().

    The file's own checks (a regular file, SQLite's header, no log beside it, SQLite's
    errors in words) are `SQLiteFile`'s (sqlitefile.py); here, the spec's tables and
    queries. `check_schema=False` opens any SQLite file without requiring the spec's
    tables (for `extract inspect`); step_rows and the aggregates then need them to be
    present. `tables`: the names of REQUIRED_COLUMNS to require (default: all of them;
    blocks.json needs only the step tables, STEP_TABLES). `check_start_end=False`: a
    reader that never asks for start and end (`step_row_batches(times=False)`) does not
    have them checked.
    """

    def __init__(
        self,
        path: StrPath,
        check_schema: bool = True,
        tables: Optional[Iterable[str]] = None,
        check_start_end: bool = True,
    ):
        self._tables = tuple(REQUIRED_COLUMNS) if tables is None else tuple(tables)
        super().__init__(path, strict=check_schema)
        if not check_schema:
            return
        try:
            self._check_schema()
            if check_start_end:
                self.check_start_end()
        except BaseException:
            self.db.close()
            raise

    def _check_schema(self) -> None:
        try:
            for table in self._tables:
                columns = REQUIRED_COLUMNS[table]
                self._check_stored(table)
                present = {
                    row[1] for row in self.db.execute('PRAGMA table_info("{}")'.format(table))
                }
                if not present:
                    raise ProfileError(
                        self.path,
                        "no table {!r}: not a PopVision profile, or an unknown version{}".format(
                            table, _MISSING_HINTS.get(table, "")
                        ),
                    )
                for column in columns:
                    if column not in present:
                        raise ProfileError(
                            self.path, "table {!r} has no column {!r}".format(table, column)
                        )
            if "steps" not in self._tables:  # a reader of other tables (extract memory)
                return
            self._steps_by_ipu_has_rowid = self.has_rowid("steps_by_ipu")
            self.check_unique("programs", "id")
            self.check_unique("compute_sets", "compute_set")
            self._steps_id_is_rowid = self._is_rowid_alias("steps", "id")
            if not self._steps_id_is_rowid:
                self.check_unique("steps", "id")
                self._check_whole("steps", "id")
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def check_start_end(self) -> None:
        """Refuse text or a blob where a start or end ingredient belongs (one scan of
        steps_by_ipu), at opening: before the pass, whose errors come after it."""
        try:
            if self.db.execute(_MAYBE_NOT_NUMBERS).fetchone() is not None:
                self._not_number()
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def _not_number(self) -> None:
        """Raise the error for the first steps_by_ipu row with text or a blob in a
        start/end ingredient; none (only huge REALs): nothing to raise here."""
        test = " OR ".join("typeof({}) IN ('text', 'blob')".format(c) for c in _START_END_PARTS)
        row = self.db.execute(
            "SELECT step_id, {} FROM steps_by_ipu WHERE {} LIMIT 1".format(
                ", ".join(_START_END_PARTS), test
            )
        ).fetchone()
        for column, value in zip(_START_END_PARTS, row[1:] if row else ()):
            if isinstance(value, (str, bytes)):
                raise ProfileError(
                    self.path,
                    "step {}: steps_by_ipu.{} is {}, not a number".format(
                        row[0], column, storage_class(value)
                    ),
                )

    def step_rows(self) -> Generator[RawStepRow, None, None]:
        """Raw step rows in spec order: (step, kind, cycles, program, compute_set,
        active_tiles, start, end). Streamed: SQLite hands them over as they are read."""
        for batch in self.step_row_batches():
            yield from batch

    @property
    def can_read_in_stored_order(self) -> bool:
        """Whether `step_row_batches(stored_order=True)` reads without a sort: the
        rows have a rowid and each step is found by its key (steps.id is the rowid)."""
        return self._steps_by_ipu_has_rowid and self._steps_id_is_rowid

    def step_row_batches(
        self,
        size: int = 256,
        stored_order: bool = False,
        times: bool = True,
        steps: Optional[Tuple[int, Optional[int]]] = None,
    ) -> Generator[List[RawStepRow], None, None]:
        """The rows of `step_rows` in lists of up to `size`, for a caller that loops over
        a million of them: a list is looped over faster than a generator is resumed.

        `stored_order=True` (when `can_read_in_stored_order`) gives steps_by_ipu's rows
        in the order they are stored, unsorted: the spec's order only if the table is
        stored in step order, which the caller must check as the rows come (a step id
        smaller than the one before), and then read again without it. `times=False`:
        the first five columns only (no active_tiles, start or end: blocks.json needs
        none of them). `steps=(first, end)`: only the rows with first <= step < end
        (end None: to the end of the trace), sorted."""
        where = ""
        values: List[int] = []
        if steps is not None:
            first, end = steps
            where = _STEP_RANGE.format("" if end is None else " AND i.step_id < ?")
            values = [first] if end is None else [first, end]
        if stored_order and self.can_read_in_stored_order and steps is None:
            order = "i.rowid"
        else:
            order = "s.id, i.rowid" if self._steps_by_ipu_has_rowid else "s.id"
        sql = (_STEP_ROWS if times else _BODY_ROWS).format(where, order)
        done = 0
        try:
            # Fast path: SQLite's text taken as valid UTF-8. A kind that is not (met
            # rarely) restarts the query with the lenient reader, after the rows given.
            self.db.text_factory = str
            try:
                cursor = self.db.execute(sql, values)
                while True:
                    batch = cursor.fetchmany(size)
                    if not batch:
                        return
                    done += len(batch)
                    yield batch
            finally:
                self.db.text_factory = lenient_text
        except sqlite3.OperationalError as exc:
            if "decode to UTF-8" not in str(exc):
                raise self.error(exc) from exc
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc
        try:
            cursor = self.db.execute(sql, values)
            for _ in itertools.islice(cursor, done):
                pass
            while True:
                batch = cursor.fetchmany(size)
                if not batch:
                    return
                yield batch
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def tile_count(self) -> int:
        """The rows of memory_by_tile: one per tile."""
        return int(self._one_row("SELECT count(*) FROM memory_by_tile")[0])

    def names(self) -> Tuple[dict, dict]:
        """({program id: name}, {compute set id: name}), for joining to the step rows.
        A NULL id names nothing (as in SQL, where it joins no row)."""
        try:
            programs, compute_sets = (
                {key: name for key, name in self.db.execute(sql) if key is not None}
                for sql in (_PROGRAM_NAMES, _COMPUTE_SET_NAMES)
            )
            return programs, compute_sets
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def has_vars_info_rows(self) -> bool:
        """Whether vars_info holds any row (Poplar writes its per-tile variables only
        with autoReport.outputLoweredVars, it seems). One b-tree descent."""
        return self._one_row("SELECT EXISTS (SELECT 1 FROM vars_info)")[0] == 1

    def exchange_memory_per_tile(self) -> dict:
        try:
            ids = [row[0] for row in self.db.execute(_CATEGORY_IDS, (EXCHANGE_CODE_CATEGORY,))]
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc
        if not ids:  # no such category: no row can be of it
            return dict(_NO_ROWS)
        test = "= ?" if len(ids) == 1 else "IN ({})".format(", ".join("?" * len(ids)))
        low, mean, high, not_whole = self._one_row(_EXCHANGE_MEMORY.format(test), ids)
        if not_whole:
            self._not_whole("vars_info", "size_bytes")
        return dict(zip(EXCHANGE_MEMORY_FIELDS, (low, mean, high)))

    def allocated_memory(self) -> dict:
        low, mean, high, not_whole = self._one_row(_ALLOCATED_MEMORY)
        if not_whole:
            self._not_whole("memory_by_tile", "total")
        return dict(zip(ALLOCATED_MEMORY_FIELDS, (low, mean, high)))
