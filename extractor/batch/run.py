"""Many profiles at once: a pool of worker processes, each extracting one profile at a
time (item.py: the extraction, its index entry, the up-to-date check); shards.py says
which profiles a shard takes.

The batch adds bookkeeping around `pipeline.extract_profile`, which `extract PROFILE -o
FILE` runs too: a summary's bytes are the same. Each worker (worker.py) is a long-lived
process that extracts one profile at a time; one that dies fails its profile only and is
replaced.
"""

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Deque, List, NamedTuple, Optional, Union

from ..blockformats import blocks_path
from ..errors import PvaMissingError, one_line
from ..output import remove_abandoned
from ..pvafacts import ENABLE_HINT
from ..steptables import csv_paths
from ..stopping import STOP_SIGNALS, Stopped
from .discover import BatchItem
from .index import IndexWriter, index_name, known_entries, lock_index
# RunOptions is imported from here by the CLI, OK and FAILED by progress.py.
from .item import (FAILED, OK, UP_TO_DATE, RunOptions, failed_entry, is_up_to_date,
                   timestamp)
from .shards import Shard

# What a worker answers first on receiving a profile: the time limit starts then.
STARTED = "started"

# Seconds a new worker may take to start (import extract) before its first profile's
# time limit counts: spawning and importing take a second or two on a busy node.
STARTUP_ALLOWANCE = 60.0

# Seconds a worker past its time limit has, after SIGTERM, before SIGKILL. Stuck in C
# code (SQLite, pva) it cannot run the handler at all; more would only hold up the batch.
TIMEOUT_GRACE = 2.0


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def require_pva() -> None:
    """Fail once, before any worker starts, when pva cannot be found."""
    if importlib.util.find_spec("pva") is None:
        raise PvaMissingError("pva", ENABLE_HINT)


class BatchResult(NamedTuple):
    extracted: int
    up_to_date: int
    failed: int
    interrupted: bool
    stopped_by: Optional[int] = None  # the signal that interrupted it (None: Ctrl-C)


# ---- talking to the parent (worker.py is the worker's side) ---------------------

def _answer(conn, entry: Union[dict, str], item: BatchItem) -> bool:
    """Send the parent `entry`; one it cannot take (it would not pickle) becomes a failed
    entry of plain text. False when the parent is gone: nobody is left to tell."""
    try:
        conn.send(entry)
        return True
    except OSError:
        return False
    except Exception as exc:
        reason = "{}: unexpected failure: its index entry could not be sent: {}: {}".format(
            item.profile, type(exc).__name__, one_line(exc))
    fields = entry if isinstance(entry, dict) else {}
    plain = {key: fields.get(key) for key in ("profile", "output", "rules_sha256",
                                              "tool_version", "pva", "csv", "blocks",
                                              "size",
                                              "mtime_ns", "finished_at")}
    plain = {key: value if isinstance(value, (str, int, bool, type(None))) else str(value)
             for key, value in plain.items()}
    plain.update(status=FAILED, reason=reason)
    try:
        conn.send(plain)
        return True
    except Exception:
        return False


class _Worker:
    """One worker process (worker.py) and the connection to it."""

    def __init__(self, outdir: Path, rules, options: RunOptions):
        from .worker import BOOT  # not at the top: worker.py imports this module

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
                stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(child_fd, stderr_fd))
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


