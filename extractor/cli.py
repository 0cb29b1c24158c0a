"""The `extract` command: option declarations and dispatch to the library.

`extract PROFILE -o summary.json` runs the default command, `run`; other commands are
named (`extract --help` lists them). Each command's work is a function a user can
import (single.py, batch/command.py, compare/command.py, report/command.py, ...); here
are only their options, the one-line error reporting and the exit codes.
"""

import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from .commandline import DefaultCommandGroup, print_version
from .core.rules import load_rules
from .exits import PROG, exit_with, line, report_errors, say, stoppable, warn
from .output import print_answer
from .single import DEFAULT_TIMEOUT
from .tracecli import TRACE_HELP, trace_command

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
    help="A budget file (TOML): how much worse than the first recording each metric may "
    "be. Checked values are marked; exit code 3 when a check fails.",
)
PROFILE = typer.Argument(..., metavar="PROFILE", help="A profile.pop file.")
AS_JSON = typer.Option(False, "--json", help="Print JSON for machines.")


def _timeout_option(help_text: str):
    return typer.Option(DEFAULT_TIMEOUT, "--timeout", metavar="SECONDS", help=help_text)


# ---- the commands ----------------------------------------------------------------------


@app.command("run")
def run(
    paths: List[Path] = typer.Argument(
        ...,
        metavar="PATH...",
        readable=False,
        help="A profile.pop, or folders searched for profile.pop files (a batch).",
    ),
    output: Optional[str] = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE|DIR",
        help="One profile: where to write summary.json ('-' or nothing: standard output). "
        "A batch: the output folder, mirroring the input tree. Written atomically; "
        "missing folders are created.",
    ),
    rules_file: Optional[Path] = RULES,
    jobs: Optional[int] = typer.Option(
        None,
        "--jobs",
        "-j",
        min=1,
        metavar="N",
        help="Batch: profiles extracted at once (default: the CPUs this process may use).",
    ),
    force: bool = typer.Option(False, "--force", help="Batch: extract even up-to-date profiles."),
    shard: Optional[str] = typer.Option(
        None,
        "--shard",
        metavar="K/N|slurm",
        help="Batch: take only share K of N of the sorted profiles (1 <= K <= N); 'slurm' "
        "reads it from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT.",
    ),
    no_pva: bool = typer.Option(
        False,
        "--no-pva",
        help="Extract without PopVision's Python API: the three pva facts "
        "(attention_exchanges, each kernel's max_exchange_code_bytes and vertices) "
        "are null.",
    ),
    csv: bool = typer.Option(
        False,
        "--csv",
        help="Also write steps.csv (every step row) and first-body.csv (the first body's "
        "rows) beside each summary.json: same pass, written atomically, RFC 4180.",
    ),
    blocks: bool = typer.Option(
        False,
        "--blocks",
        help="Also write blocks.json (every block of every inference: cycles per stage, "
        "statistics) beside each summary.json, from the same pass.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Print only errors (and a batch's last line)."
    ),
    timeout: float = _timeout_option(
        "End the extraction of a profile that takes longer, as failed (a batch goes on "
        "with the others); 0: no limit."
    ),
    debug: bool = DEBUG,
):
    """Extract summaries: one profile to a file, or a batch to a folder (default)."""

    def extract():
        from .errors import ProfileError, UsageError
        from .single import check_timeout, run_single

        check_timeout(timeout)
        rules = load_rules(rules_file)
        if len(paths) == 1 and paths[0].is_dir() and paths[0].suffix == ".pop":
            # A folder named like a profile is a mistake, not a batch to write to -o.
            raise ProfileError(paths[0], "is a directory, not a profile")
        if len(paths) == 1 and not paths[0].is_dir():
            if jobs is not None or force or shard is not None:
                raise UsageError(
                    "--jobs, --force and --shard are for a batch (a folder or several profiles)"
                )
            run_single(
                paths[0],
                output,
                rules,
                say,
                quiet=quiet,
                use_pva=not no_pva,
                csv=csv,
                blocks=blocks,
                timeout=timeout,
            )
            return 0
        # Imported here: a single profile does not need the batch machinery
        # (multiprocessing and the rest take a tenth of extract's start-up).
        from .batch.command import run_batch_command

        return run_batch_command(
            paths,
            output,
            rules,
            jobs=jobs,
            force=force,
            shard_text=shard,
            quiet=quiet,
            use_pva=not no_pva,
            csv=csv,
            timeout=timeout,
            blocks=blocks,
            line=line,
        )

    exit_with(report_errors(extract, debug))


