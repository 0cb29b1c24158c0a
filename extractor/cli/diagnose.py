"""The commands that look inside a profile: `inspect`, `stages` and `doctor`."""

from pathlib import Path
from typing import Optional

import typer

from .app import AS_JSON, PROFILE, app, no_pva_option
from .exits import report_errors, say, stoppable


@app.command(
    "inspect",
    help=(
        "Show a profile's tables, counts and columns, and what pva says of it.\n\n"
        "Lists the SQLite tables with row counts (large tables: a cheap estimate, marked as "
        "such) and columns, whether the tables and columns the extractor reads are there, "
        "whether pva is importable, and the Poplar and profile format versions pva reads. "
        "For a profile extract cannot read: open an issue in the repository you got "
        "extractor from, with its --json output attached."
    ),
)
def inspect_command(
    profile: Path = PROFILE,
    as_json: bool = AS_JSON,
    exact: bool = typer.Option(
        False,
        "--exact",
        help="Count every table's rows exactly (may read the whole file); by default "
        "large tables get a cheap estimate, marked as such.",
    ),
    no_pva: bool = no_pva_option("Do not import PopVision's Python API (pva)."),
):
    from ..diagnose.inspection import inspect_profile, inspect_text
    from ..output import print_answer

    answer = report_errors(
        stoppable(lambda: inspect_profile(profile, exact=exact, use_pva=not no_pva))
    )
    report_errors(lambda: print_answer(answer, as_json, inspect_text))


@app.command(
    "stages",
    help=(
        "Check how stage rules cut a profile, to adapt them to a model's names.\n\n"
        "Per stage: the step rows, distinct names and cycles it took, and why a stage took "
        "nothing; the most common names no rule matched; what each selector found. Reads only "
        "SQL (no pva needed)."
    ),
)
def stages_command(
    profile: Path = typer.Argument(..., metavar="PROFILE", help="A profile.pop file."),
    rules_file: Optional[Path] = typer.Option(
        None,
        "--rules",
        metavar="FILE",
        help="A stage rules TOML file to check (default: the installed stage_rules.toml).",
    ),
    top: int = typer.Option(
        10, "--top", min=0, metavar="N", help="How many of the most common unmatched names to list."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
):
    from ..core.rules import load_rules
    from ..diagnose.stagecheck import check_stages, stages_text
    from ..output import print_answer

    answer = report_errors(
        stoppable(lambda: check_stages(profile, load_rules(rules_file), top=top))
    )
    report_errors(lambda: print_answer(answer, as_json, stages_text))


@app.command(
    "doctor",
    help=(
        "Check that extract reads a profile right: its SQL against pva, check by check.\n\n"
        "Cross-checks what the summary assumes: that pva's program ids and compute set "
        "indices are the profile's, the type of pva's code bytes, how pva's lists behave, "
        "rows per step against the IPU count, the per-tile variables "
        "(autoReport.outputLoweredVars), and whether the compute sets inference 1 executes "
        "twice or more took different cycles (a warning when none did: statistics over "
        "blocks would then show no variance by construction). Each check is ok, warn, fail "
        "or skipped (without pva: the pva checks), with what it means for the summary. Exit "
        "code 1 when a check fails. To report one: open an issue in the repository you got "
        "extractor from, with the --json output attached."
    ),
)
def doctor_command(
    profile: Path = typer.Argument(..., metavar="PROFILE", help="A profile.pop file."),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON for machines (the format is extract-doctor/1)."
    ),
):
    from ..diagnose.doctor import doctor_text, run_checks
    from ..output import print_answer

    answer = report_errors(stoppable(lambda: run_checks(profile, say=say)))
    report_errors(lambda: print_answer(answer, as_json, doctor_text))
    if not answer["ok"]:
        raise typer.Exit(1)
