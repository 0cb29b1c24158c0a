"""The fuzz of `extract diff` and `extract trace`: hostile profiles (names, kinds, values,
clocks, damaged tables), options and paths, each run of the real command held against
the promises tests/support/difftracefuzz.py states: valid output (strict JSON within 64
bits, whole tables, the trace format's checks, nothing for a terminal to act on) or one error
line naming a file; inputs never changed; nothing left behind by a failure; no partial
file after a time limit, through a link or not; work linear in the rows.

Reduced for CI: a few derandomized examples per command, the corpus (each hostile piece
alone, given to each command), six runs stopped by --timeout, two costs. A long run,
random rather than derandomized:

    EXTRACT_DIFFTRACEFUZZ_EXAMPLES=200 EXTRACT_DIFFTRACEFUZZ_SEED=1 \\
        .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_fuzz_diff_trace.py

A failing example prints its tree, its command, what extract did and each broken promise.
"""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from support import difftracefuzz as fuzz
from support.fuzzruns import FuzzRuns
from support.outputchecks import strict_json, terminal_problems, trace_problems

RUNS = FuzzRuns("EXTRACT_DIFFTRACEFUZZ", 6)
TIMED_EXAMPLES = max(1, RUNS.examples // 4) if RUNS.long else 1
SETTINGS = RUNS.settings
maybe_seed = RUNS.seeded


def check(drawn, root, timeout=fuzz.TIMEOUT):
    problems, report, run = fuzz.run_example(drawn, root, timeout)
    assert not problems, report
    return run


@pytest.mark.parametrize("command", fuzz.COMMANDS)
def test_hostile_diff_and_trace_runs(command, tmp_path):
    # Every example runs; the failing ones are reported together, as drawn.
    failures = []

    @maybe_seed
    @SETTINGS
    @given(fuzz.examples(command))
    def run(drawn):
        problems, report, _ = fuzz.run_example(drawn, tmp_path / "example")
        if problems:
            failures.append(report)

    run()
    assert not failures, "\n\n".join(failures)


CORPUS = fuzz.corpus()


@pytest.mark.parametrize("drawn", [e for _, e in CORPUS], ids=[i for i, _ in CORPUS])
def test_one_hostile_piece(drawn, tmp_path):
    check(drawn, tmp_path / "example")


@pytest.mark.parametrize("output", [fuzz.LINK, fuzz.NESTED, fuzz.EXISTING])
def test_a_trace_stopped_by_its_time_limit_leaves_nothing(output, tmp_path):
    # trace --all of 150,000 rows writes for longer than the time limit: it is ended
    # while its temporary file is being written, beside the link's target for a link.
    @maybe_seed
    @settings(SETTINGS, max_examples=TIMED_EXAMPLES)
    @given(timeout=st.sampled_from(["0.3", "0.5", "0.8"]))
    @example(timeout="0.5")
    def run(timeout):
        drawn = fuzz.Example(
            "trace",
            [fuzz.ProfileDraw("longer body")],
            options=["--all", "--timeout", timeout],
            output=output,
            focus="timeout",
        )
        check(drawn, tmp_path / "example")

    run()


def timed(drawn, root, timeout=fuzz.TIMEOUT):
    """The CPU seconds of the run, and its problems and report."""
    problems, report, run = fuzz.run_example(drawn, root, timeout)
    return run.cpu, problems, report


def test_trace_work_is_linear_in_the_rows_of_one_step(tmp_path):
    # 16,000 rows of one step (one per IPU): trace's CPU time stays within a few times
    # extract's on the same profile (a per-step list rebuilt for each row met is not).
    wide = [fuzz.ProfileDraw("wide step")]
    extracted, problems, report = timed(fuzz.Example("extract", wide), tmp_path / "x")
    assert not problems, report
    traced, problems, report = timed(fuzz.Example("trace", wide), tmp_path / "t")
    assert traced <= 3 * extracted + 1.5, (traced, extracted, report)
    assert not problems, report


def test_diff_of_long_bodies_ends_quickly(tmp_path):
    # Two bodies of 20,000 steps (docs/commands/diff.md: one of 20,000 steps aligns in
    # under a second): diffed, or refused in one line, within a few times what
    # `extract blocks` takes to cut them.
    long = [fuzz.ProfileDraw("long body")]
    cut, problems, report = timed(fuzz.Example("blocks", long), tmp_path / "b")
    assert not problems, report
    limit = 6 * cut + 3.0
    drawn = fuzz.Example("diff-json", long * 2, "same")
    diffed, problems, report = timed(drawn, tmp_path / "d", timeout=limit * 8)
    assert diffed <= limit, (diffed, cut, report)
    assert not problems, report


def test_the_checks_refuse_what_they_must():
    assert strict_json(b'{"a": NaN}', "x")[1]
    assert strict_json(b'{"a": 1e999}', "x")[1]
    assert strict_json(b'{"a": "\\udcff"}', "x")[1]
    assert strict_json(b'{"a": 9223372036854775808}', "x")[1]
    assert strict_json(b'{"a": [-9223372036854775808, 1.5, "x"]}', "x")[1] == []
    assert terminal_problems(b"a,b\r\n1,2\r\n", "x") == []
    assert terminal_problems(b"a\x1b[2J\n", "x")
    assert terminal_problems("\u009b31m".encode(), "x")
    assert terminal_problems(b"\xff", "x")

    def slice_at(ts, dur, tid=2):
        return {"ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}

    def trace(*slices, tids=(2,)):
        events = [{"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "p"}}]
        for index, tid in enumerate(tids):
            events.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {}})
            events.append(
                {
                    "ph": "M",
                    "pid": 1,
                    "tid": tid,
                    "name": "thread_sort_index",
                    "args": {"sort_index": index},
                }
            )
        return {"traceEvents": events + list(slices)}

    assert trace_problems(trace(slice_at(0.0, 1.0), slice_at(1.0, 2.0)), {1: "p"}) == []
    assert trace_problems(trace(slice_at(439.915, 1.187), slice_at(441.102, 1.0)), {1: "p"})
    assert trace_problems(trace(slice_at(0.0, 1.0004), slice_at(1.0006, 1.0)), {1: "p"}) == []
    assert trace_problems(trace(slice_at(0.0006, 1.0006), slice_at(1.0014, 1.0)), {1: "p"})
    assert trace_problems(trace(slice_at(1.0, 1.0), slice_at(0.0, 0.5)), {1: "p"})
    assert trace_problems(trace(slice_at(0.0, 1.0)), {1: "q"})
    assert trace_problems(trace(slice_at(0.0, 1.0, 1), tids=(1,)), {1: "p"})
    assert trace_problems(trace(tids=(3, 2)), {1: "p"})
