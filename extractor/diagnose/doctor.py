"""`extract doctor`: does extract read this profile right?

The summary rests on assumptions nobody has proven on a real profile: that pva's program
`_id` is the profile's `programs.id`, that `computeSets[i]` is the compute set with
`compute_sets.compute_set = i`, what Python type pva's numbers have, how its lists
behave, and that the profile holds the per-tile variables. Each check here tests one of
them on the user's own profile, against the SQL tables and the real `pva`, and says what
the answer means for the summary. The same check functions are what the contract tests
(tests/test_sdk_contract.py, marked `sdk`) assert on, so a developer on an SDK host and a
user with an installed wheel prove the same things.

A check is data (`Check`): a stable `name`, a `status` (`ok`, `warn`, `fail`,
`skipped`), a one-line `detail`, what it `means` for the summary, and `data` (the
numbers behind it, the first mismatches). Without pva the checks that need only SQL run
and the others are `skipped`, with the reason.

Costs: the SQL side reads the small tables whole and makes one grouped pass over
`steps_by_ipu` and one over `vars_info`; the pva side reads each program and compute set
the trace uses (names, vertex types, code bytes), and `computeSets` twice (to see
whether it is one object).
"""

import time
from typing import Any, Dict, List, NamedTuple, Optional

from .. import __version__
from ..errors import one_line, shown_path
from ..escaping import terminal_text
from ..core.profile import EXCHANGE_CODE_CATEGORY, Profile
from ..core.sqlitefile import SQL_ERRORS
from ..core.pvafacts import as_int
from ..core.summary import NO_LOWERED_VARS
from .inspection import pva_status, report_versions

OK, WARN, FAIL, SKIPPED = "ok", "warn", "fail", "skipped"
STATUSES = (OK, WARN, FAIL, SKIPPED)
#: The `format` value of `extract doctor --json`: bumped when a key changes meaning.
JSON_FORMAT = "extract-doctor/1"
#: Mismatches listed in a check's data (and the first few in its detail).
LISTED = 20
SHOWN = 3

#: The names of the checks, in the order they are run and reported.
CHECK_NAMES = ("pva", "report_opens", "versions", "program_ids_unique", "program_counts",
               "step_programs", "step_compute_sets", "compute_set_names", "code_bytes",
               "compute_sets_access", "steps_by_ipu_rows", "vars_info")


class Check(NamedTuple):
    """One check's answer."""

    name: str
    status: str
    detail: str
    means: str
    data: Dict[str, Any]

    def as_json(self) -> dict:
        return {"name": self.name, "status": self.status, "detail": self.detail,
                "means": self.means, "data": self.data}


def _check(name, status, detail, means, **data) -> Check:
    assert status in STATUSES and name in CHECK_NAMES
    return Check(name, status, one_line(detail), one_line(means), data)


# --------------------------------------------------------------------------- the two sides

class SqlSide(NamedTuple):
    """What the profile's tables say, read once."""

    program_names: dict  # programs.id -> name (as extract reads it)
    compute_set_names: dict  # compute_sets.compute_set -> name
    program_stats: tuple  # (rows, min(id), max(id)) of programs
    step_programs: list  # distinct (program, type) of steps with a program, by program
    on_tile_pairs: list  # distinct (program, compute_set) of OnTileExecute steps
    rows_per_step: list  # [(rows a step has in steps_by_ipu, steps with that many)]
    vars_info: tuple  # (rows, distinct tiles, internalExchangeCode rows)


