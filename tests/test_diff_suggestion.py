"""`extract compare --budget`, failing: its last line is the `extract diff` that explains
the worst failed stage, when both summaries name profiles that are there.

The recordings are test_blocks' pair (multi-ipu as `a`, no-output-begins as `b`, each
with its blocks.json), whose bodies were worked out by hand there:
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


@pytest.fixture
def pair(tmp_path):
    for name, case in (("a", "multi-ipu"), ("b", "no-output-begins")):
        result = invoke_extract(
            "fixtures/edge/{}/profile.pop".format(case),
            "-o",
            tmp_path / name / "summary.json",
            "--blocks",
            "--no-pva",
            cwd=REPO,
            pva=False,
        )
        assert result.code == 0, result.stderr
    return tmp_path / "b", tmp_path / "a"


def _compare(base, candidate, budget, *args):
    result = invoke_extract(
        "compare", base, candidate, "--budget", budget, "-f", "json", *args, cwd=REPO
    )
    assert result.code == 3, result
    return result.stderr.splitlines()


def _run_suggestion(line):
    """Run the suggested command line (after its `: `) as a user would paste it."""
    words = shlex.split(line.split(": ", 1)[1])
    assert words[:2] == ["extract", "diff"]
    result = invoke_extract(*words[1:], "--format", "json", "--no-pva", cwd=REPO, pva=False)
    assert result.code == 0, result
    return json.loads(result.stdout)


def test_the_first_bodies_for_the_summaries_own_cycles(pair, tmp_path):
    base, candidate = pair
    # b's QKV 260 is the baseline; a's 510 fails "+1%" (QKV is the only stage budgeted).
    budget = budget_file(tmp_path, '"stage:fused QKV projection" = "+1%"\n')
    lines = _compare(base, candidate, budget)
    assert lines[-2] == "budget: 1 of 1 checks failed"
    assert lines[-1] == (
        "why stage:fused QKV projection failed in a: extract diff "
        "fixtures/edge/no-output-begins/profile.pop fixtures/edge/multi-ipu/profile.pop"
    )
    diff = _run_suggestion(lines[-1])
    assert (diff["base"]["run"], diff["base"]["block"]) == (1, 0)
    assert (diff["candidate"]["run"], diff["candidate"]["block"]) == (1, 0)


def test_the_blocks_of_the_minimum_with_stat_min(pair, tmp_path):
    base, candidate = pair
    # Minimum totals: b 260 at (2, 0), a 550 at (1, 1): a fails "<= 300".
    budget = budget_file(tmp_path, '"stages:total" = "<= 300"\n')
    lines = _compare(base, candidate, budget, "--stat", "min")
    assert lines[-1] == (
        "why stages:total failed in a: extract diff fixtures/edge/no-output-begins/profile.pop "
        "fixtures/edge/multi-ipu/profile.pop --block 2:0 --candidate-block 1:1"
    )
    diff = _run_suggestion(lines[-1])
    assert (diff["base"]["run"], diff["base"]["block"]) == (2, 0)
    assert (diff["candidate"]["run"], diff["candidate"]["block"]) == (1, 1)


def test_one_block_option_when_both_are_the_same_block(pair, tmp_path):
    base, candidate = pair
    # Maximum QKV: b 270 at (1, 1), a 550 at (1, 1): one --block for both.
    budget = budget_file(tmp_path, '"stage:fused QKV projection" = "+1%"\n')
    lines = _compare(base, candidate, budget, "--stat", "max")
    assert lines[-1].endswith("fixtures/edge/multi-ipu/profile.pop --block 1:1"), lines


def test_the_worst_of_two_failed_stages(pair, tmp_path):
    base, candidate = pair
    # First bodies: QKV 260 -> 510 (+96%), total 670 -> 1350 (+101%): the total is worse
    # in proportion to its baseline, though both fail.
    budget = budget_file(tmp_path, '"stage:fused QKV projection" = "+1%"\n"stages:total" = "+1%"\n')
    lines = _compare(base, candidate, budget)
    assert lines[-1].startswith("why stages:total failed in a: extract diff "), lines


def test_no_line_when_a_profile_is_not_there(pair, tmp_path):
    base, candidate = pair
    summary = json.loads((candidate / "summary.json").read_text())
    summary["profile"] = "fixtures/edge/multi-ipu/gone.pop"
    (candidate / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    budget = budget_file(tmp_path, '"stage:fused QKV projection" = "+1%"\n')
    lines = _compare(base, candidate, budget)
    assert lines[-1] == "budget: 1 of 1 checks failed"
    assert not any(line.startswith(PREFIX) for line in lines)


def test_no_line_when_no_stage_failed(pair, tmp_path):
    base, candidate = pair
    budget = budget_file(tmp_path, '"qkv_executions" = "="\n"stages:total" = "+200%"\n')
    lines = _compare(base, candidate, budget)
    assert not any(line.startswith(PREFIX) for line in lines), lines
