"""The SQL side of a profile: opened read-only, checked for the tables the spec lists.

Only the tables and columns of summary-spec.md are used; anything else in the file is
ignored. Aggregates are left to SQLite; step rows are streamed from a cursor.
"""

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from .errors import ProfileError

#: The tables and columns the extractor reads, and nothing more.
REQUIRED_COLUMNS = {
    "steps": ("id", "type", "program", "compute_set"),
    "steps_by_ipu": ("step_id", "cycles", "active_tiles", "cycles_base",
                     "active_cycles_from_min", "active_cycles_to_max"),
    "programs": ("id", "name"),
    "compute_sets": ("compute_set", "name"),
    "vars_info": ("tile", "category", "size_bytes"),
    "var_categories": ("id", "name"),
    "memory_by_tile": ("total",),
}

EXCHANGE_CODE_CATEGORY = "internalExchangeCode"

# One row per (step, IPU row), with the ids of the step's program and compute set; their
# names come from the two small tables, read once (`names`), and are joined in Python.
# Joining them here costs a lookup per row (compute_sets has no index on compute_set:
# SQLite builds an automatic one) and a new string per row for names that repeat every
# run: 1.9 s against 1.2 s for a million rows. EXPLAIN QUERY PLAN: SCAN i, SEARCH s USING
# INTEGER PRIMARY KEY, USE TEMP B-TREE FOR ORDER BY. The sort is kept: the spec orders by
# step id, rows of one step in their stored order (`i.rowid`, where the table has one),
# which the storage order does not promise; it costs a third of the query. Driving from
# steps instead (SCAN s) needs an automatic index on steps_by_ipu.step_id: 1.5x slower.
_STEP_ROWS = """
SELECT s.id, s.type, i.cycles, i.active_tiles,
       i.cycles_base + i.active_cycles_from_min,
       i.cycles_base + i.active_cycles_to_max,
       s.program, s.compute_set
FROM steps_by_ipu AS i
JOIN steps AS s ON s.id = i.step_id
ORDER BY s.id{}
"""

# Whole scans of small tables (a row per program, per compute set).
_PROGRAM_NAMES = "SELECT id, name FROM programs"
_COMPUTE_SET_NAMES = "SELECT compute_set, name FROM compute_sets"

# Per tile, the bytes of its exchange code; then min/avg/max over the tiles that have any.
# The category is resolved by a subquery so vars_info (millions of rows) is scanned once
# with no join (SCAN vars_info, LIST SUBQUERY); only the rows of that category reach the
# GROUP BY's temp B-tree, a few per tile, so its cost and memory stay small.
_EXCHANGE_MEMORY = """
SELECT min(b), avg(b), max(b) FROM (
    SELECT sum(size_bytes) AS b FROM vars_info
    WHERE category IN (SELECT id FROM var_categories WHERE name = ?)
    GROUP BY tile
)
"""

# One scan of a table of a row per tile.
_ALLOCATED_MEMORY = "SELECT min(total), avg(total), max(total) FROM memory_by_tile"


def _read_only_uri(path: Path) -> str:
    return "file:{}?mode=ro".format(quote(str(path.resolve()), safe="/"))


class Profile:
    """An open profile.pop, read-only. Use as a context manager, or call close().

    `check_schema=False` opens any SQLite file without requiring the spec's tables (for
    `extract inspect`); step_rows and the aggregates then need them to be present.
    """

    def __init__(self, path, check_schema: bool = True):
        self.path = Path(path)
        self._check_file()
        try:
            self.db = sqlite3.connect(_read_only_uri(self.path), uri=True)
        except sqlite3.Error as exc:
            raise self.error(exc)
        if not check_schema:
            return
        try:
            self._check_schema()
        except BaseException:
            self.db.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self) -> None:
        self.db.close()

    def error(self, exc) -> ProfileError:
        """A ProfileError naming this file, from an SQLite exception or a message."""
        if isinstance(exc, sqlite3.Error):
            message = str(exc)
            if message == "file is not a database":
                message = "not an SQLite database"
            elif "malformed" in message:
                message = "damaged or truncated SQLite file ({})".format(message)
            else:
                message = "SQLite: {}".format(message)
            return ProfileError(self.path, message)
        return ProfileError(self.path, str(exc))

    def _check_file(self) -> None:
        if not self.path.exists():
            problem = "no such file" if not os.path.islink(str(self.path)) else "broken symbolic link"
            raise ProfileError(self.path, problem)
        if self.path.is_dir():
            raise ProfileError(self.path, "is a directory, not a profile")
        if not os.access(str(self.path), os.R_OK):
            raise ProfileError(self.path, "permission denied")

    def _check_schema(self) -> None:
        try:
            for table, columns in REQUIRED_COLUMNS.items():
                present = {row[1] for row in self.db.execute(
                    'PRAGMA table_info("{}")'.format(table))}
                if not present:
                    raise ProfileError(self.path, "no table {!r}: not a PopVision profile, "
                                       "or an unknown version".format(table))
                for column in columns:
                    if column not in present:
                        raise ProfileError(self.path, "table {!r} has no column {!r}".format(
                            table, column))
            self._steps_by_ipu_has_rowid = self._has_rowid("steps_by_ipu")
        except sqlite3.Error as exc:
            raise self.error(exc)

    def _has_rowid(self, table: str) -> bool:
        try:
            self.db.execute('SELECT rowid FROM "{}" LIMIT 0'.format(table))
            return True
        except sqlite3.OperationalError:
            return False

    def step_rows(self):
        """Raw step rows in spec order: (step, kind, cycles, active_tiles, start, end,
        program, compute_set). Streamed: SQLite hands them over as they are read."""
        order = ", i.rowid" if self._steps_by_ipu_has_rowid else ""
        try:
            for row in self.db.execute(_STEP_ROWS.format(order)):
                yield row
        except sqlite3.Error as exc:
            raise self.error(exc)

    def names(self):
        """({program id: name}, {compute set id: name}), for joining to the step rows.
        A NULL id names nothing (as in SQL, where it joins no row)."""
        try:
            return tuple({key: name for key, name in self.db.execute(sql) if key is not None}
                         for sql in (_PROGRAM_NAMES, _COMPUTE_SET_NAMES))
        except sqlite3.Error as exc:
            raise self.error(exc)

    def exchange_memory_per_tile(self) -> dict:
        low, mean, high = self._one_row(_EXCHANGE_MEMORY, (EXCHANGE_CODE_CATEGORY,))
        return {"min(b)": low, "avg(b)": mean, "max(b)": high}

    def allocated_memory(self) -> dict:
        low, mean, high = self._one_row(_ALLOCATED_MEMORY)
        return {"min(total)": low, "avg(total)": mean, "max(total)": high}

    def _one_row(self, sql: str, parameters=()):
        try:
            return self.db.execute(sql, parameters).fetchone()
        except sqlite3.Error as exc:
            raise self.error(exc)
