"""The slices of one profile that are not step rows: stages, blocks and inferences, as
they close, and the metadata events (process and track names, their order) after the
pass. events.ProfileEvents, the pass over the step rows, is one of these.

Numbers are JSON's own (an int's str, a float's repr: never NaN or Infinity, as the
values are whole numbers of cycles); text goes through json.dumps (quotes, control
characters and non-ASCII text escaped), once per distinct name.
"""

from typing import Callable, Dict, List, Tuple

from ..core.blocks import Body
from ..core.steps import sum64
from .tracks import EXACT, FRACTIONS, EventFile, Span, TrackSet, micros, text
from .window import Inference


class ProfileSlices:
    """The tracks of profile `pid` and the slices that are not step rows, written to
    `out` as they close; times shifted by `shift` cycles, `cycles_per_us` to the
    microsecond."""

    def __init__(self, out: EventFile, pid: int, shift: int, cycles_per_us: float) -> None:
        self.out = out
        self.pid = pid
        self.shift = shift
        self.per_us = cycles_per_us
        self._next_tid = 0
        self.ipus: List[TrackSet] = []
        self.stages = TrackSet("stages", self._tid)
        self.blocks = TrackSet("blocks", self._tid)
        self.inferences = TrackSet("inferences", self._tid)
        self._stage_texts: Dict[str, Tuple[str, str]] = {}
        self._leads: List[str] = []  # per tid, a step event's text up to its ts
        #: A stage's or block's event up to its tid (led by ",\n", EventFile.add_led).
        self.slice_lead = ',\n{{"ph": "X", "pid": {}, "tid": '.format(pid)

    def _tid(self) -> int:
        self._next_tid += 1
        return self._next_tid

    def _lead(self, tid: int) -> str:
        """A step event's text up to its ts, on track `tid` (led by ",\\n"), kept."""
        leads = self._leads
        while len(leads) <= tid:
            leads.append(',\n{{"ph":"X","pid":{},"tid":{},"ts":'.format(self.pid, len(leads)))
        return leads[tid]

    def _times(self, low: int, high: int) -> str:
        """The "ts" and "dur" of a slice from `low` to `high` (cycles), as JSON."""
        at, span = low - self.shift, high - low
        if self.per_us == 1000.0 and 0 <= at < EXACT and span < EXACT:  # micros, inline
            return '"ts": {}{}, "dur": {}{}'.format(
                at // 1000, FRACTIONS[at % 1000], span // 1000, FRACTIONS[span % 1000]
            )
        return '"ts": {}, "dur": {}'.format(micros(at, self.per_us), micros(span, self.per_us))

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

    # ---- stages, blocks, inferences ------------------------------------------------

    def _stage_slice(self, stage: str, low: int, high: int, rows: int, cycles: int) -> None:
        sum64(cycles)
        mid, post = self._stage_texts.get(stage) or self._stage_texts_of(stage)
        self.out.add_led(
            '{}{}{}{}, "dur": {}{}{}, "cycles": {}}}}}'.format(
                self.slice_lead,
                self.stages.place(low, high),
                mid,
                micros(low - self.shift, self.per_us),
                micros(high - low, self.per_us),
                post,
                rows,
                cycles,
            )
        )

    def _stage_texts_of(self, stage: str) -> Tuple[str, str]:
        """The text of a slice of `stage` between its tid and its ts, and between its
        dur and its rows: made once per stage."""
        label = text(stage)
        texts = self._stage_texts[stage] = (
            ', "name": {}, "cat": "stage", "ts": '.format(label),
            ', "args": {{"stage": {}, "rows": '.format(label),
        )
        return texts

    def _body_slice(self, body: Body, low: int, high: int) -> None:
        """A closed block, over its rows in the window (none: no slice): one every few
        dozen rows. Its run and block are whole numbers (BlockBodies counts them), and so
        are its steps (Profile checks steps.id); its end step is null when it runs to the
        end of the trace."""
        if low > high:
            return
        block, end_step = body.block, body.end_step
        self.out.add_led(
            f'{self.slice_lead}{self.blocks.place(low, high)}, "name": "block {block}", '
            f'"cat": "block", {self._times(low, high)}, "args": {{"run": {body.run}, '
            f'"block": {block}, "first_step": {body.first_step}, "end_step": '
            f'{"null" if end_step is None else end_step}, "cycles": {sum(body.cycles)}}}}}'
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


class Closed:
    """A blocks.BodyWriter that hands each closed body to a function."""

    def __init__(self, on_body: Callable[[Body], None]) -> None:
        self.on_body = on_body

    def begin(self, profile_label: str, stages: object) -> None:
        pass

    def body(self, body: Body) -> None:
        self.on_body(body)

    def end(self, statistics: dict) -> None:
        pass
