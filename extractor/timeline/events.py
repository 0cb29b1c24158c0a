"""The events of one profile, written as its step rows are read.

Each step row of the window is one complete event ("ph": "X") on a track of its IPU (the
row's number within its step), written at once: nothing is kept of the rows but, per
track, where its last slice ends, and the open stage, blocks and inferences slices (a
minimum and a maximum each). Those are written when they close; the metadata events
(process and track names, their order) after the pass, when every track is known.

Numbers are JSON's own (an int's str, a float's repr: never NaN or Infinity, as the
values are whole numbers of cycles); text goes through json.dumps (quotes, control
characters and non-ASCII text escaped), once per distinct name.
"""

import json
from collections import deque
from typing import IO, Callable, Deque, Dict, List, Optional, Tuple

from ..core.blocks import BlockBodies, Body
from ..core.pvafacts import StepFacts
from ..core.rules import StageRules
from ..core.steps import DEVICE_KINDS, BadValue, SqlValue, StepNames
from .window import Inference, Window

UNNAMED_STEP = "(unnamed step)"

#: (tid, where its last slice ends), per track of one kind, in the order they opened.
Tracks = List[List[int]]


def text(value: object) -> str:
    """A JSON string (or null, a number) for `value`: strict JSON, any text."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return json.dumps(value, allow_nan=False)


class EventFile:
    """The trace file: `{"traceEvents": [` ... events ... `], ...}`, written in chunks."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self._parts: List[str] = []
        self._first = True
        handle.write(b'{"traceEvents": [\n')

    def add(self, event: str) -> None:
        if self._first:
            self._first = False
            self._parts.append(event)
        else:
            self._parts.append(",\n" + event)
        if len(self._parts) >= 2048:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            self.handle.write("".join(self._parts).encode("ascii"))
            self._parts = []

    def mark(self) -> Tuple[int, bool]:
        """Where the file is: for `rewind`, to write a profile's events again."""
        self.flush()
        return self.handle.tell(), self._first

    def rewind(self, mark: Tuple[int, bool]) -> None:
        self._parts = []
        self.handle.seek(mark[0])
        self.handle.truncate()
        self._first = mark[1]

    def close(self, other_data: dict) -> None:
        self.flush()
        tail = '\n], "displayTimeUnit": "ns", "otherData": {}}}\n'.format(
            json.dumps(other_data, allow_nan=False)
        )
        self.handle.write(tail.encode("ascii"))


class TrackSet:
    """The tracks of one kind (`IPU 0`, `stages`, ...): a slice takes the first whose last
    slice ends at or before its start, a new one when none does."""

    def __init__(self, label: str, new_tid: Callable[[], int]) -> None:
        self.label = label
        self.tracks: Tracks = []
        self._new_tid = new_tid

    def place(self, start: int, end: int) -> int:
        """The tid of the track a slice from `start` to `end` goes on."""
        for track in self.tracks:
            if track[1] <= start:
                track[1] = end
                return track[0]
        tid = self._new_tid()
        self.tracks.append([tid, end])
        return tid

    def names(self) -> List[Tuple[int, str]]:
        return [
            (track[0], self.label if index == 0 else "{} ({})".format(self.label, index + 1))
            for index, track in enumerate(self.tracks)
        ]


class Span:
    """The smallest start and largest end of some rows (None: no row yet)."""

    __slots__ = ("low", "high")

    def __init__(self) -> None:
        self.low: Optional[int] = None
        self.high: Optional[int] = None

    def add(self, start: int, end: int) -> None:
        if self.low is None or start < self.low:
            self.low = start
        if self.high is None or end > self.high:
            self.high = end


def _whole(value: object, step: object, what: str) -> int:
    if type(value) is int:
        return value
    raise BadValue(
        "step {}: {} is {}, not a whole number".format(
            step, what, "NULL" if value is None else type(value).__name__
        )
    )


def _number(value: object, step: object, what: str) -> str:
    """A count of a row (cycles, tiles) as JSON: a whole number, or null for NULL."""
    if type(value) is int:
        return str(value)
    if value is None:
        return "null"
    raise BadValue("step {}: {} is {}, not a whole number".format(step, what, type(value).__name__))


