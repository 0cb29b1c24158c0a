"""The commands that extract: `run` (one profile or a batch), `merge` (a batch's shard
indexes) and `blocks` (every block of every inference)."""

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from ..render import BLOCKS_FORMATS
from .app import (
    DEBUG,
    OUTPUT_OR_STDOUT,
    PROFILE_CHECKED,
    RULES,
    app,
    no_pva_option,
    timeout_option,
)
from .exits import exit_with, line, report_errors, say, stoppable


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
        "reads it from SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN "
        "(0 when unset) and SLURM_ARRAY_TASK_STEP (1 when unset).",
    ),
    no_pva: bool = no_pva_option(
        "Extract without PopVision's Python API: the three pva facts "
        "(attention_exchanges, each kernel's max_exchange_code_bytes and vertices) "
        "are null."
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
    breakdown: bool = typer.Option(
        False,
        "--breakdown",
        help="Also write breakdown.json (every cycle of the first inference by kind, "
        "stage, op and layer, depth 5, as extract breakdown --format json) beside each "
        "summary.json, changing with it.",
    ),
    memory: bool = typer.Option(
        False,
        "--memory",
        help="Also write memory.json (tile memory: the fullest tiles, categories, "
        "histogram, as extract memory --format json) beside each summary.json, "
        "changing with it.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Print only errors (and a batch's last line)."
    ),
    timeout: float = timeout_option(
        "End the extraction of a profile that takes longer, as failed (a batch goes on "
        "with the others); 0: no limit."
    ),
    debug: bool = DEBUG,
):
    """Extract summaries: one profile to a file, or a batch to a folder (default)."""

    def extract():
        from ..core.rules import load_rules
        from ..errors import ProfileError, UsageError
        from ..run.single import run_single
        from ..timelimit import check_timeout

        check_timeout(timeout)
        rules = load_rules(rules_file)
        # The derived files' keys (derived.DERIVED_FILES), in the table's order.
        derived = tuple(
            key
            for key, asked in (("blocks", blocks), ("breakdown", breakdown), ("memory", memory))
            if asked
        )
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
                derived=derived,
                timeout=timeout,
            )
            return 0
        # Imported here: a single profile does not need the batch machinery
        # (multiprocessing and the rest take a tenth of extract's start-up).
        from ..run.batch.command import run_batch_command

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
            derived=derived,
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
    from ..batchnames import INDEX_NAME
    from ..errors import UsageError, shown_path
    from ..run.batch.index import merge_locked

    def fold():
        if not outdir.is_dir():
            raise UsageError(outdir, "not a folder")
        return merge_locked(outdir)

    count = report_errors(stoppable(fold))
    line("{}: {} profiles".format(shown_path(outdir / INDEX_NAME), count))


# --format's choices, from blocks' registry of renderers (imported only when used); mypy,
# which takes no class made at run time as a type, sees an Enum.
if TYPE_CHECKING:
    BlocksFormat = Enum
else:
    BlocksFormat = BLOCKS_FORMATS.choices("BlocksFormat")


@app.command(
    "blocks",
    help=(
        "Every block of every inference: cycles per stage of each body, and statistics.\n\n"
        "Writes blocks.json (docs/formats/blocks.md), or its CSV, or a markdown table of the "
        "statistics over the blocks. Reads only SQL (no pva needed)."
    ),
)
def blocks_command(
    profile: Path = PROFILE_CHECKED,
    output: Optional[str] = OUTPUT_OR_STDOUT,
    output_format: BlocksFormat = typer.Option(
        BLOCKS_FORMATS.default,
        "--format",
        "-f",
        case_sensitive=False,
        help="json (blocks.json), csv (one line per block) or markdown (the statistics).",
    ),
    rules_file: Optional[Path] = RULES,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors."),
    timeout: float = timeout_option(
        "End the extraction if it takes longer, as failed; 0: no limit."
    ),
    debug: bool = DEBUG,
):
    def extract():
        from ..core.rules import load_rules
        from ..run.single import run_blocks
        from ..timelimit import check_timeout

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
