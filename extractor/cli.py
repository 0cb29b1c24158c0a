"""The `extract` command: a thin layer over the library.

`extract PROFILE -o summary.json` runs the default command, `run`; other commands are
named (`extract --help` lists them).
"""

import sys
import traceback
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperGroup

from . import __version__
from .errors import ExtractorError, one_line
from .output import STDOUT, write_output
from .render import summary_bytes
from .rules import load_rules
from .summary import summarize

PROG = "extract"


class DefaultCommandGroup(TyperGroup):
    """Runs `run` when the first word is not a command name nor a top-level option."""

    default_command = "run"
    top_level_options = ("--help", "-h", "--version")

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in self.top_level_options:
            args = [self.default_command] + list(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx):
        # Keep `run` first in `extract --help`, then the others as declared.
        return list(self.commands)


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


def say(kind: str, message: str) -> None:
    """One line on stderr: `extract: error: ...` or `extract: warning: ...`."""
    typer.echo("{}: {}: {}".format(PROG, kind, one_line(message)), err=True)


def _version(value: bool):
    if value:
        typer.echo("{} {}".format(PROG, __version__))
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
):
    pass


@app.command("run")
def run(
    profile: Path = typer.Argument(..., metavar="PROFILE", help="A profile.pop file."),
    output: str = typer.Option(STDOUT, "--output", "-o", metavar="FILE",
                               help="Where to write summary.json ('-' for standard output). "
                                    "Written atomically; missing folders are created."),
    rules_file: Optional[Path] = typer.Option(None, "--rules", metavar="FILE",
                                              help="A stage rules TOML file replacing the "
                                                   "installed stage_rules.toml."),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback on errors."),
):
    """Extract the summary of a profile (the default command)."""
    try:
        rules = load_rules(rules_file)
        if output != STDOUT and _same_file(Path(output), profile):
            say("error", "{}: the output would overwrite the profile".format(output))
            raise typer.Exit(2)
        extraction = summarize(profile, rules)
        for warning in extraction.warnings:
            say("warning", "{}: {}".format(profile, warning))
        write_output(output, summary_bytes(extraction.summary))
    except ExtractorError as exc:
        if debug:
            traceback.print_exc()
        say("error", str(exc))
        raise typer.Exit(exc.exit_code)
    except (typer.Exit, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug or an input we did not foresee: still one line
        if debug:
            traceback.print_exc()
        say("error", "{}: unexpected failure: {}: {} (run with --debug for the traceback)"
            .format(profile, type(exc).__name__, exc))
        raise typer.Exit(1)


def _same_file(output: Path, profile: Path) -> bool:
    try:
        return output.exists() and output.samefile(profile)
    except OSError:
        return False


def main(argv: Optional[List[str]] = None) -> None:
    """The console script's entry point."""
    app(args=argv, prog_name=PROG)
