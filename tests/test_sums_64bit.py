"""Every sum an output holds goes through one 64-bit rule (core/steps.py's sum64): past
SQLite's 64-bit integers, the profile is refused with the summary's own words, "a sum
overflows 64-bit integers", naming it, and nothing is written. Rows of 2**63 - 1 cycles
on two steps used to be summed into 2**64 and more, written by `diff -f json`, `trace`,
`blocks` and `extract --blocks`, then refused by extract's own readers ("beyond 64
bits")."""

import sqlite3

import pytest
from test_diff_cli import ladder

from support.checks import one_error
from support.cli import invoke_extract

BIG = 2**63 - 1  # the largest SQLite integer: each row is a good one
WORDS = "a sum overflows 64-bit integers: values too large for a real profile (damaged?)"
KERNELS = {
    0: "/m/blocks/blocks.0/mlp/fc1/op00z/Convolve",
    1: "/m/blocks/blocks.0/mlp/fc1/op01z/Convolve",
}


def two_big_kernels(folder):
    """Two kernel steps of one stage (MLP up), in the first body, BIG cycles each."""
    return ladder(folder, [BIG, BIG], names=KERNELS)


def one_big_step_on_two_ipus(folder):
    """One step (not a kernel) of BIG cycles on each of two IPUs: a unit's own sum."""
    profile = ladder(folder, [BIG, 10])
    db = sqlite3.connect(str(profile))
    db.execute("INSERT INTO steps_by_ipu SELECT * FROM steps_by_ipu WHERE step_id = 3")
    db.execute("UPDATE steps_by_ipu SET ipu = 1 WHERE rowid = last_insert_rowid()")
    db.commit()
    db.close()
    return profile


def refused(args, profile, out=None):
    line = one_error(invoke_extract(*args), 1, str(profile))
    assert line == "extract: error: {}: {}".format(profile, WORDS), line
    if out is not None:
        assert not out.exists()


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown"])
@pytest.mark.parametrize("make", [two_big_kernels, one_big_step_on_two_ipus])
def test_diff(tmp_path, fmt, make):
    profile = make(tmp_path / "p")
    out = tmp_path / "diff.out"
    refused(["diff", profile, profile, "-f", fmt, "-o", out], profile, out)


def test_diff_of_a_good_profile_against_one_past_the_rule(tmp_path):
    good = ladder(tmp_path / "good", [10, 20], names=KERNELS)
    bad = two_big_kernels(tmp_path / "bad")
    refused(["diff", good, bad, "-f", "json"], bad)
    refused(["diff", bad, good, "-f", "json"], bad)


def test_trace(tmp_path):
    """The stage slice of MLP up would hold 2 * BIG cycles, the block's slice too."""
    profile = two_big_kernels(tmp_path / "p")
    out = tmp_path / "trace.json"
    refused(["trace", profile, "-o", out], profile, out)
    refused(["trace", profile, "-o", out, "--all"], profile, out)


def test_blocks_and_extract_blocks(tmp_path):
    profile = two_big_kernels(tmp_path / "p")
    out = tmp_path / "blocks.json"
    for fmt in ("json", "csv", "markdown"):
        refused(["blocks", profile, "-f", fmt, "-o", out], profile, out)
    summary = tmp_path / "out" / "summary.json"
    refused([profile, "-o", summary, "--blocks", "--no-pva"], profile, summary)
    assert not (tmp_path / "out" / "blocks.json").exists()


def test_the_largest_sums_that_fit_are_written(tmp_path):
    """BIG - 140 cycles on one kernel: with the other's 10, the anchor's 100 and the
    exchange's 30, the body's total is BIG exactly (by hand), and it is written."""
    profile = ladder(tmp_path / "p", [BIG - 140, 10], names=KERNELS)
    result = invoke_extract("diff", profile, profile, "-f", "json")
    assert result.code == 0, result
    assert b'"cycles": 9223372036854775807' in result.stdout
