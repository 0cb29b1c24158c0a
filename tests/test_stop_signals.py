"""SIGTERM and SIGHUP end table, report, compare and merge as Ctrl-C does: one line,
exit code 128 + the signal, no temporary file left and nothing replaced. The command is
held, through an audit hook, at the moment its output is about to be renamed into place
(its temporary file written), so the signal always arrives mid-write: no timing guess."""

import signal
import subprocess
import sys

import pytest

from support.cases import copy_case
from support.checks import no_partial_files
from support.cli import invoke_extract
from support.held import killed_at_exit, start_held
from support.paths import EDGE


@pytest.fixture
def batch_out(tmp_path):
    copy_case(EDGE / "multi-ipu", tmp_path / "runs" / "a")
    copy_case(EDGE / "one-anchor", tmp_path / "runs" / "b")
    assert invoke_extract("runs", "-o", "out", "-j", "1", cwd=tmp_path).code == 0
    return tmp_path / "out"


def held_run(tmp_path, args, signum):
    run = start_held(tmp_path, args)
    with killed_at_exit(run):
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
