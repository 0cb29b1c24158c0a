"""The one walk over a profile's step rows, and the consumers it feeds.

A profile's step rows (millions of them) are read once per command, in the spec's order,
by `walk`, whose loop is the only one over them: the summary's first body and device
spans, every block's body, the step tables, extract trace's events, extract diff's body
finder and a body's units are *consumers* of it, listed as data by the command that
wants them (summary.py, blocks.py, timeline/events.py, diff/bodies.py). Adding one is
writing one more `Consumer`: no other changes.

Reading (`read_rows`). The rows are first read as steps_by_ipu stores them, with no sort:
that is the spec's order when the table is stored in step order (as Poplar writes it),
which is checked as the rows come. Should a row be out of order, or should that read
meet any fault (OutOfOrder, BadValue, ProfileError), the walk is made again, from
scratch, on SQLite's sorted rows, whose results and errors are the ones the spec
defines. Before each attempt every consumer's `begin()` is called: that is how a retry
resets them. A consumer that cannot be made twice (one writing a file row by row, as the
step tables) says so (`restartable = False`), and then the sorted rows are read from the
start.

What the walk does for its consumers, once per row:
- names and classifies each (program, compute set) pair once (steps.StepNames);
- detects the markers (an input-delivered or output-begins row whose name matches) and
  hands the device rows' [min start, max end] since the last marker to `devices`;
- for the one consumer that sums the open block (`adds_plain_kernels`, blocks.py's
  BlockBodies), adds each plain kernel row (a kernel that is no anchor nor marker
  candidate: most kernel rows) to the open block's sums itself, with no call: the one
  place that does;
- calls the other hooks on the rows they ask for (see `Consumer`).
In that order for a row: its hooks, then its plain kernel added, then the stream (below)
sent it, then the device span widened by it. Each is written once in the loop.

The loop is written flat, on locals, with one lookup per row: a trace has millions of
rows, and each command must stay within 5% of its own hand-written loop of before
(bench/commands.py measures them side by side). For the same reason a consumer with
much work and state per row (extract trace, an event written per row) takes the rows as
a `stream`: a generator sent each row, its state in its own locals, no method called.
"""

from operator import itemgetter
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Generator,
    Iterable,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
)

from ..errors import ProfileError
from .rules import StageRules
from .steps import (
    DEVICE_KINDS,
    INPUT_DELIVERED_KIND,
    OUTPUT_BEGINS_KIND,
    BadValue,
    NameClass,
    NamedStep,
    SqlValue,
    StepNames,
    whole,
)

if TYPE_CHECKING:
    from .profile import Profile, RawStepRow

T = TypeVar("T")

_step = itemgetter(0)  # a row's step id


class OutOfOrder(Exception):
    """A step row whose step id is smaller than the one before (read in stored order)."""


class EndOfRows(Exception):
    """Thrown into a consumer's `stream` generator by its `end`: the rows are over."""


