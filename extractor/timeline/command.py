"""`extract trace PROFILE... -o trace.json`: the library function the command runs."""

import os
import stat
from pathlib import Path
from typing import IO, Callable, List, Optional, Sequence, Tuple

from .. import __version__
from ..clock import check_clock_option, clock_from_report
from ..core.profile import Profile
from ..core.pvafacts import PvaFacts, PvaModule, import_pva
from ..core.rules import StageRules
from ..core.steps import BadValue, StepNames
from ..core.walk import compile_only_warning, walk
from ..deadline import reading
from ..errors import ProfileError, UsageError, shown_path
from ..output import atomic_file
from .events import EventFile, ProfileEvents
from .tracks import MAX_PROFILES
from .window import Window, choose, earliest_start, open_ended_warning

Say = Callable[[str, str], None]

#: Without a clock, a cycle is shown as a nanosecond: 1000 cycles to the microsecond.
NO_CLOCK_CYCLES_PER_US = 1000.0
NO_CLOCK_NOTE = " (1 cycle = 1 ns)"


def check_profiles(profiles: Sequence[Path]) -> None:
    """UsageError for more profiles than pids below every tid (tracks.MAX_PROFILES)."""
    if len(profiles) > MAX_PROFILES:
        raise UsageError(
            "{} profiles: one trace holds at most {} (each a process)".format(
                len(profiles), MAX_PROFILES
            )
        )


def check_runs(runs: Sequence[int], every_row: bool) -> None:
    if runs and every_row:
        raise UsageError("--run and --all: give one or the other")
    for run in runs:
        if run < 1:
            raise UsageError("--run {}: runs are numbered from 1".format(run))


def run_trace(
    profiles: Sequence[Path],
    output: Optional[str],
    rules: StageRules,
    say: Say,
    *,
    runs: Sequence[int] = (),
    every_row: bool = False,
    clock_mhz: Optional[float] = None,
    use_pva: bool = True,
    pva: Optional[PvaModule] = None,
    quiet: bool = False,
    timeout: float = 0,
) -> None:
    """Write the trace of `profiles` to `output` (docs/formats/trace.md: one process per profile,
    each shifted to start at 0). UsageError for a missing -o, a run that does not exist,
    an output that is one of its inputs; ProfileError for a profile extract cannot
    read."""
    from ..outputchecks import check_outputs
    from ..run.single import bounded, check_profile, in_compiled_code

    if not output or output == "-":
        raise UsageError("give the trace a file with -o FILE (a trace is not for a terminal)")
    check_clock_option(clock_mhz)
    check_profiles(profiles)
    check_runs(runs, every_row)
    for profile in profiles:
        check_profile(profile)
    check_outputs([("-o", output)], profiles, rules=rules)
    # Past --timeout, the error names the profile being read, else all of them.
    with bounded(profiles, [output], say, timeout, in_compiled_code(use_pva, pva)):
        if use_pva and pva is None:
            pva = import_pva()
        _write_trace(output, profiles, rules, say, runs, every_row, clock_mhz, pva, quiet)


def _write_trace(
    output: str,
    profiles: Sequence[Path],
    rules: StageRules,
    say: Say,
    runs: Sequence[int],
    every_row: bool,
    clock_mhz: Optional[float],
    pva: Optional[PvaModule],
    quiet: bool,
) -> None:
    clocks: List[Optional[float]] = []
    with atomic_file(output) as handle:
        out = EventFile(handle)
        for pid, path in enumerate(profiles, 1):
            with reading(path):  # a time limit passing now names this profile
                clocks.append(
                    _one_profile(out, pid, path, rules, say, runs, every_row, clock_mhz, pva, quiet)
                )
        shown_clock = clock_mhz
        if shown_clock is None and clocks and all(c == clocks[0] for c in clocks):
            shown_clock = clocks[0]
        out.close({"tool": "extract {}".format(__version__), "clock_mhz": shown_clock})


def _one_profile(
    out: EventFile,
    pid: int,
    path: Path,
    rules: StageRules,
    say: Say,
    runs: Sequence[int],
    every_row: bool,
    clock_mhz: Optional[float],
    pva: Optional[PvaModule],
    quiet: bool,
) -> Optional[float]:
    """The events of one profile; its clock in MHz (None: none known)."""
    label = shown_path(path)
    try:
        with Profile(path) as profile:
            sql_names = profile.names()
            window = choose(profile, label, rules, sql_names, runs, every_row)
            facts = None
            if pva is not None:
                facts = PvaFacts(pva, path)
                facts.expect_names(*sql_names)
                if clock_mhz is None:
                    clock_mhz = clock_from_report(facts.clock_hz(), path)
            shift = earliest_start(profile, window)
            events = _profile_events(
                out, pid, profile, window, shift, rules, sql_names, facts, clock_mhz
            )
    except BadValue as exc:
        raise ProfileError(path, str(exc)) from exc
    warnings = list(window.warnings)
    warnings += [open_ended_warning(rules, inference) for inference in events.open_ended]
    if events.step_events == 0 and shift is None:
        warnings.append(compile_only_warning())
    if not quiet:
        for warning in warnings:
            say("warning", "{}: {}".format(label, warning))
    name = label + ("" if clock_mhz is not None else NO_CLOCK_NOTE)
    events.metadata(name)
    return clock_mhz


def _profile_events(
    out: EventFile,
    pid: int,
    profile: Profile,
    window: Window,
    shift: Optional[int],
    rules: StageRules,
    sql_names: Tuple[dict, dict],
    facts: Optional[PvaFacts],
    clock_mhz: Optional[float],
) -> ProfileEvents:
    """The events of `profile`, written as the walk over its step rows goes (written
    again from the file's mark should the walk read the rows a second time: rows stored
    out of order)."""
    mark = out.mark() if _regular(out.handle) else None
    per_us = clock_mhz if clock_mhz is not None else NO_CLOCK_CYCLES_PER_US
    events = ProfileEvents(
        out,
        mark,
        pid,
        window,
        shift or 0,
        per_us,
        rules,
        StepNames(sql_names[0], sql_names[1], rules),
        facts,
        shown_path(profile.path),
    )
    walk(profile, rules, [events.bodies, events], sql_names=sql_names)
    return events


def _regular(handle: IO[bytes]) -> bool:
    """Whether `handle` is a regular file (one that can be truncated: not /dev/null)."""
    try:
        return stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False
