"""SIGTERM and SIGHUP end table, report, compare and merge as Ctrl-C does: one line,
exit code 128 + the signal, no temporary file left and nothing replaced. The command is
held, through an audit hook, at the moment its output is about to be renamed into place
(its temporary file written), so the signal always arrives mid-write: no timing guess."""

import os
import signal
import subprocess
import sys
import time

import pytest

from support.cases import copy_case
from support.checks import no_partial_files
from support.cli import extract_command, invoke_extract
from support.paths import EDGE, PVA_DOUBLE

HOLD = """
import os, sys, time
def _hold(event, args):
    if event == "os.rename" and str(args[0]).endswith(".partial"):
        open(os.environ["EXTRACT_TEST_HELD"], "w").close()
        time.sleep(60)
sys.addaudithook(_hold)
"""


@pytest.fixture
def batch_out(tmp_path):
    copy_case(EDGE / "multi-ipu", tmp_path / "runs" / "a")
    copy_case(EDGE / "one-anchor", tmp_path / "runs" / "b")
    assert invoke_extract("runs", "-o", "out", "-j", "1", cwd=tmp_path).code == 0
    return tmp_path / "out"


def held_run(tmp_path, args, signum):
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOLD)
    held = tmp_path / "held"
    env = dict(
        os.environ,
        PYTHONPATH="{}{}{}".format(hook, os.pathsep, PVA_DOUBLE),
        EXTRACT_TEST_HELD=str(held),
    )
    run = subprocess.Popen(
        extract_command() + [str(a) for a in args],
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        end = time.monotonic() + 60
        while not held.exists():
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < end, "never reached its rename"
            time.sleep(0.02)
        run.send_signal(signum)
        try:
            _stdout, stderr = run.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            # Seen once in CI (Python 3.13, a loaded machine): the signal left no trace
            # and the hold slept on. A second one reaches a process that never took the
            # first; one that did ignores it (the first stop only), so a clean-up that
            # hangs still fails here.
            run.send_signal(signum)
            _stdout, stderr = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return run.returncode, stderr.decode()


@pytest.mark.skipif(sys.platform != "linux", reason="signals as on the clusters (Linux)")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("command", ["table", "report", "compare-chart", "merge"])
def test_a_stop_mid_write_leaves_nothing(tmp_path, batch_out, command, signum):
    target = tmp_path / "result" / "target.out"
    target.parent.mkdir()
    target.write_bytes(b"what was there before\n")
    args = {
        "table": ["table", "out", "-o", target],
        "report": ["report", "out", "-o", target],
        "compare-chart": ["compare", "out/a", "out/b", "--chart", target.with_suffix(".svg")],
        "merge": ["merge", "out"],
    }[command]
    if command == "compare-chart":
        target = target.with_suffix(".svg")
    if command == "merge":
        target = batch_out / "index.jsonl"
    before = target.read_bytes() if target.exists() else None
    code, stderr = held_run(tmp_path, args, signum)
    assert code == 128 + signum, stderr
    assert stderr == "extract: error: terminated by {}\n".format(signal.Signals(signum).name)
    assert (target.read_bytes() if target.exists() else None) == before
    no_partial_files(tmp_path)
