"""`extract PATH... -o OUTDIR`: a batch as the command line asks for it: its checks, its
reporter, its last line and its exit code, around run.run_batch."""

from pathlib import Path
from typing import Callable, Optional, Sequence

from ...errors import UsageError
from ...output import STDOUT


def run_batch_command(
    paths: Sequence[Path],
    output: Optional[str],
    rules,
    *,
    jobs: Optional[int],
    force: bool,
    shard_text: Optional[str],
    quiet: bool,
    use_pva: bool,
    csv: bool,
    timeout: float,
    derived: Sequence[str] = (),
    line: Callable[[str], None],
) -> int:
    """Extract a batch; `line(text)` prints a line on stderr. The exit code: 0, 1 when a
    profile failed, 128 + a signal (130 for Ctrl-C) when stopped."""
    from ...output import make_folder
    from ...outputchecks import check_batch_inputs
    from .discover import discover
    from .progress import PlainReporter, QuietReporter, RichReporter
    from .run import RunOptions, available_cpus, require_pva, run_batch
    from .shards import parse_shard

    options = RunOptions(use_pva=use_pva, csv=csv, derived=tuple(derived))
    if output is None or output == STDOUT:
        raise UsageError("a batch writes a folder of summaries: give it with -o DIR")
    outdir = Path(output)
    if outdir.exists() and not outdir.is_dir():
        raise UsageError(outdir, "-o must name a folder for a batch, and this is a file")
    try:
        shard = parse_shard(shard_text) if shard_text is not None else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if options.use_pva:
        require_pva()
    found = discover(paths)  # argument errors come before anything is made
    check_batch_inputs(outdir, [item.profile for item in found.items], rules=rules)
    make_folder(outdir)  # one line if it cannot be (under a file, /proc, read-only)
    items = shard.take(found.items) if shard else found.items
    if quiet:
        reporter = QuietReporter()
    else:
        from rich.console import Console

        console = Console(stderr=True)
        reporter = RichReporter(console) if console.is_terminal else PlainReporter()
        for note in found.notes:
            reporter.print("extract: note: {}".format(note))
    result = run_batch(
        items,
        outdir,
        rules,
        jobs=jobs or available_cpus(),
        force=force,
        shard=shard,
        options=options,
        reporter=reporter,
        timeout=timeout,
    )
    line(
        "{} extracted, {} up to date, {} failed".format(
            result.extracted, result.up_to_date, result.failed
        )
    )
    if result.interrupted:
        if result.stopped_by is None:
            line("extract: error: interrupted: the index lists every profile finished so far")
            return 130
        from ...stopping import stop_message

        line(
            "extract: error: {}: the index lists every profile finished so far".format(
                stop_message(result.stopped_by)
            )
        )
        return 128 + result.stopped_by
    return 1 if result.failed else 0