def read_sql(path) -> SqlSide:
    """The SQL side of the checks. ProfileError (one line) for a file extract cannot
    read, as `extract` itself gives."""
    with Profile(path) as profile:
        program_names, compute_set_names = profile.names()
        db = profile.db
        try:
            program_stats = tuple(db.execute(
                "SELECT count(*), min(id), max(id) FROM programs").fetchone())
            step_programs = db.execute(
                "SELECT DISTINCT program, CAST(type AS TEXT) FROM steps "
                "WHERE program IS NOT NULL ORDER BY program").fetchall()
            on_tile = db.execute(
                "SELECT DISTINCT program, compute_set FROM steps WHERE type = "
                "'OnTileExecute' AND program IS NOT NULL AND compute_set IS NOT NULL "
                "ORDER BY program, compute_set").fetchall()
            rows_per_step = db.execute(
                "SELECT n, count(*) FROM (SELECT count(*) AS n FROM steps_by_ipu "
                "GROUP BY step_id) GROUP BY n ORDER BY n").fetchall()
            categories = [row[0] for row in db.execute(
                "SELECT id FROM var_categories WHERE name = ?", (EXCHANGE_CODE_CATEGORY,))]
            marks = ", ".join("?" * len(categories)) or "NULL"
            vars_info = tuple(db.execute(
                "SELECT count(*), count(DISTINCT tile), coalesce(sum(category IN ({})), 0) "
                "FROM vars_info".format(marks), categories).fetchone())
        except SQL_ERRORS as exc:
            raise profile.error(exc) from exc
    return SqlSide(program_names, compute_set_names, program_stats, step_programs,
                   on_tile, rows_per_step, vars_info)


class PvaSide:
    """One report opened with pva, kept referenced while its parts are used; programs
    and compute sets are each read once (`computeSets` a second time only by
    check_compute_sets_access)."""

    def __init__(self, pva, path):
        self.pva = pva
        self.report = pva.openReport(str(path))  # pybind11: a str, never a Path
        self.compilation = self.report.compilation
        self._programs: Optional[dict] = None
        self._order: List[int] = []
        self._compute_sets = None
        self.compute_sets_seconds: Optional[float] = None

    def programs(self) -> dict:
        """{id (a Python int): program}, read once; repeated ids keep the first, and
        `program_order` keeps every id as pva gave it."""
        if self._programs is None:
            found: Dict[int, Any] = {}
            for program in self.compilation.programs:
                key = as_int(program._id)
                self._order.append(key)
                found.setdefault(key, program)
            self._programs = found
        return self._programs

    @property
    def program_order(self) -> List[int]:
        self.programs()
        return self._order

    def compute_sets(self):
        if self._compute_sets is None:
            start = time.perf_counter()
            self._compute_sets = self.compilation.computeSets
            self.compute_sets_seconds = time.perf_counter() - start
        return self._compute_sets

    def compute_set(self, index):
        """computeSets[index], or None when pva has no such index."""
        if type(index) is not int or index < 0:
            return None
        try:
            return self.compute_sets()[index]
        except (IndexError, KeyError):
            return None

    def is_type(self, program, type_name: str) -> bool:
        return program.type == getattr(self.pva.Program.Type, type_name)


def _type_name(program) -> str:
    try:
        return str(program.type.name)
    except Exception as exc:
        return "<{}>".format(type(exc).__name__)


def _vertex_names(compute_set) -> List[str]:
    return [str(vertex.type.name) for vertex in compute_set.vertices]


def _plain(value):
    """An SQL value for JSON: ints, text and NULL as they are, anything else (a blob, a
    real) as its repr."""
    return value if value is None or type(value) in (int, str) else repr(value)


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit // 2] + "..." + text[-limit // 2:]


def _listed(items) -> str:
    shown = "; ".join(items[:SHOWN])
    return shown + ("; ..." if len(items) > SHOWN else "")


# --------------------------------------------------------------------------- the checks

def check_program_ids_unique(side: PvaSide) -> Check:
    order = side.program_order
    seen, repeated = set(), []
    for key in order:
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    if repeated:
        return _check("program_ids_unique", FAIL,
                      "{} program ids repeat among pva's {} programs: {}".format(
                          len(repeated), len(order), repeated[:SHOWN]),
                      "a program id names two programs in pva: the kernels' "
                      "max_exchange_code_bytes may come from the wrong one",
                      repeated=repeated[:LISTED], programs=len(order))
    return _check("program_ids_unique", OK, "pva's {} programs have {} distinct ids".format(
        len(order), len(seen)), "each program id names one pva program", programs=len(order))


