"""Writing results so that a reader never sees a partial file."""

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from .errors import OutputError

STDOUT = "-"


def _file_mode() -> int:
    # mkstemp creates 0600; a summary should get the mode any new file gets (umask).
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


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
        fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=".{}.".format(path.name),
                                   suffix=".partial")
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), _file_mode())
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
