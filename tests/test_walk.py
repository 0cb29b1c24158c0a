"""The walk over the step rows (extractor/core/walk.py): one loop feeding consumers.

A consumer written here, in one class and nothing else, is fed by the walk as the
summary's and blocks' consumers are; its counts are checked against plain SQL on the
profile (nothing from extractor), and the walk's promises are held: a retry (rows stored
out of step order) begins every consumer again and ends it once; a consumer that cannot
be made twice gets sorted rows from the start; a range of steps gives those rows only;
a stream (extract trace's way) gets every row after the hooks, and may end the walk.
"""

import sqlite3
from collections import Counter

import pytest

from extractor.core.profile import STEP_TABLES, Profile
from extractor.core.rules import load_rules
from extractor.core.walk import Consumer, EndOfRows, walk
from support.cases import copy_case, golden_case_folder, stored_backwards
from support.paths import EDGE

ROWS = "SELECT s.id, s.type, i.rowid FROM steps_by_ipu AS i JOIN steps AS s ON s.id = i.step_id"


class KindCounter(Consumer):
    """Every row, counted by kind; begins and ends counted too."""

    every_row = True

    def __init__(self) -> None:
        self.begun = self.ended = 0

    def begin(self) -> None:
        self.begun += 1
        self.kinds: Counter = Counter()
        self.steps: list = []

    def row(self, raw, named) -> None:
        self.kinds[raw[1]] += 1
        self.steps.append(raw[0])

    def end(self) -> None:
        self.ended += 1


class WritesAsItGoes(KindCounter):
    restartable = False


class Markers(Consumer):
    """The markers, and the device span handed before each."""

    times = True

    def begin(self) -> None:
        self.events: list = []

    def devices(self, low, high) -> None:
        self.events.append(("devices", low, high))

    def marker(self, step, kind) -> None:
        self.events.append(("marker", step, kind))


def _sql(profile, query, *values):
    db = sqlite3.connect("file:{}?mode=ro".format(profile), uri=True)
    try:
        return db.execute(query, values).fetchall()
    finally:
        db.close()


def _walk(profile, consumers, **options):
    with Profile(profile, tables=STEP_TABLES, check_start_end=False) as opened:
        return walk(opened, load_rules(), consumers, **options)


def test_a_consumer_of_one_class_sees_every_row_in_step_order(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "golden")
    counter = KindCounter()
    assert _walk(profile, [counter]) is True
    rows = sorted(_sql(profile, ROWS), key=lambda row: (row[0], row[2]))
    assert counter.kinds == Counter(kind for _, kind, _ in rows)
    assert counter.steps == [step for step, _, _ in rows]
    assert (counter.begun, counter.ended) == (1, 1)


def test_a_retry_begins_every_consumer_again_and_ends_it_once(tmp_path):
    in_order = copy_case(golden_case_folder(), tmp_path / "in-order")
    backwards = copy_case(golden_case_folder(), tmp_path / "backwards")
    stored_backwards(backwards)
    first, second = KindCounter(), KindCounter()
    _walk(in_order, [first])
    _walk(backwards, [second])
    assert (first.begun, second.begun) == (1, 2)  # read as stored, then sorted
    assert (first.ended, second.ended) == (1, 1)
    assert second.kinds == first.kinds and second.steps == first.steps


def test_a_consumer_that_cannot_restart_gets_sorted_rows_once(tmp_path):
    backwards = copy_case(golden_case_folder(), tmp_path / "backwards")
    stored_backwards(backwards)
    once, again = WritesAsItGoes(), KindCounter()
    _walk(backwards, [again, once])
    assert (once.begun, again.begun) == (1, 1)
    assert once.steps == sorted(once.steps)


def test_a_range_of_steps_gives_its_rows_only(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "golden")
    steps = sorted({step for step, _, _ in _sql(profile, ROWS)})
    first, end = steps[10], steps[40]
    counter = KindCounter()
    _walk(profile, [counter], steps=(first, end))
    want = _sql(
        profile,
        "SELECT s.id FROM steps_by_ipu AS i JOIN steps AS s ON s.id = i.step_id "
        "WHERE s.id >= ? AND s.id < ? ORDER BY s.id, i.rowid",
        first,
        end,
    )
    assert counter.steps == [step for (step,) in want] and counter.steps


def test_each_marker_comes_after_the_device_span_before_it(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "golden")
    markers = Markers()
    _walk(profile, [markers])
    events = markers.events
    kinds = [event[0] for event in events]
    assert kinds.count("marker") >= 2  # the fixture has inferences
    assert kinds[-1] == "devices"  # the rows after the last marker
    for index, kind in enumerate(kinds):
        if kind == "marker":
            assert kinds[index - 1] == "devices", events
    # Input-delivered rows are StreamCopyEnd and output-begins StreamCopyBegin (the kinds
    # a marker must have, whatever its name), as SQL has them.
    stream = {
        step: kind
        for step, kind, _ in _sql(profile, ROWS)
        if kind in ("StreamCopyEnd", "StreamCopyBegin")
    }
    for event in events:
        if event[0] == "marker":
            assert stream[event[1]] == event[2]


