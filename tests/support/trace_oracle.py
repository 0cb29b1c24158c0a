"""A second, plain reading of the trace's spec (docs/commands/trace.md), for
tests/test_trace.py.

`oracle_trace(profile, ...)` reads every step row with its own SQL join, keeps them all
in memory, and applies the definitions literally: the inferences, the window, the shift,
each row's track by the track rule, the stages, blocks (blocks_oracle's bodies) and
inferences slices, every time in whole nanoseconds as the spec writes them (the nearest
at a clock, halves up, in exact rational arithmetic). It imports nothing from
`extractor`. `validate(data)` checks a parsed trace against the Trace Event Format's
rules as Perfetto reads them, and the numbers as Perfetto and speedscope compute with
them (`viewer_overlaps`).
"""

import json
import math
from fractions import Fraction

from support.blocks_oracle import (
    connect,
    marker_steps,
    oracle_blocks,
    read_rules,
    stage_of,
    step_names,
)

ROWS = """
SELECT s.id, CAST(s.type AS TEXT), i.cycles, i.active_tiles,
       i.cycles_base + i.active_cycles_from_min, i.cycles_base + i.active_cycles_to_max,
       s.program, s.compute_set
FROM steps AS s JOIN steps_by_ipu AS i ON i.step_id = s.id
ORDER BY s.id, i.rowid
"""


def read_rows(profile):
    db = connect(profile)
    try:
        name_of = step_names(db)
        raw = list(db.execute(ROWS))
    finally:
        db.close()
    rows = []
    last, ipu = None, 0
    for step, kind, cycles, tiles, start, end, program, compute_set in raw:
        ipu = ipu + 1 if step == last else 0
        last = step
        rows.append(
            {
                "step": step,
                "kind": kind,
                "name": name_of(program, compute_set),
                "cycles": cycles,
                "active_tiles": tiles,
                "start": start,
                "end": end,
                "ipu": ipu,
            }
        )
    return rows


def inferences(rows, rules):
    marks = marker_steps(rows, rules["selectors"])
    found = []
    for number, first in enumerate(marks["inputs"], 1):
        after = [o for o in marks["outputs"] if o > first]
        found.append((number, first, after[0] if after else None))
    return found


def _inside(step, first, last):
    return step >= first and (last is None or step <= last)


def place(tracks, start, end):
    """The track rule: the first track whose last slice ends at or before `start`."""
    for index, last_end in enumerate(tracks):
        if last_end <= start:
            tracks[index] = end
            return index
    tracks.append(end)
    return len(tracks) - 1


def track_name(label, index):
    return label if index == 0 else "{} ({})".format(label, index + 1)


def nanoseconds(cycles, clock_mhz):
    """A count of cycles as whole nanoseconds: itself without a clock (1 cycle = 1 ns),
    else the nearest whole number to cycles * 1000 / clock_mhz, halves up."""
    if clock_mhz is None:
        return cycles
    return math.floor(Fraction(cycles) * 1000 / Fraction(clock_mhz) + Fraction(1, 2))


def oracle_trace(profile, runs=(), every=False, rules_path=None, clock_mhz=None):
    """What the trace of one profile holds: {"window": [rows], "shift", "inferences",
    "steps": [(track, name, kind, start-shift, dur, step, cycles, active_tiles)],
    "stages": [...], "blocks": [...], "inference_slices": [...]}, times in whole ns
    after the shift (`nanoseconds`), tracks given on those."""
    rules = read_rules(rules_path)
    rows = read_rows(profile)
    found = inferences(rows, rules)
    if every or not found:
        chosen = found if every or not found else []
        window = list(rows)
    else:
        wanted = sorted(set(runs or [1]))
        chosen = [inf for inf in found if inf[0] in wanted]
        window = [r for r in rows if any(_inside(r["step"], f, la) for _, f, la in chosen)]
    shift = min((r["start"] for r in window), default=0)

    def ns(cycles):
        return nanoseconds(cycles - shift, clock_mhz)

    tracks = {}
    steps = []
    for r in window:
        start, end = ns(r["start"]), ns(r["end"])
        index = place(tracks.setdefault(r["ipu"], []), start, end)
        steps.append(
            (
                track_name("IPU {}".format(r["ipu"]), index),
                r["name"] or "(unnamed step)",
                r["kind"],
                start,
                end - start,
                r["step"],
                r["cycles"],
                r["active_tiles"],
            )
        )
    # stages: consecutive rows of the window, with no row outside it between them
    positions = {id(r): n for n, r in enumerate(rows)}
    stages, stage_tracks = [], []
    group = []
    for r in window:
        stage = stage_of(r["name"], rules)
        if group and (
            stage_of(group[-1]["name"], rules) != stage
            or positions[id(r)] != positions[id(group[-1])] + 1
        ):
            stages.append(_stage_slice(group, rules, stage_tracks, ns))
            group = []
        group.append(r)
    if group:
        stages.append(_stage_slice(group, rules, stage_tracks, ns))
    blocks, block_tracks = [], []
    for body in oracle_blocks(profile, str(profile), rules_path)["blocks"]:
        inside = [
            r
            for r in window
            if r["step"] >= body["first_step"]
            and (body["end_step"] is None or r["step"] < body["end_step"])
        ]
        if inside:
            low = ns(min(r["start"] for r in inside))
            high = ns(max(r["end"] for r in inside))
            index = place(block_tracks, low, high)
            blocks.append(
                (
                    track_name("blocks", index),
                    "block {}".format(body["block"]),
                    low,
                    high - low,
                    body["run"],
                    body["first_step"],
                    body["end_step"],
                    body["total"],
                )
            )
    slices, inference_tracks = [], []
    for number, first, last in chosen:
        inside = [r for r in window if _inside(r["step"], first, last)]
        if not inside:
            continue
        low = ns(min(r["start"] for r in inside))
        high = ns(max(r["end"] for r in inside))
        device = (
            [
                r
                for r in inside
                if r["kind"] in ("DoExchange", "OnTileExecute") and first < r["step"] < last
            ]
            if last is not None
            else []
        )
        span = max(r["end"] for r in device) - min(r["start"] for r in device) if device else None
        index = place(inference_tracks, low, high)
        slices.append(
            (
                track_name("inferences", index),
                "inference {}".format(number),
                low,
                high - low,
                span,
            )
        )
    return {
        "window": window,
        "shift": shift,
        "inferences": found,
        "steps": steps,
        "stages": stages,
        "blocks": blocks,
        "inference_slices": slices,
    }


