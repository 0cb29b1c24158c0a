"""The events of one profile, written as the walk over its step rows goes (a consumer
of core/walk.py, taking the rows as a stream).

Each step row of the window is one complete event ("ph": "X") on a track of its IPU (the
row's number within its step), written at once: nothing is kept of the rows but, per
track, where its last slice ends, and the open stage, blocks and inferences slices (a
minimum and a maximum each). Those are written when they close (slices.py); the metadata
events (process and track names, their order) after the pass, when every track is known.
"""

from typing import Any, Dict, Generator, List, Optional, Tuple

from ..core.blocks import BlockBodies, Body
from ..core.pvafacts import StepFacts
from ..core.rules import StageRules
from ..core.steps import (
    DEVICE_KINDS,
    INPUT_DELIVERED_KIND,
    OUTPUT_BEGINS_KIND,
    BadValue,
    SqlValue,
    StepNames,
)
from ..core.walk import Consumer, EndOfRows, is_plain_kernel
from .slices import Closed, ProfileSlices
from .times import FRACTIONS, dur_text, fitted, ns_text
from .tracks import (
    MAX_IPUS,
    STEP_CHUNK,
    STEP_PIECE,
    EventFile,
    Span,
    TrackSet,
    number,
    text,
    whole,
)
from .window import Inference, Window

UNNAMED_STEP = "(unnamed step)"

_HIGH = 1 << 80  # above any start (64-bit integers)
_LOW = -_HIGH
#: The first track of an IPU that has none yet: no row fits it.
_NO_TRACK: List[Any] = [0, float("inf"), 0.0, ""]

_NO_STEP = object()  # a step id no row has

#: What the rows of one (program, compute set, kind) share (ProfileEvents._describe).
Described = Tuple[str, str, bool, Any, bool]
#: Where the trace file was before a profile's events (EventFile.mark), to write them
#: again should the walk read the rows a second time; None: they cannot be.
Mark = Optional[Tuple[int, bool]]


class _Shown:
    """An inference whose slice is being made: its number, its first step, its last
    (None: no output-begins step met yet), the span of its rows and of its device rows."""

    __slots__ = ("number", "first", "last", "span", "device")

    def __init__(self, number: int, first: int) -> None:
        self.number = number
        self.first = first
        self.last: Optional[int] = None
        self.span = Span()
        self.device = Span()

    def inference(self) -> Inference:
        return Inference(self.number, self.first, self.last)


