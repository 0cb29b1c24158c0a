"""`extract inspect`: what a profile holds, told without reading it all.

For a profile we have not seen: its SQLite tables with row counts and columns, whether
the tables and columns the extractor reads are there, whether `pva` can be imported, and
what it says of the report (Poplar version, profile format version).

Row counts must stay cheap on a 1 GB file. `count(*)` walks a table's whole b-tree, so it
is used only where the table is known to be small; a large table gets an estimate that
costs two b-tree descents (its rowid span), and the answer says which counts are
estimates. `exact=True` counts every table (it may read the whole file).
"""

import importlib
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..core.profile import REQUIRED_COLUMNS, Profile
from ..core.sqlitefile import SQL_ERRORS
from ..errors import one_line, shown_path
from ..escaping import terminal_text

#: A rowid table whose rowids span at most this many values is counted exactly: it holds
#: at most that many rows, so count(*) reads little.
EXACT_COUNT_LIMIT = 100000

# How a row count was found.
COUNTED = "count"  # SELECT count(*): exact
ROWID_SPAN = "rowid span"  # max(rowid) - min(rowid) + 1: an upper bound, exact without gaps
STAT1 = "sqlite_stat1"  # the row count ANALYZE last stored: an estimate
LOWER_BOUND = "lower bound"  # a table without rowid, counted up to the limit: more rows
NOT_COUNTED = "not counted"  # a virtual table: its module may not be loadable here
ESTIMATES = (ROWID_SPAN, STAT1, LOWER_BOUND)

_WITHOUT_ROWID = re.compile(r"\bWITHOUT\s+ROWID\b", re.IGNORECASE)
_VIRTUAL = re.compile(r"^\s*CREATE\s+VIRTUAL\s+TABLE\b", re.IGNORECASE)


def quote_identifier(name: str) -> str:
    return '"{}"'.format(name.replace('"', '""'))


def inspect_profile(path, exact: bool = False, use_pva: bool = True) -> dict:
    """Everything `extract inspect` reports, as a JSON-ready dict.

    Raises ProfileError when the file is missing, unreadable or not an SQLite database;
    a readable database that lacks the extractor's tables is reported, not an error.
    """
    path = Path(path)
    with Profile(path, check_schema=False) as profile:
        try:
            answer = _sql_facts(profile.db, path, exact)
        except SQL_ERRORS as exc:  # a damaged schema can make SQLite's message not UTF-8
            raise profile.error(exc) from exc
    answer["pva"], pva = pva_status() if use_pva else (_pva_not_asked(), None)
    answer["report"] = report_facts(pva, path) if pva is not None else None
    return answer


def _sql_facts(db, path: Path, exact: bool) -> dict:
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    masters = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\' ORDER BY name"
    ).fetchall()
    views = [
        name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'")
    ]  # listed, never run
    stat1 = _stat1_counts(db)
    tables = []
    for name, sql in masters:
        try:
            columns = [
                row[1] for row in db.execute("PRAGMA table_info({})".format(quote_identifier(name)))
            ]
        except sqlite3.OperationalError:
            if not _VIRTUAL.search(sql or ""):
                raise
            columns = None  # a virtual table whose module this SQLite lacks
        rows, method = _row_count(db, name, sql or "", columns or [], stat1, exact)
        tables.append(
            {
                "name": name,
                "rows": rows,
                "rows_estimated": method in ESTIMATES,
                "rows_method": method,
                "columns": columns,
            }
        )
    return {
        "profile": shown_path(path),
        "file_bytes": os.path.getsize(str(path)),
        "sqlite": {"page_size": page_size, "pages": pages, "library": sqlite3.sqlite_version},
        "tables": tables,
        "required": required_status(tables, views),
    }


# A stat's first field: ASCII digits only (str.isdigit also takes "\u00b2", which int()
# refuses, and any number of them), at most the 19 of a 64-bit row count.
_STAT1_ROWS = re.compile(r"([0-9]{1,19})(?: |\Z)")


def _stat1_counts(db) -> dict:
    """Table -> the row count ANALYZE stored in sqlite_stat1, when the file has one (a
    stat that does not start with such a count is passed over: the rows are counted)."""
    try:
        found = db.execute("SELECT tbl, stat FROM sqlite_stat1").fetchall()
    except sqlite3.OperationalError:  # no such table: never analysed
        return {}
    counts = {}
    for table, stat in found:
        text = str(stat) if isinstance(stat, int) else stat  # an INTEGER put by hand
        rows = _STAT1_ROWS.match(text) if isinstance(text, str) else None
        if rows is not None and int(rows.group(1)) < 2**63 and table not in counts:
            counts[table] = int(rows.group(1))
    return counts


