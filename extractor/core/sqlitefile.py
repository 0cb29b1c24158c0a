"""An SQLite file opened read-only, after the checks SQLite itself would not make.

Before SQLite reads a byte: that the path is a readable regular file (not a directory, a
FIFO, a device, a broken or looping link), that its header is SQLite's and its length the
header's (not truncated), and that no write-ahead log is beside it (reading one would write
beside the input). After: SQLite's errors in words (locked, a hot journal beside it,
damaged), and the checks of a table's storage and keys that any reader of the file's
tables makes (a view is not a table; a key names one row). The spec's tables and queries
are profile.py's (`Profile` is an `SQLiteFile`).
"""

import errno
import os
import sqlite3
from pathlib import Path
from typing import Any, NoReturn, Sequence, TypeVar, Union
from urllib.parse import quote

from ..deadline import raise_interrupted, watch_connection
from ..errors import ProfileError, StrPath
from ..inputs import NotRegular, not_regular, open_regular

#: What a sum beyond SQLite's 64-bit integers is called, in SQL (here) as in Python
#: (steps.sum64): the same words for the same fault of the profile.
SUM_OVERFLOWS = "a sum overflows 64-bit integers: values too large for a real profile (damaged?)"

# A name's entry in the schema, as SQLite finds it (table names ignore ASCII case).
_SCHEMA_ENTRY = (
    "SELECT type, sql FROM sqlite_master WHERE type IN ('table', 'view') "
    "AND name = ? COLLATE NOCASE"
)

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


def lenient_text(data: bytes) -> str:
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


_File = TypeVar("_File", bound="SQLiteFile")


