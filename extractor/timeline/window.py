"""Which step rows a trace shows, and the start of its time axis.

An inference R is the R-th distinct input-delivered step (in step order) and the steps
from it to the first output-begins step after it (to the end of the trace when there is
none). For `--run R`, both kinds of step are found in the `steps` table (a step's kind
and name are the step's, not its rows'), among the steps that have rows, without reading
the rows themselves: the window is known before the one pass over the rows starts. With
`--all` every row is shown and that query is not made (a quarter of a second on a
million steps): the pass meets the inferences as it reads the rows (events.py), as it
does for the slices of the inferences of any window.
"""

from typing import FrozenSet, List, NamedTuple, Optional, Sequence, Tuple

from ..core.profile import Profile
from ..core.rules import StageRules
from ..core.sqlitefile import SQL_ERRORS, storage_class
from ..core.steps import INPUT_DELIVERED_KIND, OUTPUT_BEGINS_KIND, BadValue, StepNames
from ..errors import UsageError

_MARKER_STEPS = """
SELECT s.id, s.type, s.program, s.compute_set FROM steps AS s
WHERE s.type IN (?, ?) AND s.id IN (SELECT step_id FROM steps_by_ipu)
ORDER BY s.id
"""

_MIN_START = "SELECT min(cycles_base + active_cycles_from_min) FROM steps_by_ipu"


class Inference(NamedTuple):
    """Inference `number` (from 1): the steps `first` .. `last` (None: to the end)."""

    number: int
    first: int
    last: Optional[int]


class Window(NamedTuple):
    """The step ranges a trace shows (inclusive; None as `hi`: to the end; `ranges`
    None: every row), the numbers of the inferences whose slices it shows (None: every
    one), and what to warn of before the pass."""

    ranges: Optional[List[Tuple[int, Optional[int]]]]
    runs: Optional[FrozenSet[int]]
    warnings: List[str]


def inferences(
    profile: Profile, rules: StageRules, sql_names: Tuple[dict, dict]
) -> List[Inference]:
    """Every inference of the profile, in order."""
    names = StepNames(sql_names[0], sql_names[1], rules)
    inputs: List[int] = []
    outputs: List[int] = []
    try:
        rows = profile.db.execute(_MARKER_STEPS, (INPUT_DELIVERED_KIND, OUTPUT_BEGINS_KIND))
        for step, kind, program, compute_set in rows:
            classes = names[program, compute_set].classes
            if kind == INPUT_DELIVERED_KIND and classes.input_delivered:
                if not inputs or inputs[-1] != step:
                    inputs.append(step)
            elif kind == OUTPUT_BEGINS_KIND and classes.output_begins:
                outputs.append(step)
    except SQL_ERRORS as exc:
        raise profile.error(exc) from exc
    found = []
    at = 0
    for number, first in enumerate(inputs, 1):
        while at < len(outputs) and outputs[at] <= first:
            at += 1
        found.append(Inference(number, first, outputs[at] if at < len(outputs) else None))
    return found


def choose(
    profile: Profile,
    label: str,
    rules: StageRules,
    sql_names: Tuple[dict, dict],
    runs: Sequence[int],
    every_row: bool,
) -> Window:
    """The window of `--run R...` (`runs`; none: the first inference) or `--all`
    (`every_row`). UsageError for a run the profile does not have. An inference shown
    that runs to the end of the trace is warned of by the pass (`open_ended_warning`)."""
    if every_row:
        return Window(None, None, [])
    found = inferences(profile, rules, sql_names)
    warnings: List[str] = []
    if not found:
        if runs:
            raise UsageError(
                "{}: no run {}: it has no inference (no input-delivered step matching {!r})".format(
                    label, ", ".join(map(str, runs)), rules.input_delivered.pattern
                )
            )
        warnings.append(
            "no input-delivered step ({!r}): the trace shows every step row".format(
                rules.input_delivered.pattern
            )
        )
        return Window(None, None, warnings)
    missing = [run for run in runs if run > len(found)]
    if missing:
        raise UsageError(
            "{}: no run {}: the runs there are 1 to {}".format(
                label, ", ".join(map(str, missing)), len(found)
            )
        )
    chosen = [found[run - 1] for run in sorted(set(runs or [1]))]
    ranges = _merged([(i.first, i.last) for i in chosen])
    return Window(ranges, frozenset(i.number for i in chosen), warnings)


def open_ended_warning(rules: StageRules, inference: Inference) -> str:
    """The warning for an inference shown that runs to the end of the trace."""
    return (
        "no output-begins step ({!r}) after the input delivered at step {}: "
        "inference {} runs to the end of the trace".format(
            rules.output_begins.pattern, inference.first, inference.number
        )
    )


def _merged(ranges: List[Tuple[int, Optional[int]]]) -> List[Tuple[int, Optional[int]]]:
    """Inclusive ranges, sorted and merged where they overlap or touch."""
    merged: List[Tuple[int, Optional[int]]] = []
    for lo, hi in sorted(ranges, key=lambda r: r[0]):
        if merged:
            last_lo, last_hi = merged[-1]
            if last_hi is None or lo <= last_hi + 1:
                top = None if last_hi is None or hi is None else max(last_hi, hi)
                merged[-1] = (last_lo, top)
                continue
        merged.append((lo, hi))
    return merged


def earliest_start(profile: Profile, window: Window) -> Optional[int]:
    """The smallest start of the window's step rows (None: no row has one); BadValue
    when it is not a whole number."""
    sql, values = _MIN_START, []  # type: Tuple[str, List[int]]
    if window.ranges is not None:
        parts = []
        for lo, hi in window.ranges:
            if hi is None:
                parts.append("step_id >= ?")
                values.append(lo)
            else:
                parts.append("step_id BETWEEN ? AND ?")
                values += [lo, hi]
        sql += " WHERE " + " OR ".join(parts)
    try:
        (low,) = profile.db.execute(sql, values).fetchone()
    except SQL_ERRORS as exc:
        raise profile.error(exc) from exc
    if low is None or type(low) is int:
        return low
    # a start the pass would refuse, found first here (REAL: -inf, 1.5, 7.0; text)
    raise BadValue(
        "a step row's start (cycles_base + active_cycles_from_min) is {}, not a whole "
        "number".format(storage_class(low))
    )