class Consumer:
    """One consumer of the walk. A subclass overrides the hooks it needs; the walk calls
    only those (a hook left alone costs nothing per row). Rows come in step order; a
    raw row is (step, kind, cycles, program, compute_set) as SQLite gives them, then
    active_tiles, start and end when some consumer `times` (profile.RawStepRow).

    Class attributes, read once by the walk:
    - `restartable`: `begin` starts it afresh, so the walk may be made twice (see the
      module's docstring); False reads sorted rows from the start.
    - `times`: it needs active_tiles, start and end (else the walk does not read them).
    - `every_row`: `row` sees every row.
    - `adds_plain_kernels`: it keeps the open block's sums per stage in `cycles` and
      `rows` (None / [] when no block is open) and `stage_index(classes)` says where a
      plain kernel's go; the walk adds them itself. At most one consumer does.
    """

    restartable = True
    times = False
    every_row = False
    adds_plain_kernels = False
    #: with `kernel`: whether it still wants kernel rows that are no anchor nor marker
    #: candidate (read after each `kernel` call; once every such consumer says False,
    #: those rows reach no `kernel` hook again).
    plain_kernels = True
    cycles: Optional[List[int]]  # with adds_plain_kernels
    rows: List[int]

    def begin(self) -> None:
        """Before the first row of an attempt: start afresh."""

    def devices(self, low: SqlValue, high: SqlValue) -> None:
        """The device rows (exchange, compute) since the last marker row, as their min
        start and max end (None, None: none), before each marker row and at the end."""

    def marker(self, step: SqlValue, kind: str) -> None:
        """An input-delivered or output-begins row: its kind and name both match."""

    def boundary(
        self, step: SqlValue, kind: SqlValue, cycles: SqlValue, classes: NameClass
    ) -> None:
        """A row that may open or close a block or an inference: an anchor or a marker
        candidate (its name matches a marker selector), whatever its kind. (A plain
        kernel never comes here: the walk adds it to the open block's sums.)"""

    def kernel(self, raw: "RawStepRow", named: NamedStep) -> None:
        """A kernel row (plain ones only while some consumer's `plain_kernels`)."""

    def row(self, raw: "RawStepRow", named: NamedStep) -> None:
        """Every row (with `every_row`)."""

    def stream(self) -> "Generator[None, RawStepRow, None]":
        """Every row, the other way: a generator (made after `begin`) that is sent each
        raw row, for a consumer whose work per row is long and keeps much state (extract
        trace): its state stays in the generator's locals, and no method is called per
        row. A row comes to it after the hooks above (of every consumer), and a plain
        kernel after the walk added it to the open block (adds_plain_kernels). Should it
        return, the walk ends there: the rows after go unread (every `end` is called as
        usual). At the end of the rows it is sent nothing more: its own `end` ends it
        (throwing `EndOfRows` into it, say). At most one consumer of a walk streams."""
        raise NotImplementedError

    def stage_index(self, classes: NameClass) -> int:
        """With `adds_plain_kernels`: the index in `cycles` of a plain kernel's stage."""
        raise NotImplementedError

    def end(self) -> None:
        """After the last row of the attempt that went through."""


def _overrides(consumer: Consumer, hook: str) -> bool:
    return getattr(type(consumer), hook) is not getattr(Consumer, hook)


def is_plain_kernel(classes: NameClass) -> bool:
    """A kernel that neither opens nor closes anything: no anchor, no marker candidate."""
    return classes.kernel and not (
        classes.anchor or classes.input_delivered or classes.output_begins
    )


def walk(
    profile: "Profile",
    rules: StageRules,
    consumers: Sequence[Consumer],
    sql_names: Optional[Tuple[dict, dict]] = None,
    steps: Optional[Tuple[int, Optional[int]]] = None,
) -> bool:
    """Feed every step row of `profile` to `consumers` (in their order, for each row),
    from one loop; whether there were rows. `sql_names`: profile.names(), when the
    caller has read them already. `steps=(first, end)`: only the rows of the steps
    first <= step < end (end None: to the end of the trace), one body's, say."""
    programs, compute_sets = sql_names if sql_names is not None else profile.names()
    names = StepNames(programs, compute_sets, rules)
    return read_rows(
        profile,
        lambda batches: _Walk(names, consumers).run(batches),
        sorted_only=not all(consumer.restartable for consumer in consumers),
        times=any(consumer.times for consumer in consumers),
        steps=steps,
    )


def read_rows(
    profile: "Profile",
    attempt: Callable[[Iterable[List[Any]]], T],
    *,
    sorted_only: bool = False,
    times: bool = True,
    steps: Optional[Tuple[int, Optional[int]]] = None,
) -> T:
    """`attempt(batches)` on the step rows of `profile` in the spec's order, in lists
    (a list is looped over faster than a generator is resumed), its result returned:
    first in stored order, checked, then (on OutOfOrder, BadValue or ProfileError)
    again on sorted rows, from scratch. `sorted_only`: sorted rows from the start (an
    attempt that cannot be made twice). `times`: read active_tiles, start and end
    (else only the first five columns). `steps`: a range of steps only, sorted (see
    Profile.step_row_batches)."""
    if not sorted_only and steps is None and profile.can_read_in_stored_order:
        try:
            return _attempt(profile, attempt, True, times, None)
        except (OutOfOrder, BadValue, ProfileError):
            pass
    return _attempt(profile, attempt, False, times, steps)


def _attempt(
    profile: "Profile",
    attempt: Callable[[Iterable[list]], T],
    stored_order: bool,
    times: bool,
    steps: Optional[Tuple[int, Optional[int]]],
) -> T:
    batches = profile.step_row_batches(stored_order=stored_order, times=times, steps=steps)
    rows = _in_step_order(batches) if stored_order else batches
    try:
        return attempt(rows)
    finally:
        rows.close()  # an abandoned read ends its query now
        batches.close()


def _in_step_order(batches: Iterable[list]) -> Generator[list, None, None]:
    """The batches, each checked before it is given: OutOfOrder at a step id smaller than
    the one before it. The check of a batch runs in C (its step ids, sorted: a run that
    is already sorted costs a comparison per row and no move)."""
    last = -(1 << 64)  # below any step id (64-bit integers)
    for batch in batches:
        steps: List[int] = list(map(_step, batch))
        if steps:
            if steps[0] < last or steps != sorted(steps):
                raise OutOfOrder()
            last = steps[-1]
        yield batch


#: What a (program, compute set) pair is to the walk: None (nothing for any consumer but
#: the device span), an int (a plain kernel's stage index in the open block's sums:
#: added with no call), else (its NamedStep, that index or -1, whether it is a boundary:
#: an anchor or a marker candidate) for the general path, where the hooks see it.
_Seen = Any


class _Walk:
    """One attempt of the walk: the hooks gathered, the pair tables, the loop."""

    def __init__(self, names: StepNames, consumers: Sequence[Consumer]) -> None:
        self.names = names
        self.consumers = list(consumers)
        for consumer in self.consumers:
            consumer.begin()
        summing = [c for c in self.consumers if c.adds_plain_kernels]
        if len(summing) > 1:
            raise ValueError("at most one consumer adds plain kernels to the open block")
        self.summing: Optional[Consumer] = summing[0] if summing else None
        self.devices = [c.devices for c in self.consumers if _overrides(c, "devices")]
        self.markers = [c.marker for c in self.consumers if _overrides(c, "marker")]
        self.boundaries = [c.boundary for c in self.consumers if _overrides(c, "boundary")]
        self.kernel_takers = [c for c in self.consumers if _overrides(c, "kernel")]
        self.every = [c.row for c in self.consumers if c.every_row]
        streams = [c.stream() for c in self.consumers if _overrides(c, "stream")]
        if len(streams) > 1:
            raise ValueError("at most one consumer takes the rows as a stream")
        self.send: Optional[Callable[[Any], None]] = None  # its generator's send
        for stream in streams:
            next(stream)  # to its first yield: ready for the first row
            self.send = stream.send
        self.wants_devices = bool(self.devices)
        # Whether plain kernels still go through the hooks (a `kernel` consumer wants
        # them, or every row does); else they are summed, or skipped.
        self.plain_hooked = bool(self.every) or any(c.plain_kernels for c in self.kernel_takers)
        self.table: Dict[SqlValue, Dict[SqlValue, _Seen]] = {}

    def seen(self, compute_set: SqlValue, program: SqlValue) -> _Seen:
        """What the pair is (see _Seen), kept in `table` for its next rows."""
        named = self.names[program, compute_set]
        classes = named.classes
        plain = is_plain_kernel(classes)
        index = -1  # a plain kernel's stage in the open block's sums
        if plain and self.summing is not None:
            index = self.summing.stage_index(classes)
        value: _Seen = None
        if self.every or (plain and self.plain_hooked) or (named.notable and not plain):
            value = (named, index, named.notable and not plain)  # the general path
        elif plain and self.summing is not None:
            value = index
        self.table.setdefault(compute_set, {})[program] = value
        return value

    def plain_kernels_done(self) -> None:
        """No consumer wants plain kernels through its hooks any more: they are summed
        from now on (or skipped), the pairs classified anew."""
        self.plain_hooked = False
        self.table = {}

    def run(self, batches: Iterable[list]) -> bool:
        """The loop. Most rows are exchange or compute rows that only widen the device
        span since the last marker (on locals, handed to `devices` at the next marker),
        or plain kernels added to the open block; the rest take the general path."""
        table = self.table
        seen = self.seen
        summing = self.summing
        body_cycles = summing.cycles if summing is not None else None
        body_rows = summing.rows if summing is not None else []
        devices, markers, boundaries = self.devices, self.markers, self.boundaries
        kernel_takers, every, send = self.kernel_takers, self.every, self.send
        plain_hooked = self.plain_hooked
        wants_devices = self.wants_devices
        device_kinds = DEVICE_KINDS
        low = high = None  # of the device rows since the last marker row
        named: Any = None  # the row's NamedStep, on the general path
        any_rows = False
        try:
            for batch in batches:
                any_rows = True
                for raw in batch:
                    try:
                        what = table[raw[4]][raw[3]]  # compute set, program
                    except KeyError:  # a pair met for the first time
                        what = seen(raw[4], raw[3])
                    if what is not None:  # else most rows: nothing but the device span
                        if what.__class__ is not int:  # the general path: the hooks see it
                            named, what, boundary = what  # `what`: a plain kernel's index
                            if boundary:
                                step, kind, cycles = raw[0], raw[1], raw[2]
                                classes = named.classes
                                if (kind == INPUT_DELIVERED_KIND and classes.input_delivered) or (
                                    kind == OUTPUT_BEGINS_KIND and classes.output_begins
                                ):
                                    for hook in devices:  # the device rows before the marker
                                        hook(low, high)
                                    low = high = None
                                    for at_marker in markers:
                                        at_marker(step, kind)
                                for on_boundary in boundaries:
                                    on_boundary(step, kind, cycles, classes)
                                if summing is not None:
                                    body_cycles, body_rows = summing.cycles, summing.rows
                            if kernel_takers and named.classes.kernel:
                                for taker in kernel_takers:
                                    taker.kernel(raw, named)
                                    if plain_hooked and not any(
                                        t.plain_kernels for t in kernel_takers
                                    ):
                                        plain_hooked = False  # asked no more (but every_row's)
                                        if not every:
                                            self.plain_kernels_done()
                                            table = self.table
                            for on_row in every:
                                on_row(raw, named)
                        # a plain kernel to the open block: the one place that adds one
                        if what >= 0 and body_cycles is not None:
                            cycles = raw[2]
                            if cycles.__class__ is int:
                                body_cycles[what] += cycles
                            elif cycles is not None:
                                bad_cycles(raw[0], cycles)
                            body_rows[what] += 1
                    if send is not None:
                        send(raw)
                    if wants_devices and raw[1] in device_kinds:
                        start, end = raw[6], raw[7]
                        if start is not None and (low is None or start < low):
                            low = start
                        if end is not None and (high is None or end > high):
                            high = end
        except StopIteration:  # a `stream` generator returned: the rest goes unread
            pass
        for hook in devices:
            hook(low, high)
        for consumer in self.consumers:
            consumer.end()
        return any_rows


def bad_cycles(step: SqlValue, cycles: SqlValue) -> None:
    """Raise BadValue for a kernel row whose cycles are not a whole number."""
    whole(cycles, "step {}: steps_by_ipu.cycles".format(step))


def compile_only_warning() -> str:
    """The warning for a profile with no step rows."""
    return (
        "no steps: a compile-only profile (no execution trace), so no kernels, "
        "device spans or QKV executions"
    )


def no_anchor_warning(rules: StageRules) -> str:
    """The warning for a trace in which no kernel step is an anchor."""
    return (
        "no kernel step matches the anchor selector {!r} (kernels {!r}): kernels is empty".format(
            rules.anchor.pattern, rules.kernel.pattern
        )
    )