@app.command("merge")
def merge(
    outdir: Path = typer.Argument(
        ..., metavar="OUTDIR", help="A batch output folder with shard index files."
    ),
):
    """Fold the index files of a batch's shards into OUTDIR/index.jsonl."""
    from .batch.index import merge_locked
    from .errors import UsageError, shown_path

    def fold():
        if not outdir.is_dir():
            raise UsageError(outdir, "not a folder")
        return merge_locked(outdir)

    count = report_errors(stoppable(fold))
    line("{}: {} profiles".format(shown_path(outdir / "index.jsonl"), count))


# The choices of options, as the modules that use them name them (compare.formats.FORMATS,
# compare.blockstats.STATS, blockformats.WRITERS, report.table.FORMATS): here, because the
# CLI must not import those modules to start.


class CompareFormat(str, Enum):
    markdown, csv, json = "markdown", "csv", "json"


class BlockStat(str, Enum):
    first, min, median, mean, max = "first", "min", "median", "mean", "max"


@app.command("compare")
def compare_command(
    paths: List[Path] = RECORDINGS,
    labels: List[str] = LABELS,
    clock_mhz: Optional[float] = typer.Option(
        None,
        "--clock-mhz",
        metavar="F",
        help="The IPU clock in MHz, to show device spans in milliseconds too (without "
        "it: cycles only).",
    ),
    output_format: CompareFormat = typer.Option(
        CompareFormat.markdown,
        "--format",
        "-f",
        case_sensitive=False,
        help="The table's format on standard output.",
    ),
    chart: Optional[Path] = typer.Option(
        None,
        "--chart",
        metavar="FILE.svg",
        help="Also draw the kernel stages as grouped bars, one colour per recording, "
        "to an SVG file.",
    ),
    stat: BlockStat = typer.Option(
        BlockStat.first,
        "--stat",
        case_sensitive=False,
        help="The stage rows: the first block's cycles (first, from summary.json), or "
        "that statistic over every block, from the blocks.json beside each "
        "summary.json (a batch run with --blocks).",
    ),
    budget_file: Optional[Path] = BUDGET,
    junit: Optional[Path] = typer.Option(
        None,
        "--junit",
        metavar="FILE",
        help="With --budget: also write the checks as a JUnit XML report (atomically).",
    ),
    debug: bool = DEBUG,
):
    """Compare recordings: one table, recordings as columns, changes against the first."""
    from .compare.command import run_compare

    exit_with(
        report_errors(
            stoppable(
                lambda: run_compare(
                    paths,
                    labels,
                    clock_mhz=clock_mhz,
                    output_format=output_format.value,
                    chart=chart,
                    stat=stat.value,
                    budget_file=budget_file,
                    junit=junit,
                    warn=warn,
                    line=line,
                )
            ),
            debug,
        )
    )


class BlocksFormat(str, Enum):
    json, csv, markdown = "json", "csv", "markdown"


@app.command(
    "blocks",
    help=(
        "Every block of every inference: cycles per stage of each body, and statistics.\n\n"
        "Writes blocks.json (docs/formats/blocks.md), or its CSV, or a markdown table of the "
        "statistics over the blocks. Reads only SQL (no pva needed)."
    ),
)
def blocks_command(
    profile: Path = typer.Argument(
        ..., metavar="PROFILE", readable=False, help="A profile.pop file."
    ),
    output: Optional[str] = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE",
        help="Where to write ('-' or nothing: standard output). Written atomically.",
    ),
    output_format: BlocksFormat = typer.Option(
        BlocksFormat.json,
        "--format",
        "-f",
        case_sensitive=False,
        help="json (blocks.json), csv (one line per block) or markdown (the statistics).",
    ),
    rules_file: Optional[Path] = RULES,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors."),
    timeout: float = _timeout_option(
        "End the extraction if it takes longer, as failed; 0: no limit."
    ),
    debug: bool = DEBUG,
):
    def extract():
        from .single import check_timeout, run_blocks

        check_timeout(timeout)
        run_blocks(
            profile,
            output,
            output_format.value,
            load_rules(rules_file),
            say,
            quiet=quiet,
            timeout=timeout,
        )

    report_errors(extract, debug)


