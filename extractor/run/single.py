"""`extract PROFILE -o FILE`: one profile's run, as the command line asks for it.

The checks a single run makes before it extracts (targets.check_outputs: no output, the
`--csv` files and the derived files too, is one of its inputs), its time limit (`bounded`: kept
in this process, deadline.py; a forked child watched by this process only when the run
calls a pva in compiled code, stopping.py), and the extraction itself
(pipeline.extract_profile). Usage problems are UsageError (exit 2).
"""

import contextlib
import os
import types
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..core.pipeline import extract_profile
from ..core.rules import StageRules
from ..errors import ProfileError, StrPath, UsageError, shown_path
from ..output import STDOUT
from ..outputchecks import check_outputs

if TYPE_CHECKING:
    from ..core.blocks import BlocksExtraction
    from ..core.summary import Extraction


Say = Callable[[str, str], None]  # say(kind, message): "error" or "warning", one line


def in_compiled_code(use_pva: bool, pva: Optional[object] = None) -> bool:
    """Whether the run calls a pva whose calls are compiled code (the Poplar SDK's C++,
    bound by pybind11), where no signal reaches until a call returns: `pva` (the module
    given), else the one `import pva` finds. One written in Python (the tests' stand-in)
    is not; a pva that cannot be imported is not either (the run fails without it, in
    its own order)."""
    if not use_pva:
        return False
    if pva is None:
        try:
            import pva as module
        except Exception:  # ImportError, or any failure of its import
            return False
        pva = module
    return not isinstance(getattr(pva, "openReport", None), types.FunctionType)


@contextlib.contextmanager
def bounded(
    profiles: Sequence[StrPath],
    outputs: Sequence[StrPath],
    say: Say,
    timeout: float = 0,
    separate: bool = False,
) -> Iterator[None]:
    """Run the block (the command's work on `profiles`, writing `outputs`, the files the
    command writes) within `timeout` seconds (0: no limit), stopped by SIGTERM or SIGHUP
    as by Ctrl-C. In this process (deadline.time_limit), unless `separate`
    (in_compiled_code: a call that may never return): then fork, the child does the
    work and this process watches it and exits as it does (stopping.py), sweeping what
    a killed child was writing and the folders made for it. Past the limit: ProfileError
    `<profile>: took longer than N s (--timeout): ended`, the profile being read then."""
    from ..deadline import time_limit
    from ..stopping import raise_on_stop_signals

    if not (timeout and separate and hasattr(os, "fork")):
        import threading

        if threading.current_thread() is threading.main_thread():
            raise_on_stop_signals()  # (a library's caller in another thread gets none)

        def stuck(line: str) -> None:  # deadline's watchdog: a read no signal reaches
            say("error", line)
            _leave(1)

        with time_limit(timeout, profiles, outputs, on_stuck=stuck):
            yield
        return
    from ..deadline import profiles_label, reporting, timed_out_problem
    from ..partials import Leftovers
    from ..stopping import fork_with_deadline, signal_name, stop_message

    leftovers = Leftovers(outputs)  # before the fork: the folders missing now
    outcome, report_fd = fork_with_deadline(timeout)
    if outcome is None:  # the child
        with reporting(profiles, report_fd):
            yield
        return
    if not outcome.forced and outcome.killed_by is None:
        _leave(outcome.code)  # it said what it had to say
    leftovers.sweep()  # what the killed child was writing, where it wrote it
    label = profiles_label(profiles, outcome.reading)
    if outcome.timed_out:
        say("error", "{}: {}".format(label, timed_out_problem(timeout)))
        _leave(1)
    if outcome.stopped_by is not None:
        say("error", stop_message(outcome.stopped_by))
        _leave(outcome.code)
    say(
        "error",
        "{}: the process extracting it died (killed by {})".format(
            label, signal_name(outcome.killed_by)
        ),
    )
    _leave(1)


def _leave(code: int) -> None:
    """End the watching parent at once: the child has done the work and the clean-up
    (atexit included); a second interpreter shutdown would only add time."""
    from ..stopping import flush_standard_streams

    flush_standard_streams()
    os._exit(code)


def check_profile(profile: Path, for_a_folder: str = "") -> None:
    """ProfileError for a folder given as a profile; `for_a_folder`, when given, is the
    command that does the same for every profile below a folder."""
    if profile.is_dir():
        problem = "is a directory, not a profile"
        if for_a_folder:
            problem += " (for every profile below a folder: {})".format(for_a_folder)
        raise ProfileError(profile, problem)


def file_outputs(option_paths: Iterable[Tuple[str, StrPath]]) -> List[Path]:
    """The files among a command's (option, path) outputs: standard output left out."""
    return [Path(path) for _option, path in option_paths if str(path) != STDOUT]


def summary_outputs(output: str, csv: bool, derived: Sequence[str]) -> List[Tuple[str, Path]]:
    """(option, path) of every file `extract PROFILE -o output` writes (pipeline's
    summary_files); UsageError for --csv or a derived file's option (--blocks...) with
    standard output."""
    from ..core.pipeline import summary_files
    from ..derived import chosen

    entries = chosen(derived)
    if output == STDOUT:
        if entries:
            entry = entries[0]
            raise UsageError(
                "{} writes {} beside the summary: give the summary a file with -o FILE, "
                "not standard output (or run extract {})".format(
                    entry.option, entry.name, entry.key
                )
            )
        if csv:
            raise UsageError(
                "--csv writes steps.csv and first-body.csv beside the summary: "
                "give the summary a file with -o FILE, not standard output"
            )
        return [("-o", Path(STDOUT))]
    paths = summary_files(output, csv, derived)
    options = ["--csv"] * (2 if csv else 0) + [entry.option for entry in entries] + ["-o"]
    return list(zip(options, paths))


def extract_single(
    profile: Path,
    output: str,
    rules: StageRules,
    say: Say,
    quiet: bool = False,
    use_pva: bool = True,
    csv: bool = False,
    derived: Sequence[str] = (),
) -> None:
    """Write the summary of `profile` to `output` ("-": standard output), with the step
    tables (`csv`) and the derived files of `derived` (derived.py: blocks.json...) beside
    it; its warnings through `say` unless `quiet`. Its outputs are checked already
    (run_single)."""

    def warn(extraction: "Extraction") -> None:
        if not quiet:
            for warning in extraction.warnings:
                say("warning", "{}: {}".format(shown_path(profile), warning))

    extract_profile(
        profile, output, rules, use_pva=use_pva, csv=csv, derived=derived, on_extracted=warn
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
    derived: Sequence[str] = (),
    timeout: float,
) -> None:
    """The whole single run: its checks, its time limit (bounded), its extraction."""
    check_profile(profile)
    target = output or STDOUT
    outputs = summary_outputs(target, csv, derived)
    check_outputs(outputs, [profile], rules=rules)  # before the work: usage errors at once
    separate = in_compiled_code(use_pva)
    with bounded([profile], file_outputs(outputs), say, timeout, separate):
        extract_single(
            profile, target, rules, say, quiet, use_pva=use_pva, csv=csv, derived=derived
        )


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
    target = output or STDOUT
    check_profile(profile, "extract DIR -o OUTDIR --blocks")
    outputs = [("-o", target)]
    check_outputs(outputs, [profile], rules=rules)
    with bounded([profile], file_outputs(outputs), say, timeout):  # SQL only: no pva
        _write_blocks(profile, target, output_format, rules, say, quiet)


def _write_blocks(
    profile: Path, target: str, output_format: str, rules: StageRules, say: Say, quiet: bool
) -> None:
    import tempfile

    from ..core.blocks import extract_blocks
    from ..output import write_output, write_output_from
    from ..render import BLOCKS_FORMATS, StreamRenderer

    def warn(result: "BlocksExtraction") -> None:
        if not quiet:
            for warning in result.warnings:
                say("warning", "{}: {}".format(shown_path(profile), warning))

    renderer = BLOCKS_FORMATS[output_format]()
    if not isinstance(renderer, StreamRenderer):  # from what the pass leaves: statistics
        result = extract_blocks(profile, rules)
        warn(result)
        write_output(target, renderer.render(result.bodies))
        return
    # Written body by body into a temporary file as the pass goes (a long trace has
    # tens of thousands), then copied out whole: never a partial output.
    with tempfile.TemporaryFile() as spool:
        result = extract_blocks(profile, rules, writer=renderer.writer(spool))
        warn(result)
        spool.seek(0)
        write_output_from(target, spool)