def check_program_counts(sql: SqlSide, side: PvaSide) -> Check:
    rows, low, high = sql.program_stats
    ids = side.program_order
    pva = (len(ids), min(ids) if ids else None, max(ids) if ids else None)
    data = {"sql": {"programs": rows, "smallest_id": _plain(low), "largest_id": _plain(high)},
            "pva": {"programs": pva[0], "smallest_id": pva[1], "largest_id": pva[2]}}
    detail = "SQL: {} programs, ids {} to {}; pva: {} programs, ids {} to {}".format(
        rows, low, high, *pva)
    if (rows, low, high) == pva:
        return _check("program_counts", OK, detail, "both sides number the same programs "
                      "alike (as far as counts and end ids show)", **data)
    off_by = (pva[1] - low if pva[1] is not None and low is not None
              and type(low) is int else None)
    if rows == pva[0] and off_by:
        detail += " (the same count, ids shifted by {}: an off-by-one?)".format(off_by)
    return _check("program_counts", WARN, detail,
                  "the two sides do not list the same programs; step_programs says "
                  "whether those the trace runs still agree", **data)


def check_step_programs(sql: SqlSide, side: PvaSide) -> Check:
    """Every distinct program the steps run is in pva, with SQL's name; a DoExchange
    step's program is a DoExchange program in pva."""
    programs = side.programs()
    missing, renamed, retyped = [], [], []
    for program_id, kind in sql.step_programs:
        found = programs.get(program_id) if type(program_id) is int else None
        if found is None:
            missing.append(_plain(program_id))
            continue
        expected = sql.program_names.get(program_id)
        if expected is not None and str(found.name) != expected:
            renamed.append({"id": program_id, "sql": expected, "pva": str(found.name)})
        if kind == "DoExchange" and not side.is_type(found, "DoExchange"):
            retyped.append({"id": program_id, "sql": kind, "pva": _type_name(found)})
    count = len({p for p, _ in sql.step_programs})
    data = {"programs": count, "missing": missing[:LISTED], "renamed": renamed[:LISTED],
            "retyped": retyped[:LISTED]}
    if missing or renamed or retyped:
        problems = []
        if missing:
            problems.append("{} not in pva (ids {})".format(len(missing), missing[:SHOWN]))
        if renamed:
            problems.append("{} named otherwise: {}".format(len(renamed), _listed([
                "{}: SQL {} / pva {}".format(r["id"], _short(r["sql"], 50),
                                             _short(r["pva"], 50)) for r in renamed])))
        if retyped:
            problems.append("{} DoExchange steps whose pva program is not: {}".format(
                len(retyped), _listed(["{}: {}".format(r["id"], r["pva"]) for r in retyped])))
        return _check("step_programs", FAIL, "of the {} programs the trace runs, {}".format(
            count, "; ".join(problems)),
            "pva's program ids are not the profile's: extract refuses to summarise it "
            "(the kernels' max_exchange_code_bytes would be other programs')", **data)
    return _check("step_programs", OK, "the {} programs the trace runs are all in pva, "
                  "named as in SQL (DoExchange steps: DoExchange programs)".format(count),
                  "max_exchange_code_bytes is read from the right programs", **data)


