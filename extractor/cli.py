"""The `extract` command: a thin layer over the library.

`extract PROFILE -o summary.json` runs the default command, `run`; other commands are
named (`extract --help` lists them).
"""

import errno
import os
import sys
import traceback
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperGroup

from . import __version__
from .errors import ExtractorError, ProfileError, one_line
from .output import STDOUT, write_output
from .pipeline import extract_profile
from .rules import load_rules

PROG = "extract"

# A profile whose extraction takes longer is ended as failed (--timeout). A 500 MB profile
# takes under a second from a warm cache (BENCHMARKS.md); a cold 1 GB file read at 20 MB/s
# from a network filesystem takes under a minute, and the real pva, reading lazily, a few
# more on a busy node. Ten minutes is several times the slowest honest extraction, yet
# ends a hang (a pattern that backtracks catastrophically) the same hour.
DEFAULT_TIMEOUT = 600.0


class DefaultCommandGroup(TyperGroup):
    """Runs `run` when the first word is not a command name nor a top-level option."""

    default_command = "run"
    top_level_options = ("--help", "-h", "--version")

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in self.top_level_options:
            args = [self.default_command] + list(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx):
        # Keep `run` first in `extract --help`, then the others as declared.
        return list(self.commands)


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


def say(kind: str, message: str) -> None:
    """One line on stderr: `extract: error: ...` or `extract: warning: ...`."""
    typer.echo("{}: {}: {}".format(PROG, kind, one_line(message)), err=True)


def _version(value: bool):
    if value:
        if sys.stdout is None:  # `extract --version >&-`: typer would print nothing, exit 0
            raise OSError(errno.EBADF, "standard output is closed")
        typer.echo("{} {}".format(PROG, __version__))
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
):
    pass


@app.command("run")
def run(
    # readable=False: an unreadable file is reported by extract in one line (exit 1), not
    # by click as a usage error in a box.
    paths: List[Path] = typer.Argument(
        ..., metavar="PATH...", readable=False,
        help="A profile.pop, or folders searched for profile.pop files (a batch)."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE|DIR",
        help="One profile: where to write summary.json ('-' or nothing: standard output). "
             "A batch: the output folder, mirroring the input tree. Written atomically; "
             "missing folders are created."),
    rules_file: Optional[Path] = typer.Option(
        None, "--rules", metavar="FILE", readable=False,
        help="A stage rules TOML file replacing the installed stage_rules.toml."),
    jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N",
        help="Batch: profiles extracted at once (default: the CPUs this process may use)."),
    force: bool = typer.Option(False, "--force", help="Batch: extract even up-to-date "
                                                      "profiles."),
    shard: Optional[str] = typer.Option(
        None, "--shard", metavar="K/N|slurm",
        help="Batch: take only share K of N of the sorted profiles (1 <= K <= N); 'slurm' "
             "reads it from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT."),
    no_pva: bool = typer.Option(
        False, "--no-pva",
        help="Extract without PopVision's Python API: the three pva facts "
             "(attention_exchanges, each kernel's max_exchange_code_bytes and vertices) "
             "are null."),
    csv: bool = typer.Option(
        False, "--csv",
        help="Also write steps.csv (every step row) and first-body.csv (the first body's "
             "rows) beside each summary.json: same pass, written atomically, RFC 4180."),
    blocks: bool = typer.Option(
        False, "--blocks",
        help="Also write blocks.json (every block of every inference: cycles per stage, "
             "statistics) beside each summary.json, from the same pass."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors (and a "
                                                            "batch's last line)."),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT, "--timeout", metavar="SECONDS",
        help="End the extraction of a profile that takes longer, as failed (a batch goes "
             "on with the others); 0: no limit."),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback on errors."),
):
    """Extract summaries: one profile to a file, or a batch to a folder (default)."""

    def extract():
        _check_timeout(timeout)
        rules = load_rules(rules_file)
        if len(paths) == 1 and paths[0].is_dir() and paths[0].suffix == ".pop":
            # A folder named like a profile is a mistake, not a batch to write to -o.
            raise ProfileError(paths[0], "is a directory, not a profile")
        if len(paths) == 1 and not paths[0].is_dir():
            if jobs is not None or force or shard is not None:
                _usage("--jobs, --force and --shard are for a batch (a folder or several "
                       "profiles)")
            _watch_single(paths[0], output or STDOUT, csv, timeout, blocks)
            _extract_single(paths[0], output or STDOUT, rules, quiet, use_pva=not no_pva,
                            csv=csv, blocks=blocks)
        else:
            _extract_batch(paths, output, rules, jobs, force, shard, quiet,
                           use_pva=not no_pva, csv=csv, timeout=timeout, blocks=blocks)

    _report_errors(extract, debug)


