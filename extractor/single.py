"""`extract PROFILE -o FILE`: one profile's run, as the command line asks for it.

The checks a single run makes before it extracts (an output that would overwrite the
profile, `--csv` and `--blocks` targets), its time limit (with `--timeout`, a forked
child extracts while this process watches it: stopping.py), and the extraction itself
(pipeline.extract_profile). Usage problems are UsageError (exit 2).
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from .core.pipeline import extract_profile
from .core.rules import StageRules
from .errors import ProfileError, UsageError, shown_path
from .output import STDOUT

if TYPE_CHECKING:
    from .core.blocks import BlocksExtraction
    from .core.summary import Extraction

# A profile whose extraction takes longer is ended as failed (--timeout). A 500 MB profile
# takes under a second from a warm cache (BENCHMARKS.md); a cold 1 GB file read at 20 MB/s
# from a network filesystem takes under a minute, and the real pva, reading lazily, a few
# more on a busy node. Ten minutes is several times the slowest honest extraction, yet
# ends a hang (a pattern that backtracks catastrophically) the same hour.
DEFAULT_TIMEOUT = 600.0

Say = Callable[[str, str], None]  # say(kind, message): "error" or "warning", one line


def check_timeout(timeout: float) -> None:
    """UsageError unless --timeout is a number of seconds. Checked here, not with typer's
    min=0: typer 0.29 lets pydantic word it, and NaN would get "should be greater than or
    equal to 0"."""
    if not 0 <= timeout < float("inf"):  # negative, nan or inf
        raise UsageError("--timeout {}: give a number of seconds (0: no limit)".format(timeout))


def same_file(output: Path, profile: Path) -> bool:
    """Whether `output` exists and is the file `profile` is."""
    try:
        return output.exists() and output.samefile(profile)
    except OSError:
        return False


def watch(
    profile: Path,
    output: str,
    say: Say,
    csv: bool = False,
    timeout: float = 0,
    blocks: bool = False,
) -> None:
    """With a time limit, fork: the child returns and extracts; this process watches it
    and exits as it does (stopping.py), removing what a killed child was writing.
    Without one, return here to extract, stopped by SIGTERM or SIGHUP as by Ctrl-C."""
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
        from .core.steptables import csv_paths

        targets.extend(csv_paths(Path(output).parent))
    if blocks and targets:
        from .core.blockformats import blocks_path

        targets.append(blocks_path(output))
    for target in targets:  # what the killed child was writing
        remove_abandoned(target)
    if outcome.timed_out:
        say(
            "error",
            "{}: took longer than {:g} s (--timeout): ended".format(shown_path(profile), timeout),
        )
        _leave(1)
    if outcome.stopped_by is not None:
        say("error", stop_message(outcome.stopped_by))
        _leave(outcome.code)
    say(
        "error",
        "{}: the process extracting it died (killed by {})".format(
            shown_path(profile), signal_name(outcome.killed_by)
        ),
    )
    _leave(1)


def _leave(code: int) -> None:
    """End the watching parent at once: the child has done the work and the clean-up
    (atexit included); a second interpreter shutdown would only add time."""
    from .stopping import flush_standard_streams

    flush_standard_streams()
    os._exit(code)


def _check_beside(
    profile: Path, output: str, paths: Iterable[Path], option: str, what: str
) -> None:
    """UsageError when a file written beside the summary (`paths`) would replace the
    profile or the summary itself."""
    for path in paths:
        if same_file(path, profile) or os.path.abspath(str(path)) == os.path.abspath(output):
            raise UsageError(
                path, "{} would write {} over it".format(option, what or Path(path).name)
            )


def extract_single(
    profile: Path,
    output: str,
    rules: StageRules,
    say: Say,
    quiet: bool = False,
    use_pva: bool = True,
    csv: bool = False,
    blocks: bool = False,
) -> None:
    """Write the summary of `profile` to `output` ("-": standard output), with the step
    tables (`csv`) and blocks.json (`blocks`) beside it; its warnings through `say`
    unless `quiet`."""
    if output != STDOUT and same_file(Path(output), profile):
        raise UsageError(output, "the output would overwrite the profile")

    def warn(extraction: "Extraction") -> None:
        if not quiet:
            for warning in extraction.warnings:
                say("warning", "{}: {}".format(shown_path(profile), warning))

    if blocks:
        from .core.blockformats import blocks_path

        if output == STDOUT:
            raise UsageError(
                "--blocks writes blocks.json beside the summary: give the "
                "summary a file with -o FILE, not standard output (or run "
                "extract blocks)"
            )
        _check_beside(profile, output, [blocks_path(output)], "--blocks", "blocks.json")
    if csv:
        from .core.steptables import csv_paths

        if output == STDOUT:
            raise UsageError(
                "--csv writes steps.csv and first-body.csv beside the summary: "
                "give the summary a file with -o FILE, not standard output"
            )
        _check_beside(profile, output, csv_paths(Path(output).parent), "--csv", "")
    extract_profile(
        profile, output, rules, use_pva=use_pva, csv=csv, blocks=blocks, on_extracted=warn
    )


def run_single(
    profile: Path,
    output: Optional[str],
    rules: StageRules,
    say: Say,
    *,
    quiet: bool,
    use_pva: bool,
    csv: bool,
    blocks: bool,
    timeout: float,
) -> None:
    """The whole single run: its checks, its time limit (watch), its extraction."""
    if profile.is_dir():
        raise ProfileError(profile, "is a directory, not a profile")
    target = output or STDOUT
    watch(profile, target, say, csv, timeout, blocks)
    extract_single(profile, target, rules, say, quiet, use_pva=use_pva, csv=csv, blocks=blocks)


def run_blocks(
    profile: Path,
    output: Optional[str],
    output_format: str,
    rules: StageRules,
    say: Say,
    *,
    quiet: bool,
    timeout: float,
) -> None:
    """`extract blocks`: every block of `profile` to `output` ("-" or None: standard
    output) as blocks.json ("json"), its CSV ("csv") or the statistics ("markdown")."""
    import tempfile

    from .core.blockformats import WRITERS, block_statistics_markdown
    from .core.blocks import extract_blocks
    from .output import write_output, write_output_from

    target = output or STDOUT
    if profile.is_dir():
        raise ProfileError(profile, "is a directory, not a profile")
    if target != STDOUT and same_file(Path(target), profile):
        raise UsageError(target, "the output would overwrite the profile")
    watch(profile, target, say, False, timeout)  # the time limit, as extract's

    def warn(result: "BlocksExtraction") -> None:
        if not quiet:
            for warning in result.warnings:
                say("warning", "{}: {}".format(shown_path(profile), warning))

    if output_format == "markdown":  # the statistics only
        result = extract_blocks(profile, rules)
        warn(result)
        statistics, ipus = result.bodies.statistics(), result.bodies.anchor_ipus
        write_output(target, block_statistics_markdown(statistics, ipus))
        return
    # Written body by body into a temporary file as the pass goes (a long trace has
    # tens of thousands), then copied out whole: never a partial output.
    with tempfile.TemporaryFile() as spool:
        result = extract_blocks(profile, rules, writer=WRITERS[output_format](spool))
        warn(result)
        spool.seek(0)
        write_output_from(target, spool)
