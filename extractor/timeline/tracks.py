"""The trace file as it is written: one JSON event at a time (EventFile), the tracks of
a kind that keep slices from overlapping (TrackSet) and their tids, a slice being
gathered (Span), and the JSON text of a value (text, number)."""

import json
from typing import IO, Any, List, Optional, Tuple

from ..core.steps import BadValue
from .firstfit import FirstFit

#: Per track of one kind, in the order they opened: [tid, where its last slice ends
#: (ns), its first slice's ts (the double a reader parses), a step event's text up to
#: its ts].
Tracks = List[List[Any]]

#: A track's tid is TID_STRIDE * (its kind + 1) + its index among the tracks of its kind
#: (0: `IPU 3`, 1: `IPU 3 (2)`, ...). The kinds: IPU i is kind i, then `stages`,
#: `blocks`, `inferences`, after every IPU. So tids are unique in a process, ascend in
#: the order the tracks are shown (IPU 0, IPU 0 (2), ..., IPU 1, ..., stages, blocks,
#: inferences) whenever they open, are never below TID_STRIDE (never a pid: a trace
#: holds fewer profiles) and stay below 2**31 (a 32-bit tid to every reader).
TID_STRIDE = 100000
#: Kinds of track: 21,470 IPUs (rows of one step), then the three others.
STAGES_KIND = (2**31 - 1) // TID_STRIDE - 4
BLOCKS_KIND = STAGES_KIND + 1
INFERENCES_KIND = STAGES_KIND + 2
MAX_IPUS = STAGES_KIND
#: A kind's tracks are scanned in order up to this many, then found in a FirstFit.
SCANNED = 16
#: The most profiles one trace holds: their pids (1, 2, ...) stay below every tid.
MAX_PROFILES = TID_STRIDE - 1


def text(value: object) -> str:
    """A JSON string (or null, a number) for `value`: strict JSON, any text."""
    if value.__class__ is int:  # most calls: json.dumps gives an int's str
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return json.dumps(value, allow_nan=False)


def whole(value: object, step: object, what: str) -> int:
    """A row's start or end: a whole number, else BadValue naming what it is."""
    if type(value) is int:
        return value
    raise BadValue("step {}: {} is {}, not a whole number".format(step, what, _stored(value)))


def number(value: object, step: object, what: str) -> str:
    """A count of a row (cycles, tiles) as JSON: a whole number, or null for NULL."""
    if type(value) is int:
        return str(value)
    if value is None:
        return "null"
    raise BadValue("step {}: {} is {}, not a whole number".format(step, what, _stored(value)))


def _stored(value: object) -> str:
    """A stored value in the words of every command's messages (`text 'abc'`, `the real
    number 1.5`, NULL)."""
    from ..core.sqlitefile import storage_class

    return "NULL" if value is None else storage_class(value)


#: Events are made into bytes a few hundred at a time, while they are still in the CPU's
#: cache: joining and encoding thousands at once (a few MB of strings) costs a tenth of
#: the time of `extract trace --all` in cache misses (BENCHMARKS.md).
HELD = 256
#: The step events of a pass are written STEP_CHUNK at a time, after every other event
#: made before the last of them (the file's order of old, kept byte for byte); they are
#: made into bytes STEP_PIECE at a time.
STEP_CHUNK = 4096
STEP_PIECE = 512


class EventFile:
    """The trace file: `{"traceEvents": [` ... events ... `], ...}`, written in chunks.

    Every event is held led by ",\n" (its separator from the one before); the first
    of the file loses it as it is written. `pending` is the list of events held (the
    slices that are not step rows, and the metadata), one list for the file's life (a
    pass appends to it directly, `add_led`'s work inline), written HELD at a time. A
    pass hands its step events over STEP_PIECE at a time (`encode_steps`) and has them
    written every STEP_CHUNK (`write_steps`), after the events held."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.pending: List[str] = []
        self._steps: List[bytes] = []
        self._first = True
        handle.write(b'{"traceEvents": [\n')

    def _write(self, data: bytes) -> None:
        if self._first:
            self._first = False
            data = data[2:]
        self.handle.write(data)

    def encode_steps(self, events: List[str]) -> None:
        """Step events, each led by ",\n", made into bytes now (see HELD); written by
        `write_steps`."""
        self._steps.append("".join(events).encode("ascii"))

    def write_steps(self) -> None:
        """The step events handed over, after the events held."""
        self.flush()
        for data in self._steps:
            self._write(data)
        self._steps = []

    def add(self, event: str) -> None:
        self.add_led(",\n" + event)

    def add_led(self, event: str) -> None:
        """An event led by ",\n", held until HELD are (then written)."""
        pending = self.pending
        pending.append(event)
        if len(pending) >= HELD:
            self.flush()

    def flush(self) -> None:
        """The events held, written."""
        if self.pending:
            self._write("".join(self.pending).encode("ascii"))
            self.pending.clear()

    def mark(self) -> Tuple[int, bool]:
        """Where the file is: for `rewind`, to write a profile's events again."""
        self.write_steps()
        return self.handle.tell(), self._first

    def rewind(self, mark: Tuple[int, bool]) -> None:
        self.pending.clear()
        self._steps = []
        self.handle.seek(mark[0])
        self.handle.truncate()
        self._first = mark[1]

    def close(self, other_data: dict) -> None:
        self.write_steps()
        tail = '\n], "displayTimeUnit": "ns", "otherData": {}}}\n'.format(
            json.dumps(other_data, allow_nan=False)
        )
        self.handle.write(tail.encode("ascii"))


class TrackSet:
    """The tracks of one kind (`IPU 0`, `stages`, ...): a slice takes the first whose last
    slice ends at or before its start, a new one when none does."""

    def __init__(self, label: str, kind: int, pid: int) -> None:
        self.label = label
        self.tracks: Tracks = []
        self._first_tid = TID_STRIDE * (kind + 1)
        self._pid = pid
        self._fit: Optional[FirstFit] = None  # past SCANNED tracks

    def place(self, start: int, end: int) -> List[Any]:
        """The track a slice from `start` to `end` (ns) goes on (see Tracks)."""
        tracks = self.tracks
        fit = self._fit
        if fit is None:
            for track in tracks:
                if track[1] <= start:
                    track[1] = end
                    return track
        else:
            fit.set(0, tracks[0][1])  # the pass moves its first track's end itself
            index = fit.first(start)
            if index is not None:
                track = tracks[index]
                track[1] = end
                fit.set(index, end)
                return track
        return self._opened(start, end)

    def _opened(self, start: int, end: int) -> List[Any]:
        """A new track, for a slice from `start` to `end` that fits no other."""
        if len(self.tracks) == TID_STRIDE:
            raise BadValue(
                "{} would need more than {} tracks (rows that overlap): a trace orders "
                "at most that many by tid".format(self.label, TID_STRIDE)
            )
        tid = self._first_tid + len(self.tracks)
        lead = ',\n{{"ph":"X","pid":{},"tid":{},"ts":'.format(self._pid, tid)
        track = [tid, end, start / 1000, lead]
        self.tracks.append(track)
        if self._fit is not None:
            self._fit.append(end)
        elif len(self.tracks) > SCANNED:
            self._fit = FirstFit([track[1] for track in self.tracks])
        return track

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