def run_batch(items: List[BatchItem], outdir: Path, rules, *, jobs: int = 1,
              force: bool = False, shard: Optional[Shard] = None,
              options: RunOptions = RunOptions(), reporter=None,
              timeout: float = 0) -> BatchResult:
    """Extract every item into OUTDIR, recording each in the index; see module docs.
    `timeout` (seconds, 0: none): a profile that takes longer fails, its worker ended."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    lock = lock_index(outdir / index_name(shard))  # one writer per index file
    previous = {} if force else known_entries(outdir)
    index = IndexWriter(outdir / index_name(shard))
    counts = {OK: 0, UP_TO_DATE: 0, FAILED: 0}
    todo: Deque[BatchItem] = deque()
    reporter = reporter or _SilentReporter()
    reporter.start(len(items))

    def finish(entry: dict) -> None:
        with interrupts.deferred():  # the index line and the counts agree, Ctrl-C or not
            index.append(entry)
            counts[entry["status"]] += 1
        reporter.finished(entry)

    interrupted = False
    stopped_by = None
    pool = None
    interrupts = _DeferredInterrupts()
    try:
        for item in items:
            earlier = previous.get(item.summary_key)
            if earlier is not None and is_up_to_date(item, outdir, rules, options, earlier):
                entry = dict(earlier, status=UP_TO_DATE, finished_at=timestamp(),
                             summary=item.summary_key)
                entry.pop("reason", None)
                finish(entry)
            else:
                todo.append(item)
        if todo:
            pool = _Pool(outdir, rules, options, min(jobs, len(todo)), timeout)

            def feed() -> None:
                while todo and pool.idle:
                    item = todo.popleft()
                    pool.dispatch(item)
                    reporter.started(item)

            feed()
            while pool.busy:
                finished = pool.collect()
                feed()  # idle workers get their next profile before this one is recorded
                for entry in finished:
                    finish(entry)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP
        interrupted = True
        stopped_by = getattr(exc, "signum", None)
    finally:
        interrupts.restore()
        if pool is not None:
            pool.close()
        index.compact()
        os.close(lock)  # after the compaction: the next writer reads the whole index
        reporter.close()
    return BatchResult(counts[OK], counts[UP_TO_DATE], counts[FAILED], interrupted,
                       stopped_by)


class _DeferredInterrupts:
    """Ctrl-C raises KeyboardInterrupt at once, except inside `deferred()`, where it is
    held until the block ends (so a finished profile is recorded whole, or not at all).
    SIGTERM and SIGHUP do the same, raising stopping.Stopped (a KeyboardInterrupt)."""

    def __init__(self):
        self._deferring = False
        self._pending = None
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)

    def _handle(self, signum, frame):
        if self._deferring:
            self._pending = self._pending or signum
        else:
            raise _stop(signum)

    @contextlib.contextmanager
    def deferred(self):
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
            if self._pending:
                signum, self._pending = self._pending, None
                raise _stop(signum)

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}


def _stop(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt() if signum == signal.SIGINT else Stopped(signum)


class _Pool:
    """Workers that each take one profile at a time; a dead one fails its profile only."""

    def __init__(self, outdir: Path, rules, options: RunOptions, size: int,
                 timeout: float = 0):
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
        worker.deadline = time.monotonic() + self._timeout + STARTUP_ALLOWANCE \
            if self._timeout else None
        self.busy.append(worker)

    def collect(self) -> list:
        """Wait for at least one busy worker to answer, die or pass its time limit;
        their entries."""
        # A worker that dies closes its end of the connection: its conn is ready then too.
        handles = [w.conn for w in self.busy]
        deadlines = [w.deadline for w in self.busy if w.deadline is not None]
        # A wait of years is refused by select(): a very long limit is waited in parts.
        limit = min(max(0.0, min(deadlines) - time.monotonic()), 86400.0) \
            if deadlines else None
        ready = set(wait(handles, limit))
        now = time.monotonic()
        entries = []
        for worker in list(self.busy):
            if worker.conn not in ready:
                if worker.deadline is None or now < worker.deadline:
                    continue
                self.busy.remove(worker)  # too long: ended, and its profile failed
                entries.append(self._failed(worker, "took longer than {:g} s (--timeout): "
                                            "ended".format(self._timeout)))
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
                    entries.append(self._failed(worker, "the worker process could not "
                                                "start: {}".format(answer[1])))
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
            remove_abandoned(output)
            if self._options.csv:
                for table in csv_paths(output.parent):
                    remove_abandoned(table)
            if self._options.blocks:
                remove_abandoned(blocks_path(output))


class _SilentReporter:
    def start(self, total): pass
    def started(self, item): pass
    def finished(self, entry): pass
    def close(self): pass