def check_step_compute_sets(sql: SqlSide, side: PvaSide) -> Check:
    """For every OnTileExecute step: the compute set its pva program executes (through
    `computeset`) has SQL's name and the vertex types of `computeSets[steps.compute_set]`,
    which is where extract reads them."""
    programs = side.programs()
    wrong: List[dict] = []
    without = 0
    vertices_cache: Dict[int, Optional[List[str]]] = {}
    for program_id, index in sql.on_tile_pairs:
        expected = sql.compute_set_names.get(index)
        indexed = side.compute_set(index)
        if indexed is None:
            wrong.append({"program": _plain(program_id), "compute_set": _plain(index),
                          "problem": "computeSets has no index {}".format(index)})
            continue
        if index not in vertices_cache:
            vertices_cache[index] = _vertex_names(indexed)
        if expected is not None and str(indexed.name) != expected:
            wrong.append({"program": _plain(program_id), "compute_set": index,
                          "problem": "computeSets[{}] is {}, SQL says {}".format(
                              index, _short(str(indexed.name)), _short(expected))})
            continue
        program = programs.get(program_id) if type(program_id) is int else None
        if program is None:
            continue  # step_programs reports it
        try:
            reached = program.computeset
        except AttributeError:
            without += 1
            continue
        if expected is not None and str(reached.name) != expected:
            wrong.append({"program": _plain(program_id), "compute_set": index,
                          "problem": "program {}'s computeset is {}, SQL says {}".format(
                              program_id, _short(str(reached.name)), _short(expected))})
        elif _vertex_names(reached) != vertices_cache[index]:
            wrong.append({"program": _plain(program_id), "compute_set": index,
                          "problem": "program {}'s computeset has other vertex types "
                                     "than computeSets[{}]".format(program_id, index)})
    data = {"pairs": len(sql.on_tile_pairs), "wrong": wrong[:LISTED],
            "without_computeset": without}
    if wrong:
        return _check("step_compute_sets", FAIL, "{} of the {} (program, compute set) pairs "
                      "of OnTileExecute steps disagree: {}".format(
                          len(wrong), len(sql.on_tile_pairs),
                          _listed([w["problem"] for w in wrong])),
                      "pva's compute set indices are not the profile's: extract refuses "
                      "to summarise it (the kernels' vertices would be other compute "
                      "sets')", **data)
    if without:
        return _check("step_compute_sets", WARN, "{} of the {} OnTileExecute programs the "
                      "trace runs have no computeset in pva: checked by index only".format(
                          without, len(sql.on_tile_pairs)),
                      "vertices are read by index, and the index could not be confirmed "
                      "through the programs", **data)
    return _check("step_compute_sets", OK, "the {} (program, compute set) pairs of "
                  "OnTileExecute steps agree: computeSets[compute_set] and the program's "
                  "computeset are SQL's compute set, with the same vertex types".format(
                      len(sql.on_tile_pairs)),
                  "the kernels' vertices are read from the right compute sets", **data)


def check_compute_set_names(sql: SqlSide, side: PvaSide) -> Check:
    """Every row of compute_sets names the compute set pva has at that index."""
    wrong = []
    for index, name in sorted(sql.compute_set_names.items(), key=lambda item: repr(item[0])):
        found = side.compute_set(index)
        pva_name = None if found is None else str(found.name)
        if pva_name != name:
            wrong.append({"id": _plain(index), "sql": name, "pva": pva_name})
    count = len(sql.compute_set_names)
    data = {"compute_sets": count, "wrong": wrong[:LISTED]}
    if wrong:
        return _check("compute_set_names", FAIL, "{} of the {} rows of compute_sets name "
                      "another compute set than pva's at that index: {}".format(
                          len(wrong), count, _listed(["{}: SQL {} / pva {}".format(
                              w["id"], _short(w["sql"], 50), _short(w["pva"], 50))
                              for w in wrong])),
                      "computeSets[i] is not compute_sets.compute_set = i for every "
                      "compute set", **data)
    return _check("compute_set_names", OK, "the {} rows of compute_sets name pva's "
                  "compute sets at the same indices".format(count),
                  "computeSets[i] is compute_sets.compute_set = i", **data)


def _tile_count(side: PvaSide) -> Optional[int]:
    try:
        return as_int(side.compilation.target.numTiles)
    except Exception:
        return None


def _ipu_count(side: Optional[PvaSide]) -> Optional[int]:
    if side is None:
        return None
    try:
        return as_int(side.compilation.target.numIPUs)
    except Exception:
        return None


