"""Many profiles at once: the run of a batch (`run_batch`). Each profile already up to
date is recorded as such; the others go to a pool of worker processes (pool.py), each of
which extracts one profile at a time (item.py: the extraction, its index entry, the
up-to-date check); each entry goes to the index as it comes back. shards.py says which
profiles a shard takes.

The batch adds bookkeeping around `pipeline.extract_profile`, which `extract PROFILE -o
FILE` runs too: a summary's bytes are the same. One worker that dies fails its profile
only and is replaced.
"""

import contextlib
import os
import signal
import threading
from collections import deque
from pathlib import Path
from typing import Deque, List, NamedTuple, Optional

from ...batchnames import index_name
from ...core.pvafacts import import_pva
from ...readback.index import known_entries
from ...stopping import STOP_SIGNALS, Stopped
from .discover import BatchItem
from .index import IndexWriter, lock_index

# RunOptions is imported from here by the CLI, OK and FAILED by progress.py.
from .item import FAILED, OK, UP_TO_DATE, RunOptions, is_up_to_date, timestamp
from .pool import Pool
from .shards import Shard


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def require_pva() -> None:
    """Fail once, before any worker starts, when pva cannot be imported: imported, not
    only found, so that a pva built for another Python (found, but failing to load)
    fails the batch with the line a single profile gives, not each profile alone."""
    import_pva()


class BatchResult(NamedTuple):
    extracted: int
    up_to_date: int
    failed: int
    interrupted: bool
    stopped_by: Optional[int] = None  # the signal that interrupted it (None: Ctrl-C)


def run_batch(
    items: List[BatchItem],
    outdir: Path,
    rules,
    *,
    jobs: int = 1,
    force: bool = False,
    shard: Optional[Shard] = None,
    options: RunOptions = RunOptions(),
    reporter=None,
    timeout: float = 0,
) -> BatchResult:
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
                entry = dict(
                    earlier, status=UP_TO_DATE, finished_at=timestamp(), summary=item.summary_key
                )
                entry.pop("reason", None)
                finish(entry)
            else:
                todo.append(item)
        if todo:
            pool = Pool(outdir, rules, options, min(jobs, len(todo)), timeout)

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
    return BatchResult(counts[OK], counts[UP_TO_DATE], counts[FAILED], interrupted, stopped_by)


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


class _SilentReporter:
    def start(self, total):
        pass

    def started(self, item):
        pass

    def finished(self, entry):
        pass

    def close(self):
        pass
