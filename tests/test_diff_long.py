"""`extract diff` on long bodies: bounded memory, a quick refusal past the documented
limits, and no difflib worst case for identical or nearly identical bodies.

A body that ran to the end of a long trace used to be held whole and aligned for
minutes (264 MB at 400,000 steps, still aligning at 40 s), and two identical bodies of
50,000 steps took 32 s: their keys repeat (a layer's steps, again and again), which is
difflib's slow case. Now a body of more than 50,000 steps is refused as its rows pass
the limit, and the common start and end of two bodies are matched without a search
when difflib would match them so (diff/alignment.py; its exactness is checked against
difflib in tests/test_diff_alignment.py). Profiles: tests/support/longbody.py."""

import ast
import json
import subprocess
import sys

import pytest

from support.cli import extract_command
from support.longbody import long_body, op_name
from support.paths import PVA_DOUBLE, REPO

RSS_LIMIT_MB = 120  # extract itself takes about 35 MB; the old code held 264 MB at 400,000 steps
CPU_LIMIT_S = 15  # the old code took 32 s for two identical bodies of 50,000 steps


def measured(*args, cwd):
    """Run `extract ARGS` in a process of its own; (exit code, stdout, stderr, peak RSS
    in MB, CPU seconds), the RSS and CPU of that process alone (a fresh parent)."""
    code = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, check=False)\n"
        "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "sys.stdout.buffer.write(repr((done.returncode, done.stdout, done.stderr, "
        "use.ru_maxrss / 1024.0, use.ru_utime + use.ru_stime)).encode())\n"
    )
    env = {"PYTHONPATH": str(PVA_DOUBLE), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-c", code] + extract_command() + [str(a) for a in args]
    done = subprocess.run(
        command, cwd=str(cwd), env=env, capture_output=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    returncode, stdout, stderr, rss, cpu = ast.literal_eval(done.stdout.decode())
    return returncode, stdout, stderr.decode("utf-8"), rss, cpu


def test_a_body_past_the_limit_is_refused_before_it_is_held(tmp_path):
    """A body running to the end of the trace, 60,000 steps: refused, one line that
    names the file and says why and what to pass; memory stays flat."""
    profile = long_body(tmp_path / "p", 60_000, to_the_end=True)
    code, stdout, stderr, rss, _ = measured("diff", profile, profile, cwd=tmp_path)
    assert code == 2 and stdout == b"", stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("extract: error: {}: ".format(profile))
    assert "run 1, block 0" in lines[0] and "to the end of the trace" in lines[0]
    assert "more than 50,000 steps" in lines[0] and "--block R:K" in lines[0], lines[0]
    assert rss < RSS_LIMIT_MB, rss


def test_the_limit_is_inclusive_and_identical_bodies_are_quick(tmp_path):
    """Two identical bodies of 50,000 steps (the limit): every pair the same, quickly."""
    profile = long_body(tmp_path / "p", 50_000)
    code, stdout, stderr, rss, cpu = measured("diff", profile, profile, "-f", "json", cwd=tmp_path)
    assert code == 0, stderr
    diff = json.loads(stdout.decode("ascii"))
    assert diff["counts"] == {"same": 50_000, "changed": 0, "added": 0, "removed": 0}
    assert diff["base"]["units"] == 50_000 and diff["steps"] == [] and diff["change"] == 0
    assert cpu < CPU_LIMIT_S and rss < RSS_LIMIT_MB, (cpu, rss)


def test_nearly_identical_long_bodies_are_quick_and_exact(tmp_path):
    """One step 5 cycles slower (k = 20,000: step 20,002), one step of another key
    (k = 30,000: step 30,002, 105 cycles on both sides). By hand, as difflib aligns
    them: the common start up to the other key is the longest block, then the common
    end; so one changed pair, one removed and one added unit, and of the base's 50,000
    units the 49,998 others the same."""
    base = long_body(tmp_path / "a", 50_000)
    candidate = long_body(
        tmp_path / "b",
        50_000,
        cycles=lambda k: 100 + k % 7 + (5 if k == 20_000 else 0),
        edits={30_000: ("DoExchange", "/m/blocks/blocks.0/mlp/other/ExchangePre")},
    )
    code, stdout, stderr, _, cpu = measured("diff", base, candidate, "-f", "json", cwd=tmp_path)
    assert code == 0, stderr
    diff = json.loads(stdout.decode("ascii"))
    assert diff["counts"] == {"same": 49_998, "changed": 1, "added": 1, "removed": 1}
    assert diff["change"] == 5
    shown = [
        (e["status"], (e["base"] or e["candidate"])["step"], e["change"]) for e in diff["steps"]
    ]
    assert shown == [("removed", 30_002, -105), ("added", 30_002, 105), ("changed", 20_002, 5)]
    assert diff["steps"][0]["base"]["name"] == op_name(30_000, 300)
    assert cpu < CPU_LIMIT_S, cpu


def test_bodies_that_differ_over_too_many_steps_are_refused(tmp_path):
    """30,000 steps each, the same names in another order: no block of equal keys is
    long enough to take without difflib (the anchor alone is shared, and a few single
    steps), so all 30,000 are left to align on both sides, more than 20,000."""
    base = long_body(tmp_path / "a", 30_000)
    order = {k: ("OnTileExecute", op_name(k * 7, 300)) for k in range(1, 30_000)}
    candidate = long_body(tmp_path / "b", 30_000, edits=order)
    code, stdout, stderr, _, cpu = measured("diff", base, candidate, cwd=tmp_path)
    assert code == 2 and stdout == b"", stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("extract: error: {}: ".format(candidate))
    assert "30,000 and 30,000 steps to align" in lines[0] and "20,000" in lines[0], lines[0]
    assert "from their steps 2 and 2 to their steps 30001 and 30001" in lines[0]
    assert "--block R:K" in lines[0]
    assert cpu < CPU_LIMIT_S, cpu


@pytest.mark.parametrize("limit", ["50,000 steps", "20,000"])
def test_the_limits_are_documented(limit):
    assert limit in (REPO / "docs" / "commands" / "diff.md").read_text(encoding="utf-8")