def check_code_bytes(sql: SqlSide, side: PvaSide) -> Check:
    """The Python types of `codeBytesByTile` and its entries, on every exchange program
    the trace runs (every one in pva, for a profile without steps), and its length
    against the target's tile count."""
    programs = side.programs()
    used = [p for p, kind in sql.step_programs if kind == "DoExchange"]
    chosen = [programs[p] for p in used if type(p) is int and p in programs] if used \
        else list(programs.values())
    chosen = [p for p in chosen if side.is_type(p, "DoExchange")]  # step_programs: the rest
    tiles = _tile_count(side)
    containers, elements = set(), set()
    empty, other_length, not_integral = 0, [], []
    for program in chosen:
        values = program.codeBytesByTile
        containers.add(type(values).__name__)
        values = list(values)
        if not values:
            empty += 1
        elif tiles is not None and len(values) != tiles:
            other_length.append({"id": as_int(program._id), "entries": len(values)})
        for value in values:
            elements.add(type(value).__module__ + "." + type(value).__name__
                         if type(value).__module__ != "builtins" else type(value).__name__)
            if not hasattr(type(value), "__index__") or isinstance(value, bool):
                not_integral.append(as_int(program._id))
                break
    data = {"programs": len(chosen), "container_types": sorted(containers),
            "entry_types": sorted(elements), "tiles": tiles, "empty": empty,
            "other_length": other_length[:LISTED], "not_integral": not_integral[:LISTED]}
    detail = "{} exchange programs: codeBytesByTile is {} of {}; {} empty".format(
        len(chosen), "/".join(sorted(containers)) or "-", "/".join(sorted(elements)) or "-",
        empty)
    if tiles is not None:
        detail += "; {} of another length than the {} tiles".format(len(other_length), tiles)
    if not_integral:
        return _check("code_bytes", FAIL, detail + "; entries that are not whole numbers "
                      "in programs {}".format(not_integral[:SHOWN]),
                      "extract cannot read these code bytes (it refuses the profile)", **data)
    if other_length or elements - {"int"}:
        return _check("code_bytes", WARN, detail,
                      "entries that are not Python ints are converted by extract; arrays "
                      "of another length than the tile count give max and mean of what "
                      "pva gives", **data)
    return _check("code_bytes", OK, detail, "max_exchange_code_bytes and the attention "
                  "exchanges' maximum and mean are whole-number maxima and means of one "
                  "entry per tile (an empty array counts as 0)", **data)


def check_compute_sets_access(side: PvaSide) -> Check:
    """Whether `computeSets` is one object on two accesses, and what one access costs."""
    first = side.compute_sets()
    seconds = side.compute_sets_seconds or 0.0
    start = time.perf_counter()
    second = side.compilation.computeSets
    again = time.perf_counter() - start
    same = first is second
    length = len(first)
    data = {"same_object": same, "type": type(first).__name__, "length": length,
            "first_access_seconds": round(seconds, 6), "second_access_seconds": round(again, 6)}
    return _check("compute_sets_access", OK, "computeSets is {} {} of {} entries; one "
                  "access took {:.3g} s, a second {:.3g} s".format(
                      "the same" if same else "a new", type(first).__name__, length,
                      seconds, again),
                  "extract reads computeSets once per report either way", **data)


def check_steps_by_ipu_rows(sql: SqlSide, side: Optional[PvaSide]) -> Check:
    """Rows per step in steps_by_ipu, against the target's IPU count."""
    spread = {int(n): int(steps) for n, steps in sql.rows_per_step}
    ipus = _ipu_count(side)
    data = {"rows_per_step": {str(n): steps for n, steps in spread.items()}, "ipus": ipus}
    shown = ", ".join("{} step{} with {} row{}".format(
        steps, "" if steps == 1 else "s", n, "" if n == 1 else "s")
        for n, steps in sorted(spread.items()))
    if not spread:
        return _check("steps_by_ipu_rows", OK, "no step rows (a compile-only profile)",
                      "no kernels and no device spans to read", **data)
    if ipus is None:
        status = OK if len(spread) == 1 else WARN
        return _check("steps_by_ipu_rows", status, shown + "; the IPU count is unknown "
                      "(pva {})".format("is not available" if side is None
                                        else "gives no target.numIPUs"),
                      "each step row is one kernel row of the summary, as the spec says",
                      **data)
    if set(spread) == {ipus}:
        return _check("steps_by_ipu_rows", OK, "every step has {} row{}, one per IPU of "
                      "the target".format(ipus, "" if ipus == 1 else "s"),
                      "a kernel appears once per IPU, as the spec says", **data)
    return _check("steps_by_ipu_rows", WARN, "{}; the target has {} IPU{}".format(
        shown, ipus, "" if ipus == 1 else "s"),
        "the summary still lists one kernel row per step row (the spec's join), but a "
        "row per IPU is not what this profile holds", **data)


