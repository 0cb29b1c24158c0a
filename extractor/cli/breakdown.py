"""The command that accounts for every cycle: `breakdown` (the work is
breakdown.command.run_breakdown's)."""

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from ..render import BREAKDOWN_FORMATS
from .app import (
    DEBUG,
    OUTPUT_OR_STDOUT,
    PROFILE_CHECKED,
    RULES,
    app,
    no_pva_option,
    timeout_option,
)
from .exits import report_errors, say

BREAKDOWN_HELP = (
    "Every cycle of an inference, by kind, stage, op and layer; or what changed, op by "
    "op, between two profiles.\n\n"
    "All cycles: the cycles of every step row of the window (softmax, exchanges, syncs and "
    "stream copies too), per IPU; the kinds, the stages, the ops and the layers each add up "
    "to them (docs/commands/breakdown.md)."
)

# --format's choices, from breakdown's registry of renderers (imported only when used);
# mypy, which takes no class made at run time as a type, sees an Enum.
if TYPE_CHECKING:
    BreakdownFormat = Enum
else:
    BreakdownFormat = BREAKDOWN_FORMATS.choices("BreakdownFormat")


@app.command("breakdown", help=BREAKDOWN_HELP)
def breakdown_command(
    profile: Path = PROFILE_CHECKED,
    candidate: Optional[Path] = typer.Argument(
        None,
        metavar="CANDIDATE",
        readable=False,
        help="Another profile.pop: what changed from PROFILE to it, op by op.",
    ),
    runs: List[int] = typer.Option(
        [],
        "--run",
        metavar="R",
        help="Break down inference R (1: the first), a window of its own; repeat it for "
        "more. Default: the first.",
    ),
    every_row: bool = typer.Option(
        False, "--all", help="One window of every step row of the trace."
    ),
    depth: int = typer.Option(
        5, "--depth", metavar="D", help="Layers are an op's first D path parts (1 to 64)."
    ),
    top: int = typer.Option(
        20, "--top", metavar="N", help="markdown: list the N largest ops and layers."
    ),
    output_format: BreakdownFormat = typer.Option(
        BREAKDOWN_FORMATS.default,
        "--format",
        "-f",
        case_sensitive=False,
        help="markdown (for a person), json (everything), csv (a line per table row) or "
        "folded (flame-graph stacks, one profile).",
    ),
    output: Optional[str] = OUTPUT_OR_STDOUT,
    rules_file: Optional[Path] = RULES,
    no_pva: bool = no_pva_option(
        "Without PopVision's Python API: tile_balance (which needs the tiles per IPU) is null."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors."),
    timeout: float = timeout_option("End the command if it takes longer, as failed; 0: no limit."),
    debug: bool = DEBUG,
):
    def account():
        from ..breakdown.command import run_breakdown
        from ..core.rules import load_rules
        from ..timelimit import check_timeout

        check_timeout(timeout)
        run_breakdown(
            [profile] if candidate is None else [profile, candidate],
            output,
            load_rules(rules_file),
            say,
            runs=runs,
            every_row=every_row,
            depth=depth,
            top=top,
            output_format=output_format.value,
            use_pva=not no_pva,
            quiet=quiet,
            timeout=timeout,
        )

    report_errors(account, debug)