def _check_timeout(timeout: float) -> None:
    """A usage error unless --timeout is a number of seconds. Checked here, not with
    typer's min=0: typer 0.29 lets pydantic word it, and NaN would get "should be greater
    than or equal to 0"."""
    if not 0 <= timeout < float("inf"):  # negative, nan or inf
        _usage("--timeout {}: give a number of seconds (0: no limit)".format(timeout))


def _watch_single(profile: Path, output: str, csv: bool, timeout: float,
                  blocks: bool = False) -> None:
    """With a time limit, fork: the child returns and extracts; the parent watches it
    and exits as it does (stopping.py). Without one, extract here, stopped by SIGTERM or
    SIGHUP as by Ctrl-C."""
    from .stopping import fork_with_deadline, raise_on_stop_signals, signal_name, stop_message

    if not timeout or not hasattr(os, "fork"):
        raise_on_stop_signals()
        return
    outcome = fork_with_deadline(timeout)
    if outcome is None:  # the child
        return
    if not outcome.forced and outcome.killed_by is None:
        _leave(outcome.code)  # it said what it had to say
    from .output import remove_abandoned

    targets = [] if output == STDOUT else [Path(output)]
    if csv and targets:
        from .steptables import csv_paths
        targets.extend(csv_paths(Path(output).parent))
    if blocks and targets:
        from .blockformats import blocks_path
        targets.append(blocks_path(output))
    for target in targets:  # what the killed child was writing
        remove_abandoned(target)
    if outcome.timed_out:
        say("error", "{}: took longer than {:g} s (--timeout): ended".format(profile, timeout))
        _leave(1)
    if outcome.stopped_by is not None:
        say("error", stop_message(outcome.stopped_by))
        _leave(outcome.code)
    say("error", "{}: the process extracting it died (killed by {})".format(
        profile, signal_name(outcome.killed_by)))
    _leave(1)


def _leave(code: int) -> None:
    """End the watching parent of a single run at once: the child has done the work and
    the clean-up (atexit included); a second interpreter shutdown would only add time."""
    from .stopping import flush_standard_streams

    flush_standard_streams()
    os._exit(code)


def _usage(message: str):
    say("error", message)
    raise typer.Exit(2)


def _extract_single(profile: Path, output: str, rules, quiet: bool, use_pva: bool,
                    csv: bool = False, blocks: bool = False) -> None:
    if output != STDOUT and _same_file(Path(output), profile):
        _usage("{}: the output would overwrite the profile".format(output))

    def warn(extraction) -> None:
        _warn(profile, extraction, quiet)

    if not csv and not blocks:
        extract_profile(profile, output, rules, use_pva=use_pva, on_extracted=warn)
        return
    if blocks:
        from .blockformats import blocks_path

        if output == STDOUT:
            _usage("--blocks writes blocks.json beside the summary: give the summary a "
                   "file with -o FILE, not standard output (or run extract blocks)")
        beside = blocks_path(output)
        if _same_file(beside, profile) or os.path.abspath(str(beside)) == \
                os.path.abspath(output):
            _usage("{}: --blocks would write blocks.json over it".format(beside))
    if not csv:
        extract_profile(profile, output, rules, use_pva=use_pva, blocks=True,
                        on_extracted=warn)
        return
    from .steptables import csv_paths

    if output == STDOUT:
        _usage("--csv writes steps.csv and first-body.csv beside the summary: give the "
               "summary a file with -o FILE, not standard output")
    tables = csv_paths(Path(output).parent)
    for table in tables:
        if _same_file(table, profile) or os.path.abspath(str(table)) == os.path.abspath(output):
            _usage("{}: --csv would write {} over it".format(table, table.name))
    extract_profile(profile, output, rules, use_pva=use_pva, csv=True, blocks=blocks,
                    on_extracted=warn)