def check_vars_info(sql: SqlSide, side: Optional[PvaSide]) -> Check:
    rows, tiles, exchange_rows = (int(v or 0) for v in sql.vars_info)
    target = _tile_count(side) if side is not None else None
    data = {"rows": rows, "tiles_with_rows": tiles,
            "internal_exchange_code_rows": exchange_rows, "target_tiles": target}
    detail = "{} rows on {} tiles{}, {} of them {}".format(
        rows, tiles, "" if target is None else " (of {})".format(target), exchange_rows,
        EXCHANGE_CODE_CATEGORY)
    if not rows:
        return _check("vars_info", WARN, "vars_info is empty", NO_LOWERED_VARS, **data)
    if target is not None and tiles < target:
        return _check("vars_info", WARN, detail, "per-tile variables are missing on some "
                      "tiles: was autoReport.outputLoweredVars on? exchange_memory_per_tile "
                      "covers only the tiles listed", **data)
    if not exchange_rows:
        return _check("vars_info", OK, detail, "lowered variables look enabled, but none is "
                      "exchange code: exchange_memory_per_tile's min, avg and max are null", **data)
    return _check("vars_info", OK, detail, "lowered variables look enabled: "
                  "exchange_memory_per_tile is read from them", **data)


# --------------------------------------------------------------------------- running them

def _skipped(names, reason: str) -> List[Check]:
    return [_check(name, SKIPPED, reason, "not checked", reason=reason) for name in names]


PVA_CHECKS = ("report_opens", "versions", "program_ids_unique", "program_counts",
              "step_programs", "step_compute_sets", "compute_set_names", "code_bytes",
              "compute_sets_access")


def run_checks(path, pva=None) -> dict:
    """Every check on the profile at `path`, as the JSON `extract doctor --json` prints.

    `pva`: the module to use (default: import it; without it the pva checks are
    skipped). ProfileError when extract cannot read the profile at all."""
    sql = read_sql(path)
    checks: List[Check] = []
    side = None
    if pva is None:
        status, pva = pva_status()
    else:
        status = {"asked": True, "importable": True,
                  "version": str(getattr(pva, "__version__", None)),
                  "module": getattr(pva, "__file__", None), "error": None}
    if pva is None:
        reason = "pva is not importable ({})".format(status["error"])
        checks.append(_check("pva", WARN, reason + "; the Poplar SDK's enable.sh provides "
                             "it", "extract needs --no-pva here: attention_exchanges, "
                             "max_exchange_code_bytes and vertices are then null", **status))
        checks += _skipped(PVA_CHECKS, "pva is not importable")
    else:
        checks.append(_check("pva", OK, "pva {} from {}".format(
            status["version"], status["module"]), "the pva facts can be read", **status))
        try:
            side = PvaSide(pva, path)
        except Exception as exc:  # pva's C++ core raises its own exception types
            reason = "pva could not open the report: {}".format(one_line(exc))
            checks.append(_check("report_opens", FAIL, reason, "extract cannot read the pva "
                                 "facts of this profile (only with --no-pva)",
                                 error=one_line(exc)))
            checks += _skipped(PVA_CHECKS[1:], "pva could not open the report")
        else:
            checks.append(_check("report_opens", OK, "pva.openReport(str) opened it",
                                 "the pva facts can be read"))
            checks += _pva_checks(sql, side)
    checks.append(_guarded("steps_by_ipu_rows", lambda: check_steps_by_ipu_rows(sql, side)))
    checks.append(_guarded("vars_info", lambda: check_vars_info(sql, side)))
    return doctor_answer(path, checks)


