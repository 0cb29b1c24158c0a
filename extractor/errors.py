"""The errors extract reports as one line: `<source>: <problem>`."""

import os
import re
from typing import Any, Optional, Union

from .escaping import terminal_text

#: A path as the commands take one: text, or a pathlib.Path (a string here: os.PathLike
#: takes a parameter only from Python 3.9 on).
StrPath = Union[str, "os.PathLike[str]"]


# `path`: a StrPath. Any for now: the CLI (not under disallow_untyped_defs) passes an
# Optional[Path] that only its own earlier checks make sure is not None.
def shown_path(path: Any) -> str:
    """A path as people and JSON see it. Paths are bytes on POSIX: Python carries the
    bytes that are not UTF-8 as lone surrogates (surrogateescape), which no terminal,
    JSON or UTF-8 file can hold; here each such byte becomes `\\xNN` (`a\\xff`).
    Only for showing: the file system is always given the path itself."""
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name can give: shown as \udNNN
        return os.fspath(path).encode("utf-8", "backslashreplace").decode("utf-8")


def one_line(text: object) -> str:
    """Fold any message (SQLite's, pva's) into a single line of printable text (the
    paths in it as `shown_path` shows them). Runs of white space become one space; any
    other control character (ESC, which starts a terminal's escape sequences), and the
    bidirectional overrides, which a name or a path may hold, are written as
    `escaping.terminal_text` writes them (`\\x1b`, `\\u202e`)."""
    return terminal_text(re.sub(r"\s+", " ", shown_path(str(text))).strip())


class ExtractorError(Exception):
    """A problem with one input or output, told as `<source>: <problem>`."""

    exit_code = 1

    def __init__(self, source: StrPath, problem: str):
        super().__init__(source, problem)
        self.source = shown_path(source)
        self.problem = one_line(problem)

    def __str__(self) -> str:
        if not self.source:  # a problem of the command line as a whole
            return self.problem
        return "{}: {}".format(self.source, self.problem)


class ProfileError(ExtractorError):
    """The profile cannot be read: not SQLite, truncated, a table missing, pva refused it."""


class RulesError(ExtractorError):
    """The stage rules file is not usable. A usage error, so exit code 2."""

    exit_code = 2


#: How a Python caller does without pva: every library function that reads pva facts
#: takes `use_pva` (docs/pva.md).
LIBRARY_WITHOUT_PVA = "pass use_pva=False"


class PvaMissingError(ExtractorError):
    """PopVision's Python API (`pva`) cannot be imported: `pva: <how to enable it, or do
    without it>`, with `cause` (the ImportError's words) at the end. `way_out` says how
    whoever asked does without pva: the library's parameter by default; the command line
    words it with its command's flag (`worded`). None: no way out is said."""

    def __init__(self, cause: str = "", way_out: Optional[str] = LIBRARY_WITHOUT_PVA):
        self.cause = cause
        self.way_out = way_out
        problem = (
            "PopVision's Python API was not found: it comes only with the Poplar SDK; "
            "enable it with 'source <poplar_sdk>/enable.sh' and use the SDK's Python"
        )
        if way_out is not None:
            problem += ", or {} to do without the pva facts".format(way_out)
        if cause:
            problem += " ({})".format(cause)
        super().__init__("pva", problem)

    def worded(self, way_out: Optional[str]) -> "PvaMissingError":
        """The same error, with another way out."""
        return PvaMissingError(self.cause, way_out)


class OutputError(ExtractorError):
    """A summary could not be written."""


class SummaryFileError(ExtractorError):
    """A file given to `compare` is not a summary.json (or cannot be read)."""


class BlocksFileError(ExtractorError):
    """A blocks.json beside a summary cannot be read, or is not as docs/formats/blocks.md
    describes it."""


class DerivedFileError(ExtractorError):
    """A breakdown.json or memory.json beside a summary cannot be read, or is not a JSON
    object."""


class CompareError(ExtractorError):
    """Recordings that cannot be compared (nothing in common)."""


class UsageError(ExtractorError):
    """The command line asks for something extract will not do (an output that is one of
    the command's own inputs, say). Exit code 2. `UsageError(message)` for a problem
    of the command line as a whole, `UsageError(source, problem)` for one input."""

    exit_code = 2

    def __init__(self, source: Any, problem: Optional[str] = None) -> None:
        if problem is None:
            source, problem = "", source
        super().__init__(source, problem)
