"""`--timeout` kept by the process that does the work: no second process.

- **Python code** (the passes, the stage rules' regular expressions, a pva written in
  Python) is interrupted by SIGALRM: `signal.setitimer` arms it, and its handler raises
  TimedOut in the main thread at the next bytecode. CPython's regular expression engine
  checks for signals as it backtracks (every 4096 steps, on 3.8 to 3.13 alike), so a
  stage rule that backtracks catastrophically is ended on time too.
- **An SQLite query** runs in C, where a Python handler waits until it returns: every
  connection opened while a limit runs gets a progress handler (`watch_connection`)
  that aborts the query once the time is up. SQLite reports the abort as an error,
  "interrupted", which `raise_interrupted` turns back into what caused it (TimedOut, or
  a stop signal whose handler ran inside the progress handler, where the sqlite3 module
  drops the exception).

TimedOut is a BaseException: no `except Exception` of a pass takes it for a fault of the
profile, and every clean-up that runs for Ctrl-C runs for it (atomic writes unwind).
`time_limit` then sweeps what the command's writing could have left
(`partials.Leftovers`) and raises the one-line error, naming the profile being read
when time ran out (`reading`), else all of the command's profiles.

What no signal reaches is a call into compiled code that neither returns nor checks
for signals: a pva whose calls are C++ (the Poplar SDK's) is one. run/single.py keeps a
watching parent process for exactly that case (stopping.fork_with_deadline); there the
child reports which profile it reads through the pipe it shares with its parent
(`reading` writes to it).

A read stuck in the kernel (a network file system that stopped answering) is another,
in any command: the main thread never comes back to Python, so neither handler runs.
For that, a limit given `on_stuck` also starts a watchdog thread (`_Watchdog`): should
the alarm's handler not have run GRACE seconds past the limit, it sweeps what the
writing left, hands the error line to `on_stuck` and that ends the process (exit 1).
The watchdog and the main thread never both act: whichever comes first (the alarm's
handler or the end of the run, or the watchdog) takes the watchdog's lock and disarms
the other; the main thread, should it come back once the watchdog has fired, waits on
that lock until the process ends.
"""

import contextlib
import os
import signal
import time
from types import FrameType
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from .errors import ProfileError, StrPath, UsageError, shown_path
from .partials import Leftovers

#: SQLite virtual machine instructions between two looks at the clock during a query
#: (about a millisecond of work; the look costs a Python call).
PROGRESS_STEPS = 20000

#: The longest time one SIGALRM timer is armed for (setitimer refuses years); a longer
#: limit re-arms it.
LONGEST_TIMER = 86400.0

#: Profiles named one by one in a time limit's error; beyond, "and N other profiles".
NAMED = 3

#: Seconds past the limit that the main thread may stay where no signal reaches it
#: before the watchdog ends the process: longer than SQLite spends in one step of a
#: large sort without calling the progress handler.
GRACE = 10.0


class TimedOut(BaseException):
    """The time limit has passed: `label` (who it names) and `problem`. A BaseException:
    it unwinds as Ctrl-C does, past every `except Exception`."""

    def __init__(self, label: str, problem: str):
        super().__init__(label, problem)
        self.label, self.problem = label, problem

    def __str__(self) -> str:
        return "{}: {}".format(self.label, self.problem)


def profiles_label(profiles: Sequence[StrPath], reading: Optional[int] = None) -> str:
    """Who a time limit's error names: profile number `reading` (the one being read when
    time ran out), else every profile of the command, once each ("A and B", "A, B and
    C", "A and 4 other profiles")."""
    if reading is not None and 0 <= reading < len(profiles):
        return shown_path(profiles[reading])
    names: List[str] = []
    for profile in profiles:
        name = shown_path(profile)
        if name not in names:
            names.append(name)
    if len(names) > NAMED:
        return "{} and {} other profiles".format(names[0], len(names) - 1)
    if len(names) > 1:
        return "{} and {}".format(", ".join(names[:-1]), names[-1])
    return names[0] if names else ""


def timed_out_problem(seconds: float) -> str:
    return "took longer than {:g} s (--timeout): ended".format(seconds)


