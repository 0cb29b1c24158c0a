"""blocks.json: every body of every inference, its cycles per stage, and statistics over
the bodies (docs/formats/blocks.md).

`BlockBodies` is a consumer of the walk over the step rows (walk.py): it sees each
boundary row (anchors and marker candidates) once, in step order, and the walk adds the
plain kernels (the other kernel rows) to the open body's sums itself; it keeps per open
body only a sum and a row count per stage. A closed body is handed to a writer (blocks.json or
CSV, written as the walk goes, blockformats.py) and leaves behind one 4-byte value per
stage it has, for the median: no list of rows, nor of bodies. `extract_blocks` walks the
step rows with it alone (the step tables only: no pva, no memory tables, no start or
end); a run's `--blocks` adds it to the summary's own walk (`summarize(blocks=True)`).
"""

import math
import operator
from array import array
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Dict,
    List,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
)

from ..errors import ProfileError, StrPath, shown_path
from .rules import StageRules
from .steps import (
    INPUT_DELIVERED_KIND,
    OUTPUT_BEGINS_KIND,
    BadValue,
    NameClass,
    SqlValue,
    sum64,
)
from .walk import (
    Consumer,
    bad_cycles,
    compile_only_warning,
    no_anchor_warning,
    walk,
)

if TYPE_CHECKING:
    pass


def median_stage_cycles(bodies: "BlockBodies") -> dict:
    """{label: the median of its cycles over the blocks}, for a batch's index line."""
    return {label: stats["median"] for label, stats in bodies.statistics()["stats"].items()}


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

    @property
    def total(self) -> int:
        return sum(self.cycles)

    def as_dict(self, stages: List[str]) -> dict:
        return {
            "run": self.run,
            "block": self.block,
            "first_step": self.first_step,
            "end_step": self.end_step,
            "kernels": self.kernels,
            "cycles": {
                label: self.cycles[index] for index, label in enumerate(stages) if self.rows[index]
            },
            "total": self.total,
        }


class BodyWriter(Protocol):
    """What sees every body as the pass closes it (blockformats' JsonWriter and
    CsvWriter, writing blocks.json or its CSV as the pass goes)."""

    def begin(self, profile_label: str, stages: Sequence[str]) -> None: ...

    def body(self, body: Body) -> None: ...

    def end(self, statistics: dict) -> None: ...


class Statistic:
    """The values of one label over the bodies, appended one body at a time: each value
    (for the median) in 4 bytes while they fit, then in 8 (`widen`: a body's sums are
    within 64 bits, as `_close` checks), and the number of the body it came from (for
    where the minimum and maximum were first met)."""

    __slots__ = ("values", "bodies")

    def __init__(self) -> None:
        self.values = array("i")
        self.bodies = array("i")

    def widen(self) -> None:
        self.values = array("q", self.values)

    def result(self, runs: Sequence[int], blocks: Sequence[int]) -> dict:
        """`statistics.median` and `pstdev`'s values, computed from exact integers: the
        variance is (n * sum of squares - sum ** 2) / n ** 2, rounded once."""
        values = self.values
        count = len(values)
        total = sum(values)
        ordered = sorted(values)
        middle = count // 2
        median = ordered[middle] if count % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        spread = count * sum(map(operator.mul, values, values)) - total * total
        low, high = ordered[0], ordered[-1]
        at_low, at_high = self.bodies[values.index(low)], self.bodies[values.index(high)]
        return {
            "blocks": count,
            "min": low,
            "median": median,
            "mean": total / count,
            "max": high,
            "stdev": math.sqrt(spread / (count * count)),
            "min_at": [runs[at_low], blocks[at_low]],
            "max_at": [runs[at_high], blocks[at_high]],
        }


