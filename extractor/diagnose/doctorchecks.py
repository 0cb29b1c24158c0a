"""`extract doctor`'s checks: each tests one assumption of the summary on the user's
own profile, comparing its SQL tables with the real `pva` (doctorsides.py), and says
what the answer means for the summary.

The summary rests on assumptions nobody has proven on a real profile: that pva's program
`_id` is the profile's `programs.id`, that `computeSets[i]` is the compute set with
`compute_sets.compute_set = i`, what Python type pva's numbers have, how its lists
behave, and that the profile holds the per-tile variables. The same check functions are
what the contract tests (tests/test_sdk_contract.py, marked `sdk`) assert on, so a
developer on an SDK host and a user with an installed wheel prove the same things.

A check's answer is data (`DoctorCheck`): a stable `name`, a `status` (`ok`, `warn`,
`fail`, `skipped`), a one-line `detail`, what it `means` for the summary, and `data` (the
numbers behind it, the first mismatches).
"""

import time
from typing import Any, Dict, List, NamedTuple, Optional

from ..core.pvafacts import as_int
from ..errors import one_line
from .doctorsides import PvaSide, SqlSide

OK, WARN, FAIL, SKIPPED = "ok", "warn", "fail", "skipped"
STATUSES = (OK, WARN, FAIL, SKIPPED)
#: Mismatches listed in a check's data (and the first few in its detail).
LISTED = 20
SHOWN = 3

#: The names of the checks, in the order they are run and reported.
CHECK_NAMES = (
    "pva",
    "report_opens",
    "versions",
    "program_ids_unique",
    "program_counts",
    "step_programs",
    "step_compute_sets",
    "compute_set_names",
    "code_bytes",
    "compute_sets_access",
    "memory_by_tile_rows",
    "memory_totals",
    "vars_info_tiles",
    "steps_by_ipu_rows",
    "vars_info",
    "clock",
    "repeats",
)


class DoctorCheck(NamedTuple):
    """One check's answer."""

    name: str
    status: str
    detail: str
    means: str
    data: Dict[str, Any]

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "means": self.means,
            "data": self.data,
        }