def _warn(profile: Path, extraction, quiet: bool) -> None:
    if not quiet:
        for warning in extraction.warnings:
            say("warning", "{}: {}".format(profile, warning))


def _extract_batch(paths, output, rules, jobs, force, shard_text, quiet, use_pva,
                   csv, timeout: float = 0, blocks: bool = False) -> None:
    # Imported here: a single profile does not need the batch machinery (multiprocessing
    # and the rest take a tenth of extract's start-up).
    from .batch.run import RunOptions, available_cpus, require_pva, run_batch
    from .batch.shards import parse_shard
    options = RunOptions(use_pva=use_pva, csv=csv, blocks=blocks)
    from .batch.discover import discover
    from .output import make_folder
    from .batch.progress import PlainReporter, QuietReporter, RichReporter

    if output is None or output == STDOUT:
        _usage("a batch writes a folder of summaries: give it with -o DIR")
    outdir = Path(output)
    if outdir.exists() and not outdir.is_dir():
        _usage("{}: -o must name a folder for a batch, and this is a file".format(outdir))
    try:
        shard = parse_shard(shard_text) if shard_text is not None else None
    except ValueError as exc:
        _usage(str(exc))
    if options.use_pva:
        require_pva()
    found = discover(paths)  # argument errors come before anything is made
    make_folder(outdir)  # one line if it cannot be (under a file, /proc, read-only)
    items = shard.take(found.items) if shard else found.items
    if quiet:
        reporter = QuietReporter()
    else:
        from rich.console import Console
        console = Console(stderr=True)
        reporter = RichReporter(console) if console.is_terminal else PlainReporter()
        for note in found.notes:
            reporter.print("{}: note: {}".format(PROG, note))
    result = run_batch(items, outdir, rules, jobs=jobs or available_cpus(), force=force,
                       shard=shard, options=options, reporter=reporter, timeout=timeout)
    typer.echo("{} extracted, {} up to date, {} failed".format(
        result.extracted, result.up_to_date, result.failed), err=True)
    if result.interrupted:
        if result.stopped_by is None:
            say("error", "interrupted: the index lists every profile finished so far")
            raise typer.Exit(130)
        from .stopping import stop_message
        say("error", "{}: the index lists every profile finished so far".format(
            stop_message(result.stopped_by)))
        raise typer.Exit(128 + result.stopped_by)
    if result.failed:
        raise typer.Exit(1)


@app.command("merge")
def merge(
    outdir: Path = typer.Argument(..., metavar="OUTDIR",
                                  help="A batch output folder with shard index files."),
):
    """Fold the index files of a batch's shards into OUTDIR/index.jsonl."""
    from .errors import shown_path
    from .batch.index import INDEX_NAME, lock_index, merge_indexes

    if not outdir.is_dir():
        _usage("{}: not a folder".format(outdir))

    def merge_locked():
        # Refused while a batch or shard writes any of the files (see lock_index).
        locks = []
        try:
            for path in [outdir / INDEX_NAME] + sorted(outdir.glob("index-shard-*.jsonl")):
                locks.append(lock_index(path))
            return merge_indexes(outdir)
        finally:
            for lock in locks:
                os.close(lock)

    count = _report_errors(_stoppable(merge_locked))
    typer.echo("{}: {} profiles".format(shown_path(outdir / "index.jsonl"), count), err=True)


def _stoppable(action):
    """`action` to be run by _report_errors with SIGTERM and SIGHUP ending it as Ctrl-C
    does: one line, exit 128 + the signal, no temporary file left (atomic writes unwind)."""
    def stoppable():
        from .stopping import raise_on_stop_signals

        raise_on_stop_signals()
        return action()
    return stoppable


