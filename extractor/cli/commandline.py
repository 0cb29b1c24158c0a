"""How the command line is read and shown: `run` as the default command, a mistyped
command name caught before it is taken for a path, help without a type beside flags, and
--version."""

import errno
import os
import sys
from typing import Any, Iterable, List, Optional

import typer
from typer.core import TyperGroup, TyperOption

from .. import __version__
from .exits import PROG, say


def typo_distance(a: str, b: str) -> int:
    """The number of typos between two words: letters missing, extra or wrong, and two
    neighbours swapped, each one (the optimal string alignment distance)."""
    previous2: List[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def mistyped_command(word: str, names: Iterable[str]) -> Optional[str]:
    """The command `word` is a typo of, or None. A word is a typo of a command when it is
    made of ASCII letters only (a path has a `/`, a `.`, a digit...), is not the name of
    an existing file or folder, and is one typo away from the name (two for a name of
    six letters or more); the nearest name wins, the first in `names` on a tie."""
    if not (word.isascii() and word.isalpha()) or os.path.lexists(word):
        return None
    lowered = word.lower()
    near = []
    for rank, name in enumerate(names):
        distance = typo_distance(lowered, name)
        if distance <= (2 if len(name) >= 6 else 1):
            near.append((distance, rank, name))
    return min(near)[2] if near else None


class DefaultCommandGroup(TyperGroup):
    """Runs `run` when the first word is not a command name nor a top-level option; a
    word that is a typo of a command name (`mistyped_command`) is a usage error."""

    default_command = "run"
    top_level_options = ("--help", "-h", "--version")

    def parse_args(self, ctx: Any, args: List[str]) -> List[str]:
        if args and args[0] not in self.commands and args[0] not in self.top_level_options:
            meant = mistyped_command(args[0], self.list_commands(ctx))
            if meant is not None:  # before anything is read or written
                say("error", "unknown command {!r} (did you mean {!r}?)".format(args[0], meant))
                raise typer.Exit(2)
            args = [self.default_command] + list(args)
        return super().parse_args(ctx, args)

    #: The order of `extract --help`: `run` first, then the others as a user meets them.
    order = (
        "run",
        "merge",
        "compare",
        "diff",
        "breakdown",
        "blocks",
        "memory",
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
