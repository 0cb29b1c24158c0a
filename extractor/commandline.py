"""How the command line is read and shown: `run` as the default command, help without a
type beside flags, and --version."""

import errno
import sys
from typing import Any, List

import typer
from typer.core import TyperGroup, TyperOption

from . import __version__
from .exits import PROG


class DefaultCommandGroup(TyperGroup):
    """Runs `run` when the first word is not a command name nor a top-level option."""

    default_command = "run"
    top_level_options = ("--help", "-h", "--version")

    def parse_args(self, ctx: Any, args: List[str]) -> List[str]:
        if args and args[0] not in self.commands and args[0] not in self.top_level_options:
            args = [self.default_command] + list(args)
        return super().parse_args(ctx, args)

    #: The order of `extract --help`: `run` first, then the others as a user meets them.
    order = (
        "run",
        "merge",
        "compare",
        "diff",
        "blocks",
        "table",
        "report",
        "trace",
        "inspect",
        "stages",
        "doctor",
    )

    def list_commands(self, ctx: Any) -> List[str]:
        rank = {name: number for number, name in enumerate(self.order)}
        return sorted(self.commands, key=lambda name: rank.get(name, len(rank)))


def hide_flag_types(option_class: Any) -> None:
    """typer's rich help shows `<bool>` in the type column of every flag (`--force
    <bool>`), as if it took a value; a flag takes none. Its column is left empty."""
    show_type = getattr(option_class, "display_type_rich", None)
    if show_type is None:  # an older typer shows no type there
        return

    def display_type_rich(self: Any, ctx: Any) -> Any:
        return None if getattr(self, "is_flag", False) else show_type(self, ctx)

    option_class.display_type_rich = display_type_rich


hide_flag_types(TyperOption)


def print_version(value: bool) -> None:
    """--version's callback: the version on standard output, then exit."""
    if value:
        if sys.stdout is None:  # `extract --version >&-`: typer would print nothing, exit 0
            raise OSError(errno.EBADF, "standard output is closed")
        typer.echo("{} {}".format(PROG, __version__))
        raise typer.Exit()