class ProfileEvents(ProfileSlices, Consumer):
    """The events of profile `pid`: a consumer of the walk over its step rows
    (core/walk.py), after `bodies`, the blocks it shows (one more consumer of the same
    walk: `walk(profile, rules, [events.bodies, events])`). `mark`: where its events
    begin in the file, to rewind to should the walk be made again (None: it cannot be,
    and the rows are read sorted from the start)."""

    times = True

    def __init__(
        self,
        out: EventFile,
        mark: Mark,
        pid: int,
        window: Window,
        shift: int,
        cycles_per_us: float,
        rules: StageRules,
        names: StepNames,
        facts: Optional[StepFacts],
        label: str,
    ) -> None:
        super().__init__(out, pid, shift, cycles_per_us)
        self.window = window
        self.names = names
        self.facts = facts
        self._mark = mark
        self.restartable = mark is not None
        self._begun = False
        self._closed_bodies: List[Body] = []  # closed by the row just read
        self.bodies = BlockBodies(
            rules, label, writer=Closed(self._closed_bodies.append), statistics=False
        )
        #: compute set -> program -> kind -> what its rows share (no key tuple made)
        self._cache: Dict[SqlValue, Dict[SqlValue, Dict[SqlValue, Described]]] = {}
        self._start()

    def _start(self) -> None:
        self._active: List[_Shown] = []
        self._inputs = 0  # distinct input-delivered steps so far: inferences begun
        self._range_at = 0
        #: The inferences shown that run to the end of the trace (to warn of).
        self.open_ended: List[Inference] = []
        self.step_events = 0  # the step rows shown, one event each
        self._stream: Optional[Generator[None, Any, None]] = None

    def begin(self) -> None:
        """The walk begins, or begins again: the events written so far taken back."""
        if self._begun and self._mark is not None:
            self.out.rewind(self._mark)
            self.clear()
            self._start()
        self._begun = True

    def end(self) -> None:
        """The end of the rows: the events still open written (unless the stream has
        ended already, past the window)."""
        if self._stream is not None:
            try:
                self._stream.throw(EndOfRows())
            except StopIteration:
                pass

    def stream(self) -> Generator[None, Any, None]:
        self._stream = self._events()
        return self._stream

    # ---- the pass ------------------------------------------------------------------

    def _events(self) -> Generator[None, Any, None]:
        """The walk's rows, sent one at a time, as events.

        The loop is written flat, on local variables: it runs once per step row, a
        million times on a long trace (a generator, so that they stay locals: no call
        per row, see walk.Consumer.stream). The spans of the inferences and of the open
        block are widened on locals (a "segment" since the last boundary) and folded
        into the open slices only where something begins or ends: a step at or after
        `next_event` (an inference ends, a window range begins or ends), the first row
        of an input-delivered step (an inference begins), or a row that opens or closes
        a block (the walk has handed it to `bodies` before it comes here, and added each
        plain kernel to the open block).

        Events are f-strings: one BUILD_STRING, no format to parse. Step events go to
        `parts`, handed to the file every STEP_PIECE rows and written every STEP_CHUNK;
        the others to the file's held events (EventFile). A row's times are made whole
        nanoseconds first (without a clock, its cycles), its track found on those, and
        its ts and dur written as times.py says, inline. A step id is written as it
        is: Profile has checked that steps.id holds whole numbers only (or is the
        rowid)."""
        ranges = self.window.ranges
        in_window = ranges is None
        past = False
        next_event = self._next_event(ranges)
        current: SqlValue = _NO_STEP
        ipu = 0
        cache = self._cache
        bodies = self.bodies
        closed = self._closed_bodies
        ipus = self.ipus
        shift = self.shift
        scale = self.scale  # times.ns_of's
        clocked = scale is not None
        to_ns, halves = scale or (1, 2)
        half = halves // 2
        fractions = FRACTIONS
        # each IPU's first track (one that fits no row for an IPU with none yet)
        firsts = [tracks.tracks[0] if tracks.tracks else _NO_TRACK for tracks in ipus]
        ipu_count = len(ipus)
        out = self.out
        parts: List[str] = []  # step events, made into bytes every STEP_PIECE rows
        add = parts.append
        encode = out.encode_steps
        rows = 0
        encode_at, write_at = STEP_PIECE, STEP_CHUNK
        high_mark, low_mark = _HIGH, _LOW
        inf_low, inf_high = high_mark, low_mark  # the window's rows since the last boundary
        dev_low, dev_high = high_mark, low_mark  # its device rows
        body_low, body_high = high_mark, low_mark  # the open block's rows in the window
        in_body = False
        device = False
        head = ""
        boundary = False
        classes: Any = None
        stage: Optional[str] = None
        row_stage = ""
        stage_low = stage_high = stage_from = stage_cycles = 0  # stage_from: `rows` at its start
        try:
            while True:
                step, kind, cycles, program, compute_set, tiles, start, end = yield
                if step != current:
                    current, ipu = step, 0
                    if step >= next_event:
                        self._fold(inf_low, inf_high, dev_low, dev_high)
                        inf_low, inf_high = high_mark, low_mark
                        dev_low, dev_high = high_mark, low_mark
                        was_in = in_window
                        in_window, past, next_event = self._boundary(step, ranges, in_window)
                        if was_in and not in_window and stage is not None:
                            # a stage slice never spans a gap between windows
                            self._stage_slice(
                                stage, stage_low, stage_high, rows - stage_from, stage_cycles
                            )
                            stage = None
                    try:
                        head, row_stage, boundary, classes, device = cache[compute_set][program][
                            kind
                        ]
                    except KeyError:
                        known = self._describe(program, compute_set, kind)
                        cache.setdefault(compute_set, {}).setdefault(program, {})[kind] = known
                        head, row_stage, boundary, classes, device = known
                else:
                    ipu += 1
                if boundary:  # bodies has seen it: has a block closed, or opened?
                    if closed:
                        for body in closed:
                            self._body_slice(body, body_low, body_high)
                        del closed[:]
                        body_low, body_high = high_mark, low_mark
                        in_body = False
                    if not in_body and bodies.cycles is not None:
                        in_body = True
                        body_low, body_high = high_mark, low_mark
                    if ipu == 0:  # the first row of its step: what the step is
                        if kind == INPUT_DELIVERED_KIND and classes.input_delivered:
                            # an inference begins: the rows before are not its
                            self._fold(inf_low, inf_high, dev_low, dev_high)
                            inf_low, inf_high = high_mark, low_mark
                            dev_low, dev_high = high_mark, low_mark
                            self._input(step)
                        elif kind == OUTPUT_BEGINS_KIND and classes.output_begins:
                            if self._output(step):
                                next_event = self._next_event(ranges)
                if not in_window:
                    if past and not in_body:
                        if parts:
                            encode(parts)
                        out.write_steps()
                        self.step_events = rows
                        self._fold(inf_low, inf_high, dev_low, dev_high)
                        # nothing more to show, no block open: the rows after go unread
                        self._finish(stage, stage_low, stage_high, rows - stage_from, stage_cycles)
                        self._stream = None
                        return
                    continue
                if start.__class__ is not int or end.__class__ is not int or end < start:
                    whole(start, step, "its start")
                    whole(end, step, "its end")
                    raise BadValue(
                        "step {}: its end ({}) is before its start ({}): a slice cannot "
                        "last less than nothing".format(step, end, start)
                    )
                # the row's times in whole ns after the shift (times.ns_of, inline)
                if clocked:
                    at = ((start - shift) * to_ns + half) // halves
                    to = ((end - shift) * to_ns + half) // halves
                else:
                    at = start - shift
                    to = end - shift
                # the first track of the row's IPU that is free at its start: most
                # often its first (TrackSet.place's first test, inline)
                if ipu < ipu_count:
                    track = firsts[ipu]
                    if track[1] <= at:
                        track[1] = to
                    else:
                        track = ipus[ipu].place(at, to)
                else:  # an IPU met for the first time
                    track = self._new_ipu(ipu, firsts, at, to)
                    ipu_count = len(ipus)
                if start < inf_low:
                    inf_low = start
                if end > inf_high:
                    inf_high = end
                if device:
                    if start < dev_low:
                        dev_low = start
                    if end > dev_high:
                        dev_high = end
                if in_body:
                    if start < body_low:
                        body_low = start
                    if end > body_high:
                        body_high = end
                if row_stage != stage:
                    if stage is not None:
                        self._stage_slice(
                            stage, stage_low, stage_high, rows - stage_from, stage_cycles
                        )
                    stage, stage_low, stage_high, stage_from, stage_cycles = (
                        row_stage,
                        start,
                        end,
                        rows,
                        0,
                    )
                else:
                    if start < stage_low:
                        stage_low = start
                    if end > stage_high:
                        stage_high = end
                # times.dur_text, inline: the exact decimal of the span when the
                # viewers' sums with it land on the written end, else fitted's double
                span = to - at
                t = at / 1000
                e = to / 1000
                d = span / 1000
                first = track[2]
                if cycles.__class__ is int:
                    stage_cycles += cycles
                    if tiles.__class__ is not int:
                        add(self._step_event(track, at, to, head, step, cycles, tiles))
                    elif t + d == e and (not first or (t - first) + d == e - first):
                        add(
                            f"{track[3]}{at // 1000}{fractions[at % 1000]},"
                            f'"dur":{span // 1000}{fractions[span % 1000]},'
                            f'{head}{step},"cycles":{cycles},"active_tiles":{tiles}}}}}'
                        )
                    else:
                        add(
                            f'{track[3]}{at // 1000}{fractions[at % 1000]},"dur":'
                            f"{fitted(t, e, first)!r},"
                            f'{head}{step},"cycles":{cycles},"active_tiles":{tiles}}}}}'
                        )
                else:
                    add(self._step_event(track, at, to, head, step, cycles, tiles))
                rows += 1
                if rows >= encode_at:
                    encode_at = rows + STEP_PIECE
                    encode(parts)
                    parts.clear()
                    if rows >= write_at:
                        write_at = rows + STEP_CHUNK
                        out.write_steps()
        except EndOfRows:  # bodies has ended: a block still open has closed
            pass
        self._stream = None
        if parts:
            encode(parts)
        out.write_steps()
        self.step_events = rows
        self._fold(inf_low, inf_high, dev_low, dev_high)
        for body in closed:
            self._body_slice(body, body_low, body_high)
        del closed[:]
        self._finish(stage, stage_low, stage_high, rows - stage_from, stage_cycles)

    def _step_event(
        self,
        track: List[Any],
        at: int,
        to: int,
        head: str,
        step: int,
        cycles: object,
        tiles: object,
    ) -> str:
        """A step row's event the pass does not write itself: a count that is not a
        whole number (NULL: null; else BadValue, cycles first)."""
        cycles_text = number(cycles, step, "steps_by_ipu.cycles")
        tiles_text = number(tiles, step, "steps_by_ipu.active_tiles")
        return '{}{},"dur":{},{}{},"cycles":{},"active_tiles":{}}}}}'.format(
            track[3], ns_text(at), dur_text(at, to, track[2]), head, step, cycles_text, tiles_text
        )

    def _new_ipu(self, ipu: int, firsts: List[List[Any]], start: int, end: int) -> List[Any]:
        """The track of a row of an IPU met for the first time (and any before it),
        each IPU's first track added to `firsts` once: constant work per IPU."""
        ipus = self.ipus
        while ipu >= len(ipus):
            if len(ipus) == MAX_IPUS:
                raise BadValue(
                    "a step has more than {} rows (one per IPU): a trace orders the "
                    "tracks of at most that many IPUs by tid".format(MAX_IPUS)
                )
            ipus.append(TrackSet("IPU {}".format(len(ipus)), len(ipus), self.pid))
            firsts.append(_NO_TRACK)
        track = ipus[ipu].place(start, end)
        firsts[ipu] = ipus[ipu].tracks[0]
        return track

    def _input(self, step: int) -> None:
        """An input-delivered step: an inference begins at it, shown if chosen."""
        self._inputs += 1
        runs = self.window.runs
        if runs is None or self._inputs in runs:
            self._active.append(_Shown(self._inputs, step))

    def _output(self, step: int) -> bool:
        """An output-begins step: the last step of every inference shown that has none
        yet (each began before it). Whether there was one."""
        found = False
        for shown in self._active:
            if shown.last is None:
                shown.last = step
                found = True
        return found

    def _next_event(self, ranges: Optional[List[Tuple[int, Optional[int]]]]) -> SqlValue:
        """The smallest step at which an inference ends or a window range begins or
        ends (an inference begins at a row the pass sees for itself)."""
        candidates: List[int] = []
        for shown in self._active:
            if shown.last is not None:
                candidates.append(shown.last + 1)
        if ranges is not None and self._range_at < len(ranges):
            lo, hi = ranges[self._range_at]
            candidates.append(lo)
            if hi is not None:
                candidates.append(hi + 1)
        return min(candidates) if candidates else _HIGH

    def _fold(self, low: int, high: int, dev_low: int, dev_high: int) -> None:
        """A segment of the window's rows, into every open inference."""
        for shown in self._active:
            if low <= high:
                shown.span.add(low, high)
            if dev_low <= dev_high:
                shown.device.add(dev_low, dev_high)

    def _boundary(
        self, step: SqlValue, ranges: Optional[List[Tuple[int, Optional[int]]]], in_window: bool
    ) -> Tuple[bool, bool, SqlValue]:
        """At a step at or after the next event: inferences closed, the window range
        moved on. (in the window, past its end, the next event's step)."""
        still = []
        for shown in self._active:
            if shown.last is not None and step > shown.last:
                self._inference_closed(shown.inference(), shown.span, shown.device)
            else:
                still.append(shown)
        self._active = still
        past = False
        if ranges is not None:
            while self._range_at < len(ranges):
                hi = ranges[self._range_at][1]
                if hi is not None and step > hi:
                    self._range_at += 1
                    continue
                break
            at = self._range_at
            in_window = at < len(ranges) and step >= ranges[at][0]
            past = at == len(ranges)
        return in_window, past, self._next_event(ranges)

    def _finish(self, stage: Optional[str], low: int, high: int, rows: int, cycles: int) -> None:
        if stage is not None:
            self._stage_slice(stage, low, high, rows, cycles)
        for shown in self._active:
            inference = shown.inference()
            if inference.last is None:
                self.open_ended.append(inference)
            self._inference_closed(inference, shown.span, shown.device)
        self._active = []

    def _describe(self, program: SqlValue, compute_set: SqlValue, kind: SqlValue) -> Described:
        """What every row of a (program, compute set, kind) shares: its event's text
        from "name" to "step": , its stage, whether it may open or close a block or an
        inference (the walk's boundary rows: notable, no plain kernel), its NameClass,
        whether it is a device row."""
        named = self.names[program, compute_set]
        classes = named.classes
        stage = classes.stage
        kind_text = text(kind)
        extra = ""
        if self.facts is not None:
            extra = ',"vertices":{},"max_exchange_code_bytes":{}'.format(
                text(self.facts.vertices(compute_set)),
                text(self.facts.max_exchange_code_bytes(program)),
            )
        head = '"name":{},"cat":{},"args":{{"kind":{},"stage":{}{},"step":'.format(
            text(named.name or UNNAMED_STEP), kind_text, kind_text, text(stage), extra
        )
        boundary = named.notable and not is_plain_kernel(classes)
        return head, stage, boundary, classes, kind in DEVICE_KINDS
