"""`extract breakdown --format folded` as a flame-graph viewer reads it: each file is
loaded in headless Chromium into speedscope (npm; installed into a cache folder on the
first run, as tests/test_trace_viewers.py does), served on 127.0.0.1 by the test itself,
offline, and speedscope's own model of it, exported, must show every line of the file
as one stack of frames with its cycles as weight: the frames `inference R` (or `all`),
`IPU i`, the layer's parts and the kind, in that order, none split or merged.

The files: the golden fixture's first inference; fixtures/edge/multi-ipu with --all; a
copy of an edge case with a name holding `;`, a line break and markup. Chromium,
Playwright and npm are needed; without them these tests fail."""

import sqlite3
from collections import Counter

import pytest

from support.browser import launched_chromium
from support.cases import copy_case
from support.cli import invoke_extract
from support.paths import EDGE, REPO
from support.viewers import OfflineContext, speedscope_export
from support.viewersites import LocalSite, ViewerMissing, speedscope_ui

GOLDEN = "fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop"
HOSTILE = "/m/a;b\nc <b>d</b>/Exp"


@pytest.fixture(scope="module")
def folded(tmp_path_factory):
    """The folder of the folded files, each written by `extract breakdown`."""
    folder = tmp_path_factory.mktemp("folded")
    hostile = copy_case(EDGE / "one-anchor", tmp_path_factory.mktemp("hostile"))
    db = sqlite3.connect(str(hostile))
    db.execute("UPDATE compute_sets SET name = ? WHERE compute_set = 2", (HOSTILE,))
    db.commit()
    db.close()
    for name, args in {
        "golden.folded": [GOLDEN],
        "multi-ipu.folded": [EDGE / "multi-ipu" / "profile.pop", "--all"],
        "hostile.folded": [hostile],
    }.items():
        result = invoke_extract(
            "breakdown", *args, "--no-pva", "-f", "folded", "-o", folder / name, cwd=REPO, pva=False
        )
        assert result.code == 0, result
    return folder


@pytest.fixture(scope="module")
def speedscope(folded):
    try:
        root = speedscope_ui()
    except ViewerMissing as missing:
        pytest.fail(str(missing), pytrace=False)
    with launched_chromium("the folded stacks' speedscope test") as chromium:
        site = LocalSite(root, folded)
        offline = OfflineContext(chromium, site)
        yield offline
        offline.close()
        site.close()


def _file_stacks(path):
    """{frames: weight} of the file's lines, parsed as the format says (lines with the
    same frames added up, as a flame graph draws them: one box)."""
    found = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, weight = line.rsplit(" ", 1)
        found[tuple(stack.split(";"))] += int(weight)
    return +found  # a stack of 0 cycles draws nothing


def _shown_stacks(exported):
    """{frames: weight} of speedscope's model: in its evented profiles, the time each
    stack of open frames (root first) spends with nothing opened on top of it."""
    names = [frame["name"] for frame in exported["shared"]["frames"]]
    found = Counter()
    for profile in exported["profiles"]:
        assert profile["type"] == "evented", profile["type"]
        stack, last = [], profile["startValue"]
        for event in profile["events"]:
            if stack and event["at"] > last:
                found[tuple(names[i] for i in stack)] += event["at"] - last
            last = event["at"]
            if event["type"] == "O":
                stack.append(event["frame"])
            else:
                assert stack.pop() == event["frame"]
        assert stack == []
    return +found


@pytest.mark.parametrize("name", ["golden.folded", "multi-ipu.folded", "hostile.folded"])
def test_speedscope_shows_every_stack_with_its_cycles(speedscope, folded, name):
    exported, console, refused = speedscope_export(speedscope, name)
    assert refused == []
    assert [text for kind, text in console if kind in ("error", "pageerror")] == []
    assert _shown_stacks(exported) == _file_stacks(folded / name)


def test_the_frames_are_the_window_the_ipu_the_layer_and_the_kind(speedscope):
    exported, _, _ = speedscope_export(speedscope, "golden.folded")
    stacks = _shown_stacks(exported)
    assert stacks[
        ("inference 1", "IPU 0", "visual", "trunk", "blocks", "blocks.*", "attn", "qkv",
         "MatMul", "#", "matmulGrouped", "Conv_1", "Convolve", "OnTileExecute")
    ] == 1052931  # fmt: skip
    assert stacks["inference 1", "IPU 0", "(no layer)", "Sync"] == 29686897
    assert {frames[:2] for frames in stacks} == {("inference 1", "IPU 0")}
    assert sum(stacks.values()) == 72191257  # the inference's all cycles


def test_a_hostile_name_stays_one_frame(speedscope):
    exported, _, _ = speedscope_export(speedscope, "hostile.folded")
    stacks = _shown_stacks(exported)
    assert stacks["inference 1", "IPU 0", "m", "a_b_c <b>d<", "b>", "Exp", "OnTileExecute"] == 45


def test_multi_ipu_shows_both_ipus(speedscope):
    exported, _, _ = speedscope_export(speedscope, "multi-ipu.folded")
    assert {frames[:2] for frames in _shown_stacks(exported)} == {
        ("all", "IPU 0"),
        ("all", "IPU 1"),
    }