def _report_errors(action, debug: Optional[bool] = None):
    """Run `action()`; an error becomes one line on stderr and the exit code it asks for
    (with a traceback first when `debug`); Ctrl-C exits 130. `debug` None: the command
    has no --debug option to suggest."""
    try:
        return action()
    except ExtractorError as exc:
        if debug:
            traceback.print_exc()
        say("error", str(exc))
        raise typer.Exit(exc.exit_code) from None
    except typer.Exit:
        raise
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM or SIGHUP (stopping.Stopped)
        signum = getattr(exc, "signum", None)
        if signum is None:
            say("error", "interrupted")
            raise typer.Exit(130) from None
        from .stopping import stop_message
        say("error", stop_message(signum))
        raise typer.Exit(128 + signum) from None
    except Exception as exc:  # a bug or an input we did not foresee: still one line
        if debug:
            traceback.print_exc()
        hint = " (run with --debug for the traceback)" if debug is False else ""
        say("error", "unexpected failure: {}: {}{}".format(type(exc).__name__, one_line(exc),
                                                          hint))
        raise typer.Exit(1) from None


CLOCK_MHZ_RANGE = (0.001, 1e6)


class CompareFormat(str, Enum):
    """The names of compare.formats.FORMATS (here: the CLI must not import it to start)."""

    markdown = "markdown"
    csv = "csv"
    json = "json"


class BlockStat(str, Enum):
    """The names of compare.blockstats.STATS (the CLI must not import it to start)."""

    first = "first"
    min = "min"
    median = "median"
    mean = "mean"
    max = "max"


@app.command("compare")
def compare_command(
    paths: List[Path] = typer.Argument(
        ..., metavar="SUMMARY|DIR...",
        help="Two or more summary.json files, or batch output folders (each summary.json "
             "below a folder is one recording, named by its folder)."),
    labels: List[str] = typer.Option(
        [], "--label", "-l", metavar="NAME",
        help="Name the recordings (columns) in order, instead of by their folders; "
             "repeat it, one per recording (the first ones if fewer)."),
    clock_mhz: Optional[float] = typer.Option(
        None, "--clock-mhz", metavar="F",
        help="The IPU clock in MHz, to show device spans in milliseconds too (without "
             "it: cycles only)."),
    output_format: CompareFormat = typer.Option(
        CompareFormat.markdown, "--format", "-f", case_sensitive=False,
        help="The table's format on standard output."),
    chart: Optional[Path] = typer.Option(
        None, "--chart", metavar="FILE.svg",
        help="Also draw the kernel stages as grouped bars, one colour per recording, "
             "to an SVG file."),
    stat: BlockStat = typer.Option(
        BlockStat.first, "--stat", case_sensitive=False,
        help="The stage rows: the first block's cycles (first, from summary.json), or "
             "that statistic over every block, from the blocks.json beside each "
             "summary.json (a batch run with --blocks)."),
    budget_file: Optional[Path] = typer.Option(
        None, "--budget", metavar="FILE", readable=False,
        help="A budget file (TOML): how much worse than the first recording each metric "
             "may be. Checked values are marked; exit code 3 when a check fails."),
    junit: Optional[Path] = typer.Option(
        None, "--junit", metavar="FILE",
        help="With --budget: also write the checks as a JUnit XML report (atomically)."),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback on errors."),
):
    """Compare recordings: one table, recordings as columns, changes against the first."""
    from .compare.chart import CHART_SUFFIXES, write_chart
    from .compare.comparison import compare
    from .compare.formats import FORMATS

    # Beyond these, milliseconds come out absurd, or infinite (1e-320) or zero.
    if clock_mhz is not None and not CLOCK_MHZ_RANGE[0] <= clock_mhz <= CLOCK_MHZ_RANGE[1]:
        _usage("--clock-mhz {}: the clock must be a positive number of MHz, from 0.001 "
               "(1 kHz) to 1000000 (1 THz)".format(clock_mhz))
    if chart is not None and chart.suffix.lower() not in CHART_SUFFIXES:
        _usage("--chart {}: only SVG charts are drawn (name the file .svg)".format(chart))
    if junit is not None and budget_file is None:
        _usage("--junit {}: a report of budget checks needs --budget FILE".format(junit))

    def compare_and_print():
        budget = None
        if budget_file is not None:  # a bad budget file is told before any summary is read
            from .budget import load_budget
            budget = load_budget(budget_file)
        recordings = _read_recordings(paths, labels, [("--chart", chart), ("--junit", junit)],
                                      [budget_file] if budget_file else [],
                                      gate=budget is not None)
        if len(recordings) < 2:
            _usage("compare needs two or more recordings; {} gives {}".format(
                " ".join(str(p) for p in paths), len(recordings)))
        comparison = compare(recordings, clock_mhz)
        found = None  # each recording's metrics, when not its summary's own
        if stat is not BlockStat.first:
            from .compare.blockstats import MissingBlocks, over_blocks, read_blocks, stat_metrics
            from .provenance import require_belonging
            try:
                blocks = [read_blocks(recording, stat.value) for recording in recordings]
            except MissingBlocks as exc:
                _usage(str(exc))
            for recording, data in zip(recordings, blocks):
                require_belonging(recording, data)
            comparison = over_blocks(comparison, stat.value, blocks)
            # With --stat, a budget holds the stages' statistic, as the table shows it.
            found = [stat_metrics(recording, data, stat.value)
                     for recording, data in zip(recordings, blocks)]
        checks = None
        if budget is not None:  # a pattern that matches nothing: a usage error, first
            from .budget import check_budget
            checks = check_budget(budget, recordings, found)
        if checks is not None:
            comparison = comparison.with_checks(checks)
        text = FORMATS[output_format.value].render(comparison)
        if chart is not None:
            write_chart(chart, comparison)
        if junit is not None and checks is not None:
            from .errors import shown_path
            from .junit import write_junit
            write_junit(junit, checks, "extract compare --budget {}".format(
                shown_path(budget_file)))
        # A lone surrogate (a summary may hold one, escaped) is shown as \udXXX.
        write_output(STDOUT, text.encode("utf-8", "backslashreplace"))
        if checks is not None:
            from .budget import budget_line, gate_failed
            typer.echo(budget_line(checks), err=True)
            if gate_failed(checks):
                raise typer.Exit(3)

    _report_errors(_stoppable(compare_and_print), debug)