class SQLiteFile:
    """An SQLite file, checked and opened read-only. Use as a context manager, or call
    close().

    `strict=False` (`extract inspect`): an empty or truncated file is left to SQLite (an
    empty file is an empty database to it); a write-ahead log beside it is still refused.
    """

    def __init__(self, path: StrPath, strict: bool = True):
        self.path = Path(path)
        self._check_file()
        wal = self._check_header(strict=strict)
        # A WAL-mode file read normally gets a -shm and -wal created beside it; with no
        # -wal there is nothing to merge, and `immutable` reads the file alone.
        self._uri = _read_only_uri(self.path, immutable=wal)
        self.db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self._uri, uri=True, timeout=BUSY_TIMEOUT)
            # Names with invalid UTF-8 (a damaged or foreign profile) are still labels.
            db.text_factory = lenient_text
            watch_connection(db)  # a running --timeout ends its queries too
            return db
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc

    def __enter__(self: _File) -> _File:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def error(self, exc: Union[BaseException, str]) -> ProfileError:
        """A ProfileError naming this file, from an SQLite exception or a message."""
        unreadable = ProfileError(
            self.path, "damaged SQLite file (SQLite's message about it is not readable text)"
        )
        if isinstance(exc, UnicodeDecodeError):  # Python 3.9+ on a non-UTF-8 message
            return unreadable
        if isinstance(exc, sqlite3.Error):
            message = str(exc)
            if message == "interrupted":  # by the progress handler: raise what asked it
                raise_interrupted()
            if not message.strip():  # Python 3.8 gives the error with no message
                return unreadable
            if message == "file is not a database":
                message = "not an SQLite database"
            elif "malformed" in message:
                message = "damaged or truncated SQLite file ({})".format(message)
            elif "database is locked" in message:
                message = (
                    "locked: another process is writing to it (waited {:g} s); try "
                    "again when it has finished".format(BUSY_TIMEOUT)
                )
            elif "attempt to write a readonly database" in message:
                message = (
                    "a hot journal ({}-journal) is beside it: a writer stopped "
                    "mid-transaction and SQLite must roll the file back before it can "
                    "be read, which extract never does (it does not write to its "
                    "input); open a copy of both files with sqlite3 to recover it".format(
                        self.path.name
                    )
                )
            elif "integer overflow" in message:
                message = SUM_OVERFLOWS
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
                problem = (
                    "broken symbolic link" if os.path.islink(str(self.path)) else "no such file"
                )
                raise ProfileError(self.path, problem) from None
            raise ProfileError(
                self.path, "cannot reach it: {}".format(exc.strerror or exc)
            ) from exc
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
        if not header.startswith(SQLITE_MAGIC[: len(header)]):
            raise ProfileError(self.path, "not an SQLite database")
        if len(header) < 100:
            raise ProfileError(
                self.path, "truncated: {} bytes, not even a whole SQLite header".format(len(header))
            )
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        # The page count is trusted only when written by a SQLite that keeps it (3.7.0+).
        if header[24:28] == header[92:96] and pages and size < page_size * pages:
            raise ProfileError(
                self.path,
                "truncated: {} bytes, where its SQLite header "
                "says {} pages of {} bytes ({} bytes)".format(
                    size, pages, page_size, pages * page_size
                ),
            )
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
        raise ProfileError(
            self.path,
            "a write-ahead log ({}) is {}: the profile is still "
            "being written, or its writer did not close it; reading it would "
            "write beside the input, which extract never does (checkpoint a "
            "copy with sqlite3 first)".format(log, where),
        )

    def _check_stored(self, table: str) -> None:
        """A table the spec requires must be a stored table. A view is a query run at
        each read (it can recurse for ever, or overflow), a virtual table a module's
        code: neither is what Poplar writes. Missing: left to the column check."""
        row = self.db.execute(_SCHEMA_ENTRY, (table,)).fetchone()
        if row is None:
            return
        kind, sql = row
        if kind == "view":
            raise ProfileError(
                self.path, "{!r} is a view, not a table: not a PopVision profile".format(table)
            )
        if (sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            raise ProfileError(
                self.path,
                "{!r} is a virtual table, not a stored table: not a PopVision profile".format(
                    table
                ),
            )

    def check_unique(self, table: str, column: str) -> None:
        """A key the spec joins on must name one row: a repeat would repeat step rows."""
        repeated = self.db.execute(
            'SELECT "{0}" FROM "{1}" WHERE "{0}" IS NOT NULL GROUP BY "{0}" '
            "HAVING count(*) > 1 LIMIT 1".format(column, table)
        ).fetchone()
        if repeated is not None:
            raise ProfileError(
                self.path,
                "table {!r} has more than one row with {} {}: {} must be unique".format(
                    table, column, _shown(repeated[0]), column
                ),
            )

    def _check_whole(self, table: str, column: str) -> None:
        """Steps are ordered and compared by id: an id must be a whole number (or NULL)."""
        row = self.db.execute(
            'SELECT "{0}" FROM "{1}" WHERE typeof("{0}") NOT IN '
            "('integer', 'null') LIMIT 1".format(column, table)
        ).fetchone()
        if row is not None:
            raise ProfileError(
                self.path,
                "{}.{} is {}, not a whole number".format(table, column, storage_class(row[0])),
            )

    def _is_rowid_alias(self, table: str, column: str) -> bool:
        # An INTEGER PRIMARY KEY column is the rowid: unique by construction.
        info = list(self.db.execute('PRAGMA table_info("{}")'.format(table)))
        keys = [row for row in info if row[5]]
        return (
            len(keys) == 1
            and keys[0][1] == column
            and str(keys[0][2]).upper() == "INTEGER"
            and self.has_rowid(table)
        )

    def has_rowid(self, table: str) -> bool:
        try:
            self.db.execute('SELECT rowid FROM "{}" LIMIT 0'.format(table))
            return True
        except sqlite3.OperationalError:
            return False

    def _not_whole(self, table: str, column: str) -> NoReturn:
        """Raise the error for a column found holding something else than whole numbers."""
        row = self._one_row(
            'SELECT "{0}" FROM "{1}" WHERE typeof("{0}") NOT IN '
            "('integer', 'null') LIMIT 1".format(column, table)
        )
        shown = storage_class(row[0]) if row else "a value"
        raise ProfileError(
            self.path,
            "table {!r}, column {!r} holds {} where a whole number belongs".format(
                table, column, shown
            ),
        )

    def _one_row(self, sql: str, parameters: Sequence[object] = ()) -> Any:
        try:
            return self.db.execute(sql, parameters).fetchone()
        except SQL_ERRORS as exc:
            raise self.error(exc) from exc
