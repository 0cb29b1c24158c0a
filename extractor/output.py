"""Writing results so that a reader never sees a partial file."""

import contextlib
import os
import sys
from pathlib import Path

from .errors import OutputError

STDOUT = "-"


@contextlib.contextmanager
def atomic_file(path):
    """A binary file handle whose contents appear at `path` only when the block completes.

    Writes go to a temporary file in the same folder, which is fsynced and renamed over
    `path`; on any error (or interruption) the temporary file is removed and a previous
    `path` stays as it was. Missing parent folders are created.
    """
    path = Path(path)
    tmp = None
    try:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise OutputError(path, "cannot write: a part of {} is a file, not a folder"
                              .format(path.parent))
        remove_abandoned(path)
        fd, tmp = _new_partial(path)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, str(path))
        tmp = None
        _fsync_folder(path.parent)
    except OSError as exc:
        raise OutputError(path, "cannot write: {}".format(exc.strerror or exc))
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _new_partial(path: Path):
    """(fd, name) of a new temporary file beside `path`, made here (O_EXCL) and named
    .NAME.HOST.PID.RANDOM.partial. Its mode is what any new file gets (0666 less the
    umask), as `path` would have had if written directly."""
    while True:
        tmp = str(path.parent / "{}{}.partial".format(_partial_prefix(path),
                                                      os.urandom(6).hex()))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:  # a 48-bit name taken: draw another
            continue


def _host() -> str:
    # The name socket.gethostname() gives, without importing socket (start-up time).
    try:
        return os.uname().nodename
    except AttributeError:  # pragma: no cover - not a POSIX system
        import socket
        return socket.gethostname()


def _partial_prefix(path: Path, pid=None) -> str:
    # Who writes it is in the name, so that a later writer can tell an abandoned one.
    return ".{}.{}.{}.".format(path.name, _host(), pid or os.getpid())


def remove_abandoned(path) -> None:
    """Remove temporary files left beside `path` by killed writers of this host (a
    SIGKILL leaves no chance to clean up); a live writer's, or another host's, stay."""
    path = Path(path)
    host = _host()
    for partial in path.parent.glob(".{}.{}.*.partial".format(path.name, host)):
        pid = partial.name[len(".{}.{}.".format(path.name, host)):].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                partial.unlink()
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours to signal
        return True
    try:  # a killed process nobody has reaped yet is a zombie: dead for our purpose
        with open("/proc/{}/stat".format(pid), "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def write_atomic(path, data: bytes) -> None:
    """Write `data` to `path` so that no reader ever sees a partial file (atomic_file)."""
    with atomic_file(path) as handle:
        handle.write(data)


def write_output(target, data: bytes) -> None:
    """Write to a file atomically, or to standard output when `target` is "-"."""
    if str(target) == STDOUT:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except OSError as exc:
            raise OutputError("<stdout>", "cannot write: {}".format(exc.strerror or exc))
    else:
        write_atomic(target, data)


def _fsync_folder(folder: Path) -> None:
    # Make the rename itself durable; not every filesystem lets a folder be opened.
    try:
        fd = os.open(str(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