class BlocksFormat(str, Enum):
    """The names of blockformats.BLOCK_FORMATS (the CLI must not import it to start)."""

    json = "json"
    csv = "csv"
    markdown = "markdown"


@app.command("blocks", help=(
    "Every block of every inference: cycles per stage of each body, and statistics.\n\n"
    "Writes blocks.json (blocks-spec.md), or its CSV, or a markdown table of the "
    "statistics over the blocks. Reads only SQL (no pva needed)."))
def blocks_command(
    profile: Path = typer.Argument(..., metavar="PROFILE", readable=False,
                                   help="A profile.pop file."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE",
        help="Where to write ('-' or nothing: standard output). Written atomically."),
    output_format: BlocksFormat = typer.Option(
        BlocksFormat.json, "--format", "-f", case_sensitive=False,
        help="json (blocks.json), csv (one line per block) or markdown (the statistics)."),
    rules_file: Optional[Path] = typer.Option(
        None, "--rules", metavar="FILE", readable=False,
        help="A stage rules TOML file replacing the installed stage_rules.toml."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors."),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT, "--timeout", metavar="SECONDS",
        help="End the extraction if it takes longer, as failed; 0: no limit."),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback on errors."),
):
    def extract():
        import tempfile

        from .blockformats import WRITERS, to_markdown
        from .blocks import extract_blocks
        from .output import write_output_from

        _check_timeout(timeout)
        rules = load_rules(rules_file)
        target = output or STDOUT
        if profile.is_dir():
            raise ProfileError(profile, "is a directory, not a profile")
        if target != STDOUT and _same_file(Path(target), profile):
            _usage("{}: the output would overwrite the profile".format(target))
        _watch_single(profile, target, False, timeout)  # the time limit, as extract's

        def warn(result) -> None:
            if not quiet:
                for warning in result.warnings:
                    say("warning", "{}: {}".format(profile, warning))

        if output_format is BlocksFormat.markdown:  # the statistics only
            result = extract_blocks(profile, rules)
            warn(result)
            write_output(target, to_markdown(result.bodies.statistics()))
            return
        # Written body by body into a temporary file as the pass goes (a long trace has
        # tens of thousands), then copied out whole: never a partial output.
        with tempfile.TemporaryFile() as spool:
            result = extract_blocks(profile, rules,
                                    writer=WRITERS[output_format.value](spool))
            warn(result)
            spool.seek(0)
            write_output_from(target, spool)

    _report_errors(extract, debug)


