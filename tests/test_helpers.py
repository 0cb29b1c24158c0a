"""The test helpers themselves: invoke_extract (the CLI in this process) leaves this
process as it found it, and answers as run_extract (the CLI in a subprocess) does."""

import signal
import sys

from support.cli import InProcessResult, invoke_extract, run_extract
from support.paths import EDGE

PROFILE = EDGE / "multi-ipu" / "profile.pop"


def _state():
    return (
        {
            s: signal.getsignal(s)
            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)
        },
        list(sys.path),
        sorted(n for n in sys.modules if n.split(".")[0] == "pva"),
    )


def test_an_in_process_run_puts_back_signals_path_and_pva():
    before = _state()
    # A single run without a time limit installs its own SIGINT/SIGTERM/SIGHUP handlers
    # (stopping.raise_on_stop_signals) and imports pva.
    result = invoke_extract(PROFILE, "-o", "-")
    assert result.code == 0, result
    assert _state() == before


def test_in_process_and_subprocess_runs_answer_alike(tmp_path):
    for args in (
        [PROFILE, "-o", "-"],
        [PROFILE, "-o", "-", "--no-pva"],
        [tmp_path / "nope.pop"],
        [PROFILE, "--frobnicate"],
    ):
        here, there = invoke_extract(*args), run_extract(*args)
        assert (here.code, here.stdout, here.stderr) == (there.code, there.stdout, there.stderr), (
            args
        )


def test_without_pva_an_in_process_run_cannot_import_it(tmp_path):
    # The stand-in imported by an earlier run must not leak into a run without pva.
    assert invoke_extract(PROFILE, "-o", "-").code == 0
    here = invoke_extract(PROFILE, "-o", tmp_path / "s.json", pva=False)
    there = run_extract(PROFILE, "-o", tmp_path / "s.json", pva=False)
    # ...and it did run in this process: no test left the stand-in on sys.path (that
    # would make every run without pva fall back to a subprocess).
    assert isinstance(here, InProcessResult)
    assert here.code == there.code == 1, (here, there)
    assert here.stderr == there.stderr
    assert "--no-pva" in here.stderr