def _rowid_alias(columns: List[str]) -> Optional[str]:
    """A name that reaches the rowid: one of its aliases that no column shadows."""
    taken = {column.lower() for column in columns}
    for alias in ("rowid", "_rowid_", "oid"):
        if alias not in taken:
            return alias
    return None


def _row_count(db, name, sql, columns, stat1, exact):
    """(rows, method): see the module's note on cost. rows is None when not counted."""
    table = quote_identifier(name)

    def count():
        return db.execute("SELECT count(*) FROM {}".format(table)).fetchone()[0], COUNTED

    if _VIRTUAL.search(sql):  # its module may not even be loadable here
        return None, NOT_COUNTED
    if exact:
        return count()
    alias = None if _WITHOUT_ROWID.search(sql) else _rowid_alias(columns)
    if alias is not None:
        # min() and max() of the rowid each descend the b-tree once.
        low = db.execute("SELECT min({}) FROM {}".format(alias, table)).fetchone()[0]
        if low is None:
            return 0, COUNTED
        high = db.execute("SELECT max({}) FROM {}".format(alias, table)).fetchone()[0]
        span = high - low + 1
        if span <= EXACT_COUNT_LIMIT:
            return count()
        return span, ROWID_SPAN
    # No rowid to measure by: count, but read no more than the limit's worth of rows.
    bounded = db.execute(
        "SELECT count(*) FROM (SELECT 1 FROM {} LIMIT {})".format(table, EXACT_COUNT_LIMIT + 1)
    ).fetchone()[0]
    if bounded <= EXACT_COUNT_LIMIT:
        return bounded, COUNTED
    if name in stat1:
        return stat1[name], STAT1
    return bounded, LOWER_BOUND


def required_status(tables: list, views=()) -> dict:
    """For each table the extractor reads: present, and which of its columns are missing.
    A required name that is one of `views` (or a virtual table) is a problem, as extract
    refuses it."""
    # As the extractor checks them: SQLite's table names ignore case, column names are
    # compared as written.
    columns_of = {table["name"].lower(): set(table["columns"] or ()) for table in tables}
    virtual = {table["name"].lower() for table in tables if table.get("rows_method") == NOT_COUNTED}
    views = {view.lower() for view in views}
    status, problems = [], []
    for name, needed in REQUIRED_COLUMNS.items():
        present = name.lower() in columns_of
        missing = [c for c in needed if c not in columns_of[name.lower()]] if present else []
        status.append({"table": name, "present": present, "missing_columns": missing})
        if not present and name.lower() in views:
            problems.append("{!r} is a view, not a table".format(name))
        elif not present:
            problems.append("no table {!r}".format(name))
        elif name.lower() in virtual:
            problems.append("{!r} is a virtual table, not a stored table".format(name))
        for column in missing:
            problems.append("table {!r} has no column {!r}".format(name, column))
    return {"ok": not problems, "problems": problems, "tables": status}


def _pva_not_asked() -> dict:
    return {"asked": False, "importable": None, "version": None, "module": None, "error": None}


def pva_status():
    """({asked, importable, version, module, error}, the module or None)."""
    try:
        pva = importlib.import_module("pva")
    except Exception as exc:  # ImportError, or the SDK's native library failing to load
        return (
            {
                "asked": True,
                "importable": False,
                "version": None,
                "module": None,
                "error": one_line("{}: {}".format(type(exc).__name__, exc)),
            },
            None,
        )
    version = getattr(pva, "__version__", None)
    return (
        {
            "asked": True,
            "importable": True,
            "version": str(version) if version is not None else None,
            "module": getattr(pva, "__file__", None),
            "error": None,
        },
        pva,
    )


def report_facts(pva, path: Path) -> dict:
    """What pva says of the report: Poplar version and format version, each or null.

    pva reads lazily, so each attribute is asked for on its own: one it cannot give is
    null and the reason is kept, and the others are still reported.
    """
    facts: Dict[str, Any] = {
        "opened": False,
        "poplar_version": None,
        "format_version": None,
        "unstable_format": None,
        "errors": [],
    }
    try:
        report = pva.openReport(str(path))
    except Exception as exc:  # pva's C++ core raises its own exception types
        facts["errors"].append("openReport: {}".format(one_line(exc)))
        return facts
    facts["opened"] = True
    facts.update(report_versions(report, facts["errors"]))
    return facts


