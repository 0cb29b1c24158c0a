"""One profile to its files: summarize, render, write atomically (and, with --csv, the
step tables, with --blocks, blocks.json, from the same pass). The one path both
`extract PROFILE` and each worker of a batch take, so that a summary's bytes never
depend on how it was asked for.
"""

from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

from ..errors import StrPath
from ..output import write_atomic, write_output
from .rules import StageRules
from .summary import Extraction, summarize
from .summary_json import summary_bytes


def summary_files(output: StrPath, csv: bool = False, blocks: bool = False) -> List[Path]:
    """Every file a summary written to `output` comes with, in the order they are
    written: the step tables (`csv`), blocks.json (`blocks`), the summary last. What the
    writer writes, its checks check and a killed writer's clean-up sweeps."""
    paths: List[Path] = []
    if csv:  # imported here: a run without --csv or --blocks does not need them
        from .steptables import csv_paths

        paths.extend(csv_paths(Path(output).parent))
    if blocks:
        from .blockformats import blocks_path

        paths.append(blocks_path(output))
    paths.append(Path(output))
    return paths


def extract_profile(
    profile: StrPath,
    output: StrPath,
    rules: Optional[StageRules],
    *,
    use_pva: bool = True,
    csv: bool = False,
    blocks: bool = False,
    strict: bool = False,
    profile_label: Optional[str] = None,
    on_extracted: Optional[Callable[[Extraction], object]] = None,
) -> Tuple[Any, bytes]:
    """Write the summary of `profile` to `output`; return (the `Extraction`, the summary's
    bytes).

    `output`: a file path, or "-" for standard output (not with `csv`, `blocks` nor
    `strict`).
    `csv`: steps.csv and first-body.csv beside the summary, the three files changing
    together (`output.atomic_files`). `blocks`: blocks.json beside it, from the same
    pass (docs/formats/blocks.md), changing with it. `strict`: `output` is inside a
    batch's OUTDIR (`output.replaceable`). `profile_label`: the summary's "profile" value
    (default: the path). `on_extracted(extraction)` is called once the summary is made,
    before anything is written (to print its warnings).
    """
    # -> Tuple[Extraction, bytes] once run/batch/item.py narrows Extraction.blocks (an
    # Optional[BlockBodies]) before median_stage_cycles, which takes a BlockBodies.
    if not csv and not blocks:
        extraction = summarize(profile, rules, use_pva=use_pva, profile_label=profile_label)
        if on_extracted is not None:
            on_extracted(extraction)
        data = summary_bytes(extraction.summary)
        if strict:
            write_atomic(output, data, strict=True)
        else:
            write_output(output, data)
        return extraction, data
    from ..output import atomic_files

    # The step tables and blocks.json come from the summary's own pass; the files
    # change together (the summary last).
    paths = summary_files(output, csv, blocks)
    with atomic_files(paths, strict) as handles:
        writer = None
        if blocks:  # blocks.json is written body by body during the pass
            from .blockformats import BlocksJson

            writer = BlocksJson().writer(handles[-2])
        if csv:
            from .steptables import step_tables_on

            with step_tables_on(handles[0], handles[1]) as tables:
                extraction = summarize(
                    profile,
                    rules,
                    use_pva=use_pva,
                    profile_label=profile_label,
                    step_sink=tables,
                    blocks=blocks,
                    blocks_writer=writer,
                )
        else:
            extraction = summarize(
                profile,
                rules,
                use_pva=use_pva,
                profile_label=profile_label,
                blocks=blocks,
                blocks_writer=writer,
            )
        if on_extracted is not None:
            on_extracted(extraction)
        data = summary_bytes(extraction.summary)
        handles[-1].write(data)
    return extraction, data
