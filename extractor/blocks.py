"""blocks.json: every body of every inference, its cycles per stage, and statistics over
the bodies (blocks-spec.md).

`BlockBodies` rides along the summary's one pass over the step rows
(`summary._one_pass`): it sees each notable row (kernels and marker candidates) once, in
step order, and keeps per open body only a sum and a row count per stage, so memory
grows with the number of bodies, never with the number of rows. `extract_blocks` runs
that pass alone (the step tables only: no pva, no memory tables); a batch's `--blocks`
gets the same accumulator from the summary's own pass (`summarize(blocks=True)`).
"""

from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

from .errors import ProfileError, shown_path
from .rules import StageRules
from .steps import INPUT_DELIVERED_KIND, OUTPUT_BEGINS_KIND, BadValue, whole

BLOCKS_NAME = "blocks.json"
STATISTICS = ("min", "median", "mean", "max")  # the statistics compare --stat may pick


def blocks_path(summary_path) -> Path:
    """Where a batch writes blocks.json: beside the summary."""
    return Path(summary_path).parent / BLOCKS_NAME


def median_stage_cycles(blocks: dict) -> dict:
    """{label: the median of its cycles over the blocks}, for a batch's index line."""
    return {label: stats["median"] for label, stats in blocks["stats"].items()}


def stage_labels(rules: StageRules) -> List[str]:
    """Every rule's label in rules order, then the fallback, each once (first seen)."""
    labels: List[str] = []
    for label in [rule.label for rule in rules.rules] + [rules.fallback]:
        if label not in labels:
            labels.append(label)
    return labels


class Body(NamedTuple):
    run: int
    block: int
    first_step: int
    end_step: Optional[int]
    kernels: int
    cycles: List[int]  # per stage label, in `stages` order
    rows: List[int]  # kernel rows per stage label


class BlockBodies:
    """Cuts the step rows into bodies as they stream by (see `row`), in one pass.

    Body k opens at anchor A[k] and closes at the next anchor, or at the first
    output-begins step after A[k], whichever comes first; a body still open at the end
    runs to the end of the trace."""

    def __init__(self, rules: StageRules):
        self.stages = stage_labels(rules)
        self._label_index = {label: index for index, label in enumerate(self.stages)}
        self._stage_index: Dict[object, int] = {}  # NameClass -> index of its stage
        self.bodies: List[Body] = []
        self._inputs = 0  # distinct input-delivered steps so far
        self._last_input = None
        self._last_anchor = None
        self._first = None  # the open body's anchor step (None: no body open)
        self._run = 0
        self._cycles: List[int] = []
        self._rows: List[int] = []
        self._kernels = 0
        self._blocks_of_run: Dict[int, int] = {}

    def row(self, step, kind, cycles, classes) -> None:
        """A notable row: its step, kind, cycles and NameClass. Rows of one step share
        their name and kind, so the first row of a step decides what the step is."""
        if classes.anchor and step != self._last_anchor:  # an anchor is a kernel
            self._close(step)
            self._open(step)
        elif (self._first is not None and kind == OUTPUT_BEGINS_KIND
              and classes.output_begins and step > self._first):
            self._close(step)
        if (kind == INPUT_DELIVERED_KIND and classes.input_delivered
                and step != self._last_input):
            self._inputs += 1
            self._last_input = step
        if classes.kernel and self._first is not None:
            index = self._stage_index.get(classes)
            if index is None:
                index = self._stage_index[classes] = self._label_index[classes.stage]
            if cycles is not None:
                if type(cycles) is not int:
                    whole(cycles, "step {}: steps_by_ipu.cycles".format(step))  # raises
                self._cycles[index] += cycles
            self._rows[index] += 1
            self._kernels += 1

    def _open(self, step) -> None:
        self._last_anchor = self._first = step
        # Input-delivered steps smaller than the anchor: this row's own step, should it
        # be one too, is counted after this (in `row`).
        self._run = self._inputs
        self._cycles = [0] * len(self.stages)
        self._rows = [0] * len(self.stages)
        self._kernels = 0

    def _close(self, end_step) -> None:
        if self._first is None:
            return
        block = self._blocks_of_run.get(self._run, 0)
        self._blocks_of_run[self._run] = block + 1
        self.bodies.append(Body(self._run, block, self._first, end_step, self._kernels,
                                self._cycles, self._rows))
        self._first = None

    def finish(self) -> None:
        """The end of the trace: a body still open runs to it (end_step null)."""
        self._close(None)

    def result(self, profile_label: str) -> dict:
        """blocks.json as a dict, keys in the spec's order."""
        return blocks_dict(profile_label, self.stages, self.bodies)


def blocks_dict(profile_label: str, stages: List[str], bodies: List[Body]) -> dict:
    listed = []
    per_label: Dict[str, list] = {label: [] for label in stages}
    totals = []
    for body in bodies:
        cycles = {}
        for index, label in enumerate(stages):
            if body.rows[index]:
                cycles[label] = body.cycles[index]
                per_label[label].append((body.cycles[index], body.run, body.block))
        total = sum(body.cycles)
        totals.append((total, body.run, body.block))
        listed.append({"run": body.run, "block": body.block, "first_step": body.first_step,
                       "end_step": body.end_step, "kernels": body.kernels,
                       "cycles": cycles, "total": total})
    return {
        "profile": profile_label,
        "stages": list(stages),
        "blocks": listed,
        "stats": {label: statistics_of(values) for label, values in per_label.items()
                  if values},
        "total": statistics_of(totals) if totals else None,
    }


def statistics_of(values) -> dict:
    """The spec's statistics of [(value, run, block), ...] (at least one), in order."""
    import statistics  # here: its imports cost start-up time, and only this needs it

    numbers = [value for value, _, _ in values]
    low, high = min(numbers), max(numbers)
    at_low = next((run, block) for value, run, block in values if value == low)
    at_high = next((run, block) for value, run, block in values if value == high)
    return {"blocks": len(numbers), "min": low, "median": statistics.median(numbers),
            "mean": sum(numbers) / len(numbers), "max": high,
            "stdev": statistics.pstdev(numbers),
            "min_at": list(at_low), "max_at": list(at_high)}


class BlocksExtraction(NamedTuple):
    blocks: dict
    warnings: List[str]


def extract_blocks(path, rules: StageRules, profile_label: Optional[str] = None
                   ) -> BlocksExtraction:
    """blocks.json's dict for one profile, and the warnings (no steps, no anchor), from
    one pass over its step rows. Needs only the step tables (no pva, no memory tables).
    `profile_label` defaults to the path as `extract` shows it."""
    from .profile import STEP_TABLES, Profile
    from .summary import _read_trace, compile_only_warning, no_anchor_warning

    path = Path(path)
    label = profile_label if profile_label is not None else shown_path(path)
    try:
        with Profile(path, tables=STEP_TABLES) as profile:
            body, _, any_rows, bodies = _read_trace(
                profile, rules, blocks_factory=lambda: BlockBodies(rules))
    except BadValue as exc:
        raise ProfileError(path, str(exc)) from exc
    warnings = []
    if not any_rows:
        warnings.append(compile_only_warning())
    elif body.anchors == 0:
        warnings.append(no_anchor_warning(rules))
    return BlocksExtraction(bodies.result(label), warnings)
