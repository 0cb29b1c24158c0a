"""The SQL side of a profile: opened read-only, checked for the tables the spec lists.

Only the tables and columns of summary-spec.md are used; anything else in the file is
ignored. Aggregates are left to SQLite; step rows are streamed from a cursor.
"""

import errno
import itertools
import os
import sqlite3
from pathlib import Path
from typing import Any, Generator, Iterable, List, NoReturn, Optional, Sequence, Tuple, Union
from urllib.parse import quote

from ..errors import ProfileError, StrPath
from ..inputs import NotRegular, not_regular, open_regular
from .model import ALLOCATED_MEMORY_FIELDS, EXCHANGE_MEMORY_FIELDS

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

#: A row of `Profile.step_rows`: (step, kind, cycles, active_tiles, start, end, program,
#: compute_set), as SQLite gives them (a column may hold any storage class: the reader
#: checks what it uses); `step_row_batches(bodies=True)`: (step, kind, cycles, program,
#: compute_set).
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
SELECT s.id, s.type, i.cycles, i.active_tiles,
       i.cycles_base + i.active_cycles_from_min,
       i.cycles_base + i.active_cycles_to_max,
       s.program, s.compute_set
FROM steps_by_ipu AS i
JOIN steps AS s ON s.id = i.step_id
ORDER BY {}
"""

# The same rows with only what blocks.json needs (no start or end: no sums per row).
_BODY_ROWS = """
SELECT s.id, s.type, i.cycles, s.program, s.compute_set
FROM steps_by_ipu AS i
JOIN steps AS s ON s.id = i.step_id
ORDER BY {}
"""

# Whole scans of small tables (a row per program, per compute set). A name stored as a
# number or a blob is still a label: read as SQLite's text of it.
_PROGRAM_NAMES = "SELECT id, CAST(name AS TEXT) FROM programs"
_COMPUTE_SET_NAMES = "SELECT compute_set, CAST(name AS TEXT) FROM compute_sets"

# start and end are summed by SQLite, which reads text or a blob as a number (0 for
# 'abc'): one look at the three columns refuses that first. SQLite sorts text and blobs
# after every number, so only they (and REALs beyond 64 bits) exceed the largest
# integer: a scan with no function call per value (SCAN steps_by_ipu), at opening.
_START_END_PARTS = ("cycles_base", "active_cycles_from_min", "active_cycles_to_max")
_MAYBE_NOT_NUMBERS = "SELECT 1 FROM steps_by_ipu WHERE {} LIMIT 1".format(" OR ".join(
    "{} > 9223372036854775807".format(column) for column in _START_END_PARTS))

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

# A name's entry in the schema, as SQLite finds it (table names ignore ASCII case).
_SCHEMA_ENTRY = ("SELECT type, sql FROM sqlite_master WHERE type IN ('table', 'view') "
                 "AND name = ? COLLATE NOCASE")

# What a query can raise: SQLite's errors, and (on a damaged schema) a UnicodeDecodeError
# when Python decodes SQLite's own message about it.
SQL_ERRORS = (sqlite3.Error, UnicodeDecodeError)

# How long a reader waits for a writer's exclusive lock before saying "locked" (seconds).
BUSY_TIMEOUT = 1.0

SQLITE_MAGIC = b"SQLite format 3\x00"


def _read_only_uri(path: Path, immutable: bool = False) -> str:
    # The path's own bytes, percent-encoded: a name that is not UTF-8 is still a name.
    uri = "file:{}?mode=ro".format(quote(os.fsencode(str(path.resolve())), safe="/"))
    return uri + "&immutable=1" if immutable else uri


def _lenient_text(data: bytes) -> str:
    """Text as stored, with any invalid UTF-8 replaced by U+FFFD (names are labels)."""
    return data.decode("utf-8", "replace")


def _shown(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def storage_class(value: object) -> str:
    """How SQLite stored a value, in words, for messages."""
    if isinstance(value, str):
        return "text {}".format(_shown(value))
    if isinstance(value, bytes):
        return "a blob of {} bytes".format(len(value))
    if isinstance(value, float):
        return "the real number {!r}".format(value)
    return _shown(value)


class Profile:
    """An open profile.pop, read-only. Use as a context manager, or call close().

    `check_schema=False` opens any SQLite file without requiring the spec's tables (for
    `extract inspect`); step_rows and the aggregates then need them to be present.
    `tables`: the names of REQUIRED_COLUMNS to require (default: all of them; blocks.json
    needs only the step tables, STEP_TABLES). `check_start_end=False`: a reader that
    never asks for start and end (`step_row_batches(bodies=True)`) does not have them
    checked.
    """

    def __init__(self, path: StrPath, check_schema: bool = True,
                 tables: Optional[Iterable[str]] = None, check_start_end: bool = True):
        self._tables = tuple(REQUIRED_COLUMNS) if tables is None else tuple(tables)
        self.path = Path(path)
        self._check_file()
        wal = self._check_header(strict=check_schema)
        # A WAL-mode file read normally gets a -shm and -wal created beside it; with no
        # -wal there is nothing to merge, and `immutable` reads the file alone.
        self._uri = _read_only_uri(self.path, immutable=wal)
        self.db = self._connect()
        if not check_schema:
            return
        try:
            self._check_schema()
            if check_start_end:
                self.check_start_end()
        except BaseException:
            self.db.close()
            raise

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self._uri, uri=True, timeout=BUSY_TIMEOUT)
            # Names with invalid UTF-8 (a damaged or foreign profile) are still labels.
            db.text_factory = _lenient_text
            return db
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def __enter__(self) -> "Profile":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def error(self, exc: Union[BaseException, str]) -> ProfileError:
        """A ProfileError naming this file, from an SQLite exception or a message."""
        unreadable = ProfileError(self.path, "damaged SQLite file (SQLite's message about "
                                  "it is not readable text)")
        if isinstance(exc, UnicodeDecodeError):  # Python 3.9+ on a non-UTF-8 message
            return unreadable
        if isinstance(exc, sqlite3.Error):
            message = str(exc)
            if not message.strip():  # Python 3.8 gives the error with no message
                return unreadable
            if message == "file is not a database":
                message = "not an SQLite database"
            elif "malformed" in message:
                message = "damaged or truncated SQLite file ({})".format(message)
            elif "database is locked" in message:
                message = ("locked: another process is writing to it (waited {:g} s); try "
                           "again when it has finished".format(BUSY_TIMEOUT))
            elif "attempt to write a readonly database" in message:
                message = ("a hot journal ({}-journal) is beside it: a writer stopped "
                           "mid-transaction and SQLite must roll the file back before it can "
                           "be read, which extract never does (it does not write to its "
                           "input); open a copy of both files with sqlite3 to recover it"
                           .format(self.path.name))
            elif "integer overflow" in message:
                message = ("a sum overflows 64-bit integers: values too large for a real "
                           "profile (damaged?)")
            else:
                message = "SQLite: {}".format(message)
            return ProfileError(self.path, message)
        return ProfileError(self.path, str(exc))

    def _check_file(self) -> None:
        try:
            mode = os.stat(str(self.path)).st_mode
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ProfileError(self.path, "symbolic link loop") from None
            if exc.errno == errno.ENOENT:
                problem = ("broken symbolic link" if os.path.islink(str(self.path))
                           else "no such file")
                raise ProfileError(self.path, problem) from None
            raise ProfileError(self.path, "cannot reach it: {}".format(
                exc.strerror or exc)) from exc
        if self.path.is_dir():
            raise ProfileError(self.path, "is a directory, not a profile")
        kind = not_regular(mode)
        if kind is not None:  # a FIFO or a device: never opened to read
            raise ProfileError(self.path, kind)
        if not os.access(str(self.path), os.R_OK):
            raise ProfileError(self.path, "permission denied")

    def _check_header(self, strict: bool = True) -> bool:
        """Check the 100-byte SQLite header and the file's length; True for WAL mode.

        Not `strict` (`extract inspect`): an empty or truncated file is left to SQLite
        (an empty file is an empty database to it); a stray -wal is still refused."""
        try:
            with os.fdopen(open_regular(self.path), "rb") as handle:
                header = handle.read(100)
                size = os.fstat(handle.fileno()).st_size
        except NotRegular as exc:
            raise ProfileError(self.path, str(exc)) from exc
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                raise ProfileError(self.path, "permission denied") from None
            raise ProfileError(self.path, "cannot read: {}".format(exc.strerror or exc)) from exc
        if not strict:
            wal = len(header) >= 20 and header[18] == 2 and header[19] == 2
            if wal:
                self._refuse_a_wal()
            return wal
        if not header:
            raise ProfileError(self.path, "empty file (0 bytes): not an SQLite database")
        if not header.startswith(SQLITE_MAGIC[:len(header)]):
            raise ProfileError(self.path, "not an SQLite database")
        if len(header) < 100:
            raise ProfileError(self.path, "truncated: {} bytes, not even a whole SQLite "
                               "header".format(len(header)))
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        # The page count is trusted only when written by a SQLite that keeps it (3.7.0+).
        if header[24:28] == header[92:96] and pages and size < page_size * pages:
            raise ProfileError(self.path, "truncated: {} bytes, where its SQLite header "
                               "says {} pages of {} bytes ({} bytes)".format(
                                   size, pages, page_size, pages * page_size))
        wal = header[18] == 2 and header[19] == 2
        if wal:
            self._refuse_a_wal()
        return wal

    def _refuse_a_wal(self) -> None:
        """A WAL-mode profile with its log present is refused (it would be read
        `immutable`, without the log). SQLite keeps the log beside the file the path
        resolves to (a linked profile's target): both places are checked."""
        given = str(self.path)
        real = os.path.realpath(given)
        if os.path.lexists(given + "-wal"):
            log, where = self.path.name + "-wal", "beside it"
        elif real != os.path.abspath(given) and os.path.lexists(real + "-wal"):
            log = os.path.basename(real) + "-wal"
            where = "beside the file it resolves to, {}".format(real)
        else:
            return
        raise ProfileError(self.path, "a write-ahead log ({}) is {}: the profile is still "
                           "being written, or its writer did not close it; reading it would "
                           "write beside the input, which extract never does (checkpoint a "
                           "copy with sqlite3 first)".format(log, where))

    def _check_schema(self) -> None:
        try:
            for table in self._tables:
                columns = REQUIRED_COLUMNS[table]
                self._check_stored(table)
                present = {row[1] for row in self.db.execute(
                    'PRAGMA table_info("{}")'.format(table))}
                if not present:
                    raise ProfileError(self.path, "no table {!r}: not a PopVision profile, "
                                       "or an unknown version{}".format(
                                           table, _MISSING_HINTS.get(table, "")))
                for column in columns:
                    if column not in present:
                        raise ProfileError(self.path, "table {!r} has no column {!r}".format(
                            table, column))
            self._steps_by_ipu_has_rowid = self._has_rowid("steps_by_ipu")
            self._check_unique("programs", "id")
            self._check_unique("compute_sets", "compute_set")
            self._steps_id_is_rowid = self._is_rowid_alias("steps", "id")
            if not self._steps_id_is_rowid:
                self._check_unique("steps", "id")
                self._check_whole("steps", "id")
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def _check_stored(self, table: str) -> None:
        """A table the spec requires must be a stored table. A view is a query run at
        each read (it can recurse for ever, or overflow), a virtual table a module's
        code: neither is what Poplar writes. Missing: left to the column check."""
        row = self.db.execute(_SCHEMA_ENTRY, (table,)).fetchone()
        if row is None:
            return
        kind, sql = row
        if kind == "view":
            raise ProfileError(self.path, "{!r} is a view, not a table: not a PopVision "
                               "profile".format(table))
        if (sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            raise ProfileError(self.path, "{!r} is a virtual table, not a stored table: not "
                               "a PopVision profile".format(table))

    def check_start_end(self) -> None:
        """Refuse text or a blob where a start or end ingredient belongs (one scan of
        steps_by_ipu), at opening: before the pass, whose errors come after it."""
        try:
            if self.db.execute(_MAYBE_NOT_NUMBERS).fetchone() is not None:
                self._not_number()
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def _check_unique(self, table: str, column: str) -> None:
        """A key the spec joins on must name one row: a repeat would repeat step rows."""
        repeated = self.db.execute(
            'SELECT "{0}" FROM "{1}" WHERE "{0}" IS NOT NULL GROUP BY "{0}" '
            'HAVING count(*) > 1 LIMIT 1'.format(column, table)).fetchone()
        if repeated is not None:
            raise ProfileError(self.path, "table {!r} has more than one row with {} {}: "
                               "{} must be unique".format(table, column,
                                                         _shown(repeated[0]), column))

    def _check_whole(self, table: str, column: str) -> None:
        """Steps are ordered and compared by id: an id must be a whole number (or NULL)."""
        row = self.db.execute('SELECT "{0}" FROM "{1}" WHERE typeof("{0}") NOT IN '
                              "('integer', 'null') LIMIT 1".format(column, table)).fetchone()
        if row is not None:
            raise ProfileError(self.path, "{}.{} is {}, not a whole number".format(
                table, column, storage_class(row[0])))

    def _not_number(self) -> None:
        """Raise the error for the first steps_by_ipu row with text or a blob in a
        start/end ingredient; none (only huge REALs): nothing to raise here."""
        test = " OR ".join("typeof({}) IN ('text', 'blob')".format(c) for c in _START_END_PARTS)
        row = self.db.execute("SELECT step_id, {} FROM steps_by_ipu WHERE {} LIMIT 1".format(
            ", ".join(_START_END_PARTS), test)).fetchone()
        for column, value in zip(_START_END_PARTS, row[1:] if row else ()):
            if isinstance(value, (str, bytes)):
                raise ProfileError(self.path, "step {}: steps_by_ipu.{} is {}, not a "
                                   "number".format(row[0], column, storage_class(value)))

    def _is_rowid_alias(self, table: str, column: str) -> bool:
        # An INTEGER PRIMARY KEY column is the rowid: unique by construction.
        info = list(self.db.execute('PRAGMA table_info("{}")'.format(table)))
        keys = [row for row in info if row[5]]
        return (len(keys) == 1 and keys[0][1] == column
                and str(keys[0][2]).upper() == "INTEGER" and self._has_rowid(table))

    def _has_rowid(self, table: str) -> bool:
        try:
            self.db.execute('SELECT rowid FROM "{}" LIMIT 0'.format(table))
            return True
        except sqlite3.OperationalError:
            return False

    def step_rows(self) -> Generator[RawStepRow, None, None]:
        """Raw step rows in spec order: (step, kind, cycles, active_tiles, start, end,
        program, compute_set). Streamed: SQLite hands them over as they are read."""
        for batch in self.step_row_batches():
            yield from batch

    @property
    def can_read_in_stored_order(self) -> bool:
        """Whether `step_row_batches(stored_order=True)` reads without a sort: the
        rows have a rowid and each step is found by its key (steps.id is the rowid)."""
        return self._steps_by_ipu_has_rowid and self._steps_id_is_rowid

    def step_row_batches(self, size: int = 256, stored_order: bool = False,
                         bodies: bool = False
                         ) -> Generator[List[RawStepRow], None, None]:
        """The rows of `step_rows` in lists of up to `size`, for a caller that loops over
        a million of them: a list is looped over faster than a generator is resumed.

        `stored_order=True` (when `can_read_in_stored_order`) gives steps_by_ipu's rows
        in the order they are stored, unsorted: the spec's order only if the table is
        stored in step order, which the caller must check as the rows come (a step id
        smaller than the one before), and then read again without it. `bodies=True`:
        only (step, kind, cycles, program, compute_set), what blocks.json needs."""
        if stored_order and self.can_read_in_stored_order:
            order = "i.rowid"
        else:
            order = "s.id, i.rowid" if self._steps_by_ipu_has_rowid else "s.id"
        sql = (_BODY_ROWS if bodies else _STEP_ROWS).format(order)
        done = 0
        try:
            # Fast path: SQLite's text taken as valid UTF-8. A kind that is not (met
            # rarely) restarts the query with the lenient reader, after the rows given.
            self.db.text_factory = str
            try:
                cursor = self.db.execute(sql)
                while True:
                    batch = cursor.fetchmany(size)
                    if not batch:
                        return
                    done += len(batch)
                    yield batch
            finally:
                self.db.text_factory = _lenient_text
        except sqlite3.OperationalError as exc:
            if "decode to UTF-8" not in str(exc):
                raise self.error(exc) from exc
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc
        try:
            cursor = self.db.execute(sql)
            for _ in itertools.islice(cursor, done):
                pass
            while True:
                batch = cursor.fetchmany(size)
                if not batch:
                    return
                yield batch
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def names(self) -> Tuple[dict, dict]:
        """({program id: name}, {compute set id: name}), for joining to the step rows.
        A NULL id names nothing (as in SQL, where it joins no row)."""
        try:
            programs, compute_sets = (
                {key: name for key, name in self.db.execute(sql) if key is not None}
                for sql in (_PROGRAM_NAMES, _COMPUTE_SET_NAMES))
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

    def _not_whole(self, table: str, column: str) -> NoReturn:
        """Raise the error for a column found holding something else than whole numbers."""
        row = self._one_row('SELECT "{0}" FROM "{1}" WHERE typeof("{0}") NOT IN '
                            "('integer', 'null') LIMIT 1".format(column, table))
        shown = storage_class(row[0]) if row else "a value"
        raise ProfileError(self.path, "table {!r}, column {!r} holds {} where a whole number "
                           "belongs".format(table, column, shown))

    def _one_row(self, sql: str, parameters: Sequence[object] = ()) -> Any:
        try:
            return self.db.execute(sql, parameters).fetchone()
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc
