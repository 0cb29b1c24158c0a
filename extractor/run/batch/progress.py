"""How a batch reports itself: a rich progress bar on a terminal, plain lines elsewhere.

Every reporter prints errors as `extract: error: ...` lines on stderr; the plain one
adds one line per finished profile, the quiet one nothing else.
"""

import sys

from ...escaping import terminal_text
from .run import FAILED, OK

PROG = "extract"


def _error_line(entry: dict) -> str:
    return "{}: error: {}".format(PROG, entry.get("reason", entry["profile"]))


def _warning_lines(entry: dict):
    for warning in entry.get("warnings") or ():
        yield "{}: warning: {}: {}".format(PROG, entry["profile"], warning)


class QuietReporter:
    """Errors only."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr

    def print(self, line: str) -> None:
        # A profile's path or warning may hold any character: none reaches the terminal
        # as a control sequence.
        self.stream.write(terminal_text(line) + "\n")
        self.stream.flush()

    def start(self, total: int) -> None:
        self.total, self.done = total, 0

    def started(self, item) -> None:
        pass

    def finished(self, entry: dict) -> None:
        self.done += 1
        if entry["status"] == FAILED:
            self.print(_error_line(entry))

    def close(self) -> None:
        pass


class PlainReporter(QuietReporter):
    """One line per finished profile, for logs and pipes."""

    def finished(self, entry: dict) -> None:
        self.done += 1
        if entry["status"] == FAILED:
            self.print(_error_line(entry))
            return
        for line in _warning_lines(entry):
            self.print(line)
        arrow = "->" if entry["status"] == OK else "=="
        self.print(
            "[{}/{}] {}: {} {} {}".format(
                self.done, self.total, entry["status"], entry["profile"], arrow, entry["output"]
            )
        )


class RichReporter(PlainReporter):
    """A progress bar: profiles done of total, the current file, elapsed and remaining."""

    def __init__(self, console):
        super().__init__()
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]extract"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=True,
        )
        self.console = console
        self.running = []

    def print(self, line: str) -> None:
        self.console.print(terminal_text(line), markup=False, highlight=False, soft_wrap=True)

    def start(self, total: int) -> None:
        super().start(total)
        self.task = self.progress.add_task("", total=total)
        self.progress.start()

    def started(self, item) -> None:
        self.running.append(item.label)
        self._describe()

    def finished(self, entry: dict) -> None:
        if entry["profile"] in self.running:
            self.running.remove(entry["profile"])
        if entry["status"] == FAILED:
            self.print(_error_line(entry))
        else:
            for line in _warning_lines(entry):
                self.print(line)
        self.done += 1
        self.progress.update(self.task, completed=self.done)
        self._describe()

    def _describe(self) -> None:
        self.progress.update(self.task, description=", ".join(self.running[-2:]))

    def close(self) -> None:
        self.progress.stop()
