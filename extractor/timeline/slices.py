"""The slices of one profile that are not step rows: stages, blocks and inferences, as
they close, and the metadata events (process and track names, their order) after the
pass. events.ProfileEvents, the pass over the step rows, is one of these.

Times are times.py's (whole nanoseconds, `dur` as the viewers add it); the other numbers
are ints; text goes through json.dumps (quotes, control characters and non-ASCII text
escaped), once per distinct name.
"""

from typing import Any, Callable, Dict, List, Tuple

from ..core.blocks import Body
from ..core.steps import sum64
from .times import FRACTIONS, dur_text, ns_of, ns_scale, times_text
from .tracks import (
    BLOCKS_KIND,
    HELD,
    INFERENCES_KIND,
    STAGES_KIND,
    EventFile,
    Span,
    TrackSet,
    text,
)
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
        self.scale = ns_scale(cycles_per_us)
        self._stage_texts: Dict[str, Tuple[str, str]] = {}
        #: A stage's or block's event up to its tid (led by ",\n", EventFile.add_led).
        self.slice_lead = ',\n{{"ph": "X", "pid": {}, "tid": '.format(pid)
        self.clear()

    def clear(self) -> None:
        """No tracks yet (the events written again from the start)."""
        self.ipus: List[TrackSet] = []
        self.stages = TrackSet("stages", STAGES_KIND, self.pid)
        self.blocks = TrackSet("blocks", BLOCKS_KIND, self.pid)
        self.inferences = TrackSet("inferences", INFERENCES_KIND, self.pid)

    def ns(self, cycles: int) -> int:
        """A time in cycles (before the shift) in whole nanoseconds after it."""
        return ns_of(cycles - self.shift, self.scale)

    def _placed(self, tracks: TrackSet, low: int, high: int) -> Tuple[Any, int, int]:
        """The track of a slice from `low` to `high` cycles, and its times in ns."""
        start, end = self.ns(low), self.ns(high)
        return tracks.place(start, end), start, end

    def _slice(self, tracks: TrackSet, name: str, low: int, high: int, args: str, cat: str) -> None:
        track, start, end = self._placed(tracks, low, high)
        self.out.add(
            '{{"ph": "X", "pid": {}, "tid": {}, "name": {}, "cat": "{}", {}, '
            '"args": {{{}}}}}'.format(
                self.pid, track[0], text(name), cat, times_text(start, end, track[2]), args
            )
        )

    # ---- stages, blocks, inferences ------------------------------------------------

    def _stage_slice(self, stage: str, low: int, high: int, rows: int, cycles: int) -> None:
        """The slice of a stage's rows, from `low` to `high` cycles: one every few rows
        (a stage closes wherever the next row's stage differs), so its times are made
        here (ns_of), its track's first test too (TrackSet.place's), and its text is one
        f-string, held as EventFile.add_led holds it."""
        mid, post = self._stage_texts.get(stage) or self._stage_texts_of(stage)
        scale = self.scale
        if scale is None:
            start, end = low - self.shift, high - self.shift
        else:
            to_ns, halves = scale
            start = ((low - self.shift) * to_ns + halves // 2) // halves
            end = ((high - self.shift) * to_ns + halves // 2) // halves
        tracks = self.stages.tracks
        if tracks and tracks[0][1] <= start:
            track = tracks[0]
            track[1] = end
        else:
            track = self.stages.place(start, end)
        held = self.out.pending
        held.append(
            f"{self.slice_lead}{track[0]}{mid}{start // 1000}{FRACTIONS[start % 1000]}, "
            f'"dur": {dur_text(start, end, track[2])}{post}{rows}, "cycles": {sum64(cycles)}}}}}'
        )
        if len(held) >= HELD:
            self.out.flush()

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
        track, start, end = self._placed(self.blocks, low, high)
        self.out.add_led(
            f'{self.slice_lead}{track[0]}, "name": "block {block}", '
            f'"cat": "block", {times_text(start, end, track[2])}, "args": {{"run": {body.run}, '
            f'"block": {block}, "first_step": {body.first_step}, "end_step": '
            f'{"null" if end_step is None else end_step}, "cycles": {sum(body.cycles)}}}}}'
        )

    def _inference_closed(self, inference: Inference, span: Span, device: Span) -> None:
        if span.low is None or span.high is None:
            return
        device_span = None
        if inference.last is not None and device.low is not None and device.high is not None:
            device_span = device.high - device.low
        self._slice(
            self.inferences,
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
