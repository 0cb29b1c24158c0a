"""The `extract` command: option declarations and dispatch to the library.

`extract PROFILE -o summary.json` runs the default command, `run`; other commands are
named (`extract --help` lists them). Each command's work is a function a user can import
(run/single.py, run/batch/command.py, compare/command.py, report/command.py, ...); the
modules here declare only the commands' options, one module per family: extraction.py
(run, merge, blocks), recordings.py (compare, table, report), diff.py (diff),
breakdown.py (breakdown), timeline.py (trace), memory.py (memory), diagnose.py
(inspect, stages, doctor), with the app and the shared options in app.py;
commandline.py reads the command line, exits.py reports an outcome.
"""

import sys
from typing import List, Optional

from . import breakdown, diagnose, diff, extraction, memory, recordings, timeline  # noqa: F401 - they declare the commands
from .app import app
from .exits import PROG, say

__all__ = ["PROG", "app", "main"]


def main(argv: Optional[List[str]] = None) -> None:
    """The console script's entry point."""
    try:
        app(args=argv, prog_name=PROG)
    except OSError as exc:
        # Only what typer writes itself gets here (--help, --version, on a full disk, say):
        # every command reports its own output's errors. One line, as theirs.
        from ..output import stdout_failed

        say("error", str(stdout_failed(exc)))
        sys.exit(1)
