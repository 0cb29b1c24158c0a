"""The commands that read recordings (summary.json files and batch folders): `compare`,
`table` and `report`."""

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from ..render import COMPARE_FORMATS, TABLE_FORMATS
from ..statchoices import FIRST, STATS
from .app import BUDGET, DEBUG, LABELS, RECORDINGS, app
from .exits import exit_with, line, report_errors, stoppable, warn

# --format's choices, from the commands' registries of renderers (imported only when used);
# mypy, which takes no class made at run time as a type, sees an Enum.
if TYPE_CHECKING:
    CompareFormat = Enum
    TableFormat = Enum
    BlockStat = Enum
else:
    CompareFormat = COMPARE_FORMATS.choices("CompareFormat")
    TableFormat = TABLE_FORMATS.choices("TableFormat")
    BlockStat = Enum("BlockStat", [(name, name) for name in STATS], type=str)


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
        COMPARE_FORMATS.default,
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
        FIRST,
        "--stat",
        case_sensitive=False,
        help="The stage rows: the first block's kernel cycles (first, from summary.json), or "
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
    """Compare recordings: one table, recordings as columns, changes against the first
    (the baseline; a folder's summaries without first-body kernels passed over)."""
    from ..compare.command import run_compare

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
        TABLE_FORMATS.default,
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
    from ..report.command import run_table

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
        help="The recording changes are measured against: its label, or a run of its "
        "folder names that names one recording (golden for golden/inference). Default: "
        "the first, passing over a folder's summaries without first-body kernels.",
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
    from ..report.command import run_report

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
