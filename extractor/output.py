"""Writing results so that a reader never sees a partial file."""

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path
from typing import (
    IO,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Optional,
    cast,
    overload,
)

from .errors import OutputError, StrPath
from .escaping import terminal_output
from .inputs import kind
from .partials import (
    missing_folders,
    new_partial,
    partial_name,
    remove_abandoned,
    remove_made_folders,
    written_at,
)

STDOUT = "-"


@contextlib.contextmanager
def atomic_file(path: StrPath, strict: bool = False) -> Iterator[IO[bytes]]:
    """A binary file handle whose contents appear at `path` only when the block completes.

    Writes go to a temporary file in the same folder, which is fsynced and renamed over
    `path`; on any error (or interruption) the temporary file is removed and a previous
    `path` stays as it was. Missing parent folders are created.

    The rename only ever replaces a regular file (`replaceable`): with `strict` (a
    batch's OUTDIR) anything else at `path`, a symbolic link included, is refused;
    otherwise a symbolic link is followed (the file it points to is replaced, the link
    stays), and a character device or FIFO (`/dev/null`, `/dev/stdout`, a named pipe) is
    written into directly, as a shell's `>` would.
    """
    path = Path(path)
    tmp = None
    made: List[Path] = []
    try:
        made = _make_parent(path)
        target = replaceable(path, strict, direct=not strict)
        if target is None:
            with _open_direct(path) as handle:  # it is there: no folder was made
                yield handle
            return
        remove_abandoned(target)
        fd, tmp = new_partial(target)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _check_replaceable(path, target)
        os.replace(tmp, str(target))
        tmp, made = None, []
        _fsync_folder(target.parent)
    except OSError as exc:
        raise OutputError(path, "cannot write: {}".format(exc.strerror or exc)) from exc
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if made:  # nothing written: the folders made for it go again
            remove_made_folders(made)


@contextlib.contextmanager
def atomic_files(names: Iterable[StrPath], strict: bool = False) -> Iterator[List[IO[bytes]]]:
    """Binary handles for several files that change together, or not at all.

    Every target is checked (`replaceable`, never written directly) before the block
    runs; each is written to a temporary file; then they are renamed into place in
    order, one rename at a time. What is guaranteed: each file is whole, old or new,
    at every moment; and when the writing fails (a rename fails or is interrupted), the
    files already renamed are put back as they were (the earlier ones are kept under
    temporary names, hard links, until all are in), so after a failure all are the old
    ones. While the renames run, a reader that opens several of the files may see some
    new and some old: the set is not swapped in one step (POSIX has no rename of several
    files at once), and a process killed between two renames can leave it so. An error
    inside the block is reported against the last path.
    """
    paths = [Path(p) for p in names]
    targets: List[Path] = []
    temps: List[Optional[str]] = []
    handles: List[IO[bytes]] = []
    made: List[Path] = []
    current = paths[-1]
    try:
        for path in paths:
            current = path
            made += _make_parent(path)
            target = replaceable(path, strict, direct=False)
            remove_abandoned(target)
            fd, tmp = new_partial(target)
            temps.append(tmp)
            targets.append(target)
            handles.append(os.fdopen(fd, "wb"))
        current = paths[-1]
        yield handles
        for path, handle in zip(paths, handles):
            current = path
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        _replace_together(paths, targets, temps)
        made = []
        for folder in sorted({str(target.parent) for target in targets}):
            _fsync_folder(Path(folder))
    except OSError as exc:
        raise OutputError(current, "cannot write: {}".format(exc.strerror or exc)) from exc
    finally:
        for handle in handles:
            try:
                handle.close()
            except OSError:
                pass
        for temp in temps:
            if temp is not None:
                try:
                    os.unlink(temp)
                except OSError:
                    pass
        if made:  # nothing written: the folders made for them go again
            remove_made_folders(made)