def test_row_is_called_only_with_every_row(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "golden")

    class OnlyMarkers(Consumer):
        def begin(self) -> None:
            self.seen = 0

        def marker(self, step, kind) -> None:
            self.seen += 1

        def row(self, raw, named) -> None:  # without every_row: never called
            raise AssertionError("row() without every_row")

    only = OnlyMarkers()
    _walk(profile, [only])
    assert only.seen > 0


class StepStream(Consumer):
    """Every row taken as a stream (Consumer.stream); it may stop after `stop_after` rows."""

    def __init__(self, stop_after=None) -> None:
        self.stop_after = stop_after
        self.begun = 0

    def begin(self) -> None:
        self.begun += 1
        self.steps: list = []
        self.ended_rows = None

    def stream(self):
        steps = self.steps
        try:
            while True:
                raw = yield
                steps.append(raw[0])
                if self.stop_after is not None and len(steps) == self.stop_after:
                    return
        except EndOfRows:
            self.ended_rows = len(steps)


class StreamEnder(StepStream):
    """A stream whose `end` throws EndOfRows into it, as the walk's docs say to."""

    def stream(self):
        self.generator = super().stream()
        return self.generator

    def end(self) -> None:
        if self.stop_after is None:
            try:
                self.generator.throw(EndOfRows())
            except StopIteration:
                pass


def test_a_stream_is_sent_every_row_after_the_hooks_of_that_row(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "golden")
    counter = KindCounter()

    class SeesCounter(StreamEnder):
        """Records how many rows the counter had seen when each row came."""

        def stream(self):
            self.seen_by_counter = []
            inner = StreamEnder.stream(self)
            next(inner)

            def outer():
                try:
                    while True:
                        raw = yield
                        self.seen_by_counter.append(len(counter.steps))
                        inner.send(raw)
                except EndOfRows:
                    try:
                        inner.throw(EndOfRows())
                    except StopIteration:
                        pass

            self.generator = outer()
            return self.generator

    stream = SeesCounter()
    _walk(profile, [stream, counter])  # the stream listed first still comes after
    rows = sorted(_sql(profile, ROWS), key=lambda row: (row[0], row[2]))
    assert stream.steps == [step for step, _, _ in rows]
    assert stream.ended_rows == len(rows)
    assert stream.seen_by_counter == list(range(1, len(rows) + 1))


def test_a_stream_that_returns_ends_the_walk_and_every_end_is_still_called(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "golden")
    stream, counter = StreamEnder(stop_after=25), KindCounter()
    _walk(profile, [counter, stream])
    rows = sorted(_sql(profile, ROWS), key=lambda row: (row[0], row[2]))
    assert stream.steps == [step for step, _, _ in rows[:25]]
    assert counter.steps == stream.steps  # the rows after went unread by everyone
    assert counter.ended == 1


def test_a_retry_makes_a_new_stream_from_begin(tmp_path):
    backwards = copy_case(golden_case_folder(), tmp_path / "backwards")
    stored_backwards(backwards)
    stream = StreamEnder()
    _walk(backwards, [stream])
    assert stream.begun == 2  # read as stored, then sorted: a second generator
    assert stream.steps == sorted(stream.steps) and stream.ended_rows == len(stream.steps)


def test_two_streams_in_one_walk_are_refused(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "golden")
    with pytest.raises(ValueError, match="at most one"):
        _walk(profile, [StreamEnder(), StreamEnder()])


class NoBodies:
    """A BodyWriter (core/blocks.py) that keeps nothing."""

    def begin(self, profile_label, stages) -> None:
        pass

    def body(self, body) -> None:
        pass

    def end(self, statistics) -> None:
        pass


@pytest.mark.parametrize("name", ["one-anchor", "multi-ipu", "no-output-begins"])
def test_plain_kernels_added_by_the_walk_still_widen_the_device_span(tmp_path, name):
    # With a consumer that sums the open block, the walk adds plain kernels itself (no
    # hook sees them); the device span around them must not change. In one-anchor, an
    # inference's earliest device row is such a kernel.
    from extractor.core.blocks import BlockBodies

    profile = copy_case(EDGE / name, tmp_path / name)
    alone, beside = Markers(), Markers()
    _walk(profile, [alone])
    rules = load_rules()
    _walk(profile, [beside, BlockBodies(rules, name, NoBodies(), statistics=False)])
    assert beside.events == alone.events
    # and the spans as SQL has them: the device rows' [min start, max end] between markers
    spans = [event[1:] for event in alone.events if event[0] == "devices"]
    assert spans == _device_spans_by_sql(profile, alone.events)


def _device_spans_by_sql(profile, events):
    """For each stretch between the markers `events` names (their steps), the device
    rows' min start and max end, by SQL (NULL: none)."""
    markers = [event[1] for event in events if event[0] == "marker"]
    edges = [None] + markers + [None]
    spans = []
    for low, high in zip(edges, edges[1:]):
        where = []
        if low is not None:
            where.append("s.id > {}".format(low))
        if high is not None:
            where.append("s.id < {}".format(high))
        where.append("s.type IN ('DoExchange', 'OnTileExecute')")
        spans.append(
            _sql(
                profile,
                "SELECT min(i.cycles_base + i.active_cycles_from_min), "
                "max(i.cycles_base + i.active_cycles_to_max) FROM steps_by_ipu AS i "
                "JOIN steps AS s ON s.id = i.step_id WHERE " + " AND ".join(where),
            )[0]
        )
    return spans