def doctor_check(name, status, detail, means, **data) -> DoctorCheck:
    """A check's answer, its detail and meaning each made one line."""
    assert status in STATUSES and name in CHECK_NAMES
    return DoctorCheck(name, status, one_line(detail), one_line(means), data)


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
    return text if len(text) <= limit else text[: limit // 2] + "..." + text[-limit // 2 :]


def _listed(items) -> str:
    shown = "; ".join(items[:SHOWN])
    return shown + ("; ..." if len(items) > SHOWN else "")


# --------------------------------------------------------------------------- the checks


def check_program_ids_unique(side: PvaSide) -> DoctorCheck:
    order = side.program_order
    seen, repeated = set(), []
    for key in order:
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    if repeated:
        return doctor_check(
            "program_ids_unique",
            FAIL,
            "{} program ids repeat among pva's {} programs: {}".format(
                len(repeated), len(order), repeated[:SHOWN]
            ),
            "a program id names two programs in pva: the kernels' "
            "max_exchange_code_bytes may come from the wrong one",
            repeated=repeated[:LISTED],
            programs=len(order),
        )
    return doctor_check(
        "program_ids_unique",
        OK,
        "pva's {} programs have {} distinct ids".format(len(order), len(seen)),
        "each program id names one pva program",
        programs=len(order),
    )


def check_program_counts(sql: SqlSide, side: PvaSide) -> DoctorCheck:
    rows, low, high = sql.program_stats
    ids = side.program_order
    pva = (len(ids), min(ids) if ids else None, max(ids) if ids else None)
    data = {
        "sql": {"programs": rows, "smallest_id": _plain(low), "largest_id": _plain(high)},
        "pva": {"programs": pva[0], "smallest_id": pva[1], "largest_id": pva[2]},
    }
    detail = "SQL: {} programs, ids {} to {}; pva: {} programs, ids {} to {}".format(
        rows, low, high, *pva
    )
    if (rows, low, high) == pva:
        return doctor_check(
            "program_counts",
            OK,
            detail,
            "both sides number the same programs alike (as far as counts and end ids show)",
            **data,
        )
    off_by = pva[1] - low if pva[1] is not None and low is not None and type(low) is int else None
    if rows == pva[0] and off_by:
        detail += " (the same count, ids shifted by {}: an off-by-one?)".format(off_by)
    return doctor_check(
        "program_counts",
        WARN,
        detail,
        "the two sides do not list the same programs; step_programs says "
        "whether those the trace runs still agree",
        **data,
    )


def check_step_programs(sql: SqlSide, side: PvaSide) -> DoctorCheck:
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
    data = {
        "programs": count,
        "missing": missing[:LISTED],
        "renamed": renamed[:LISTED],
        "retyped": retyped[:LISTED],
    }
    if missing or renamed or retyped:
        problems = []
        if missing:
            problems.append("{} not in pva (ids {})".format(len(missing), missing[:SHOWN]))
        if renamed:
            problems.append(
                "{} named otherwise: {}".format(
                    len(renamed),
                    _listed(
                        [
                            "{}: SQL {} / pva {}".format(
                                r["id"], _short(r["sql"], 50), _short(r["pva"], 50)
                            )
                            for r in renamed
                        ]
                    ),
                )
            )
        if retyped:
            problems.append(
                "{} DoExchange steps whose pva program is not: {}".format(
                    len(retyped), _listed(["{}: {}".format(r["id"], r["pva"]) for r in retyped])
                )
            )
        return doctor_check(
            "step_programs",
            FAIL,
            "of the {} programs the trace runs, {}".format(count, "; ".join(problems)),
            "pva's program ids are not the profile's: extract refuses to summarise it "
            "(the kernels' max_exchange_code_bytes would be other programs')",
            **data,
        )
    return doctor_check(
        "step_programs",
        OK,
        "the {} programs the trace runs are all in pva, "
        "named as in SQL (DoExchange steps: DoExchange programs)".format(count),
        "max_exchange_code_bytes is read from the right programs",
        **data,
    )


def check_step_compute_sets(sql: SqlSide, side: PvaSide) -> DoctorCheck:
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
            wrong.append(
                {
                    "program": _plain(program_id),
                    "compute_set": _plain(index),
                    "problem": "computeSets has no index {}".format(index),
                }
            )
            continue
        if index not in vertices_cache:
            vertices_cache[index] = _vertex_names(indexed)
        if expected is not None and str(indexed.name) != expected:
            wrong.append(
                {
                    "program": _plain(program_id),
                    "compute_set": index,
                    "problem": "computeSets[{}] is {}, SQL says {}".format(
                        index, _short(str(indexed.name)), _short(expected)
                    ),
                }
            )
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
            wrong.append(
                {
                    "program": _plain(program_id),
                    "compute_set": index,
                    "problem": "program {}'s computeset is {}, SQL says {}".format(
                        program_id, _short(str(reached.name)), _short(expected)
                    ),
                }
            )
        elif _vertex_names(reached) != vertices_cache[index]:
            wrong.append(
                {
                    "program": _plain(program_id),
                    "compute_set": index,
                    "problem": "program {}'s computeset has other vertex types "
                    "than computeSets[{}]".format(program_id, index),
                }
            )
    data = {"pairs": len(sql.on_tile_pairs), "wrong": wrong[:LISTED], "without_computeset": without}
    if wrong:
        return doctor_check(
            "step_compute_sets",
            FAIL,
            "{} of the {} (program, compute set) pairs of OnTileExecute steps disagree: {}".format(
                len(wrong), len(sql.on_tile_pairs), _listed([w["problem"] for w in wrong])
            ),
            "pva's compute set indices are not the profile's: extract refuses "
            "to summarise it (the kernels' vertices would be other compute "
            "sets')",
            **data,
        )
    if without:
        return doctor_check(
            "step_compute_sets",
            WARN,
            "{} of the {} OnTileExecute programs the "
            "trace runs have no computeset in pva: checked by index only".format(
                without, len(sql.on_tile_pairs)
            ),
            "vertices are read by index, and the index could not be confirmed through the programs",
            **data,
        )
    return doctor_check(
        "step_compute_sets",
        OK,
        "the {} (program, compute set) pairs of "
        "OnTileExecute steps agree: computeSets[compute_set] and the program's "
        "computeset are SQL's compute set, with the same vertex types".format(
            len(sql.on_tile_pairs)
        ),
        "the kernels' vertices are read from the right compute sets",
        **data,
    )


def check_compute_set_names(sql: SqlSide, side: PvaSide) -> DoctorCheck:
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
        return doctor_check(
            "compute_set_names",
            FAIL,
            "{} of the {} rows of compute_sets name "
            "another compute set than pva's at that index: {}".format(
                len(wrong),
                count,
                _listed(
                    [
                        "{}: SQL {} / pva {}".format(
                            w["id"], _short(w["sql"], 50), _short(w["pva"], 50)
                        )
                        for w in wrong
                    ]
                ),
            ),
            "computeSets[i] is not compute_sets.compute_set = i for every compute set",
            **data,
        )
    return doctor_check(
        "compute_set_names",
        OK,
        "the {} rows of compute_sets name pva's compute sets at the same indices".format(count),
        "computeSets[i] is compute_sets.compute_set = i",
        **data,
    )


def tile_count(side: PvaSide) -> Optional[int]:
    try:
        return as_int(side.compilation.target.numTiles)
    except Exception:
        return None


def ipu_count(side: Optional[PvaSide]) -> Optional[int]:
    if side is None:
        return None
    try:
        return as_int(side.compilation.target.numIPUs)
    except Exception:
        return None


def check_code_bytes(sql: SqlSide, side: PvaSide) -> DoctorCheck:
    """The Python types of `codeBytesByTile` and its entries, on every exchange program
    the trace runs (every one in pva, for a profile without steps), and its length
    against the target's tile count."""
    programs = side.programs()
    used = [p for p, kind in sql.step_programs if kind == "DoExchange"]
    chosen = (
        [programs[p] for p in used if type(p) is int and p in programs]
        if used
        else list(programs.values())
    )
    chosen = [p for p in chosen if side.is_type(p, "DoExchange")]  # step_programs: the rest
    tiles = tile_count(side)
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
            elements.add(
                type(value).__module__ + "." + type(value).__name__
                if type(value).__module__ != "builtins"
                else type(value).__name__
            )
            if not hasattr(type(value), "__index__") or isinstance(value, bool):
                not_integral.append(as_int(program._id))
                break
    data = {
        "programs": len(chosen),
        "container_types": sorted(containers),
        "entry_types": sorted(elements),
        "tiles": tiles,
        "empty": empty,
        "other_length": other_length[:LISTED],
        "not_integral": not_integral[:LISTED],
    }
    detail = "{} exchange programs: codeBytesByTile is {} of {}; {} empty".format(
        len(chosen), "/".join(sorted(containers)) or "-", "/".join(sorted(elements)) or "-", empty
    )
    if tiles is not None:
        detail += "; {} of another length than the {} tiles".format(len(other_length), tiles)
    if not_integral:
        return doctor_check(
            "code_bytes",
            FAIL,
            detail
            + "; entries that are not whole numbers in programs {}".format(not_integral[:SHOWN]),
            "extract cannot read these code bytes (it refuses the profile)",
            **data,
        )
    if other_length or elements - {"int"}:
        return doctor_check(
            "code_bytes",
            WARN,
            detail,
            "entries that are not Python ints are converted by extract; arrays "
            "of another length than the tile count give max and mean of what "
            "pva gives",
            **data,
        )
    return doctor_check(
        "code_bytes",
        OK,
        detail,
        "max_exchange_code_bytes and the attention "
        "exchanges' maximum and mean are whole-number maxima and means of one "
        "entry per tile (an empty array counts as 0)",
        **data,
    )


def check_compute_sets_access(side: PvaSide) -> DoctorCheck:
    """Whether `computeSets` is one object on two accesses, and what one access costs."""
    first = side.compute_sets()
    seconds = side.compute_sets_seconds or 0.0
    start = time.perf_counter()
    second = side.compilation.computeSets
    again = time.perf_counter() - start
    same = first is second
    length = len(first)
    data = {
        "same_object": same,
        "type": type(first).__name__,
        "length": length,
        "first_access_seconds": round(seconds, 6),
        "second_access_seconds": round(again, 6),
    }
    return doctor_check(
        "compute_sets_access",
        OK,
        "computeSets is {} {} of {} entries; one access took {:.3g} s, a second {:.3g} s".format(
            "the same" if same else "a new", type(first).__name__, length, seconds, again
        ),
        "extract reads computeSets once per report either way",
        **data,
    )
