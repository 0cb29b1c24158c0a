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

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ..core.blocks import BlockBodies, Body
from ..core.pvafacts import StepFacts
from ..core.rules import StageRules
from ..core.steps import DEVICE_KINDS, BadValue, SqlValue, StepNames
from .tracks import EXACT, FRACTIONS, EventFile, Span, TrackSet, micros, number, text, whole
from .window import Inference, Window

UNNAMED_STEP = "(unnamed step)"

_HIGH = 1 << 80  # above any start (64-bit integers)
_LOW = -_HIGH

_NO_STEP = object()  # a step id no row has

#: A block's slice (one % over the event: a block may close every few rows).
_BLOCK_EVENT = (
    '{"ph": "X", "pid": %d, "tid": %d, "name": %s, "cat": "block", "ts": %s, '
    '"dur": %s, "args": {"run": %s, "block": %s, "first_step": %s, "end_step": %s, '
    '"cycles": %s}}'
)


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
        self._closed_bodies: List[Body] = []  # closed by the row just read
        self._bodies = BlockBodies(rules, label, writer=_Closed(self._closed_bodies.append))
        self._active: List[Tuple[Inference, Span, Span]] = []
        self._pending: List[Inference] = []
        self._range_at = 0
        self._cache: Dict[Tuple[SqlValue, SqlValue, SqlValue], tuple] = {}
        self._stage_texts: Dict[str, str] = {}
        self.rows = 0

    def _tid(self) -> int:
        self._next_tid += 1
        return self._next_tid

    # ---- time ---------------------------------------------------------------------

    def _slice(self, tid: int, name: str, start: int, end: int, args: str, cat: str) -> None:
        self.out.add(
            '{{"ph": "X", "pid": {}, "tid": {}, "name": {}, "cat": "{}", "ts": {}, '
            '"dur": {}, "args": {{{}}}}}'.format(
                self.pid,
                tid,
                text(name),
                cat,
                micros(start - self.shift, self.per_us),
                micros(end - start, self.per_us),
                args,
            )
        )

    # ---- the pass ------------------------------------------------------------------

    def run(self, batches: Iterable[list]) -> None:
        """One pass over the rows (trace.read_trace's batches, in step order).

        The loop is written flat, on local variables: it runs once per step row, a
        million times on a long trace. The spans of the inferences and of the open
        block are widened on locals (a "segment" since the last boundary) and folded
        into the open slices only where something begins or ends: a step at or after
        `next_event` (an inference or a window range begins or ends), or a row that
        opens or closes a block."""
        ranges = self.window.ranges
        pending = list(self.window.inferences)  # not reached yet, by first step
        self._active = []
        self._pending = pending
        self._range_at = 0
        in_window = ranges is None
        past = False
        next_event = self._next_event(ranges)
        current: SqlValue = _NO_STEP
        ipu = 0
        cache = self._cache
        bodies = self._bodies
        closed = self._closed_bodies
        ipus = self.ipus
        shift, per_us = self.shift, self.per_us
        fixed = per_us == 1000.0  # times with integer arithmetic (_micros)
        fractions, exact = FRACTIONS, EXACT
        ipu_tracks = [tracks.tracks for tracks in ipus]
        ipu_count = len(ipus)
        stage_texts = self._stage_texts
        stage_place = self.stages.place
        out_add = self.out.add
        at_text: Any  # an event's ts and dur: an int and a fraction, or a repr and ""
        span_text: Any
        event = (
            ',\n{{"ph":"X","pid":{},"tid":%d,"ts":%s%s,"dur":%s%s,%s%s,'
            '"cycles":%s,"active_tiles":%s}}}}'.format(self.pid)
        )
        parts: List[str] = []
        add = parts.append
        rows = 0
        flush_at = 4096
        high_mark, low_mark = _HIGH, _LOW
        inf_low, inf_high = high_mark, low_mark  # the window's rows since the last boundary
        dev_low, dev_high = high_mark, low_mark  # its device rows
        body_low, body_high = high_mark, low_mark  # the open block's rows in the window
        in_body = False
        device = False
        head = ""
        notable = False
        classes: Any = None
        stage: Optional[str] = None
        row_stage = ""
        stage_low = stage_high = stage_rows = stage_cycles = 0
        for batch in batches:
            for raw in batch:
                step, kind, cycles, tiles, start, end, program, compute_set = raw
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
                                stage, stage_low, stage_high, stage_rows, stage_cycles
                            )
                            stage = None
                    key = (program, compute_set, kind)
                    known = cache.get(key)
                    if known is None:
                        known = cache[key] = self._describe(program, compute_set, kind)
                    head, row_stage, notable, classes, device = known
                else:
                    ipu += 1
                if notable:
                    bodies.row(step, kind, cycles, classes)
                    if closed:
                        for body in closed:
                            self._body_slice(body, body_low, body_high)
                        del closed[:]
                        body_low, body_high = high_mark, low_mark
                        in_body = False
                    if not in_body and bodies.cycles is not None:
                        in_body = True
                        body_low, body_high = high_mark, low_mark
                if not in_window:
                    if past and not in_body:
                        if parts:
                            self.out.extend(parts)
                        self.rows = rows
                        self._fold(inf_low, inf_high, dev_low, dev_high)
                        # nothing more to show, no block open: the rows after go unread
                        return self._finish(stage, stage_low, stage_high, stage_rows, stage_cycles)
                    continue
                if start.__class__ is not int or end.__class__ is not int or end < start:
                    whole(start, step, "its start")
                    whole(end, step, "its end")
                    raise BadValue(
                        "step {}: its end ({}) is before its start ({}): a slice cannot "
                        "last less than nothing".format(step, end, start)
                    )
                # the first track of the row's IPU that is free at its start
                if ipu >= ipu_count:
                    while ipu >= len(ipus):
                        ipus.append(TrackSet("IPU {}".format(len(ipus)), self._tid))
                        ipu_tracks.append(ipus[-1].tracks)
                    ipu_count = len(ipus)
                for track in ipu_tracks[ipu]:
                    if track[1] <= start:
                        track[1] = end
                        tid = track[0]
                        break
                else:
                    tid = ipus[ipu].place(start, end)
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
                        # _stage_slice, inline: a stage may close every few rows
                        template = stage_texts.get(stage) or self._stage_template(stage)
                        at = stage_low - shift
                        span = stage_high - stage_low
                        if fixed and 0 <= at < exact and span < exact:
                            at_text, at_part = at // 1000, fractions[at % 1000]
                            span_text, span_part = span // 1000, fractions[span % 1000]
                        else:
                            at_text, at_part = repr(at / per_us), ""
                            span_text, span_part = repr(span / per_us), ""
                        out_add(
                            template
                            % (
                                stage_place(stage_low, stage_high),
                                at_text,
                                at_part,
                                span_text,
                                span_part,
                                stage_rows,
                                stage_cycles,
                            )
                        )
                    stage, stage_low, stage_high, stage_rows, stage_cycles = (
                        row_stage,
                        start,
                        end,
                        0,
                        0,
                    )
                else:
                    if start < stage_low:
                        stage_low = start
                    if end > stage_high:
                        stage_high = end
                stage_rows += 1
                if cycles.__class__ is int:
                    stage_cycles += cycles
                else:
                    cycles = number(cycles, step, "steps_by_ipu.cycles")
                if tiles.__class__ is not int:
                    tiles = number(tiles, step, "steps_by_ipu.active_tiles")
                at = start - shift
                span = end - start
                if fixed and 0 <= at < exact and span < exact:
                    at_text, at_part = at // 1000, fractions[at % 1000]
                    span_text, span_part = span // 1000, fractions[span % 1000]
                else:
                    at_text, at_part = repr(at / per_us), ""
                    span_text, span_part = repr(span / per_us), ""
                add(
                    event
                    % (
                        tid,
                        at_text,
                        at_part,
                        span_text,
                        span_part,
                        head,
                        step if step.__class__ is int else text(step),
                        cycles,
                        tiles,
                    )
                )
                rows += 1
                if rows >= flush_at:  # parts holds 4096 events
                    flush_at = rows + 4096
                    self.out.extend(parts)
                    parts = []
                    add = parts.append
        if parts:
            self.out.extend(parts)
        self.rows = rows
        self._fold(inf_low, inf_high, dev_low, dev_high)
        self._bodies.finish()
        for body in closed:
            self._body_slice(body, body_low, body_high)
        del closed[:]
        self._finish(stage, stage_low, stage_high, stage_rows, stage_cycles)

    def _next_event(self, ranges: Optional[List[Tuple[int, Optional[int]]]]) -> SqlValue:
        """The smallest step at which an inference or a window range begins or ends."""
        candidates: List[int] = []
        if self._pending:
            candidates.append(self._pending[0].first)
        for inference, _, _ in self._active:
            if inference.last is not None:
                candidates.append(inference.last + 1)
        if ranges is not None and self._range_at < len(ranges):
            lo, hi = ranges[self._range_at]
            candidates.append(lo)
            if hi is not None:
                candidates.append(hi + 1)
        return min(candidates) if candidates else _HIGH

    def _fold(self, low: int, high: int, dev_low: int, dev_high: int) -> None:
        """A segment of the window's rows, into every open inference."""
        for _, span, device in self._active:
            if low <= high:
                span.add(low, high)
            if dev_low <= dev_high:
                device.add(dev_low, dev_high)

    def _boundary(
        self, step: SqlValue, ranges: Optional[List[Tuple[int, Optional[int]]]], in_window: bool
    ) -> Tuple[bool, bool, SqlValue]:
        """At a step at or after the next event: inferences closed and opened, the window
        range moved on. (in the window, past its end, the next event's step)."""
        still = []
        for item in self._active:
            last = item[0].last
            if last is not None and step > last:
                self._inference_closed(*item)
            else:
                still.append(item)
        self._active = still
        pending = self._pending
        while pending and pending[0].first <= step:
            self._active.append((pending.pop(0), Span(), Span()))
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
        for item in self._active:
            self._inference_closed(*item)
        self._active = []

    def _describe(self, program: SqlValue, compute_set: SqlValue, kind: SqlValue) -> tuple:
        """What every row of a (program, compute set, kind) shares: its event's text
        from "name" to "step": , its stage, whether blocks must see it, its NameClass."""
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
        notable = classes.kernel or classes.input_delivered or classes.output_begins
        return head, stage, notable, classes, kind in DEVICE_KINDS

    # ---- stages, blocks, inferences ------------------------------------------------

    def _stage_slice(self, stage: str, low: int, high: int, rows: int, cycles: int) -> None:
        template = self._stage_texts.get(stage) or self._stage_template(stage)
        tid = self.stages.place(low, high)
        self.out.add(
            template
            % (
                tid,
                micros(low - self.shift, self.per_us),
                "",
                micros(high - low, self.per_us),
                "",
                rows,
                cycles,
            )
        )

    def _stage_template(self, stage: str) -> str:
        """The text of a slice of `stage`, for % with (tid, ts and dur each as two
        parts, rows, cycles): made once per stage (its label's % doubled)."""
        label = text(stage).replace("%", "%%")
        template = self._stage_texts[stage] = (
            '{{"ph": "X", "pid": {}, "tid": %d, "name": {}, "cat": "stage", "ts": %s%s, '
            '"dur": %s%s, "args": {{"stage": {}, "rows": %d, "cycles": %d}}}}'.format(
                self.pid, label, label
            )
        )
        return template

    def _body_slice(self, body: Body, low: int, high: int) -> None:
        """A closed block, over its rows in the window (none: no slice)."""
        if low > high:
            return
        tid = self.blocks.place(low, high)
        block = body.block
        name = (
            '"block {}"'.format(block) if block.__class__ is int else text("block {}".format(block))
        )
        self.out.add(
            _BLOCK_EVENT
            % (
                self.pid,
                tid,
                name,
                micros(low - self.shift, self.per_us),
                micros(high - low, self.per_us),
                body.run,
                block,
                text(body.first_step),
                text(body.end_step),
                body.total,
            )
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
