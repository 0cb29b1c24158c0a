"""`extract compare --budget`, failing: its last line is the `extract diff` that explains
the worst failed stage, when both summaries name profiles that are there.

The recordings are conftest's two_recordings (multi-ipu as `a`, no-output-begins as `b`,
each with its blocks.json), b the baseline and a the candidate here; their bodies were
worked out by hand in test_blocks.py:
- multi-ipu: body 0 (run 1, block 0) QKV 510, total 1350; body 1 (1, 1) QKV 550,
  total 550.
- no-output-begins: bodies (1, 0), (1, 1), (2, 0): QKV 260, 270, 260; totals 670, 270,
  260.
"""

import json
import shlex

import pytest

from support.checks import budget_file
from support.cli import invoke_extract
from support.paths import REPO

PREFIX = "why "


def _compare(base, candidate, budget, *args):
    result = invoke_extract(
        "compare", base, candidate, "--budget", budget, "-f", "json", *args, cwd=REPO
    )
    assert result.code == 3, result
    return result.stderr.splitlines()


def _suggested_bodies(line):
    """Run the suggested command line (after its `: `) as a user would paste it: the
    (run, block) of the base's body and of the candidate's that it compared."""
    words = shlex.split(line.split(": ", 1)[1])
    assert words[:2] == ["extract", "diff"]
    result = invoke_extract(*words[1:], "--format", "json", "--no-pva", cwd=REPO, pva=False)
    assert result.code == 0, result
    diff = json.loads(result.stdout)
    return tuple((diff[side]["run"], diff[side]["block"]) for side in ("base", "candidate"))


DIFF = "extract diff fixtures/edge/no-output-begins/profile.pop fixtures/edge/multi-ipu/profile.pop"
QKV = '"stage:fused QKV projection" = "+1%"\n'


@pytest.mark.parametrize(
    "budget, options, checks, why, blocks, bodies",
    [
        # b's QKV 260 is the baseline; a's 510 fails "+1%" (QKV is the only stage
        # budgeted): the first bodies, for the summaries' own cycles.
        (QKV, [], 1, "stage:fused QKV projection", "", ((1, 0), (1, 0))),
        # --stat min's minimum totals: b 260 at (2, 0), a 550 at (1, 1): a fails "<= 300"
        # (a bound: b's total is checked too).
        (
            '"stages:total" = "<= 300"\n',
            ["--stat", "min"],
            2,
            "stages:total",
            " --block 2:0 --candidate-block 1:1",
            ((2, 0), (1, 1)),
        ),
        # --stat max's maximum QKV: b 270 at (1, 1), a 550 at (1, 1): one --block for both.
        (QKV, ["--stat", "max"], 1, "stage:fused QKV projection", " --block 1:1", ((1, 1), (1, 1))),
    ],
    ids=["first bodies", "stat min: the minimum's blocks", "stat max: one block option"],
)
def test_the_suggested_bodies(
    two_recordings, tmp_path, budget, options, checks, why, blocks, bodies
):
    candidate, base = two_recordings  # b is the baseline
    lines = _compare(base, candidate, budget_file(tmp_path, budget), *options)
    assert lines[-2] == "budget: 1 of {} checks failed".format(checks)
    assert lines[-1] == "why {} failed in a: {}{}".format(why, DIFF, blocks)
    assert _suggested_bodies(lines[-1]) == bodies


def test_the_worst_of_two_failed_stages(two_recordings, tmp_path):
    candidate, base = two_recordings  # b is the baseline
    # First bodies: QKV 260 -> 510 (+96%), total 670 -> 1350 (+101%): the total is worse
    # in proportion to its baseline, though both fail.
    budget = budget_file(tmp_path, '"stage:fused QKV projection" = "+1%"\n"stages:total" = "+1%"\n')
    lines = _compare(base, candidate, budget)
    assert lines[-1].startswith("why stages:total failed in a: extract diff "), lines


def test_no_line_when_a_profile_is_not_there(two_recordings, tmp_path):
    candidate, base = two_recordings  # b is the baseline
    summary = json.loads((candidate / "summary.json").read_text())
    summary["profile"] = "fixtures/edge/multi-ipu/gone.pop"
    (candidate / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    budget = budget_file(tmp_path, '"stage:fused QKV projection" = "+1%"\n')
    lines = _compare(base, candidate, budget)
    assert lines[-1] == "budget: 1 of 1 checks failed"
    assert not any(line.startswith(PREFIX) for line in lines)


def test_no_line_when_no_stage_failed(two_recordings, tmp_path):
    candidate, base = two_recordings  # b is the baseline
    budget = budget_file(tmp_path, '"qkv_executions" = "="\n"stages:total" = "+200%"\n')
    lines = _compare(base, candidate, budget)
    assert not any(line.startswith(PREFIX) for line in lines), lines