class BlockBodies(Consumer):
    """Cuts the step rows into bodies as they stream by (see `boundary`), in one walk.

    Body k opens at anchor A[k] and closes at the next anchor, or at the first
    output-begins step after A[k], whichever comes first; a body still open at the end
    runs to the end of the trace. Each closed body goes to `writer.body` (blockformats:
    blocks.json or CSV written as the pass goes) and into the statistics; it is kept
    (`bodies`, for `result`) only with `keep`. `writer.begin(label, stages)` is called
    by `begin` (a retry of the walk begins the writer again), `writer.end(statistics)`
    by `finish`. `statistics=False`: none are gathered
    (for a reader that wants the bodies as they pass and their count: extract diff,
    extract trace)."""

    def __init__(
        self,
        rules: StageRules,
        profile_label: str,
        writer: Optional[BodyWriter] = None,
        keep: bool = False,
        statistics: bool = True,
    ) -> None:
        self.profile = profile_label
        self.stages = stage_labels(rules)
        self._label_index = {label: index for index, label in enumerate(self.stages)}
        self._stage_index: Dict[object, int] = {}  # NameClass -> index of its stage
        self._keep = keep
        self._statistics = statistics
        self._writer = writer
        self._reset()

    adds_plain_kernels = True  # the walk adds a plain kernel row to `cycles` and `rows`

    def begin(self) -> None:
        """The walk's start, or its retry: no body yet, the writer begun (again)."""
        self._reset()
        if self._writer is not None:
            self._writer.begin(self.profile, self.stages)

    def _reset(self) -> None:
        self.bodies: List[Body] = []
        self._stats = [Statistic() for _ in self.stages]
        self._total = Statistic()
        self._runs = array("i")
        self._block_numbers = array("i")
        self._inputs = 0  # distinct input-delivered steps so far
        self._last_input = None
        self._last_anchor = None
        self._first = None  # the open body's anchor step (None: no body open)
        self._run = 0
        # The open body's cycles and kernel rows per stage (None: no body open); the
        # walk adds a plain kernel row's to them itself.
        self.cycles: Optional[List[int]] = None
        self.rows: List[int] = []
        self._blocks_of_run: Dict[int, int] = {}
        # The most rows one anchor step has: the IPUs it ran on (kernel cycles add
        # their rows up), for blocks' markdown to say so.
        self.anchor_ipus = 0
        self._anchor_rows = 0

    def boundary(
        self, step: SqlValue, kind: SqlValue, cycles: SqlValue, classes: NameClass
    ) -> None:
        """An anchor or a marker candidate: its step, kind, cycles and NameClass (the
        walk adds the plain kernels to `cycles` and `rows` itself). Rows of one step
        share their name and kind, so the first row of a step decides what the step is."""
        if classes.anchor:  # an anchor is a kernel
            if step != self._last_anchor:
                self._close(step)
                self._open(step)
            self._anchor_rows += 1  # a row per IPU the anchor step ran on
            if self._anchor_rows > self.anchor_ipus:
                self.anchor_ipus = self._anchor_rows
        elif (
            kind == OUTPUT_BEGINS_KIND
            and classes.output_begins
            and self._first is not None
            and step > self._first
        ):
            self._close(step)
        if kind == INPUT_DELIVERED_KIND and classes.input_delivered and step != self._last_input:
            self._inputs += 1
            self._last_input = step
        if classes.kernel and self.cycles is not None:
            index = self._stage_index.get(classes)
            if index is None:
                index = self._stage_index[classes] = self._label_index[classes.stage]
            if cycles is not None:
                if type(cycles) is not int:
                    bad_cycles(step, cycles)
                self.cycles[index] += cycles
            self.rows[index] += 1

    def stage_index(self, classes: NameClass) -> int:
        """The index in `cycles` of a kernel's stage."""
        return self._label_index[classes.stage]

    def _open(self, step: SqlValue) -> None:
        self._last_anchor = self._first = step
        self._anchor_rows = 0
        # Input-delivered steps smaller than the anchor: this row's own step, should it
        # be one too, is counted after this (in `row`).
        self._run = self._inputs
        self.cycles = [0] * len(self.stages)
        self.rows = [0] * len(self.stages)

    def _close(self, end_step: SqlValue) -> None:
        if self._first is None:
            return
        for value in self.cycles or ():  # what every writer of the body holds
            sum64(value)
        sum64(sum(self.cycles or ()))
        run = self._run
        block = self._blocks_of_run.get(run, 0)
        self._blocks_of_run[run] = block + 1
        body = Body(run, block, self._first, end_step, sum(self.rows), self.cycles, self.rows)
        number = len(self._runs)
        self._runs.append(run)  # a body's run and block, by its number
        self._block_numbers.append(block)
        if self._statistics:
            self._add_widening(number)
        if self._writer is not None:
            self._writer.body(body)
        if self._keep:
            self.bodies.append(body)
        self._first = None
        self.cycles = None

    def finish(self) -> None:
        """The end of the trace: a body still open runs to it (end_step null)."""
        self._close(None)
        if self._writer is not None:
            self._writer.end(self.statistics())

    end = finish  # the walk's end

    def _add_widening(self, number: int) -> None:
        """`_add(number)`, widening the values' arrays once a value is beyond 32 bits."""
        try:
            self._add(number)
        except OverflowError:
            self._undo_and_widen(number)
            self._add(number)

    def _add(self, number: int) -> None:
        """The open body's values into the statistics; `number`: the body's number."""
        stats, cycles = self._stats, self.cycles or []
        for index, rows in enumerate(self.rows):
            if rows:
                stat = stats[index]
                stat.bodies.append(number)
                stat.values.append(cycles[index])
        self._total.bodies.append(number)
        self._total.values.append(sum(cycles))

    def _undo_and_widen(self, number: int) -> None:
        """Take back what `_add(number)` added before it overflowed, and widen."""
        for stat in self._stats + [self._total]:
            if len(stat.bodies) and stat.bodies[-1] == number:
                stat.bodies.pop()
                if len(stat.values) > len(stat.bodies):
                    stat.values.pop()
            stat.widen()

    @property
    def count(self) -> int:
        """The bodies closed so far."""
        return len(self._runs)

    @property
    def inferences(self) -> int:
        """The distinct input-delivered steps met so far."""
        return self._inputs

    def statistics(self) -> dict:
        """{"stats": {label: statistics}, "total": statistics or None}, as blocks.json."""
        where = (self._runs, self._block_numbers)
        return {
            "stats": {
                label: stat.result(*where)
                for label, stat in zip(self.stages, self._stats)
                if len(stat.values)
            },
            "total": self._total.result(*where) if len(self._total.values) else None,
        }

    def result(self) -> dict:
        """blocks.json as a dict, keys in the spec's order (made with `keep`)."""
        if not self._keep:
            raise ValueError("the bodies were not kept (BlockBodies(keep=True))")
        data = {
            "profile": self.profile,
            "stages": list(self.stages),
            "blocks": [body.as_dict(self.stages) for body in self.bodies],
        }
        data.update(self.statistics())
        return data


class BlocksExtraction(NamedTuple):
    bodies: BlockBodies
    warnings: List[str]


def extract_blocks(
    path: StrPath,
    rules: StageRules,
    profile_label: Optional[str] = None,
    writer: Optional[BodyWriter] = None,
    keep: bool = False,
) -> BlocksExtraction:
    """Every body of one profile (`BlockBodies`: its statistics, and its bodies with
    `keep`; `writer` sees each body as the pass goes) and the warnings (no steps, no
    anchor), from one pass over its step rows. Needs only the step tables (no pva, no
    memory tables). `profile_label` defaults to the path as `extract` shows it."""
    from .profile import STEP_TABLES, Profile

    path = Path(path)
    label = profile_label if profile_label is not None else shown_path(path)
    bodies = BlockBodies(rules, label, writer, keep)
    try:
        with Profile(path, tables=STEP_TABLES, check_start_end=False) as profile:
            any_rows = walk(profile, rules, [bodies])
    except BadValue as exc:
        raise ProfileError(path, str(exc)) from exc
    warnings = []
    if not any_rows:
        warnings.append(compile_only_warning())
    elif not bodies.count:  # every anchor opens a body
        warnings.append(no_anchor_warning(rules))
    return BlocksExtraction(bodies, warnings)