class _Limit:
    """The limit of the run under way: its end (time.monotonic()), its profiles, the
    one being read (an index), whether it has passed; `report_fd`: in a watched child,
    where `reading` reports to the parent (no timer of its own then)."""

    def __init__(
        self, seconds: float, profiles: Sequence[StrPath], report_fd: Optional[int] = None
    ):
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.profiles = list(profiles)
        self.reading: Optional[int] = None
        self.expired = False
        self._reading_at_expiry: Optional[int] = None
        self.report_fd = report_fd

    def expire(self) -> None:
        """The time is up: the profile being read now is the one the error names, even
        should the error be raised a second time once that reading is over (SQLite's
        progress handler and the alarm both see the end; whichever comes second must
        not name the command's profiles as if none were being read)."""
        if not self.expired:
            self.expired = True
            self._reading_at_expiry = self.reading

    def error(self) -> TimedOut:
        reading = self._reading_at_expiry if self.expired else self.reading
        label = profiles_label(self.profiles, reading)
        return TimedOut(label, timed_out_problem(self.seconds))

    def read(self, index: Optional[int]) -> None:
        self.reading = index
        if self.report_fd is not None:
            try:
                os.write(self.report_fd, b"-\n" if index is None else b"%d\n" % index)
            except OSError:  # the parent is gone: nothing to tell
                pass


_running: List[_Limit] = []  # the limit under way: none, or one


def _active() -> Optional[_Limit]:
    return _running[0] if _running else None


@contextlib.contextmanager
def reading(profile: StrPath) -> Iterator[None]:
    """Mark `profile` (one of the limited command's profiles) as the one being read
    inside this block: a time limit that passes here names it. Nothing without a
    limit."""
    limit = _active()
    index = None
    if limit is not None:
        index = next((i for i, p in enumerate(limit.profiles) if p is profile), None)
        if index is None:
            index = next((i for i, p in enumerate(limit.profiles) if p == profile), None)
    if limit is None or index is None:
        yield
        return
    previous = limit.reading
    limit.read(index)
    try:
        yield
    finally:
        limit.read(previous)


def _progress() -> int:
    """SQLite's progress handler: nonzero (abort the query) once the time is up."""
    limit = _active()
    if limit is not None and limit.report_fd is None and time.monotonic() >= limit.end:
        limit.expire()
        return 1
    return 0


def watch_connection(db: object) -> None:
    """Give an SQLite connection the running limit's progress handler (none without a
    limit): its queries end when the time is up. `db`: an sqlite3.Connection."""
    limit = _active()
    if limit is not None and limit.report_fd is None:
        db.set_progress_handler(_progress, PROGRESS_STEPS)  # type: ignore[attr-defined]


def raise_interrupted() -> None:
    """After SQLite said "interrupted": raise what interrupted it, if it was the time
    limit or a stop signal (stopping.raised_stop); else return (SQLite's own error
    stands)."""
    from .stopping import raised_stop

    stop = raised_stop()
    if stop is not None:
        raise stop
    limit = _active()
    if limit is not None and limit.expired:
        raise limit.error()


class _Watchdog:
    """The thread that ends a run stuck past its limit where no signal reaches (see the
    module's docstring): after `seconds` + GRACE, unless disarmed, it sweeps
    `leftovers` and calls `on_stuck` with the error line (which does not return)."""

    def __init__(
        self,
        limit: _Limit,
        leftovers: Leftovers,
        on_stuck: Callable[[str], None],
        grace: Optional[float] = None,
    ) -> None:
        import threading

        self._limit, self._leftovers, self._on_stuck = limit, leftovers, on_stuck
        self._grace = GRACE if grace is None else grace
        self._lock = threading.Lock()
        self._settled = False  # disarmed, or fired
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="extract-watchdog", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        if self._wake.wait(self._limit.seconds + self._grace):
            return  # disarmed in time
        with self._lock:  # held to the end: the process ends inside
            if self._settled:
                return
            self._settled = True
            self._leftovers.sweep(writer=os.getpid())
            self._on_stuck(str(self._limit.error()))

    def disarm(self) -> None:
        """The main thread is back in Python past the limit, or the run is over: the
        watchdog stands down. Should it have fired, this waits until the process ends."""
        with self._lock:
            self._settled = True
        self._wake.set()


