"""Inputs are regular files: a FIFO, socket or device is refused without blocking on it.

A FIFO opened for reading waits for a writer forever, and a device such as /dev/zero
never ends; neither is a profile or a rules file. The kind is checked with os.stat
(symbolic links followed) before opening, and the file is opened with O_NONBLOCK and
checked again on the open descriptor, so that a swap between the two cannot hang.
"""

import errno
import os
import stat
from typing import Callable, Optional

from .errors import StrPath

# The kinds of file, in the words every message uses (inputs and outputs alike).
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def kind(mode: int) -> str:
    """What a file of this mode is, in words ("a FIFO (named pipe)")."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"  # pragma: no cover - a door, a whiteout...


def not_regular(mode: int) -> Optional[str]:
    """None for a regular file, else the problem in words ("is a FIFO (named pipe), not a
    regular file")."""
    if stat.S_ISREG(mode):
        return None
    return "is {}, not a regular file".format(kind(mode))


class NotRegular(OSError):
    """Raised by open_regular; str() is the problem in words."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.strerror = problem


def open_regular(path: StrPath) -> int:
    """A read-only descriptor of `path`, which must be a regular file (NotRegular if not;
    OSError as os.open raises it). Never blocks on a FIFO or a device."""
    mode = os.stat(str(path)).st_mode
    if stat.S_ISDIR(mode):  # told as reading one would (callers say so already)
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    problem = not_regular(mode)
    if problem is not None:
        raise NotRegular(problem)
    fd = os.open(
        str(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        problem = not_regular(os.fstat(fd).st_mode)
        if problem is not None:  # swapped since the check
            raise NotRegular(problem)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: StrPath) -> bytes:
    """The bytes of the regular file `path` (NotRegular or OSError otherwise)."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return handle.read()


def read_input(path: StrPath, error: Callable[[StrPath, str], Exception]) -> bytes:
    """The bytes of the regular file at `path` (read_regular); when it is not one or
    cannot be read, `error(path, problem)` raised: NotRegular's words, or "cannot read:
    <reason>". `error`: the ExtractorError class of the command's input."""
    try:
        return read_regular(path)
    except NotRegular as exc:
        raise error(path, str(exc)) from None
    except OSError as exc:
        raise error(path, "cannot read: {}".format(exc.strerror or exc)) from None


class TooLarge(OSError):
    """Raised by read_bounded for a file beyond its bound; str() is the problem in words."""

    def __init__(self, size: int, limit: int):
        problem = "is {} bytes, beyond the {} extract reads of such a file".format(
            size, size_text(limit)
        )
        super().__init__(problem)
        self.strerror = problem
        self.size = size
        self.limit = limit


def size_text(size: int) -> str:
    """A bound in words: "64 MiB" (whole MiB or GiB), else bytes."""
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB")):
        if size >= unit and size % unit == 0:
            return "{} {}".format(size // unit, name)
    return "{} bytes".format(size)


def read_bounded(fd: int, limit: int) -> bytes:
    """The bytes of the open regular file `fd` (closed here), at most `limit` of them:
    TooLarge when its size (fstat), or what it gives while read, is beyond `limit`. A file
    growing while read cannot make this read more than `limit` + 1 bytes."""
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise TooLarge(size, limit)
        data = handle.read(limit + 1)
        if len(data) > limit:
            raise TooLarge(len(data), limit)
        return data
