"""Every output of a command checked before any is written: it can be written, it is not
one of the command's inputs, and no two options name it.

Every command's inputs come here: the files it names (profiles, summaries, budget
files), the rules it was given (`rules`: the file they were read from, the installed
one included) and what reading those reads (blocks.json, index files: `inputs`), so that
no output of any command is ever one of them (`check_outputs`; a batch's folder:
`check_batch_inputs`)."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple

from .batchnames import is_batch_file_name
from .errors import OutputError, StrPath, UsageError, shown_path
from .output import STDOUT, replaceable

if TYPE_CHECKING:
    from .core.rules import StageRules


def command_inputs(
    inputs: Iterable[StrPath] = (), rules: Optional["StageRules"] = None
) -> List[str]:
    """The files a command reads: `inputs`, and the file `rules` were read from (none for
    rules made in memory, parse_rules)."""
    read = [str(path) for path in inputs]
    if rules is not None and rules.content:  # load_rules keeps what it read, and where
        read.append(rules.source)
    return read


def _over_input(option: str) -> str:
    return "{} would write over an input of this command: write it elsewhere".format(option)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_target(path: StrPath) -> None:
    """OutputError unless `path` can be written as `write_output` writes it: nothing is
    there, or a regular file (a symbolic link to one), a character device or a FIFO; and
    the folder it goes in is a folder or can be made. Checks, writes nothing."""
    path = Path(path)
    replaceable(path, direct=True)  # a folder, a socket, a block device: refused
    folder = path.parent
    while not os.path.lexists(str(folder)) and folder != folder.parent:
        folder = folder.parent
    if os.path.exists(str(folder)) and not os.path.isdir(str(folder)):
        raise OutputError(
            path, "cannot write: a part of {} is a file, not a folder".format(path.parent)
        )


def check_outputs(
    targets: Iterable[Tuple[str, Optional[StrPath]]],
    inputs: Iterable[StrPath] = (),
    folders: Iterable[StrPath] = (),
    rules: Optional["StageRules"] = None,
) -> None:
    """Check every output of a command before any is written, so that a command fails
    whole or not at all. `targets`: (option, path) pairs ("-": standard output, passed
    over). UsageError when an output is one of the command's `inputs` (files it reads)
    or the file its `rules` came from, is named like a batch's own file inside one of the
    `folders` it reads, or is given twice; OutputError (check_target) when it cannot be
    written."""
    read: Dict[str, StrPath] = {}
    for given in command_inputs(inputs, rules):
        read.setdefault(os.path.realpath(given), given)
    seen: Dict[str, str] = {}
    real_folders = [os.path.realpath(str(folder)) for folder in folders]
    for option, path in targets:
        if path is None or str(path) == STDOUT:
            continue
        real = os.path.realpath(str(path))
        if real in seen:
            raise UsageError(path, "{} and {} name the same file".format(seen[real], option))
        seen[real] = option
        if real in read or any(_same(path, other) for other in read.values()):
            raise UsageError(path, _over_input(option))
        if is_batch_file_name(os.path.basename(real)) and any(
            _inside(real, folder) for folder in real_folders
        ):
            raise UsageError(
                path,
                "{} would write a batch's own file ({}) into a folder "
                "this command reads: write it elsewhere".format(
                    option, shown_path(os.path.basename(real))
                ),
            )
        check_target(path)


def _same(path: StrPath, other: StrPath) -> bool:
    try:
        return os.path.samefile(str(path), str(other))
    except OSError:
        return False


def check_batch_inputs(
    outdir: StrPath, inputs: Iterable[StrPath] = (), rules: Optional["StageRules"] = None
) -> None:
    """UsageError when a batch writing into `outdir` would write over one of its inputs
    (its profiles, its rules' file): one named like a batch's own file inside it."""
    folder = os.path.realpath(str(outdir))
    for given in command_inputs(inputs, rules):
        real = os.path.realpath(given)
        if is_batch_file_name(os.path.basename(real)) and _inside(real, folder):
            raise UsageError(given, _over_input("-o"))
