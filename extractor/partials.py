"""Where a writer puts a file and its temporary file, and the sweep of what a killed
writer left there: one answer for both, so that the clean-up looks where the writer wrote.

A file is written as a temporary file beside the file it replaces, then renamed over it
(output.atomic_file). Through a symbolic link (unless `strict`) the file replaced is the
one the link points to, so the temporary file is beside that one, not beside the link:
`written_at` says which, and the writer (output.replaceable) and the sweep
(remove_abandoned) both ask it. The folders a writer makes for its file are removed
again when nothing is written (`missing_folders`, `remove_made_folders`).

`Leftovers` is what a command's writing can leave behind when it is ended: the one
answer that a single run's failure, its time limit (deadline.py) and a killed
watched child (single.py) all sweep.
"""

import contextlib
import os
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Tuple

from .errors import StrPath


def written_at(path: StrPath, strict: bool = False) -> Path:
    """The file a new file for `path` replaces, its temporary file made beside it:
    `path` itself, or (not `strict`) the file a symbolic link at `path` points to."""
    path = Path(path)
    if strict or not os.path.islink(str(path)):
        return path
    return Path(os.path.realpath(str(path)))


def new_partial(target: Path) -> Tuple[int, str]:
    """(fd, name) of a new temporary file beside `target` (a `written_at` answer), made
    here (O_EXCL) and named .NAME.HOST.PID.RANDOM.partial. Its mode is what any new file
    gets (0666 less the umask), as `target` would have had if written directly."""
    while True:
        tmp = partial_name(target)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:  # a 48-bit name taken: draw another
            continue


def partial_name(target: Path) -> str:
    """A new name for a temporary file beside `target`, named for this writer."""
    return str(target.parent / "{}{}.partial".format(_partial_prefix(target), os.urandom(6).hex()))


def _host() -> str:
    # The name socket.gethostname() gives, without importing socket (start-up time).
    try:
        return os.uname().nodename
    except AttributeError:  # pragma: no cover - not a POSIX system
        import socket

        return socket.gethostname()


def _partial_prefix(path: Path, pid: Optional[int] = None) -> str:
    # Who writes it is in the name, so that a later writer can tell an abandoned one.
    return ".{}.{}.{}.".format(path.name, _host(), pid or os.getpid())


def remove_abandoned(path: StrPath, strict: bool = False, writer: Optional[int] = None) -> None:
    """Remove temporary files left by killed writers of this host for `path` (a SIGKILL
    leaves no chance to clean up), where they wrote them (`written_at`: beside the file
    a symbolic link points to); a live writer's, or another host's, stay. `writer`: the
    pid of a writer known to be done (this process, its writing unwound): its files go,
    and only its."""
    target = written_at(path, strict)
    host = _host()
    for partial in target.parent.glob(".{}.{}.*.partial".format(target.name, host)):
        pid = partial.name[len(".{}.{}.".format(target.name, host)) :].split(".", 1)[0]
        if not pid.isdigit():
            continue
        if (int(pid) == writer) if writer is not None else not _alive(int(pid)):
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


def missing_folders(path: StrPath) -> List[Path]:
    """The folders above `path` that are not there yet, outermost first: those a writer
    of `path` makes, and removes again when it writes nothing."""
    missing: List[Path] = []
    folder = Path(path).parent
    while not os.path.exists(str(folder)) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def remove_made_folders(folders: Iterable[Path]) -> None:
    """Remove the folders a writer made (`missing_folders`), the deepest first, each only
    if empty: what another writer has put in one keeps it."""
    for folder in sorted(set(folders), key=lambda folder: len(folder.parts), reverse=True):
        try:
            os.rmdir(str(folder))
        except OSError:
            pass


class Leftovers:
    """What writing `outputs` (the files a command writes; "-", standard output, is
    none) can leave when the writer is ended: a temporary file beside where each is
    written (`written_at`), and the folders missing above each now (`missing_folders`,
    made by the writer). Worked out before anything is written."""

    def __init__(self, outputs: Iterable[StrPath], strict: bool = False):
        self.outputs = [Path(path) for path in outputs if str(path) != "-"]
        self.strict = strict
        self.folders = [folder for path in self.outputs for folder in missing_folders(path)]

    def sweep(self, writer: Optional[int] = None) -> None:
        """Remove the temporary files of `writer` (a pid; None: of any dead writer) for
        every output, and the folders made for them that are empty."""
        for path in self.outputs:
            remove_abandoned(path, self.strict, writer)
        remove_made_folders(self.folders)

    @contextlib.contextmanager
    def swept_on_failure(self) -> Iterator[None]:
        """Run the block, this process writing; if it fails (an error, Ctrl-C, a time
        limit), sweep what its writing left before the failure goes on."""
        try:
            yield
        except BaseException:
            self.sweep(writer=os.getpid())
            raise
