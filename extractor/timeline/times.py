"""A slice's `ts` and `dur` as JSON, so that no viewer's arithmetic makes slices overlap.

Every time is first a whole number of nanoseconds after the profile's shift (`ns`: at
a clock, the nearest, halves up; without one a cycle is a nanosecond), and tracks are
given on those numbers. `ts` is that count in microseconds, written exactly: at most
three decimals (`ns_text`). JSON readers parse it to the double nearest it, which for
times below NS_LIMIT is within far less than half a nanosecond.

`dur` is the end less the start as the viewers compute with it. speedscope takes each
track's times less its first `ts`, then adds `ts + dur` in doubles; Perfetto rounds
`ts * 1000` and `dur * 1000` to whole nanoseconds each. `dur` is the exact decimal of
(end - start) ns when speedscope's sums with it land on the slice's written end;
otherwise the double that, added as speedscope adds it, lands on that end (or just
below it, when no double does), written as repr (`fitted`). Both are within a few
units in the last place of (end - start) / 1000, so that Perfetto's rounding gives
exactly end - start: a slice ends where the next one on its track starts, or before.
"""

import struct
from typing import Optional, Tuple

#: Times after the shift below this (2**49 ns: 6.5 days) keep the properties above in
#: doubles (tests/test_trace_times.py checks them over random times and clocks).
NS_LIMIT = 1 << 49

#: The decimals of a count of nanoseconds in microseconds: ".0", ".001", ..., ".999",
#: trailing zeros dropped (as repr writes a double's shortest form).
FRACTIONS = [".0"] + [".{:03d}".format(i).rstrip("0") for i in range(1, 1000)]


def ns_scale(per_us: float) -> Optional[Tuple[int, int]]:
    """For `ns_of`: (m, n) with a count's nanoseconds floor((cycles * m + n // 2) / n),
    exact (per_us is the ratio of two integers, as every double is); None at 1000
    cycles to the microsecond, where a cycle is a nanosecond."""
    if per_us == 1000.0:
        return None
    num, den = per_us.as_integer_ratio()
    return 2000 * den, 2 * num


def ns_of(cycles: int, scale: Optional[Tuple[int, int]]) -> int:
    """`cycles` (after the shift, >= 0) in whole nanoseconds at the clock `scale` gives
    (ns_scale): the nearest, halves up, computed exactly on integers; never fewer for
    more cycles. None: the count itself."""
    if scale is None:
        return cycles
    return (cycles * scale[0] + scale[1] // 2) // scale[1]


def ns_text(ns: int) -> str:
    """A count of nanoseconds as microseconds, exactly (at most three decimals)."""
    return str(ns // 1000) + FRACTIONS[ns % 1000]


def dur_text(start: int, end: int, first: float) -> str:
    """The `dur` of a slice from `start` to `end` ns on a track whose first slice's ts
    is `first` (as read: a double; the pass writes the same, inline, for step slices)."""
    span = end - start
    a, b, d = start / 1000, end / 1000, span / 1000
    if a + d == b and (not first or (a - first) + d == b - first):
        return str(span // 1000) + FRACTIONS[span % 1000]
    return repr(fitted(a, b, first))


def times_text(start: int, end: int, first: float) -> str:
    """`"ts": ..., "dur": ...` of a slice from `start` to `end` ns (see dur_text)."""
    return '"ts": {}, "dur": {}'.format(ns_text(start), dur_text(start, end, first))


def fitted(a: float, b: float, f: float) -> float:
    """The largest double `d` (down from b - a) for which `a + d` does not pass `b`, nor
    `(a - f) + d` pass `b - f` (speedscope's sums, on the track whose first ts is `f`):
    b - a itself, or one or two units in the last place below it."""
    d = b - a
    if f:
        d = min(d, (b - f) - (a - f))
    while d > 0 and (a + d > b or (a - f) + d > b - f):
        d = _below(d)
    return d


def _below(value: float) -> float:
    """The double just below `value` (> 0): math.nextafter, which Python 3.8 lacks."""
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    (lower,) = struct.unpack("<d", struct.pack("<q", bits - 1))
    return float(lower)
