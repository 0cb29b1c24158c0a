"""`extract breakdown PROFILE [CANDIDATE]`: the library functions the command runs.

`breakdown_profile` gives one profile's breakdown (its windows, from one walk over its
step rows: a `sums.WindowSums` per window) and its warnings; `compare_breakdowns` two
profiles' window by window; `breakdown_profiles` either, as the command's JSON;
`run_breakdown` is the whole command, checks, time limit and output included.
"""

from pathlib import Path
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple, Type, cast

from ..core.blocks import stage_labels
from ..core.profile import STEP_TABLES, Profile
from ..core.pvafacts import PvaFacts, PvaModule, import_pva
from ..core.rules import StageRules
from ..core.steps import BadValue
from ..core.walk import compile_only_warning, walk
from ..deadline import reading
from ..errors import ProfileError, UsageError, shown_path
from ..render import BREAKDOWN_FORMATS
from ..timeline.window import inferences, open_ended_warning
from .keys import DEFAULT_DEPTH, MAX_DEPTH, MIN_DEPTH
from .sums import WindowSums
from .tables import compared_window, window_table

Say = Callable[[str, str], None]

#: How many ops and layers the markdown lists by default (--top).
DEFAULT_TOP = 20


class Breakdown(NamedTuple):
    """One profile's breakdown (the file's object) and what to warn of."""

    result: dict
    warnings: List[str]


def check_options(runs: Sequence[int], every_row: bool, depth: int, top: int) -> None:
    """UsageError for options that cannot be taken together or are out of range."""
    if runs and every_row:
        raise UsageError("--run and --all: give one or the other")
    for run in runs:
        if run < 1:
            raise UsageError("--run {}: runs are numbered from 1".format(run))
    if not MIN_DEPTH <= depth <= MAX_DEPTH:
        raise UsageError("--depth {}: give {} to {}".format(depth, MIN_DEPTH, MAX_DEPTH))
    if top < 0:
        raise UsageError("--top {}: give how many ops and layers to list (0 or more)".format(top))


def _windows(
    profile: Profile,
    label: str,
    rules: StageRules,
    sql_names: Tuple[dict, dict],
    runs: Sequence[int],
    every_row: bool,
) -> Tuple[List[Tuple[Optional[int], WindowSums]], List[str]]:
    """(run or None, its consumer) per window, in the order asked, and the warnings."""
    if every_row:
        return [(None, WindowSums())], []
    found = inferences(profile, rules, sql_names)
    if not found:
        if runs:
            raise UsageError(
                "{}: no run {}: it has no inference (no input-delivered step matching {!r})".format(
                    label, ", ".join(map(str, runs)), rules.input_delivered.pattern
                )
            )
        return [(None, WindowSums())], [
            "no input-delivered step ({!r}): one window of every step row".format(
                rules.input_delivered.pattern
            )
        ]
    missing = [run for run in runs if run > len(found)]
    if missing:
        raise UsageError(
            "{}: no run {}: the runs there are 1 to {}".format(
                label, ", ".join(map(str, missing)), len(found)
            )
        )
    asked: List[int] = []
    for run in runs or [1]:
        if run not in asked:
            asked.append(run)
    chosen = [found[run - 1] for run in asked]
    warnings = [open_ended_warning(rules, i) for i in chosen if i.last is None]
    return [(i.number, WindowSums(i.first, i.last)) for i in chosen], warnings


def breakdown_profile(
    path: Path,
    rules: StageRules,
    *,
    runs: Sequence[int] = (),
    every_row: bool = False,
    depth: int = DEFAULT_DEPTH,
    pva: Optional[PvaModule] = None,
    label: Optional[str] = None,
) -> Breakdown:
    """The breakdown of `path`: inference 1, or each of `runs`, or (`every_row`) every
    step row as one window; `pva` None: no tile balance. UsageError for a run it does
    not have, ProfileError for a profile that cannot be read."""
    check_options(runs, every_row, depth, 0)
    if path.is_dir():
        raise ProfileError(path, "is a directory, not a profile")
    shown = label if label is not None else shown_path(path)
    try:
        with Profile(path, tables=STEP_TABLES) as profile:
            sql_names = profile.names()
            windows, warnings = _windows(profile, shown, rules, sql_names, runs, every_row)
            tiles = None
            if pva is not None:
                tiles = PvaFacts(pva, path).tiles_per_ipu()
            first = [w.first for _, w in windows]
            lasts = [w.last for _, w in windows]
            steps = None
            if None not in first:
                end = None if None in lasts else max(cast(List[int], lasts)) + 1
                steps = (min(cast(List[int], first)), end)
            any_rows = walk(profile, rules, [w for _, w in windows], sql_names, steps=steps)
            stages = stage_labels(rules)
            result = {
                "profile": shown,
                "windows": [window_table(run, w, stages, depth, tiles) for run, w in windows],
            }
    except BadValue as exc:
        raise ProfileError(path, str(exc)) from exc
    if not any_rows:  # a window of every row, with none: no other warning is news
        warnings = [compile_only_warning()]
    return Breakdown(result, warnings)


