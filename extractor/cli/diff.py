"""The command that explains a difference: `diff` (the work is diff.command.run_diff's)."""

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ..render import DIFF_FORMATS
from .app import DEBUG, OUTPUT_OR_STDOUT, RULES, app, no_pva_option, timeout_option
from .exits import report_errors, say

DIFF_HELP = (
    "Explain why two recordings differ: one body of each profile, step by step.\n\n"
    "Steps are matched by kind and name (compiler ids masked); every cycle of the "
    "difference is put on a step that changed, was added or was removed, and the parts "
    "add up to the whole (docs/commands/diff.md)."
)


# --format's choices, from diff's registry of renderers (imported only when used); mypy,
# which takes no class made at run time as a type, sees an Enum.
if TYPE_CHECKING:
    DiffFormat = Enum
else:
    DiffFormat = DIFF_FORMATS.choices("DiffFormat")


@app.command("diff", help=DIFF_HELP)
def diff_command(
    base: Path = typer.Argument(..., metavar="BASE", readable=False, help="A profile.pop file."),
    candidate: Path = typer.Argument(
        ...,
        metavar="CANDIDATE",
        readable=False,
        help="Another profile.pop, or the same one (to compare two of its blocks).",
    ),
    block: Optional[str] = typer.Option(
        None,
        "--block",
        metavar="R:K",
        help="The body of run R, block K (as blocks.json numbers them) in both profiles. "
        "Default: each profile's first body, the one summary.json describes.",
    ),
    candidate_block: Optional[str] = typer.Option(
        None,
        "--candidate-block",
        metavar="R:K",
        help="The candidate's body, when it is not --block's.",
    ),
    rules_file: Optional[Path] = RULES,
    no_pva: bool = no_pva_option(
        "Without PopVision's Python API: vertices and exchange code are neither read nor compared."
    ),
    output_format: DiffFormat = typer.Option(
        DIFF_FORMATS.default,
        "--format",
        "-f",
        case_sensitive=False,
        help="markdown (for a person), json (everything) or csv (a line per step that differs).",
    ),
    top: int = typer.Option(
        20, "--top", metavar="N", help="markdown: list the N largest step changes."
    ),
    output: Optional[str] = OUTPUT_OR_STDOUT,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors."),
    timeout: float = timeout_option("End the command if it takes longer, as failed; 0: no limit."),
    debug: bool = DEBUG,
):
    def explain():
        from ..core.rules import load_rules
        from ..diff.command import run_diff
        from ..timelimit import check_timeout

        check_timeout(timeout)
        run_diff(
            base,
            candidate,
            output,
            load_rules(rules_file),
            say,
            block=block,
            candidate_block=candidate_block,
            use_pva=not no_pva,
            output_format=output_format.value,
            top=top,
            quiet=quiet,
            timeout=timeout,
        )

    report_errors(explain, debug)