def _stage_slice(group, rules, tracks, ns):
    low = ns(min(r["start"] for r in group))
    high = ns(max(r["end"] for r in group))
    index = place(tracks, low, high)
    return (
        track_name("stages", index),
        stage_of(group[0]["name"], rules),
        low,
        high - low,
        len(group),
        sum(r["cycles"] or 0 for r in group),
    )


# ---- the file as the format's readers see it -------------------------------------------


def strict_load(data: bytes):
    """Parse as strict JSON: NaN, Infinity and -Infinity refused, as browsers' JSON is."""

    def refuse(name):
        raise ValueError("not JSON: {}".format(name))

    return json.loads(data.decode("utf-8"), parse_constant=refuse)


def validate(data: dict) -> None:
    """The Trace Event Format's rules, as Perfetto's JSON importer reads them."""
    assert set(data) >= {"traceEvents", "displayTimeUnit", "otherData"}
    assert data["displayTimeUnit"] == "ns"
    assert set(data["otherData"]) == {"tool", "clock_mhz"}
    events = data["traceEvents"]
    assert isinstance(events, list)
    named_processes, named_threads, slices = set(), set(), {}
    sort_index = {}
    for event in events:
        phase = event["ph"]
        assert phase in ("X", "M"), event
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int), event
        assert isinstance(event["name"], str), event
        if phase == "M":
            assert event["name"] in (
                "process_name",
                "process_sort_index",
                "thread_name",
                "thread_sort_index",
            )
            if event["name"] == "process_name":
                assert isinstance(event["args"]["name"], str)
                named_processes.add(event["pid"])
            elif event["name"] == "thread_name":
                assert isinstance(event["args"]["name"], str)
                named_threads.add((event["pid"], event["tid"]))
            else:
                assert isinstance(event["args"]["sort_index"], int)
                if event["name"] == "thread_sort_index":
                    sort_index[event["pid"], event["tid"]] = event["args"]["sort_index"]
            continue
        for field in ("ts", "dur"):
            value = event[field]
            assert isinstance(value, (int, float)) and not isinstance(value, bool), event
        assert event["dur"] >= 0, event
        assert event["ts"] >= 0, event
        assert isinstance(event.get("cat"), str), event
        assert isinstance(event.get("args"), dict), event
        slices.setdefault((event["pid"], event["tid"]), []).append(event)
    for pid, tid in slices:
        assert pid in named_processes, pid
        assert (pid, tid) in named_threads, (pid, tid)
        assert (pid, tid) in sort_index, (pid, tid)
    for (pid, tid), events_on in slices.items():
        assert not viewer_overlaps(events_on), ((pid, tid), viewer_overlaps(events_on)[:3])
        for event in events_on:
            # ts on a whole nanosecond: the double of a decimal with at most 3 places
            assert llround(event["ts"] * 1000) / 1000 == event["ts"], event
    per_process = {}
    for (pid, _tid), index in sort_index.items():
        per_process.setdefault(pid, []).append(index)
    for indexes in per_process.values():
        assert len(indexes) == len(set(indexes))
    # tids: never the pid (Perfetto would show that track first, as the main thread),
    # and ascending in the order the sort index gives (for readers that ignore it)
    for pid, tid in sort_index:
        assert tid != pid, (pid, tid)
        assert 0 < tid < 2**31, tid
    for pid in per_process:
        shown = sorted((index, tid) for (p, tid), index in sort_index.items() if p == pid)
        tids = [tid for _, tid in shown]
        assert tids == sorted(tids), (pid, shown)


def llround(value):
    """C's llround (what Perfetto applies to ts * 1000 and dur * 1000): the nearest
    integer, halves away from zero, of a double."""
    low = math.floor(value)
    return low + (1 if value - low >= 0.5 else 0) if value >= 0 else -llround(-value)


def viewer_overlaps(events):
    """The pairs of slices of one track (each in the file's numbers) that overlap as a
    viewer computes with them: speedscope takes the track's times less its first ts and
    adds ts + dur in doubles; Perfetto rounds ts * 1000 and dur * 1000 to whole ns each
    and drops a slice that ends after the next one begins."""
    ordered = sorted(events, key=lambda e: (e["ts"], e["dur"]))
    first = ordered[0]["ts"] if ordered else 0.0
    found = []
    for before, after in zip(ordered, ordered[1:]):
        ts, dur, then = before["ts"], before["dur"], after["ts"]
        speedscope = (ts + dur > then) or ((ts - first) + dur > then - first)
        perfetto = llround(ts * 1000) + llround(dur * 1000) > llround(then * 1000)
        if speedscope or perfetto:
            found.append((before, after))
    return found
