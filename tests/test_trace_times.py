"""A trace's numbers as the viewers compute with them (docs/formats/trace.md, "Times"):
slices that touch in cycles touch in the file, and none overlaps, once speedscope adds
ts + dur in doubles (on each track's times less its first ts) and Perfetto rounds
ts * 1000 and dur * 1000 to whole nanoseconds each. First over random times and clocks
on the functions that write them, then through the CLI on the committed profiles."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_trace import GOLDEN_PROFILE, check_against_oracle, trace

from extractor.timeline.times import NS_LIMIT, dur_text, ns_of, ns_scale, ns_text
from support.paths import EDGE, GOLDEN
from support.trace_oracle import llround, nanoseconds, viewer_overlaps

CLOCKS = [None, 1850.0, 0.3, 1330.0, 1e6, 0.001, 1.0 / 3]


def _written(spans, clock):
    """The slices of one track, from (start, end) cycles after the shift, as a reader
    parses them: [{"ts", "dur"}], and the ns each was meant to span."""
    scale = ns_scale(1000.0 if clock is None else clock)
    placed = [(ns_of(low, scale), ns_of(high, scale)) for low, high in spans]
    first = placed[0][0] / 1000 if placed else 0.0
    events = [
        {"ts": float(ns_text(start)), "dur": float(dur_text(start, end, first))}
        for start, end in placed
    ]
    return events, placed


@st.composite
def tracks(draw):
    """A track: slices in time order, each from the end of the one before or later
    (most touch), some lasting no time; times from 0 up to far into a trace."""
    base = draw(st.integers(0, 10**12))
    spans = []
    at = base
    for _ in range(draw(st.integers(1, 12))):
        at += draw(st.sampled_from([0, 0, 0, 1, draw(st.integers(0, 10**7))]))
        end = at + draw(st.integers(0, 10 ** draw(st.integers(0, 9))))
        spans.append((at, end))
        at = end
    return spans


@settings(max_examples=1500, deadline=None)
@given(spans=tracks(), clock=st.sampled_from(CLOCKS))
@example(spans=[(439915, 441102), (441102, 442000)], clock=None)  # 439.915 + 1.187
def test_no_viewer_sees_slices_overlap(spans, clock):
    events, placed = _written(spans, clock)
    if placed[-1][1] >= NS_LIMIT:
        return
    assert not viewer_overlaps(events)
    for event, (start, end), (low, high) in zip(events, placed, spans):
        # the nanoseconds meant, exactly as Perfetto reads them, and the oracle's own
        assert llround(event["ts"] * 1000) == start == nanoseconds(low, clock)
        assert llround(event["dur"] * 1000) == end - start
        assert end == nanoseconds(high, clock)
    for before, after, (_, end), (start, _) in zip(events, events[1:], placed, placed[1:]):
        if end == start:  # touching: to Perfetto the next begins where this one ends
            ends = llround(before["ts"] * 1000) + llround(before["dur"] * 1000)
            assert ends == llround(after["ts"] * 1000)


@settings(max_examples=2000, deadline=None)
@given(ns=st.integers(0, NS_LIMIT))
def test_ts_is_the_exact_decimal_of_its_nanoseconds(ns):
    text = ns_text(ns)
    whole, _, fraction = text.partition(".")
    assert len(fraction) <= 3 and "e" not in text
    assert int(whole) * 1000 + int(fraction.ljust(3, "0")) == ns
    assert llround(float(text) * 1000) == ns


@pytest.mark.parametrize("clock", [None, "1850", "0.3", "1330.0", "1e6"])
@pytest.mark.parametrize(
    "profile", [GOLDEN_PROFILE, EDGE / "multi-ipu" / "profile.pop"], ids=["golden", "multi-ipu"]
)
def test_traces_at_any_clock_keep_slices_apart_for_viewers(profile, clock, tmp_path):
    """The golden profile's slices touch (step after step on IPU 0): without a clock its
    short decimals once made speedscope nest every later step under one; at a clock,
    Perfetto's rounding made some end after the next began (it drops those).
    trace_oracle.validate holds the file to both viewers' arithmetic."""
    options = ["--all", "--no-pva"] + (["--clock-mhz", clock] if clock else [])
    data, _ = trace(tmp_path, profile, *options)
    check_against_oracle(data, 1, profile, every=True, clock_mhz=float(clock) if clock else None)


@pytest.mark.parametrize("clock", [None, "1850", "1330.0"])
def test_the_ab_pair_in_one_trace_keeps_every_slice_for_viewers(clock, tmp_path):
    """The golden profile and its recompilation, one process each, the way two builds
    are compared: at 1850 MHz Perfetto once dropped one of its 1,499 slices, and
    without a clock speedscope drew a step of the recompilation to the end."""
    recompiled = GOLDEN.parent / "vit-f8weight-recompiled" / "profile.pop"
    options = ["--all", "--no-pva"] + (["--clock-mhz", clock] if clock else [])
    data, _ = trace(tmp_path, GOLDEN_PROFILE, recompiled, *options)
    for pid, profile in ((1, GOLDEN_PROFILE), (2, recompiled)):
        check_against_oracle(
            data, pid, profile, every=True, clock_mhz=float(clock) if clock else None
        )