def _replace_together(paths: List[Path], targets: List[Path], temps: List[Optional[str]]) -> None:
    """Rename temps[i] over targets[i] for each i, all or none (see atomic_files); a
    temporary name is set to None once renamed."""
    replaced: List[int] = []
    backups: Dict[int, str] = {}
    path = paths[0]
    try:
        for i, (path, target) in enumerate(zip(paths, targets)):
            _check_replaceable(path, target)
            if os.path.lexists(str(target)):
                backups[i] = _backup(target)
            os.replace(cast(str, temps[i]), str(target))  # None only once renamed
            temps[i] = None
            replaced.append(i)
    except BaseException as exc:
        for i in reversed(replaced):  # put the earlier files back as they were
            try:
                if i in backups:
                    os.replace(backups.pop(i), str(targets[i]))
                else:
                    os.unlink(str(targets[i]))
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise OutputError(path, "cannot write: {}".format(exc.strerror or exc)) from exc
        raise
    finally:
        for backup in backups.values():
            try:
                os.unlink(backup)
            except OSError:
                pass


def _backup(target: Path) -> str:
    """A second name for the file at `target` (a hard link, or a copy where the file
    system has none), named like a temporary file so that an abandoned one is swept."""
    while True:
        name = partial_name(target)
        try:
            os.link(str(target), name)
            return name
        except FileExistsError:
            continue
        except OSError:  # no hard links here (or not to this file): copy it
            break
    fd, name = new_partial(target)
    try:
        with os.fdopen(fd, "wb") as copy, open(str(target), "rb") as original:
            while True:
                block = original.read(1 << 20)
                if not block:
                    break
                copy.write(block)
    except BaseException:
        os.unlink(name)
        raise
    return name


@overload
def replaceable(path: StrPath, strict: bool = ..., direct: Literal[False] = ...) -> Path: ...
@overload
def replaceable(path: StrPath, strict: bool = ..., direct: bool = ...) -> Optional[Path]: ...


def replaceable(path: StrPath, strict: bool = False, direct: bool = False) -> Optional[Path]:
    """Where a rename may put a new file for `path`: the path of a regular file or of
    nothing. `strict`: `path` itself must be one (a symbolic link is refused too).
    Otherwise a symbolic link is followed: the file it points to is the one replaced.
    `direct`: None for a character device or FIFO, to be written into directly.
    Anything else (a folder, a socket, a block device) raises OutputError."""
    path = Path(path)
    try:
        mode = (os.lstat if strict else os.stat)(str(path)).st_mode
    except FileNotFoundError:
        mode = None
    except OSError:  # a symbolic link loop, a part that is a file...: the rename will say
        mode = None
    if mode is None or stat.S_ISREG(mode):
        return written_at(path, strict)
    if direct and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        return None
    if strict:
        raise OutputError(
            path,
            "is {}, not a regular file: extract never replaces one, "
            "nor writes through one (remove it)".format(kind(mode)),
        )
    if direct or stat.S_ISDIR(mode):
        raise OutputError(
            path,
            "is {}: only a regular file is replaced (or a character "
            "device or FIFO written into)".format(kind(mode)),
        )
    raise OutputError(
        path,
        "is {}: files written together must be regular files, replaced all at once".format(
            kind(mode)
        ),
    )


def _check_replaceable(path: Path, target: Path) -> None:
    # Just before the rename: what is at the target now must still be a regular file
    # (or nothing), not something swapped in while the new file was being written.
    try:
        mode = os.lstat(str(target)).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise OutputError(
            path, "is {} now, not a regular file: it is not replaced".format(kind(mode))
        )


def _make_parent(path: Path) -> List[Path]:
    """Make the folders `path` needs; those this made (missing_folders), outermost first."""
    made: List[Path] = []
    try:
        for folder in missing_folders(path):
            try:
                folder.mkdir()
            except FileExistsError:  # made meanwhile by another writer: not ours
                if not folder.is_dir():
                    raise
                continue
            made.append(folder)
    except (FileExistsError, NotADirectoryError):
        remove_made_folders(made)
        raise OutputError(
            path, "cannot write: a part of {} is a file, not a folder".format(path.parent)
        ) from None
    except OSError:
        remove_made_folders(made)
        raise
    return made


