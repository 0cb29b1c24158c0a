"""The breakdown's one consumer of the walk: every row of a window, summed.

A `WindowSums` sees every step row (`every_row`, with `times` for active_tiles, start
and end) and keeps, for the rows of its window, sums only: per (IPU, program, compute
set, kind), the rows, all cycles, their min and max and (OnTileExecute) the cycles
weighted by active tiles; per IPU the span's ends. Pairs and kinds are few (a trace
replays its programs), so memory stays flat however many rows there are. The tables
(tables.py) are made from these sums after the walk.

A step row's IPU is its place among the rows of its step, in stored order (0, 1, ...),
as the walk gives them.
"""

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ..core.steps import NamedStep, SqlValue, whole
from ..core.walk import Consumer
from .keys import kind_text

if TYPE_CHECKING:
    from ..core.profile import RawStepRow

ON_TILE_EXECUTE = "OnTileExecute"

#: (IPU, program id, compute set id, kind), as SQLite gives the last three.
SumKey = Tuple[int, SqlValue, SqlValue, SqlValue]
#: [rows, all cycles, min cycles, max cycles, cycles x active tiles (OnTileExecute), whether
#: the kind is OnTileExecute (as text: a blob is read as one)]
Sums = List[Any]


class WindowSums(Consumer):
    """The sums of the rows of steps `first` to `last` (inclusive; `last` None: to the
    end of the trace; `first` None: every row)."""

    times = True
    every_row = True

    def __init__(self, first: Optional[int] = None, last: Optional[int] = None) -> None:
        self.first, self.last = first, last
        self.begin()

    def begin(self) -> None:
        self.sums: Dict[SumKey, Sums] = {}  # in the order of each key's first row
        self.names: Dict[Tuple[SqlValue, SqlValue], NamedStep] = {}
        self.low: List[Optional[int]] = []  # per IPU: the smallest start
        self.high: List[Optional[int]] = []  # per IPU: the largest end
        self.row_count = 0
        self.first_step: Optional[int] = None
        self.last_step: Optional[int] = None
        # The walk calls `row` once per row of the trace: a closure on locals, made
        # afresh for each attempt, costs less per call than a method on attributes.
        self.row, self._counts = self._row_hook()  # type: ignore[method-assign,assignment]

    def end(self) -> None:
        self.row_count, self.first_step, self.last_step = self._counts()

    def row(self, raw: "RawStepRow", named: NamedStep) -> None:
        """Replaced by `begin` (see `_row_hook`)."""
        raise NotImplementedError

    def _row_hook(
        self,
    ) -> Tuple[
        Callable[["RawStepRow", NamedStep], None],
        Callable[[], Tuple[int, Optional[int], Optional[int]]],
    ]:
        """The `row` hook of one attempt, and what it counted (rows, first and last
        step), on locals of its own."""
        sums, names, lows, highs = self.sums, self.names, self.low, self.high
        first, last = self.first, self.last
        bounded = first is not None
        this_step: SqlValue = None
        ipu = -1
        inside = not bounded
        count = 0
        first_step: Optional[int] = None
        last_step: Optional[int] = None

        def row(raw: "RawStepRow", named: NamedStep) -> None:
            nonlocal this_step, ipu, inside, count, first_step, last_step
            step = raw[0]
            if step == this_step:
                ipu += 1
            else:
                this_step = step
                ipu = 0
                if bounded:
                    inside = first <= step and (last is None or step <= last)
            if not inside:
                return
            if first_step is None:
                first_step = step
            last_step = step
            count += 1
            cycles = raw[2]
            if cycles.__class__ is not int:
                cycles = 0 if cycles is None else _whole(step, "steps_by_ipu.cycles", cycles)
            key = (ipu, raw[3], raw[4], raw[1])
            found = sums.get(key)
            if found is None:  # the last item: whether the kind is OnTileExecute
                found = sums[key] = [0, 0, cycles, cycles, 0, kind_text(raw[1]) == ON_TILE_EXECUTE]
                names[raw[3], raw[4]] = named
            found[0] += 1
            found[1] += cycles
            if cycles < found[2]:
                found[2] = cycles
            elif cycles > found[3]:
                found[3] = cycles
            if found[5]:
                tiles = raw[5]
                if tiles.__class__ is not int:
                    tiles = 0 if tiles is None else _whole(step, "steps_by_ipu.active_tiles", tiles)
                found[4] += tiles * cycles
            start, end = raw[6], raw[7]
            try:
                low, high = lows[ipu], highs[ipu]
            except IndexError:  # the IPU's first row
                lows.append(None)
                highs.append(None)
                low = high = None
            if start.__class__ is not int and start is not None:
                start = _whole(step, "its start (cycles_base + active_cycles_from_min)", start)
            if end.__class__ is not int and end is not None:
                end = _whole(step, "its end (cycles_base + active_cycles_to_max)", end)
            if start is not None and (low is None or start < low):
                lows[ipu] = start
            if end is not None and (high is None or end > high):
                highs[ipu] = end

        def counts() -> Tuple[int, Optional[int], Optional[int]]:
            return count, first_step, last_step

        return row, counts


def _whole(step: SqlValue, what: str, value: SqlValue) -> int:
    """`value`, not NULL, when it is a whole number; else BadValue naming the step."""
    found: int = whole(value, "step {}: {}".format(step, what))
    return found