def _pva_checks(sql: SqlSide, side: PvaSide) -> List[Check]:
    errors: List[str] = []
    versions = report_versions(side.report, errors)
    versions["pva"] = str(getattr(side.pva, "__version__", None))
    unknown = [k for k in ("poplar_version", "format_version") if versions[k] is None]
    version_check = _check(
        "versions", WARN if unknown else OK,
        "pva {pva}, Poplar {poplar_version}, profile format {format_version}{unstable}".format(
            unstable=" (unstable)" if versions["unstable_format"] else "", **versions)
        + ("; pva could not tell: {}".format("; ".join(errors)) if errors else ""),
        "the versions this profile was made and read with", errors=errors, **versions)
    checks = [version_check]
    try:
        side.programs()
    except Exception as exc:
        reason = "pva could not list the programs: {}: {}".format(type(exc).__name__,
                                                                  one_line(exc))
        return checks + [_check(name, FAIL if name == "program_ids_unique" else SKIPPED,
                                reason, "extract cannot read the programs either",
                                error=reason) for name in PVA_CHECKS[2:]]
    checks.append(_guarded("program_ids_unique", lambda: check_program_ids_unique(side)))
    checks.append(_guarded("program_counts", lambda: check_program_counts(sql, side)))
    checks.append(_guarded("step_programs", lambda: check_step_programs(sql, side)))
    checks.append(_guarded("step_compute_sets", lambda: check_step_compute_sets(sql, side)))
    checks.append(_guarded("compute_set_names", lambda: check_compute_set_names(sql, side)))
    checks.append(_guarded("code_bytes", lambda: check_code_bytes(sql, side)))
    checks.append(_guarded("compute_sets_access", lambda: check_compute_sets_access(side)))
    return checks


def _guarded(name: str, run) -> Check:
    """The check's answer, or `fail` with what pva (or SQLite) raised: a check that
    cannot run tells that, and the others still run."""
    try:
        return run()
    except Exception as exc:  # pva's C++ core, an attribute this pva lacks
        error = "{}: {}".format(type(exc).__name__, one_line(exc))
        return _check(name, FAIL, "could not be checked: " + error,
                      "extract may meet the same error reading this profile", error=error)


def doctor_answer(path, checks: List[Check]) -> dict:
    counts = {status: sum(1 for c in checks if c.status == status) for status in STATUSES}
    return {"format": JSON_FORMAT, "profile": shown_path(path), "tool_version": __version__,
            "ok": counts[FAIL] == 0, "counts": counts,
            "checks": [c.as_json() for c in checks]}


# --------------------------------------------------------------------------- text

_MARKS = {OK: "ok", WARN: "WARN", FAIL: "FAIL", SKIPPED: "skip"}


def doctor_text(answer: dict) -> str:
    """The human-readable form of run_checks' answer. Details quote the profile's names
    and pva's words: every line is written by `escaping.terminal_text`, so that none
    reaches the terminal as a control sequence."""
    counts = answer["counts"]
    lines = ["{}: {} ok, {} warn, {} fail, {} skipped".format(
        answer["profile"], counts[OK], counts[WARN], counts[FAIL], counts[SKIPPED])]
    width = max(len(c["name"]) for c in answer["checks"])
    for check in answer["checks"]:
        lines.append("  {:<4}  {:<{w}}  {}".format(_MARKS[check["status"]], check["name"],
                                                    check["detail"], w=width))
        if check["status"] in (WARN, FAIL):
            lines.append("  {:<4}  {:<{w}}  means: {}".format("", "", check["means"],
                                                              w=width))
    lines.append("")
    if counts[FAIL]:
        verdict = ("A check failed: extract would read this profile wrongly there, and "
                   "refuses it where it can tell.")
    elif counts[WARN]:
        verdict = "extract reads this profile, with the warnings above."
    else:
        verdict = "extract reads this profile as it assumes."
    lines.append(verdict + " Send us `extract doctor PROFILE --json` (docs/sdk-contract.md).")
    return "".join(terminal_text(line) + "\n" for line in lines)