class TableFormat(str, Enum):
    csv, jsonl = "csv", "jsonl"


@app.command("table")
def table_command(
    paths: List[Path] = RECORDINGS,
    output: Optional[str] = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE",
        help="Where to write the table ('-' or nothing: standard output); written atomically.",
    ),
    labels: List[str] = LABELS,
    table_format: TableFormat = typer.Option(
        TableFormat.csv,
        "--format",
        "-f",
        case_sensitive=False,
        help="csv (RFC 4180) or jsonl (one JSON object per line).",
    ),
    debug: bool = DEBUG,
):
    """One line per recording and metric (recording, profile, metric, value): a long
    table for pandas, DuckDB or a spreadsheet (a text cell that a spreadsheet would run as a
    formula, such as =2+3, gets a leading ')."""
    from .report.command import run_table

    report_errors(
        stoppable(lambda: run_table(paths, labels, output, table_format.value, warn)), debug
    )


@app.command("report")
def report_command(
    paths: List[Path] = RECORDINGS,
    output: Optional[str] = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE.html",
        help="Where to write the page ('-' or nothing: standard output); written atomically.",
    ),
    labels: List[str] = LABELS,
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        metavar="LABEL",
        help="The recording changes are measured against (default: the first).",
    ),
    budget_file: Optional[Path] = typer.Option(
        None,
        "--budget",
        metavar="FILE",
        readable=False,
        help="A budget file: the page shows each check's status, as extract compare "
        "--budget decides it (the exit code does not: use compare as the gate).",
    ),
    title: Optional[str] = typer.Option(None, "--title", metavar="TEXT", help="The page's title."),
    debug: bool = DEBUG,
):
    """One self-contained HTML page for a batch: a sortable table with changes against
    a baseline, a chart of cycles per stage, blocks heat maps, failures, warnings."""
    from .report.command import run_report

    report_errors(
        stoppable(
            lambda: run_report(
                paths,
                labels,
                output,
                baseline=baseline,
                budget_file=budget_file,
                title=title,
                warn=warn,
            )
        ),
        debug,
    )


@app.command(
    "inspect",
    help=(
        "Show a profile's tables, counts and columns, and what pva says of it.\n\n"
        "Lists the SQLite tables with row counts (large tables: a cheap estimate, marked as "
        "such) and columns, whether the tables and columns the extractor reads are there, "
        "whether pva is importable, and the Poplar and profile format versions pva reads. "
        "For a profile extract cannot read: send us its --json output."
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
    no_pva: bool = typer.Option(
        False, "--no-pva", help="Do not import PopVision's Python API (pva)."
    ),
):
    from .diagnose.inspection import inspect_profile, inspect_text

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
    from .diagnose.stagecheck import check_stages, stages_text

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
        "rows per step against the IPU count, and the per-tile variables "
        "(autoReport.outputLoweredVars). Each check is ok, warn, fail or skipped (without "
        "pva: the pva checks), with what it means for the summary. Exit code 1 when a check "
        "fails. Send us the --json output."
    ),
)
def doctor_command(
    profile: Path = typer.Argument(..., metavar="PROFILE", help="A profile.pop file."),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON for machines (the format is extract-doctor/1)."
    ),
):
    from .diagnose.doctor import doctor_text, run_checks

    answer = report_errors(stoppable(lambda: run_checks(profile)))
    report_errors(lambda: print_answer(answer, as_json, doctor_text))
    if not answer["ok"]:
        raise typer.Exit(1)


app.command("trace", help=TRACE_HELP)(trace_command)


def main(argv: Optional[List[str]] = None) -> None:
    """The console script's entry point."""
    try:
        app(args=argv, prog_name=PROG)
    except OSError as exc:
        # Only what typer writes itself gets here (--help, --version, on a full disk, say):
        # every command reports its own output's errors. One line, as theirs.
        from .output import stdout_failed

        say("error", str(stdout_failed(exc)))
        sys.exit(1)
