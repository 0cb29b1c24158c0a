"""Ending an extraction on request: SIGTERM, SIGHUP and Ctrl-C; and the one case of
`--timeout` that needs a second process.

SIGTERM, SIGHUP and SIGINT raise Stopped (`raise_on_stop_signals`), which unwinds as
Ctrl-C does; the handler notes what it raised (`raised_stop`), for the one place that
can swallow it: SQLite's progress handler (deadline.raise_interrupted).

A time limit is kept in the process itself (deadline.py), except where the work calls
compiled code that no signal reaches until it returns: a pva whose calls are C++ (the
Poplar SDK's), which may not return. For that run only (run/single.py), extract forks: the
child extracts as extract always did and reports the profile it reads through the pipe
it shares with the parent; the parent only watches it. Past the limit the parent kills
the child (SIGKILL: a polite signal would make it print a second line, if it could
print at all), sweeps the temporary files it leaves, and reports one line. SIGTERM,
SIGHUP and SIGINT given to the parent are passed on to the child, which unwinds as from
Ctrl-C (no temporary file left) and exits 128 + the signal; a child that does not end
within GRACE seconds of that is killed the same way.
"""

import os
import select
import signal
import sys
import time
from types import FrameType
from typing import List, Optional, Tuple

#: Seconds a signalled child has to end by itself before it is killed.
GRACE = 2.0

#: The longest single wait (select() refuses a timeout of years).
LONGEST_WAIT = 86400.0

#: The signals that end an extraction, as Ctrl-C does.
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (or Ctrl-C): unwinds like Ctrl-C, so that every clean-up that
    runs for Ctrl-C runs for them too. `signum`: which signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def signal_name(signum: Optional[int]) -> str:
    if signum is None:  # as signal.Signals(None) would have it (a caller's slip)
        return "signal None"
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal {}".format(signum)


def stop_message(signum: int) -> str:
    """The last line's words for a stop by `signum`."""
    if signum == signal.SIGINT:
        return "interrupted"
    return "terminated by {}".format(signal_name(signum))


_raised: List[int] = []  # the stop signal raise_on_stop_signals' handler raised


def raised_stop() -> Optional[Stopped]:
    """Stopped again, if raise_on_stop_signals' handler has raised it in this process
    (to raise once more where it was swallowed), else None."""
    return Stopped(_raised[0]) if _raised else None


def raise_on_stop_signals() -> None:
    """SIGTERM, SIGHUP and SIGINT raise Stopped in the main thread; the first one only:
    the same signal sent again (a terminal's SIGINT goes to every process of the group,
    and the watching parent passes it on too) cannot interrupt the clean-up."""
    del _raised[:]

    def handle(signum: int, frame: Optional[FrameType]) -> None:
        for other in STOP_SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        _raised.append(signum)
        raise Stopped(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, handle)


class Outcome:
    """How the watched child ended: `code` (its exit code, or 128 + signal for a stop),
    `timed_out`, `stopped_by` (a signal given to the parent, else None), `killed_by`
    (the signal the child died of, when it did not exit)."""

    def __init__(
        self,
        code: int,
        timed_out: bool = False,
        stopped_by: Optional[int] = None,
        killed_by: Optional[int] = None,
        forced: bool = False,
        reading: Optional[int] = None,
    ):
        self.code, self.timed_out, self.stopped_by = code, timed_out, stopped_by
        self.killed_by, self.forced = killed_by, forced
        self.reading = reading  # the profile the child last said it was reading (an index)


class _Wake(BaseException):
    pass


def flush_standard_streams() -> None:
    """Flush stdout and stderr, as far as they can be (before a fork or an os._exit)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None: closed when extract started (`>&-`)
            try:
                stream.flush()
            except (OSError, ValueError):
                pass


def fork_with_deadline(seconds: float) -> Tuple[Optional[Outcome], int]:
    """Fork. In the child: (None, the pipe's write end), after `raise_on_stop_signals`;
    it does the work, may write "N\n" (reading profile N) or "-\n" (none) to the pipe,
    and exits as usual. In the parent: wait for the child, at most `seconds`, and return
    (its Outcome, -1); the caller sweeps what a killed child leaves and exits."""
    flush_standard_streams()
    parent = os.getpid()
    read_end, write_end = os.pipe()  # the child holds the write end until it ends
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _die_with(parent)
        raise_on_stop_signals()
        return None, write_end
    os.close(write_end)
    received: List[int] = []
    waiting: List[bool] = []

    def handle(signum: int, frame: Optional[FrameType]) -> None:
        if not received:
            received.append(signum)
            _signal(pid, signum)
        if waiting:  # only select() is woken; anywhere else, the watch goes on
            raise _Wake()

    previous = {signum: signal.signal(signum, handle) for signum in STOP_SIGNALS}
    try:
        return _watch(pid, read_end, seconds, received, waiting), -1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        os.close(read_end)


def _watch(
    pid: int, read_end: int, seconds: float, received: List[int], waiting: List[bool]
) -> Outcome:
    deadline = time.monotonic() + seconds if seconds else None
    forced = False
    said = b""  # what the child wrote to the pipe
    while True:
        wait = (
            None if deadline is None else min(max(0.0, deadline - time.monotonic()), LONGEST_WAIT)
        )
        try:
            waiting.append(True)
            ready = select.select([read_end], [], [], wait)[0]
            del waiting[:]
        except _Wake:  # passed on to the child: it has GRACE seconds to end by itself
            del waiting[:]
            grace_end = time.monotonic() + GRACE
            deadline = grace_end if deadline is None else min(deadline, grace_end)
            continue
        if ready:
            data = os.read(read_end, 4096)
            if data:  # the child says which profile it reads
                said = (said + data)[-64:]
                continue
            break  # the child has ended: its end of the pipe is closed
        if deadline is not None and time.monotonic() < deadline:
            continue  # a very long limit, waited for in parts
        # Past the limit, or a stop signal not obeyed in time: it cannot end by itself.
        _signal(pid, signal.SIGKILL)
        forced = True
        break
    status = _reap(pid)
    stopped_by = received[0] if received else None
    if os.WIFSIGNALED(status):
        killed_by = os.WTERMSIG(status)
        code = 128 + killed_by
    else:
        killed_by = None
        code = os.WEXITSTATUS(status)
    if forced:
        killed_by = None
        code = 128 + stopped_by if stopped_by is not None else 1
    return Outcome(
        code,
        timed_out=forced and stopped_by is None,
        stopped_by=stopped_by,
        killed_by=killed_by,
        forced=forced,
        reading=_last_said(said),
    )


def _last_said(said: bytes) -> Optional[int]:
    """The profile the child said last it was reading ("N\n"), None for "-\n" or
    nothing."""
    lines = said.split(b"\n")[:-1]  # whole lines only
    last = lines[-1] if lines else b""
    return int(last) if last.isdigit() else None


def _reap(pid: int) -> int:
    try:
        return os.waitpid(pid, 0)[1]  # retried by Python when a signal lands (PEP 475)
    except ChildProcessError:
        return 0


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:  # already gone
        pass


def _die_with(parent: int) -> None:
    """Ask Linux to SIGKILL this child when its parent dies (a killed parent leaves no
    orphan running on), else nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes  # here: only the child of a watched run needs it

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError, ImportError):
        return
    if os.getppid() != parent:  # it died before the request was made
        os._exit(128 + int(signal.SIGKILL))
