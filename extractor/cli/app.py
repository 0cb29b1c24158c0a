"""The `extract` application: the Typer app, --version, and the options several commands
share (declared once, used by the command modules beside this one)."""

from typing import Any

import typer

from ..timelimit import DEFAULT_TIMEOUT
from .commandline import DefaultCommandGroup, print_version
from .exits import NO_PVA, PROG

app = typer.Typer(
    cls=DefaultCommandGroup,
    name=PROG,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Summarise Graphcore PopVision profiles (profile.pop) as exact JSON.\n\n"
    "extract PROFILE -o summary.json runs the default command, run.",
)


@app.callback()
def main_options(
    version: bool = typer.Option(
        False,
        "--version",
        callback=print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
):
    pass


# ---- options shared by several commands ------------------------------------------------

# readable=False: an unreadable file is reported by extract in one line (exit 1), not by
# click as a usage error in a box.
RULES = typer.Option(
    None,
    "--rules",
    metavar="FILE",
    readable=False,
    help="A stage rules TOML file replacing the installed stage_rules.toml.",
)
DEBUG = typer.Option(False, "--debug", help="Show a traceback on errors.")
RECORDINGS = typer.Argument(
    ...,
    metavar="SUMMARY|DIR...",
    help="summary.json files, or batch output folders (each summary.json below a folder is "
    "one recording, named by its folder).",
)
LABELS = typer.Option(
    [],
    "--label",
    "-l",
    metavar="NAME",
    help="Name the recordings in order, instead of by their folders; repeat it, one per "
    "recording (the first ones if fewer).",
)
BUDGET = typer.Option(
    None,
    "--budget",
    metavar="FILE",
    readable=False,
    help="A budget file (TOML): how much worse than the baseline (the first recording) "
    "each metric may be. Checked values are marked; exit code 3 when a check fails.",
)
PROFILE = typer.Argument(..., metavar="PROFILE", help="A profile.pop file.")
#: A profile the command checks itself (a one-line error, not typer's, when unreadable).
PROFILE_CHECKED = typer.Argument(..., metavar="PROFILE", readable=False, help="A profile.pop file.")
#: -o of a command whose output may go to a terminal.
OUTPUT_OR_STDOUT = typer.Option(
    None,
    "--output",
    "-o",
    metavar="FILE",
    help="Where to write ('-' or nothing: standard output). Written atomically.",
)
AS_JSON = typer.Option(False, "--json", help="Print JSON for machines.")


def no_pva_option(help_text: str) -> Any:
    """--no-pva, declared so by every command that reads pva facts: without pva and
    without it, such a command fails, and its error names it (docs/pva.md)."""
    return typer.Option(False, NO_PVA, help=help_text)


def timeout_option(help_text: str) -> Any:
    return typer.Option(DEFAULT_TIMEOUT, "--timeout", metavar="SECONDS", help=help_text)
