"""A run of `extract` held at a known point, so that a test ends it there without a
timing guess: `start_held` runs it with an audit hook that stops it, for a minute, at
the moment its output is about to be renamed into place (its temporary file written
whole); `children` lists a process's children (the watched child of a single run, a
batch's workers)."""

import contextlib
import os
import subprocess
import time
from pathlib import Path
from typing import Iterator

from support.cli import extract_command
from support.paths import PVA_DOUBLE

HOLD = """
import os, sys, time
def _hold(event, args):
    if event == "os.rename" and str(args[0]).endswith(".partial"):
        open(os.environ["EXTRACT_TEST_HELD"], "w").close()
        time.sleep(60)
sys.addaudithook(_hold)
"""

#: Seconds a held run may take to reach its rename.
REACHES_WITHIN = 60


def start_held(
    tmp_path: Path, args, hooks: str = "", pva: Path = PVA_DOUBLE, env=None
) -> subprocess.Popen:
    """`extract ARGS` started in `tmp_path` (stdout and stderr piped), returned once it
    is held at its output's rename; the caller ends it (and kills it if it does not).
    `hooks`: more code for its sitecustomize; `pva`: the folder its pva comes from;
    `env`: more environment variables."""
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOLD + hooks)
    held = tmp_path / "held"
    env = dict(
        os.environ,
        PYTHONPATH="{}{}{}".format(hook, os.pathsep, pva),
        EXTRACT_TEST_HELD=str(held),
        **(env or {}),
    )
    run = subprocess.Popen(
        extract_command() + [str(a) for a in args],
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        end = time.monotonic() + REACHES_WITHIN
        while not held.exists():
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < end, "never reached its rename"
            time.sleep(0.02)
    except BaseException:
        run.kill()
        run.wait()
        raise
    return run


@contextlib.contextmanager
def killed_at_exit(run: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """`run` for the block; killed (and waited for) after it if still running, so a
    failing test leaves no process behind."""
    try:
        yield run
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def children(pid: int) -> list:
    """The pids of the children of process `pid` (none once it has ended)."""
    try:
        text = Path("/proc/{0}/task/{0}/children".format(pid)).read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]
