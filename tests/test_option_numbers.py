"""Whole numbers given as option text (`--block R:K`, `--candidate-block R:K`, `--shard
K/N`) are read by one rule (extractor/wholetext.py): ASCII digits, at most 18 of them.
Anything else is a usage error of one short line (exit 2), however long the text: a
number of more than 4300 digits used to end in "unexpected failure: ValueError", and
digits of other scripts were taken by --shard as numbers."""

import re

import pytest

from support.cli import invoke_extract
from support.paths import REPO

MULTI_IPU = "fixtures/edge/multi-ipu/profile.pop"
HUGE = "9" * 5000


def usage_line(result) -> str:
    """The one error line of a usage error (exit 2, nothing on stdout), short."""
    assert result.code == 2 and result.stdout == b"", result
    assert "Traceback" not in result.stderr and "unexpected failure" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("extract: error: "), result
    assert len(lines[0]) < 400, lines[0]
    return lines[0]


@pytest.mark.parametrize("option", ["--block", "--candidate-block"])
@pytest.mark.parametrize(
    "text",
    [
        "1:" + HUGE,
        HUGE + ":0",
        "1:" + "9" * 23,  # 23 digits: no run or block has such a number
        "\u0661:0",  # an Arabic-Indic one: int() would take it
        "1_0:0",
        "+1:0",
        "1:0:0",
    ],
)
def test_a_body_number_that_is_not_one_is_a_usage_error(option, text):
    result = invoke_extract("diff", MULTI_IPU, MULTI_IPU, option, text, cwd=REPO)
    line = usage_line(result)
    assert option + " " in line and "R:K" in line and "18 digits" in line, line


@pytest.mark.parametrize("text", ["1/" + HUGE, HUGE + "/1", "\u0661/\u0662", "1/2_0"])
def test_a_shard_number_that_is_not_one_is_a_usage_error(tmp_path, text):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    result = invoke_extract("runs", "-o", "out", "--shard", text, "--no-pva", cwd=tmp_path)
    line = usage_line(result)
    assert re.search(r"--shard takes K/N .*not '", line), line
    assert not (tmp_path / "out").exists()


def test_the_largest_numbers_still_read_as_numbers():
    """18 digits is a number: the body is looked for (and is not there)."""
    result = invoke_extract("diff", MULTI_IPU, MULTI_IPU, "--block", "1:" + "9" * 18, cwd=REPO)
    line = usage_line(result)
    assert "no block " + "9" * 18 + " in run 1" in line, line