class TableFormat(str, Enum):
    """The names of report.table.FORMATS (here: the CLI must not import it to start)."""

    csv = "csv"
    jsonl = "jsonl"


_RECORDINGS_HELP = ("summary.json files, or batch output folders (each summary.json below "
                    "a folder is one recording, named by its folder, as compare names them).")
_LABEL_HELP = ("Name the recordings in order, instead of by their folders; repeat it, one "
               "per recording (the first ones if fewer).")


def _read_recordings(paths, labels, outputs, inputs=(), gate: bool = False):
    """The recordings of compare, table and report: read (a bad --label being a usage
    error), the outputs checked against them before anything is written (never one of
    the inputs, see output.check_outputs), and what their batch's index says of each
    told (provenance.tell_origins: warnings; with `gate`, an error)."""
    from .compare.comparison import files_read, folders_read, load_recordings
    from .output import check_outputs
    from .provenance import tell_origins

    try:
        recordings = load_recordings(paths, labels)
    except ValueError as exc:
        _usage(str(exc))
    check_outputs(outputs, files_read(recordings) + list(inputs),
                  folders_read(paths, recordings))
    tell_origins(recordings, lambda text: say("warning", text), gate=gate)
    return recordings


@app.command("table")
def table_command(
    paths: List[Path] = typer.Argument(..., metavar="SUMMARY|DIR...", help=_RECORDINGS_HELP),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE",
        help="Where to write the table ('-' or nothing: standard output); written "
             "atomically."),
    labels: List[str] = typer.Option([], "--label", "-l", metavar="NAME", help=_LABEL_HELP),
    table_format: TableFormat = typer.Option(
        TableFormat.csv, "--format", "-f", case_sensitive=False,
        help="csv (RFC 4180) or jsonl (one JSON object per line)."),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback on errors."),
):
    """One line per recording and metric (recording, profile, metric, value): a long
    table that pandas, DuckDB or a spreadsheet reads as it is."""

    def make_table():
        from .report.table import table_bytes

        recordings = _read_recordings(paths, labels, [("-o", output)])
        write_output(output or STDOUT, table_bytes(recordings, table_format.value))

    _report_errors(_stoppable(make_table), debug)


@app.command("report")
def report_command(
    paths: List[Path] = typer.Argument(..., metavar="SUMMARY|DIR...", help=_RECORDINGS_HELP),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE.html",
        help="Where to write the page ('-' or nothing: standard output); written "
             "atomically."),
    labels: List[str] = typer.Option([], "--label", "-l", metavar="NAME", help=_LABEL_HELP),
    baseline: Optional[str] = typer.Option(
        None, "--baseline", metavar="LABEL",
        help="The recording changes are measured against (default: the first)."),
    budget_file: Optional[Path] = typer.Option(
        None, "--budget", metavar="FILE", readable=False,
        help="A budget file: the page shows each check's status, as extract compare "
             "--budget decides it (the exit code does not: use compare as the gate)."),
    title: Optional[str] = typer.Option(None, "--title", metavar="TEXT",
                                        help="The page's title."),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback on errors."),
):
    """One self-contained HTML page for a batch: a sortable table with changes against
    a baseline, a chart of cycles per stage, blocks heat maps, failures, warnings."""

    def make_report():
        from .report.batchinfo import read_index_facts
        from .report.page import build_page, render_page

        budget = None
        if budget_file is not None:  # usage errors before any summary is read, as compare's
            from .budget import load_budget
            budget = load_budget(budget_file)
        recordings = _read_recordings(paths, labels, [("-o", output)],
                                      [budget_file] if budget_file else [])
        index = 0
        if baseline is not None:
            shown = [r.label for r in recordings]
            if baseline not in shown:
                _usage("--baseline {}: no recording is labelled so (the labels: {})".format(
                    baseline, ", ".join(shown[:10]) + (", ..." if len(shown) > 10 else "")))
            index = shown.index(baseline)
        checks = None
        if budget is not None:  # compare --budget's own checks; its baseline comes first
            from .budget import check_budget
            ordered = [recordings[index]] + [r for i, r in enumerate(recordings) if i != index]
            checks = check_budget(budget, ordered)
        page = build_page(recordings, read_index_facts(paths), baseline=index, title=title,
                          checks=checks)
        for item in page.untrusted:  # the summaries' were told with the recordings
            if item.path not in {str(r.path) for r in recordings}:
                say("warning", "{}: {}".format(item.path, item.problem))
        write_output(output or STDOUT, render_page(page))

    _report_errors(_stoppable(make_report), debug)


