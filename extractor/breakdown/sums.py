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

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from ..core.steps import NamedStep, SqlValue, whole
from ..core.walk import Consumer

if TYPE_CHECKING:
    from ..core.profile import RawStepRow

ON_TILE_EXECUTE = "OnTileExecute"

#: (IPU, program id, compute set id, kind), as SQLite gives the last three.
SumKey = Tuple[int, SqlValue, SqlValue, SqlValue]
#: [rows, all cycles, min cycles, max cycles, cycles x active tiles (OnTileExecute)]
Sums = List[int]


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
        self._step: SqlValue = None
        self._ipu = -1
        self._inside = self.first is None

    def row(self, raw: "RawStepRow", named: NamedStep) -> None:
        step = raw[0]
        if step == self._step:
            self._ipu += 1
        else:
            self._step = step
            self._ipu = 0
            if self.first is not None:
                self._inside = self.first <= step and (self.last is None or step <= self.last)
        if not self._inside:
            return
        if self.first_step is None:
            self.first_step = step
        self.last_step = step
        self.row_count += 1
        ipu = self._ipu
        cycles = raw[2]
        if cycles.__class__ is not int:
            cycles = 0 if cycles is None else _whole(step, "steps_by_ipu.cycles", cycles)
        kind = raw[1]
        key = (ipu, raw[3], raw[4], kind)
        sums = self.sums.get(key)
        if sums is None:
            sums = self.sums[key] = [0, 0, cycles, cycles, 0]
            self.names[raw[3], raw[4]] = named
        sums[0] += 1
        sums[1] += cycles
        if cycles < sums[2]:
            sums[2] = cycles
        elif cycles > sums[3]:
            sums[3] = cycles
        if kind == ON_TILE_EXECUTE:
            tiles = raw[5]
            if tiles.__class__ is not int:
                tiles = 0 if tiles is None else _whole(step, "steps_by_ipu.active_tiles", tiles)
            sums[4] += tiles * cycles
        start, end = raw[6], raw[7]
        if ipu >= len(self.low):
            self.low.extend([None] * (ipu + 1 - len(self.low)))
            self.high.extend([None] * (ipu + 1 - len(self.high)))
        if start is not None:
            if start.__class__ is not int:
                start = _whole(step, "its start (cycles_base + active_cycles_from_min)", start)
            low = self.low[ipu]
            if low is None or start < low:
                self.low[ipu] = start
        if end is not None:
            if end.__class__ is not int:
                end = _whole(step, "its end (cycles_base + active_cycles_to_max)", end)
            high = self.high[ipu]
            if high is None or end > high:
                self.high[ipu] = end


def _whole(step: SqlValue, what: str, value: SqlValue) -> int:
    """`value`, not NULL, when it is a whole number; else BadValue naming the step."""
    found: int = whole(value, "step {}: {}".format(step, what))
    return found
