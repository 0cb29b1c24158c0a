"""`extract compare`: read the recordings (and the budget file, first), compare them,
render the table, write the chart and the JUnit report, and decide the exit code."""

from pathlib import Path
from typing import Callable, List, Optional, Sequence

from ..clock import check_clock_option
from ..errors import UsageError, shown_path
from ..output import STDOUT, write_output

#: Exit code of a comparison whose budget check failed.
GATE_FAILED = 3


def read_recordings(
    paths: Sequence,
    labels: Sequence[str],
    outputs,
    inputs=(),
    warn: Callable[[str], None] = lambda text: None,
    gate: bool = False,
):
    """The recordings of compare, table and report: read (a bad --label being a usage
    error), the outputs checked against them before anything is written (never one of
    the inputs: targets.check_outputs), and what their batch's index says of each told
    (provenance.tell_origins: `warn`ings; with `gate`, an error)."""
    from ..outputchecks import check_outputs
    from ..readback.provenance import tell_origins
    from ..readback.recordings import files_read, folders_read, load_recordings

    try:
        recordings = load_recordings(paths, labels)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_outputs(outputs, files_read(recordings) + list(inputs), folders_read(paths, recordings))
    tell_origins(recordings, warn, gate=gate)
    return recordings


def check_options(
    clock_mhz: Optional[float],
    chart: Optional[Path],
    junit: Optional[Path],
    budget_file: Optional[Path],
) -> None:
    """UsageError for options that cannot go together or are out of range."""
    from .chart import CHART_SUFFIXES

    check_clock_option(clock_mhz)
    if chart is not None and chart.suffix.lower() not in CHART_SUFFIXES:
        raise UsageError("--chart {}: only SVG charts are drawn (name the file .svg)".format(chart))
    if junit is not None and budget_file is None:
        raise UsageError("--junit {}: a report of budget checks needs --budget FILE".format(junit))


def run_compare(
    paths: Sequence,
    labels: Sequence[str],
    *,
    clock_mhz: Optional[float],
    output_format: str,
    chart: Optional[Path],
    stat: str,
    budget_file: Optional[Path],
    junit: Optional[Path],
    warn: Callable[[str], None],
    line: Callable[[str], None],
) -> int:
    """The whole of `extract compare`: the table on standard output, the chart and the
    JUnit report where asked, the budget's last line through `line`; the exit code (0,
    or GATE_FAILED when a budget check failed)."""
    from ..render import COMPARE_FORMATS
    from .baseline import baseline_first, default_baseline, passed_over_notes
    from .blockstats import FIRST, MissingBlocks, over_blocks, read_block_statistics, stat_metrics
    from .chart import write_chart
    from .comparison import compare

    check_options(clock_mhz, chart, junit, budget_file)
    budget = None
    if budget_file is not None:  # a bad budget file is told before any summary is read
        from .budget import load_budget

        budget = load_budget(budget_file)
    notes: List[str] = []  # told once the output is written: an error is told alone
    recordings = read_recordings(
        paths,
        labels,
        [("--chart", chart), ("--junit", junit)],
        [budget_file] if budget_file else [],
        notes.append,
        gate=budget is not None,
    )
    if len(recordings) < 2:
        raise UsageError(
            "compare needs two or more recordings; {} gives {}".format(
                " ".join(str(p) for p in paths), len(recordings)
            )
        )
    # The baseline by the rule report follows too (baseline.py); it is the first column.
    chosen = default_baseline(recordings)
    notes += passed_over_notes(recordings, chosen)
    recordings = baseline_first(recordings, chosen)
    comparison = compare(recordings, clock_mhz)
    found: Optional[List[dict]] = None  # each recording's metrics, when not its summary's
    blocks: Optional[List[dict]] = None  # each recording's blocks.json, with --stat
    if stat != FIRST:
        from ..derived import derived_file
        from ..readback.provenance import require_belonging

        try:
            blocks = [read_block_statistics(recording, stat) for recording in recordings]
        except MissingBlocks as exc:
            raise UsageError(str(exc)) from None
        for recording, data in zip(recordings, blocks):
            require_belonging(recording, data, derived_file("blocks"))
        comparison = over_blocks(comparison, stat, blocks)
        # With --stat, a budget holds the stages' statistic, as the table shows it.
        found = [stat_metrics(recording, data, stat) for recording, data in zip(recordings, blocks)]
    checks = None
    if budget is not None:  # a pattern that matches nothing: a usage error, first
        from .budget import check_budget

        checks = check_budget(budget, recordings, found)
        comparison = comparison.with_checks(checks)
    table = COMPARE_FORMATS[output_format]().render(comparison)
    if chart is not None:
        write_chart(chart, comparison)
    if junit is not None and checks is not None:
        from .junit import write_junit

        write_junit(junit, checks, "extract compare --budget {}".format(shown_path(budget_file)))
    write_output(STDOUT, table)
    for note in notes:
        warn(note)
    if checks is None:
        return 0
    from .budget import budget_line, gate_failed

    line(budget_line(checks))
    if not gate_failed(checks):
        return 0
    from .explain import diff_suggestion

    suggestion = diff_suggestion(checks, recordings, stat, blocks)
    if suggestion is not None:
        line(suggestion)
    return GATE_FAILED