class ProfileEvents:
    """The events of profile `pid`, from one pass over its step rows (`run`)."""

    def __init__(
        self,
        out: EventFile,
        pid: int,
        window: Window,
        shift: int,
        cycles_per_us: float,
        rules: StageRules,
        names: StepNames,
        facts: Optional[StepFacts],
        label: str,
    ) -> None:
        self.out = out
        self.pid = pid
        self.window = window
        self.shift = shift
        self.per_us = cycles_per_us
        self.names = names
        self.facts = facts
        self._next_tid = 0
        self.ipus: List[TrackSet] = []
        self.stages = TrackSet("stages", self._tid)
        self.blocks = TrackSet("blocks", self._tid)
        self.inferences = TrackSet("inferences", self._tid)
        self._bodies = BlockBodies(rules, label, writer=_Closed(self._body_closed))
        self._steps: Deque[List[int]] = deque()  # [step, low, high] of window rows
        self._cache: Dict[Tuple[SqlValue, SqlValue, SqlValue], tuple] = {}
        self._stage: Optional[str] = None
        self._stage_span = Span()
        self._stage_rows = 0
        self._stage_cycles = 0
        self.rows = 0

    def _tid(self) -> int:
        self._next_tid += 1
        return self._next_tid

    # ---- time ---------------------------------------------------------------------

    def _ts(self, cycle: int) -> str:
        return repr((cycle - self.shift) / self.per_us)

    def _dur(self, start: int, end: int) -> str:
        return repr((end - start) / self.per_us)

    def _slice(self, tid: int, name: str, start: int, end: int, args: str, cat: str) -> None:
        self.out.add(
            '{{"ph": "X", "pid": {}, "tid": {}, "name": {}, "cat": "{}", "ts": {}, '
            '"dur": {}, "args": {{{}}}}}'.format(
                self.pid, tid, text(name), cat, self._ts(start), self._dur(start, end), args
            )
        )

    # ---- the pass ------------------------------------------------------------------

    def run(self, batches: object) -> None:
        """One pass over the rows (trace.read_trace's batches, in step order)."""
        ranges = self.window.ranges
        pending = list(self.window.inferences)  # not yet reached, in order of first step
        active: List[Tuple[Inference, Span, Span]] = []
        range_at = 0
        in_window = ranges is None
        past = False
        current: object = object()
        ipu = 0
        cache = self._cache
        bodies = self._bodies
        for batch in batches:  # type: ignore[attr-defined]
            for raw in batch:
                step = raw[0]
                if step != current:
                    current, ipu = step, 0
                    if ranges is not None:
                        while range_at < len(ranges):
                            _, hi = ranges[range_at]
                            if hi is not None and step > hi:
                                range_at += 1
                                continue
                            break
                        was_in = in_window
                        in_window = range_at < len(ranges) and step >= ranges[range_at][0]
                        past = range_at == len(ranges)
                        if was_in and not in_window:
                            self._stage_closed()  # a stage slice never spans a gap
                    still = []
                    for item in active:
                        last = item[0].last
                        if last is not None and step > last:
                            self._inference_closed(*item)
                        else:
                            still.append(item)
                    active = still
                    while pending and pending[0].first <= step:
                        active.append((pending.pop(0), Span(), Span()))
                else:
                    ipu += 1
                kind, program, compute_set = raw[1], raw[6], raw[7]
                key = (program, compute_set, kind)
                known = cache.get(key)
                if known is None:
                    known = cache[key] = self._describe(program, compute_set, kind)
                head, stage, notable, classes = known
                if notable:
                    bodies.row(step, kind, raw[2], classes)
                if past:
                    if bodies.cycles is None:
                        return self._finish(active, bodies_open=False)
                    continue
                if not in_window:
                    if bodies.cycles is None:
                        self._steps.clear()
                    continue
                start = _whole(raw[4], step, "its start")
                end = _whole(raw[5], step, "its end")
                self._step_slice(raw, step, ipu, start, end, head)
                self._stage_row(stage, start, end, raw[2], step)
                for _, span, device in active:
                    span.add(start, end)
                    if kind in DEVICE_KINDS:
                        device.add(start, end)
                if bodies.cycles is not None:
                    steps = self._steps
                    if steps and steps[-1][0] == step:
                        last_step = steps[-1]
                        if start < last_step[1]:
                            last_step[1] = start
                        if end > last_step[2]:
                            last_step[2] = end
                    else:
                        steps.append([step, start, end])
                else:
                    self._steps.clear()
        self._finish(active, bodies_open=True)

    def _finish(self, active: List[Tuple[Inference, Span, Span]], bodies_open: bool) -> None:
        self._stage_closed()
        for item in active:
            self._inference_closed(*item)
        if bodies_open:
            self._bodies.finish()

    def _describe(self, program: SqlValue, compute_set: SqlValue, kind: SqlValue) -> tuple:
        """What every row of a (program, compute set, kind) shares: the start of its
        event's text after "ts", its stage, whether blocks must see it, its NameClass."""
        named = self.names[program, compute_set]
        classes = named.classes
        stage = classes.stage
        kind_text = text(kind)
        extra = ""
        if self.facts is not None:
            extra = ', "vertices": {}, "max_exchange_code_bytes": {}'.format(
                text(self.facts.vertices(compute_set)),
                text(self.facts.max_exchange_code_bytes(program)),
            )
        head = '"name": {}, "cat": {}, "args": {{"kind": {}, "stage": {}{}, "step": '.format(
            text(named.name or UNNAMED_STEP), kind_text, kind_text, text(stage), extra
        )
        notable = classes.kernel or classes.input_delivered or classes.output_begins
        return head, stage, notable, classes

    def _step_slice(
        self, raw: tuple, step: object, ipu: int, start: int, end: int, head: str
    ) -> None:
        while ipu >= len(self.ipus):
            self.ipus.append(TrackSet("IPU {}".format(len(self.ipus)), self._tid))
        tid = self.ipus[ipu].place(start, end)
        self.rows += 1
        self.out.add(
            '{{"ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, {}{}, "cycles": {}, '
            '"active_tiles": {}}}}}'.format(
                self.pid,
                tid,
                self._ts(start),
                self._dur(start, end),
                head,
                text(step) if type(step) is not int else step,
                _number(raw[2], step, "steps_by_ipu.cycles"),
                _number(raw[3], step, "steps_by_ipu.active_tiles"),
            )
        )

    # ---- stages, blocks, inferences ------------------------------------------------

    def _stage_row(self, stage: str, start: int, end: int, cycles: object, step: object) -> None:
        if stage != self._stage:
            self._stage_closed()
            self._stage = stage
        self._stage_span.add(start, end)
        self._stage_rows += 1
        if type(cycles) is int:
            self._stage_cycles += cycles

    def _stage_closed(self) -> None:
        span = self._stage_span
        if self._stage is None or span.low is None or span.high is None:
            return
        tid = self.stages.place(span.low, span.high)
        self._slice(
            tid,
            self._stage,
            span.low,
            span.high,
            '"stage": {}, "rows": {}, "cycles": {}'.format(
                text(self._stage), self._stage_rows, self._stage_cycles
            ),
            "stage",
        )
        self._stage = None
        self._stage_span = Span()
        self._stage_rows = self._stage_cycles = 0

    def _body_closed(self, body: Body) -> None:
        span = Span()
        steps = self._steps
        end_step = body.end_step
        while steps and (end_step is None or steps[0][0] < end_step):
            step, low, high = steps.popleft()
            if step >= body.first_step:
                span.add(low, high)
        if span.low is None or span.high is None:
            return
        tid = self.blocks.place(span.low, span.high)
        self._slice(
            tid,
            "block {}".format(body.block),
            span.low,
            span.high,
            '"run": {}, "block": {}, "first_step": {}, "end_step": {}, "cycles": {}'.format(
                body.run, body.block, text(body.first_step), text(body.end_step), body.total
            ),
            "block",
        )

    def _inference_closed(self, inference: Inference, span: Span, device: Span) -> None:
        if span.low is None or span.high is None:
            return
        device_span = None
        if inference.last is not None and device.low is not None and device.high is not None:
            device_span = device.high - device.low
        tid = self.inferences.place(span.low, span.high)
        self._slice(
            tid,
            "inference {}".format(inference.number),
            span.low,
            span.high,
            '"run": {}, "first_step": {}, "last_step": {}, "device_span": {}'.format(
                inference.number, inference.first, text(inference.last), text(device_span)
            ),
            "inference",
        )

    # ---- metadata ------------------------------------------------------------------

    def metadata(self, process_name: str) -> None:
        """The process's and every track's name and order, after the pass."""
        pid = self.pid
        self.out.add(
            '{{"ph": "M", "pid": {}, "tid": 0, "name": "process_name", '
            '"args": {{"name": {}}}}}'.format(pid, text(process_name))
        )
        self.out.add(
            '{{"ph": "M", "pid": {}, "tid": 0, "name": "process_sort_index", '
            '"args": {{"sort_index": {}}}}}'.format(pid, pid)
        )
        order = 0
        for tracks in self.ipus + [self.stages, self.blocks, self.inferences]:
            for tid, name in tracks.names():
                order += 1
                self.out.add(
                    '{{"ph": "M", "pid": {}, "tid": {}, "name": "thread_name", '
                    '"args": {{"name": {}}}}}'.format(pid, tid, text(name))
                )
                self.out.add(
                    '{{"ph": "M", "pid": {}, "tid": {}, "name": "thread_sort_index", '
                    '"args": {{"sort_index": {}}}}}'.format(pid, tid, order)
                )


class _Closed:
    """A blocks.BodyWriter that hands each closed body to a function."""

    def __init__(self, on_body: Callable[[Body], None]) -> None:
        self.on_body = on_body

    def begin(self, profile_label: str, stages: object) -> None:
        pass

    def body(self, body: Body) -> None:
        self.on_body(body)

    def end(self, statistics: dict) -> None:
        pass
