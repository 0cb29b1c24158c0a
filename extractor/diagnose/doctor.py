"""`extract doctor`: does extract read this profile right?

Each check (doctorchecks.py) tests one of the summary's assumptions on the user's own
profile, against its SQL tables and the real `pva` (doctorsides.py); the last one
(repeatcheck.py) asks whether the profile's cycles can vary between executions of a
compute set, and is also a warning line on stderr when they look as if they cannot.
Here: running them, in order (without pva the checks that need only SQL run and the
others are `skipped`, with the reason; a check that raises is a `fail` saying what it
met, and the others still run), and their answer as JSON (`run_checks`, `extract doctor
--json`) and as text (`doctor_text`).
"""

from typing import Callable, List, Optional

from .. import __version__
from ..errors import one_line, shown_path
from ..escaping import terminal_text
from .doctorchecks import (
    CHECK_NAMES,
    FAIL,
    OK,
    SKIPPED,
    STATUSES,
    WARN,
    DoctorCheck,
    check_code_bytes,
    check_compute_set_names,
    check_compute_sets_access,
    check_program_counts,
    check_program_ids_unique,
    check_step_compute_sets,
    check_step_programs,
    doctor_check,
)
from .doctorsides import PvaSide, SqlSide, read_sql
from .inspection import pva_status, report_versions
from .repeatcheck import check_repeats, repeats_warning
from .targetchecks import check_clock, check_steps_by_ipu_rows, check_vars_info

#: The `format` value of `extract doctor --json`: bumped when a key changes meaning.
JSON_FORMAT = "extract-doctor/1"
Say = Callable[[str, str], None]  # say(kind, message): one line on stderr
# Where the text's last line sends its reader: the project's tracker, as the docs say.
TO_REPORT_IT = (
    "To report it: open an issue in the repository you got extractor from, with "
    "`extract doctor PROFILE --json` attached (docs/sdk-contract.md)."
)

# --------------------------------------------------------------------------- running them


def _skipped(names, reason: str) -> List[DoctorCheck]:
    return [doctor_check(name, SKIPPED, reason, "not checked", reason=reason) for name in names]


#: The checks skipped without pva: all but the first (is pva there) and those that say
#: what they can without it (the tables against the target, the clock, the repeats).
PVA_CHECKS = tuple(
    name
    for name in CHECK_NAMES
    if name not in ("pva", "steps_by_ipu_rows", "vars_info", "clock", "repeats")
)


#: The checks of what extract memory assumes (memorychecks.py): run with pva's report.
MEMORY_CHECKS = ("memory_by_tile_rows", "memory_totals", "vars_info_tiles")


#: What extract does here without pva, in a check's `means` (docs/pva.md).
WITHOUT_PVA = (
    "extract --no-pva PROFILE leaves attention_exchanges, max_exchange_code_bytes and vertices null"
)


def run_checks(path, pva=None, say: Optional[Say] = None) -> dict:
    """Every check on the profile at `path`, as the JSON `extract doctor --json` prints.

    `pva`: the module to use (default: import it; without it the pva checks are
    skipped). `say`: given, a `repeats` warning (check_repeats) also goes to
    `say("warning", "<profile>: <warning>")`. ProfileError when extract cannot read the
    profile at all."""
    sql = read_sql(path)
    checks: List[DoctorCheck] = []
    side = None
    if pva is None:
        status, pva = pva_status()
    else:
        status = {
            "asked": True,
            "importable": True,
            "version": str(getattr(pva, "__version__", None)),
            "module": getattr(pva, "__file__", None),
            "error": None,
        }
    if pva is None:
        reason = "pva is not importable ({})".format(status["error"])
        checks.append(
            doctor_check(
                "pva",
                WARN,
                reason + "; the Poplar SDK's enable.sh provides it",
                "extract PROFILE fails here; " + WITHOUT_PVA,
                **status,
            )
        )
        checks += _skipped(PVA_CHECKS, "pva is not importable")
    else:
        checks.append(
            doctor_check(
                "pva",
                OK,
                "pva {} from {}".format(status["version"], status["module"]),
                "the pva facts can be read",
                **status,
            )
        )
        try:
            side = PvaSide(pva, path)
        except Exception as exc:  # pva's C++ core raises its own exception types
            reason = "pva could not open the report: {}".format(one_line(exc))
            checks.append(
                doctor_check(
                    "report_opens",
                    FAIL,
                    reason,
                    "extract PROFILE fails on this profile; " + WITHOUT_PVA,
                    error=one_line(exc),
                )
            )
            checks += _skipped(PVA_CHECKS[1:], "pva could not open the report")
        else:
            checks.append(
                doctor_check(
                    "report_opens", OK, "pva.openReport(str) opened it", "the pva facts can be read"
                )
            )
            checks += _pva_checks(sql, side)
            checks += _memory_checks(path, side)
    checks.append(_guarded("steps_by_ipu_rows", lambda: check_steps_by_ipu_rows(sql, side)))
    checks.append(_guarded("vars_info", lambda: check_vars_info(sql, side)))
    checks.append(_guarded("clock", lambda: check_clock(side)))
    repeats = _guarded("repeats", lambda: check_repeats(path))
    checks.append(repeats)
    if say is not None and repeats.status == WARN:
        say("warning", "{}: {}".format(shown_path(path), repeats_warning(repeats)))
    return doctor_answer(path, checks)