def report_versions(report, errors: list) -> dict:
    """{poplar_version, format_version, unstable_format} of an open report. pva reads
    lazily, so each attribute is asked for on its own: one it cannot give is None and
    the reason is appended to `errors`."""

    def ask(what, get):
        try:
            return get()
        except Exception as exc:
            errors.append("{}: {}: {}".format(what, type(exc).__name__, one_line(exc)))
            return None

    facts: Dict[str, Any] = {
        "poplar_version": None,
        "format_version": None,
        "unstable_format": None,
    }
    poplar = ask("poplarVersion", lambda: report.poplarVersion.string)
    facts["poplar_version"] = str(poplar) if poplar is not None else None
    version = ask("version", lambda: report.version)
    if version is not None:
        numbers = ask(
            "version",
            lambda: "{}.{}.{}".format(int(version.major), int(version.minor), int(version.point)),
        )
        facts["format_version"] = numbers
        unstable = ask("version.isUnstableFormat", lambda: version.isUnstableFormat)
        facts["unstable_format"] = bool(unstable) if unstable is not None else None
    return facts


# --- text for people ------------------------------------------------------------------


def inspect_text(answer: dict) -> str:
    """The human-readable form of inspect_profile's answer. Table and column names, and
    whatever pva says, are the profile's: every line is written by
    `escaping.terminal_text`, so that none reaches the terminal as a control sequence."""
    lines = []
    sqlite = answer["sqlite"]
    lines.append(
        "{}: {:,} bytes, SQLite ({:,} pages of {:,} bytes)".format(
            answer["profile"], answer["file_bytes"], sqlite["pages"], sqlite["page_size"]
        )
    )
    required = answer["required"]
    if required["ok"]:
        lines.append("extractor's tables and columns: all present")
    else:
        lines.append(
            "extractor's tables and columns: MISSING: {}".format("; ".join(required["problems"]))
        )
    for entry in required["tables"]:
        if not entry["present"]:
            state = "missing"
        elif entry["missing_columns"]:
            state = "missing columns: " + ", ".join(entry["missing_columns"])
        else:
            state = "ok"
        lines.append("  {:<16} {}".format(entry["table"], state))

    tables = answer["tables"]
    estimated = any(t["rows_estimated"] for t in tables)
    lines.append("")
    lines.append(
        "tables ({}){}:".format(
            len(tables), ", ~ or > marks an estimated count" if estimated else ""
        )
    )
    names = [terminal_text(t["name"]) for t in tables]  # escaped before measuring
    width = max([len(name) for name in names] + [5])
    counts = [_count_text(t) for t in tables]
    count_width = max([len(c) for c in counts] + [4])
    lines.append(
        "  {:<{w}}  {:>{c}}  {}".format("table", "rows", "columns", w=width, c=count_width)
    )
    for table, name, count in zip(tables, names, counts):
        columns = (
            "(unknown: a virtual table this SQLite cannot open)"
            if table["columns"] is None
            else ", ".join(table["columns"])
        )
        lines.append("  {:<{w}}  {:>{c}}  {}".format(name, count, columns, w=width, c=count_width))
    methods = sorted({t["rows_method"] for t in tables if t["rows_method"] != COUNTED})
    for method in methods:
        lines.append("  {}: {}".format(method, _METHOD_NOTES[method]))

    lines.append("")
    lines.append(_pva_text(answer["pva"]))
    report = answer["report"]
    if report is not None:
        lines.extend(_report_text(report))
    return "".join(terminal_text(line) + "\n" for line in lines)


_METHOD_NOTES = {
    ROWID_SPAN: "~ counts are max(rowid) - min(rowid) + 1: at least the row count, and "
    "equal to it unless rowids have gaps (--exact counts them)",
    STAT1: "~ counts are those ANALYZE stored in sqlite_stat1 (--exact counts them)",
    LOWER_BOUND: "> counts are lower bounds: the table has no rowid to estimate by, and "
    "counting stopped there (--exact counts them)",
    NOT_COUNTED: "? marks a virtual table, never counted",
}


def _count_text(table: dict) -> str:
    if table["rows"] is None:
        return "?"
    text = "{:,}".format(table["rows"])
    if table["rows_method"] == LOWER_BOUND:
        return ">" + "{:,}".format(table["rows"] - 1)
    return "~" + text if table["rows_estimated"] else text


def _pva_text(status: dict) -> str:
    if not status["asked"]:
        return "pva: not asked (--no-pva)"
    if not status["importable"]:
        return "pva: not importable ({}); the Poplar SDK's enable.sh provides it".format(
            status["error"]
        )
    return "pva: importable, version {}, from {}".format(
        status["version"] or "unknown (the module has no __version__)",
        status["module"] or "an unknown place",
    )


def _report_text(report: dict) -> list:
    if not report["opened"]:
        return ["report: pva could not open it: {}".format("; ".join(report["errors"]))]
    format_version = report["format_version"] or "unknown"
    if report["unstable_format"]:
        format_version += " (unstable format)"
    lines = [
        "report: Poplar {}, profile format {}".format(
            report["poplar_version"] or "unknown", format_version
        )
    ]
    for error in report["errors"]:
        lines.append("  pva could not tell {}".format(error))
    return lines
