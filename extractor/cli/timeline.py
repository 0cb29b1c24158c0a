"""The command that draws the execution: `trace` (the work is
timeline.command.run_trace's)."""

from pathlib import Path
from typing import List, Optional

import typer

from ..timelimit import DEFAULT_TIMEOUT
from .app import app, no_pva_option
from .exits import report_errors, say

TRACE_HELP = (
    "Write the execution as a Chrome/Perfetto trace: open it in ui.perfetto.dev.\n\n"
    "Every step row of the chosen inferences is a slice on its IPU's track, with tracks "
    "for the stages, the blocks and the inferences (docs/commands/trace.md). Several "
    "profiles: one process each, each shifted to start at 0."
)


@app.command("trace", help=TRACE_HELP)
def trace_command(
    profiles: List[Path] = typer.Argument(
        ..., metavar="PROFILE...", readable=False, help="profile.pop files (one process each)."
    ),
    output: Optional[str] = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE",
        help="Where to write the trace (JSON; required). Written atomically.",
    ),
    runs: List[int] = typer.Option(
        [],
        "--run",
        metavar="R",
        help="Show inference R (1: the first); repeat it for more. Default: the first.",
    ),
    every_row: bool = typer.Option(False, "--all", help="Show every step row of the trace."),
    clock_mhz: Optional[float] = typer.Option(
        None,
        "--clock-mhz",
        metavar="F",
        help="The IPU clock in MHz for the time axis (default: pva's clock, else 1 cycle "
        "is shown as 1 ns).",
    ),
    rules_file: Optional[Path] = typer.Option(
        None,
        "--rules",
        metavar="FILE",
        readable=False,
        help="A stage rules TOML file replacing the installed stage_rules.toml.",
    ),
    no_pva: bool = no_pva_option(
        "Without PopVision's Python API: no vertices nor max_exchange_code_bytes in "
        "the steps' args, and no clock from pva."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors."),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT,
        "--timeout",
        metavar="SECONDS",
        help="End the command if it takes longer, as failed; 0: no limit.",
    ),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback on errors."),
):
    def write():
        from ..core.rules import load_rules
        from ..errors import UsageError
        from ..timelimit import check_timeout
        from ..timeline.command import run_trace

        check_timeout(timeout)
        if output is None:
            raise UsageError("give the trace a file with -o FILE (a trace is not for a terminal)")
        run_trace(
            profiles,
            output,
            load_rules(rules_file),
            say,
            runs=runs,
            every_row=every_row,
            clock_mhz=clock_mhz,
            use_pva=not no_pva,
            quiet=quiet,
            timeout=timeout,
        )

    report_errors(write, debug)