def breakdown_profiles(
    profiles: Sequence[Path],
    rules: StageRules,
    *,
    runs: Sequence[int] = (),
    every_row: bool = False,
    depth: int = DEFAULT_DEPTH,
    pva: Optional[PvaModule] = None,
    say: Optional[Say] = None,
) -> dict:
    """One profile's breakdown, or (two profiles) what changed from the first to the
    second: `extract breakdown --format json`'s object. Each profile's warnings go to
    `say("warning", "<profile>: <warning>")` when given."""
    if len(profiles) not in (1, 2):
        raise UsageError("give one profile, or two to compare")
    found = []
    for path in profiles:
        with reading(path):  # a time limit passing now names this profile
            one = breakdown_profile(
                path, rules, runs=runs, every_row=every_row, depth=depth, pva=pva
            )
        if say is not None:
            for warning in one.warnings:
                say("warning", "{}: {}".format(shown_path(path), warning))
        found.append(one.result)
    return found[0] if len(found) == 1 else compare_breakdowns(found[0], found[1])


def compare_breakdowns(base: dict, candidate: dict) -> dict:
    """Two breakdowns (breakdown_profile's), window by window in order: what changed."""
    return {
        "base": base["profile"],
        "candidate": candidate["profile"],
        "windows": [
            compared_window(old, new) for old, new in zip(base["windows"], candidate["windows"])
        ],
    }


def run_breakdown(
    profiles: Sequence[Path],
    output: Optional[str],
    rules: StageRules,
    say: Say,
    *,
    runs: Sequence[int] = (),
    every_row: bool = False,
    depth: int = DEFAULT_DEPTH,
    top: int = DEFAULT_TOP,
    output_format: str = "markdown",
    use_pva: bool = True,
    quiet: bool = False,
    timeout: float = 0,
) -> dict:
    """The whole of `extract breakdown`: one profile's breakdown, or two compared,
    written to `output` ("-" or None: standard output) in `output_format`, atomically;
    returned. PvaMissingError, before anything is written, when `use_pva` and pva
    cannot be imported."""
    from ..output import write_output
    from ..outputchecks import check_outputs
    from ..run.single import STDOUT, bounded, check_profile, file_outputs, in_compiled_code
    from .formats import BreakdownRenderer

    check_options(runs, every_row, depth, top)
    if output_format not in BREAKDOWN_FORMATS:
        raise UsageError(
            "--format {}: one of {}".format(output_format, ", ".join(BREAKDOWN_FORMATS))
        )
    if len(profiles) == 2 and output_format == "folded":
        raise UsageError(
            "--format folded: a flame graph shows one profile's cycles, not two compared "
            "(give one profile, or another format)"
        )
    for profile in profiles:
        check_profile(profile)
    target = output or STDOUT
    outputs = [("--output", target)]
    check_outputs(outputs, profiles, rules=rules)
    with bounded(profiles, file_outputs(outputs), say, timeout, in_compiled_code(use_pva)):
        pva = import_pva() if use_pva else None  # PvaMissingError without it (docs/pva.md)
        result = breakdown_profiles(
            profiles,
            rules,
            runs=runs,
            every_row=every_row,
            depth=depth,
            pva=pva,
            say=None if quiet else say,
        )
        renderer = cast(Type[BreakdownRenderer], BREAKDOWN_FORMATS[output_format])
        write_output(target, renderer(top=top).render(result))
    return result
