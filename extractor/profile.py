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

# One row per (step, IPU row). The name is the compute set's when it has a non-empty one,
# else the program's, else "". SQLite joins: `steps.id` is the table's key, and for the
# joins on columns without an index it builds a transient one once, which is cheaper than
# loading `programs` and `compute_sets` into Python. Rows of one step keep their stored
# order (`steps_by_ipu.rowid`, where the table has one).
_STEP_ROWS = """
SELECT s.id, s.type, COALESCE(NULLIF(cs.name, ''), NULLIF(p.name, ''), ''),
       i.cycles, i.active_tiles,
       i.cycles_base + i.active_cycles_from_min,
       i.cycles_base + i.active_cycles_to_max,
       s.program, s.compute_set
FROM steps AS s
JOIN steps_by_ipu AS i ON i.step_id = s.id
LEFT JOIN compute_sets AS cs ON cs.compute_set = s.compute_set
LEFT JOIN programs AS p ON p.id = s.program
ORDER BY s.id{}
"""

# Per tile, the bytes of its exchange code; then min/avg/max over the tiles that have any.
# The category is resolved by a subquery so vars_info (millions of rows) is scanned once
# with no join.
_EXCHANGE_MEMORY = """
SELECT min(b), avg(b), max(b) FROM (
    SELECT sum(size_bytes) AS b FROM vars_info
    WHERE category IN (SELECT id FROM var_categories WHERE name = ?)
    GROUP BY tile
)
"""

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
        """Raw step rows in spec order: (step, kind, name, cycles, active_tiles, start, end,
        program, compute_set). Streamed: SQLite hands them over as they are read."""
        order = ", i.rowid" if self._steps_by_ipu_has_rowid else ""
        try:
            for row in self.db.execute(_STEP_ROWS.format(order)):
                yield row
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