def make_folder(folder: StrPath) -> None:
    """Create an output folder (and its parents); OutputError in one line if it cannot."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(
            folder, "cannot make the output folder: a part of it is a file, not a folder"
        ) from None
    except OSError as exc:
        raise OutputError(
            folder, "cannot make the output folder: {}".format(exc.strerror or exc)
        ) from exc


@contextlib.contextmanager
def _open_direct(path: Path) -> Iterator[IO[bytes]]:
    """A handle writing into the character device or FIFO at `path`: opened without
    creating or truncating anything, and without waiting for a FIFO's reader."""
    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # "No such device or address": said for what it is
            raise OutputError(path, _no_device(path)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):  # swapped meanwhile
            raise OutputError(
                path,
                "is {} now, not a character device or FIFO: it is not written into".format(
                    kind(mode)
                ),
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "wb") as handle:
        yield handle
        handle.flush()


def _no_device(path: Path) -> str:
    """The problem of a character device or FIFO that cannot be opened for writing with
    ENXIO: a FIFO nobody reads, or a device with nothing behind it (/dev/tty without a
    controlling terminal)."""
    try:
        fifo = stat.S_ISFIFO(os.stat(str(path)).st_mode)
    except OSError:
        fifo = False
    if fifo:
        return "is a FIFO (named pipe) that nobody is reading: start its reader first"
    return (
        "is a character device with no device behind it (No such device or address; "
        "/dev/tty: this process has no controlling terminal): write elsewhere"
    )


def write_atomic(path: StrPath, data: bytes, strict: bool = False) -> None:
    """Write `data` to `path` so that no reader ever sees a partial file (atomic_file)."""
    with atomic_file(path, strict) as handle:
        handle.write(data)


def _stdout_is_a_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced, or closed
        return False


def write_output(target: StrPath, data: bytes) -> None:
    """Write to a file atomically (a device or FIFO directly: atomic_file), or to
    standard output when `target` is "-" (a terminal: through `terminal_output`)."""
    if str(target) == STDOUT:
        if sys.stdout is None:  # started with it closed (`extract ... >&-`)
            raise OutputError("<stdout>", "cannot write: standard output is closed")
        if _stdout_is_a_terminal():
            data = terminal_output(data)
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except OSError as exc:
            raise stdout_failed(exc) from exc
    else:
        write_atomic(target, data)


def write_output_from(target: StrPath, source: IO[bytes], chunk: int = 1 << 20) -> None:
    """`write_output` of the whole of the binary file `source` (read from where it is),
    copied a chunk at a time: for an output too large to hold in memory (to a
    terminal, whole lines at a time through `terminal_output`)."""
    if str(target) != STDOUT:
        import shutil  # here: only this needs it

        with atomic_file(target) as handle:
            shutil.copyfileobj(source, handle, chunk)
        return
    if sys.stdout is None:
        raise OutputError("<stdout>", "cannot write: standard output is closed")
    terminal = _stdout_is_a_terminal()
    rest = b""  # to a terminal: the last line read, not yet ended
    try:
        while True:
            data = source.read(chunk)
            if not data:
                break
            if terminal:  # whole lines: a line end is a byte no UTF-8 character holds
                data = rest + data
                cut = data.rfind(b"\n") + 1
                data, rest = terminal_output(data[:cut]), data[cut:]
            sys.stdout.buffer.write(data)
        if rest:
            sys.stdout.buffer.write(terminal_output(rest))
        sys.stdout.buffer.flush()
    except OSError as exc:
        raise stdout_failed(exc) from exc


def stdout_failed(exc: OSError) -> OutputError:
    """The error for a write to standard output that failed with `exc`; what is left
    buffered there is discarded first."""
    _discard_stdout()
    return OutputError("<stdout>", "cannot write: {}".format(exc.strerror or exc))


def _discard_stdout() -> None:
    # What could not be written stays buffered, and Python would try again at exit and
    # print "Exception ignored ... BrokenPipeError": send it to /dev/null instead.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


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


def print_answer(answer: dict, as_json: bool, as_text: Callable[[dict], str]) -> None:
    """A report (inspect's, stages', doctor's) on standard output: JSON (ASCII, non-ASCII
    escaped), or `as_text(answer)`."""
    if as_json:
        import json

        data = (json.dumps(answer, indent=2) + "\n").encode("ascii")
    else:
        data = as_text(answer).encode("utf-8", "backslashreplace")
    write_output(STDOUT, data)
