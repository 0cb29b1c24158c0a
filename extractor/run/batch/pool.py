"""The pool of a batch's worker processes (worker.py is a worker's side): each takes one
profile at a time, answers with its index entry, and is replaced when it dies (failing
its profile only) or runs past the time limit.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import List, Optional

from ...core.pipeline import summary_files
from ...partials import remove_abandoned
from ...stopping import STOP_SIGNALS
from .discover import BatchItem
from .item import RunOptions, failed_entry
from .worker import BOOT, STARTED

# Seconds a new worker may take to start (import extract) before its first profile's
# time limit counts: spawning and importing take a second or two on a busy node.
STARTUP_ALLOWANCE = 60.0

# Seconds a worker past its time limit has, after SIGTERM, before SIGKILL. Stuck in C
# code (SQLite, pva) it cannot run the handler at all; more would only hold up the batch.
TIMEOUT_GRACE = 2.0


class _Worker:
    """One worker process (worker.py) and the connection to it."""

    def __init__(self, outdir: Path, rules, options: RunOptions):
        ours, theirs = socket.socketpair()
        self.conn = Connection(ours.detach())
        child_fd = theirs.detach()
        stderr_fd = os.dup(2)  # the worker's stderr once it has imported extract
        # Ctrl-C and a hang-up are the parent's to handle: the worker is started with them
        # blocked (a mask survives exec), so one landing while it imports cannot end it
        # before serve() ignores them.
        held = {signum for signum in STOP_SIGNALS if signum != signal.SIGTERM}
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", BOOT, str(child_fd), str(stderr_fd)],
                stdin=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(child_fd, stderr_fd),
            )
        except BaseException:
            self.conn.close()
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
            os.close(child_fd)
            os.close(stderr_fd)
        self.item: Optional[BatchItem] = None
        # when its profile has taken too long (time.monotonic())
        self.deadline: Optional[float] = None
        try:
            self.conn.send(sys.path)
            self.conn.send((str(outdir), rules, options))
        except OSError:  # it died already: its first profile finds out
            pass

    def death(self) -> str:
        try:
            code = self.process.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            try:
                how = "killed by {}".format(signal.Signals(-code).name)
            except ValueError:
                how = "killed by signal {}".format(-code)
        else:
            how = "exit code {}".format(code)
        return "the worker process extracting it died ({})".format(how)

    def stop(self, abandon: bool, grace: float = 10) -> None:
        """End the process: politely when idle, at once (SIGTERM) when abandoning work;
        SIGKILL if it has not ended `grace` seconds later."""
        if abandon and self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.conn.close()


class Pool:
    """Workers that each take one profile at a time; a dead one fails its profile only."""

    def __init__(self, outdir: Path, rules, options: RunOptions, size: int, timeout: float = 0):
        self._start = lambda: _Worker(outdir, rules, options)
        self._outdir, self._rules, self._options = outdir, rules, options
        self._timeout = timeout
        self.idle = [self._start() for _ in range(size)]
        self.busy: List[_Worker] = []

    def dispatch(self, item: BatchItem) -> None:
        worker = self.idle.pop()
        try:
            worker.conn.send(item)
        except OSError:  # it died while idle: replace it
            worker.stop(abandon=True)
            worker = self._start()
            worker.conn.send(item)
        worker.item = item
        # The limit counts from the worker's STARTED; until then (a new worker still
        # importing extract) it has STARTUP_ALLOWANCE more.
        worker.deadline = (
            time.monotonic() + self._timeout + STARTUP_ALLOWANCE if self._timeout else None
        )
        self.busy.append(worker)

    def collect(self) -> list:
        """Wait for at least one busy worker to answer, die or pass its time limit;
        their entries."""
        # A worker that dies closes its end of the connection: its conn is ready then too.
        handles = [w.conn for w in self.busy]
        deadlines = [w.deadline for w in self.busy if w.deadline is not None]
        # A wait of years is refused by select(): a very long limit is waited in parts.
        limit = min(max(0.0, min(deadlines) - time.monotonic()), 86400.0) if deadlines else None
        ready = set(wait(handles, limit))
        now = time.monotonic()
        entries = []
        for worker in list(self.busy):
            if worker.conn not in ready:
                if worker.deadline is None or now < worker.deadline:
                    continue
                self.busy.remove(worker)  # too long: ended, and its profile failed
                entries.append(
                    self._failed(
                        worker, "took longer than {:g} s (--timeout): ended".format(self._timeout)
                    )
                )
                self._retire(worker, grace=TIMEOUT_GRACE)
                self.idle.append(self._start())  # a new _Worker has no item, no deadline
                continue
            try:
                answer = worker.conn.recv()
                if answer == STARTED:  # it has the profile: its time starts now
                    if self._timeout:
                        worker.deadline = time.monotonic() + self._timeout
                    continue
                if isinstance(answer, tuple):  # (CANNOT_START, why): it could not import
                    self.busy.remove(worker)
                    entries.append(
                        self._failed(
                            worker, "the worker process could not start: {}".format(answer[1])
                        )
                    )
                    self._retire(worker)
                    self.idle.append(self._start())
                    continue
                self.busy.remove(worker)
                entries.append(answer)
            except Exception:  # dead, or it died mid-answer: EOFError, OSError, a torn pickle
                self.busy.remove(worker)
                entries.append(self._failed(worker, worker.death()))
                self._retire(worker)
                self.idle.append(self._start())
                continue
            worker.item = worker.deadline = None
            self.idle.append(worker)
        return entries

    def _failed(self, worker: _Worker, reason: str) -> dict:
        """The failed entry of a busy worker's profile: every busy worker has one."""
        assert worker.item is not None
        return failed_entry(worker.item, self._outdir, self._rules, self._options, reason)

    def close(self) -> None:
        for worker in self.idle:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in self.idle:
            worker.stop(abandon=False)
        for worker in self.busy:
            self._retire(worker)
        self.idle, self.busy = [], []

    def _retire(self, worker, grace: float = 10) -> None:
        """End a worker that had a profile, and sweep any temporary file it left: a
        signal can land before its own cleanup knows of the file, but once it is dead
        its temporary file is plainly abandoned."""
        worker.stop(abandon=True, grace=grace)
        if worker.item is not None:
            output = worker.item.output(self._outdir)
            for path in summary_files(output, self._options.csv, self._options.derived):
                remove_abandoned(path, strict=True)