def _print(answer: dict, as_json: bool, as_text) -> None:
    """A report on standard output: JSON (ASCII, non-ASCII escaped), or `as_text(answer)`."""
    if as_json:
        import json

        data = (json.dumps(answer, indent=2) + "\n").encode("ascii")
    else:
        data = as_text(answer).encode("utf-8", "backslashreplace")
    write_output(STDOUT, data)


@app.command("inspect", help=(
    "Show a profile's tables, counts and columns, and what pva says of it.\n\n"
    "Lists the SQLite tables with row counts (large tables: a cheap estimate, marked as "
    "such) and columns, whether the tables and columns the extractor reads are there, "
    "whether pva is importable, and the Poplar and profile format versions pva reads. "
    "For a profile extract cannot read: send us its --json output."))
def inspect_command(
    profile: Path = typer.Argument(..., metavar="PROFILE", help="A profile.pop file."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
    exact: bool = typer.Option(
        False, "--exact",
        help="Count every table's rows exactly (may read the whole file); by default "
             "large tables get a cheap estimate, marked as such."),
    no_pva: bool = typer.Option(False, "--no-pva",
                                help="Do not import PopVision's Python API (pva)."),
):
    from .diagnose.inspection import inspect_profile, inspect_text

    answer = _report_errors(_stoppable(
        lambda: inspect_profile(profile, exact=exact, use_pva=not no_pva)))
    _report_errors(lambda: _print(answer, as_json, inspect_text))


@app.command("stages", help=(
    "Check how stage rules cut a profile, to adapt them to a model's names.\n\n"
    "Per stage: the step rows, distinct names and cycles it took, and why a stage took "
    "nothing; the most common names no rule matched; what each selector found. Reads only "
    "SQL (no pva needed)."))
def stages_command(
    profile: Path = typer.Argument(..., metavar="PROFILE", help="A profile.pop file."),
    rules_file: Optional[Path] = typer.Option(
        None, "--rules", metavar="FILE",
        help="A stage rules TOML file to check (default: the installed stage_rules.toml)."),
    top: int = typer.Option(10, "--top", min=0, metavar="N",
                            help="How many of the most common unmatched names to list."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
):
    from .diagnose.stagecheck import check_stages, stages_text

    answer = _report_errors(_stoppable(
        lambda: check_stages(profile, load_rules(rules_file), top=top)))
    _report_errors(lambda: _print(answer, as_json, stages_text))


@app.command("doctor", help=(
    "Check that extract reads a profile right: its SQL against pva, check by check.\n\n"
    "Cross-checks what the summary assumes: that pva's program ids and compute set "
    "indices are the profile's, the type of pva's code bytes, how pva's lists behave, "
    "rows per step against the IPU count, and the per-tile variables "
    "(autoReport.outputLoweredVars). Each check is ok, warn, fail or skipped (without "
    "pva: the pva checks), with what it means for the summary. Exit code 1 when a check "
    "fails. Send us the --json output."))
def doctor_command(
    profile: Path = typer.Argument(..., metavar="PROFILE", help="A profile.pop file."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines (the "
                                                       "format is extract-doctor/1)."),
):
    from .diagnose.doctor import doctor_text, run_checks

    answer = _report_errors(_stoppable(lambda: run_checks(profile)))
    _report_errors(lambda: _print(answer, as_json, doctor_text))
    if not answer["ok"]:
        raise typer.Exit(1)


def _same_file(output: Path, profile: Path) -> bool:
    try:
        return output.exists() and output.samefile(profile)
    except OSError:
        return False


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
