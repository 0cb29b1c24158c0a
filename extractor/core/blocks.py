"""blocks.json: every body of every inference, its cycles per stage, and statistics over
the bodies (docs/formats/blocks.md).

`BlockBodies` rides along the summary's one pass over the step rows
(`summary._one_pass`): it sees each notable row (kernels and marker candidates) once, in
step order, and keeps per open body only a sum and a row count per stage. A closed body
is handed to a writer (blocks.json or CSV, written as the pass goes, blockformats.py)
and leaves behind one 4-byte value per stage it has, for the median: no list of rows,
nor of bodies. `extract_blocks` reads the same step rows, from the same reader
(trace.read_trace), in a pass of its own that does nothing else (`_bodies_pass`; the
step tables only: no pva, no memory tables); a batch's `--blocks` gets the same
accumulator from the summary's own pass (`summarize(blocks=True)`).
"""

import math
import operator
from array import array
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
)

from ..errors import ProfileError, StrPath, shown_path
from .rules import StageRules
from .steps import (
    INPUT_DELIVERED_KIND,
    OUTPUT_BEGINS_KIND,
    BadValue,
    NameClass,
    SqlValue,
    StepNames,
    sum64,
    whole,
)
from .trace import compile_only_warning, no_anchor_warning, read_trace

if TYPE_CHECKING:
    from .profile import Profile


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


def bad_cycles(step: SqlValue, cycles: SqlValue) -> None:
    """Raise BadValue for a kernel row whose cycles are not a whole number."""
    whole(cycles, "step {}: steps_by_ipu.cycles".format(step))


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


class BlockBodies:
    """Cuts the step rows into bodies as they stream by (see `row`), in one pass.

    Body k opens at anchor A[k] and closes at the next anchor, or at the first
    output-begins step after A[k], whichever comes first; a body still open at the end
    runs to the end of the trace. Each closed body goes to `writer.body` (blockformats:
    blocks.json or CSV written as the pass goes) and into the statistics; it is kept
    (`bodies`, for `result`) only with `keep`. `writer.begin(label, stages)` is called
    here, `writer.end(statistics)` by `finish`. `statistics=False`: none are gathered
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
        self._plain: Dict[object, int] = {}  # NameClass -> plain_index(it)
        self.bodies: List[Body] = []
        self._keep = keep
        self._statistics = statistics
        self._writer = writer
        self._stats = [Statistic() for _ in self.stages]
        self._total = Statistic()
        self._runs = array("i")
        self._block_numbers = array("i")
        self._inputs = 0  # distinct input-delivered steps so far
        self._last_input = None
        self._last_anchor = None
        self._first = None  # the open body's anchor step (None: no body open)
        self._run = 0
        # The open body's cycles and kernel rows per stage (None: no body open); a
        # pass may add a plain kernel row's to them itself (see `_bodies_pass`).
        self.cycles: Optional[List[int]] = None
        self.rows: List[int] = []
        self._blocks_of_run: Dict[int, int] = {}
        # The most rows one anchor step has: the IPUs it ran on (kernel cycles add
        # their rows up), for blocks' markdown to say so.
        self.anchor_ipus = 0
        self._anchor_rows = 0
        if writer is not None:
            writer.begin(profile_label, self.stages)

    def row(self, step: SqlValue, kind: SqlValue, cycles: SqlValue, classes: NameClass) -> None:
        """A notable row: its step, kind, cycles and NameClass. Rows of one step share
        their name and kind, so the first row of a step decides what the step is."""
        plain = self._plain.get(classes)
        if plain is None:
            plain = self._plain[classes] = self.plain_index(classes)
        if plain >= 0:  # most rows: a kernel that neither opens nor closes anything
            if self.cycles is not None:
                if cycles.__class__ is int:
                    self.cycles[plain] += cycles
                elif cycles is not None:
                    bad_cycles(step, cycles)
                self.rows[plain] += 1
            return
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

    def plain_index(self, classes: NameClass) -> int:
        """The stage index of a kernel that is no anchor nor marker candidate; else -1."""
        if classes.kernel and not (
            classes.anchor or classes.input_delivered or classes.output_begins
        ):
            return self._label_index[classes.stage]
        return -1

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
    try:
        with Profile(path, tables=STEP_TABLES, check_start_end=False) as profile:
            bodies, any_rows = read_bodies(
                profile, rules, lambda: BlockBodies(rules, label, writer, keep)
            )
    except BadValue as exc:
        raise ProfileError(path, str(exc)) from exc
    warnings = []
    if not any_rows:
        warnings.append(compile_only_warning())
    elif not bodies.count:  # every anchor opens a body
        warnings.append(no_anchor_warning(rules))
    return BlocksExtraction(bodies, warnings)


def read_bodies(
    profile: "Profile", rules: StageRules, make_bodies: Callable[[], BlockBodies]
) -> Tuple[BlockBodies, bool]:
    """(BlockBodies, whether there were rows): the step rows read as the summary's pass
    reads them (trace.read_trace: stored order where it is step order, else sorted),
    with none of the summary's work: only the notable rows (a kernel or a marker
    candidate) reach the accumulator, a fresh one (`make_bodies()`) for each attempt."""
    programs, compute_sets = profile.names()
    names = StepNames(programs, compute_sets, rules)
    return read_trace(
        profile, lambda batches: _bodies_pass(batches, names, make_bodies()), bodies=True
    )


def _bodies_pass(
    batches: Iterable[list], names: StepNames, bodies: BlockBodies
) -> Tuple[BlockBodies, bool]:
    # compute set -> program -> what a row of the pair is: None (not notable), the stage
    # index of a plain kernel (no anchor nor marker candidate: most notable rows, added
    # to the open body here, with no call), else its NameClass for `bodies.row`. One
    # lookup per row (plain dicts and two ints, as summary's PairTable and for its
    # reasons). Any: the loop tells an index from a NameClass by `__class__ is int`
    # (cheaper than isinstance, per row), which mypy does not narrow by.
    table: Dict[SqlValue, Dict[SqlValue, Any]] = {}

    def fill(compute_set: SqlValue, program: SqlValue) -> Union[int, NameClass, None]:
        named = names[program, compute_set]
        value = None
        if named.notable:
            index = bodies.plain_index(named.classes)
            value = index if index >= 0 else named.classes
        table.setdefault(compute_set, {})[program] = value
        return value

    row = bodies.row
    any_rows = False
    for batch in batches:
        any_rows = True
        for raw in batch:  # step, kind, cycles, program, compute_set
            try:
                what = table[raw[4]][raw[3]]
            except KeyError:  # a pair met for the first time
                what = fill(raw[4], raw[3])
            if what is None:
                continue
            if what.__class__ is int:  # a plain kernel
                cycles = bodies.cycles
                if cycles is not None:  # in a body
                    value = raw[2]
                    if value.__class__ is int:
                        cycles[what] += value
                    elif value is not None:
                        bad_cycles(raw[0], value)
                    bodies.rows[what] += 1
            else:
                row(raw[0], raw[1], raw[2], what)
    bodies.finish()
    return bodies, any_rows