# Any: what signal.signal gives back, a function, SIG_IGN, SIG_DFL or None (not Python's).
def _stop_signals_ignored() -> Dict[int, Any]:
    """Ignore SIGTERM, SIGHUP and SIGINT; their handlers before, to put back."""
    from .stopping import STOP_SIGNALS

    return {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}


@contextlib.contextmanager
def time_limit(
    seconds: float,
    profiles: Sequence[StrPath],
    outputs: Sequence[StrPath],
    on_stuck: Optional[Callable[[str], None]] = None,
) -> Iterator[None]:
    """Run the block within `seconds` (0: no limit), in this process; past them, the
    block is ended (TimedOut), what writing `outputs` left is swept, and ProfileError
    says `<profile>: took longer than N s (--timeout): ended`. On any other failure the
    same sweep runs. The main thread only (SIGALRM, held while the limit runs: a timer
    armed before is put back after, with what is left of it): UsageError elsewhere.
    `on_stuck(line)`: the watchdog's way out, for a run stuck where no signal reaches
    (see the module's docstring); it must end the process. None: no watchdog."""
    leftovers = Leftovers(outputs)  # before anything is written: the folders missing now
    if not seconds:
        with leftovers.swept_on_failure():
            yield
        return
    import threading  # here: a run without a limit does not need it

    if threading.current_thread() is not threading.main_thread():
        raise UsageError(
            "a time limit is kept with SIGALRM, which only the main thread receives: "
            "run this there, or pass timeout=0"
        )
    if _running:
        raise UsageError("a time limit is already running in this process")
    limit = _Limit(seconds, profiles)

    def alarm(signum: int, frame: Optional[FrameType]) -> None:
        from .stopping import raised_stop

        if _active() is not limit:
            return  # ended already
        left = limit.end - time.monotonic()
        if left > 0 and raised_stop() is None:  # a limit longer than one timer: in parts
            signal.setitimer(signal.ITIMER_REAL, min(left, LONGEST_TIMER))
            return
        if watchdog is not None:
            watchdog.disarm()  # this thread answers: the watchdog is not needed
        if raised_stop() is not None:
            return  # a stop is unwinding: it goes on
        limit.expire()
        stops.update(_stop_signals_ignored())  # the clean-up that follows is not cut short
        raise limit.error()

    stops: Dict[int, Any] = {}  # the stop signals' handlers, while they are ignored

    previous = signal.signal(signal.SIGALRM, alarm)
    _running.append(limit)
    watchdog: Optional[_Watchdog] = None
    outer = (0.0, 0.0)  # a timer armed before this one (delay, interval): put back after
    try:
        with leftovers.swept_on_failure():
            try:
                if on_stuck is not None:
                    watchdog = _Watchdog(limit, leftovers, on_stuck)
                outer = signal.setitimer(signal.ITIMER_REAL, min(seconds, LONGEST_TIMER))
                yield
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                del _running[:]  # the alarm's handler does nothing from here
                if watchdog is not None:
                    watchdog.disarm()
    except TimedOut as exc:
        raise ProfileError(exc.label, exc.problem) from None
    finally:
        del _running[:]
        signal.signal(signal.SIGALRM, previous)
        for signum, handler in stops.items():  # the clean-up is done: as they were
            signal.signal(signum, handler)
        if outer[0] > 0:  # what is left of it (at once if its time has passed meanwhile)
            spent = time.monotonic() - (limit.end - seconds)
            signal.setitimer(signal.ITIMER_REAL, max(outer[0] - spent, 1e-6), outer[1])


@contextlib.contextmanager
def reporting(profiles: Sequence[StrPath], report_fd: int) -> Iterator[None]:
    """In a watched child (stopping.fork_with_deadline): `reading` writes the profile
    being read to `report_fd`, for the parent's error line."""
    _running.append(_Limit(0, profiles, report_fd))
    try:
        yield
    finally:
        del _running[:]