def _pva_checks(sql: SqlSide, side: PvaSide) -> List[DoctorCheck]:
    errors: List[str] = []
    versions = report_versions(side.report, errors)
    versions["pva"] = str(getattr(side.pva, "__version__", None))
    unknown = [k for k in ("poplar_version", "format_version") if versions[k] is None]
    version_check = doctor_check(
        "versions",
        WARN if unknown else OK,
        "pva {pva}, Poplar {poplar_version}, profile format {format_version}{unstable}".format(
            unstable=" (unstable)" if versions["unstable_format"] else "", **versions
        )
        + ("; pva could not tell: {}".format("; ".join(errors)) if errors else ""),
        "the versions this profile was made and read with",
        errors=errors,
        **versions,
    )
    checks = [version_check]
    try:
        side.programs()
    except Exception as exc:
        reason = "pva could not list the programs: {}: {}".format(type(exc).__name__, one_line(exc))
        return checks + [
            doctor_check(
                name,
                FAIL if name == "program_ids_unique" else SKIPPED,
                reason,
                "extract cannot read the programs either",
                error=reason,
            )
            for name in PVA_CHECKS[2:]
            if name not in MEMORY_CHECKS  # they need no program: run all the same
        ]
    checks.append(_guarded("program_ids_unique", lambda: check_program_ids_unique(side)))
    checks.append(_guarded("program_counts", lambda: check_program_counts(sql, side)))
    checks.append(_guarded("step_programs", lambda: check_step_programs(sql, side)))
    checks.append(_guarded("step_compute_sets", lambda: check_step_compute_sets(sql, side)))
    checks.append(_guarded("compute_set_names", lambda: check_compute_set_names(sql, side)))
    checks.append(_guarded("code_bytes", lambda: check_code_bytes(sql, side)))
    checks.append(_guarded("compute_sets_access", lambda: check_compute_sets_access(side)))
    return checks


def _memory_checks(path, side: PvaSide) -> List[DoctorCheck]:
    """The checks of what extract memory assumes (memorychecks.py, MEMORY_CHECKS)."""
    from .memorychecks import (
        check_memory_by_tile_rows,
        check_memory_totals,
        check_vars_info_tiles,
        read_memory_sql,
    )

    memory = read_memory_sql(path)
    return [
        _guarded("memory_by_tile_rows", lambda: check_memory_by_tile_rows(memory, side)),
        _guarded("memory_totals", lambda: check_memory_totals(memory, side)),
        _guarded("vars_info_tiles", lambda: check_vars_info_tiles(memory, side)),
    ]


def _guarded(name: str, run) -> DoctorCheck:
    """The check's answer, or `fail` with what pva (or SQLite) raised: a check that
    cannot run tells that, and the others still run."""
    try:
        return run()
    except Exception as exc:  # pva's C++ core, an attribute this pva lacks
        error = "{}: {}".format(type(exc).__name__, one_line(exc))
        return doctor_check(
            name,
            FAIL,
            "could not be checked: " + error,
            "extract may meet the same error reading this profile",
            error=error,
        )


def doctor_answer(path, checks: List[DoctorCheck]) -> dict:
    counts = {status: sum(1 for c in checks if c.status == status) for status in STATUSES}
    return {
        "format": JSON_FORMAT,
        "profile": shown_path(path),
        "tool_version": __version__,
        "ok": counts[FAIL] == 0,
        "counts": counts,
        "checks": [c.as_json() for c in checks],
    }


# --------------------------------------------------------------------------- text

_MARKS = {OK: "ok", WARN: "WARN", FAIL: "FAIL", SKIPPED: "skip"}


def doctor_text(answer: dict) -> str:
    """The human-readable form of run_checks' answer. Details quote the profile's names
    and pva's words: every line is written by `escaping.terminal_text`, so that none
    reaches the terminal as a control sequence."""
    counts = answer["counts"]
    lines = [
        "{}: {} ok, {} warn, {} fail, {} skipped".format(
            answer["profile"], counts[OK], counts[WARN], counts[FAIL], counts[SKIPPED]
        )
    ]
    width = max(len(c["name"]) for c in answer["checks"])
    for check in answer["checks"]:
        lines.append(
            "  {:<4}  {:<{w}}  {}".format(
                _MARKS[check["status"]], check["name"], check["detail"], w=width
            )
        )
        if check["status"] in (WARN, FAIL):
            lines.append("  {:<4}  {:<{w}}  means: {}".format("", "", check["means"], w=width))
    lines.append("")
    lines.append(_verdict(answer) + " " + TO_REPORT_IT)
    return "".join(terminal_text(line) + "\n" for line in lines)


#: The checks whose failure makes `extract PROFILE` fail for want of pva, and why.
_PVA_BLOCKERS = {
    ("pva", WARN): "pva is not importable",
    ("report_opens", FAIL): "pva could not open the report",
}


def _verdict(answer: dict) -> str:
    """What `extract PROFILE` does with this profile on this host (docs/pva.md: without
    pva it fails, and `extract --no-pva PROFILE` reads what SQL holds)."""
    counts = dict(answer["counts"])
    failed = "extract would read this profile wrongly there, and refuses it where it can tell."
    blockers = [
        (status, _PVA_BLOCKERS[c["name"], status])
        for c in answer["checks"]
        for status in [c["status"]]
        if (c["name"], status) in _PVA_BLOCKERS
    ]
    if blockers:
        status, reason = blockers[0]
        counts[status] -= 1  # the others
        without = "extract PROFILE would fail here: {}; ".format(reason)
        if counts[FAIL]:
            return without + "and a check failed: " + failed
        others = ", with the other warnings above" if counts[WARN] else ""
        return without + "extract --no-pva PROFILE reads it{}.".format(others)
    if counts[FAIL]:
        return "A check failed: " + failed
    if counts[WARN]:
        return "extract reads this profile, with the warnings above."
    return "extract reads this profile as it assumes."
