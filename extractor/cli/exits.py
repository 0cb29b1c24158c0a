"""How a command's outcome reaches the user: one line on stderr for an error or a
warning, and the exit code (the error's, 128 + a signal, 130 for Ctrl-C, 1 for anything
unforeseen). The CLI runs every command's work through `report_errors`.

The CLI's declarations import this module: the error classes are imported when a
command runs, not to declare it."""

import traceback
from typing import TYPE_CHECKING, Any, Callable, Optional

import typer

if TYPE_CHECKING:
    from ..errors import ExtractorError

PROG = "extract"

#: The flag of each command that can do without pva (docs/pva.md).
NO_PVA = "--no-pva"


def say(kind: str, message: str) -> None:
    """One line on stderr: `extract: error: ...` or `extract: warning: ...`."""
    from ..errors import one_line

    typer.echo("{}: {}: {}".format(PROG, kind, one_line(message)), err=True)


def warn(message: str) -> None:
    say("warning", message)


def line(text: str) -> None:
    """A line on stderr as it is (a batch's last line, the budget's)."""
    typer.echo(text, err=True)


def stoppable(action: Callable[[], Any]) -> Callable[[], Any]:
    """`action` with SIGTERM and SIGHUP ending it as Ctrl-C does: one line, exit 128 +
    the signal, no temporary file left (atomic writes unwind)."""

    def run() -> Any:
        from ..stopping import raise_on_stop_signals

        raise_on_stop_signals()
        return action()

    return run


def in_the_commands_words(error: "ExtractorError") -> "ExtractorError":
    """`error` as the command line says it: a missing pva names the library's parameter
    (use_pva=False) in Python, and here the flag that every command reading pva facts
    declares (cli/app.py's no_pva_option): `add --no-pva`."""
    from ..errors import PvaMissingError

    if isinstance(error, PvaMissingError):
        return error.worded("add " + NO_PVA)
    return error


def report_errors(action: Callable[[], Any], debug: Optional[bool] = None) -> Any:
    """Run `action()`; an error becomes one line on stderr (in_the_commands_words) and
    the exit code it asks for (with a traceback first when `debug`); Ctrl-C exits 130.
    `debug` None: the command has no --debug option to suggest."""
    from ..errors import ExtractorError, one_line

    try:
        return action()
    except ExtractorError as exc:
        if debug:
            traceback.print_exc()
        say("error", str(in_the_commands_words(exc)))
        raise typer.Exit(exc.exit_code) from None
    except typer.Exit:
        raise
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM or SIGHUP (stopping.Stopped)
        signum = getattr(exc, "signum", None)
        if signum is None:
            say("error", "interrupted")
            raise typer.Exit(130) from None
        from ..stopping import stop_message

        say("error", stop_message(signum))
        raise typer.Exit(128 + signum) from None
    except Exception as exc:  # a bug or an input we did not foresee: still one line
        if debug:
            traceback.print_exc()
        hint = " (run with --debug for the traceback)" if debug is False else ""
        say("error", "unexpected failure: {}: {}{}".format(type(exc).__name__, one_line(exc), hint))
        raise typer.Exit(1) from None


def exit_with(code: int) -> None:
    """End the command with `code`, unless it is 0."""
    if code:
        raise typer.Exit(code)
