"""One profile to its files: summarize, render, write atomically (and, with --csv, the
step tables; with --blocks, --breakdown or --memory, the derived files of derived.py,
blocks.json from the same pass). The one path both
`extract PROFILE` and each worker of a batch take, so that a summary's bytes never
depend on how it was asked for.
"""

from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..derived import DerivedFile, chosen
from ..errors import StrPath
from ..output import write_atomic, write_output
from .rules import StageRules
from .summary import Extraction, summarize
from .summary_json import summary_bytes


def summary_files(output: StrPath, csv: bool = False, derived: Sequence[str] = ()) -> List[Path]:
    """Every file a summary written to `output` comes with, in the order they are
    written: the step tables (`csv`), the derived files of `derived` (their keys in
    derived.DERIVED_FILES: blocks.json, breakdown.json, memory.json), the summary last.
    What the writer writes, its checks check and a killed writer's clean-up sweeps."""
    paths: List[Path] = []
    if csv:  # imported here: a run without --csv does not need them
        from .steptables import csv_paths

        paths.extend(csv_paths(Path(output).parent))
    paths.extend(entry.path(output) for entry in chosen(derived))
    paths.append(Path(output))
    return paths


def extract_profile(
    profile: StrPath,
    output: StrPath,
    rules: Optional[StageRules],
    *,
    use_pva: bool = True,
    csv: bool = False,
    derived: Sequence[str] = (),
    strict: bool = False,
    profile_label: Optional[str] = None,
    on_extracted: Optional[Callable[[Extraction], object]] = None,
) -> Tuple[Any, bytes]:
    """Write the summary of `profile` to `output`; return (the `Extraction`, the summary's
    bytes).

    `output`: a file path, or "-" for standard output (not with `csv`, `derived` nor
    `strict`).
    `csv`: steps.csv and first-body.csv beside the summary, the files changing together
    (`output.atomic_files`). `derived`: the keys of the derived files to write beside it
    (derived.DERIVED_FILES): blocks.json from the same pass, breakdown.json and
    memory.json made once the summary is, all changing with it. `strict`: `output` is
    inside a batch's OUTDIR (`output.replaceable`). `profile_label`: the summary's
    "profile" value (default: the path). `on_extracted(extraction)` is called once the
    summary and the derived files are made, before anything is written (to print its
    warnings; a derived file's are named by it).
    """
    # -> Tuple[Extraction, bytes] once run/batch/item.py narrows Extraction.blocks (an
    # Optional[BlockBodies]) before median_stage_cycles, which takes a BlockBodies.
    entries = chosen(derived)
    if not csv and not entries:
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

    # The step tables and blocks.json come from the summary's own pass, the other
    # derived files after it; the files change together (the summary last).
    paths = summary_files(output, csv, derived)
    with atomic_files(paths, strict) as handles:
        handle_of = dict(zip((e.key for e in entries), handles[2 if csv else 0 : -1]))
        blocks = "blocks" in handle_of
        writer = None
        if blocks:  # blocks.json is written body by body during the pass
            from .blockformats import BlocksJson

            writer = BlocksJson().writer(handle_of["blocks"])
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
        made = [e for e in entries if e.make is not None]
        if made:
            extraction = _with_derived(extraction, made, handle_of, profile, rules, use_pva)
        if on_extracted is not None:
            on_extracted(extraction)
        data = summary_bytes(extraction.summary)
        handles[-1].write(data)
    return extraction, data


def _with_derived(
    extraction: Extraction,
    made: List[DerivedFile],
    handle_of: Dict[str, IO[bytes]],
    profile: StrPath,
    rules: Optional[StageRules],
    use_pva: bool,
) -> Extraction:
    """Make each derived file of `made` (its entry's `make`) into its handle, the
    summary's "profile" its own; the extraction with their warnings added, each named
    by its file."""
    from .pvafacts import import_pva
    from .rules import load_rules

    pva = import_pva() if use_pva else None
    rules = rules if rules is not None else load_rules(None)
    warnings = list(extraction.warnings)
    for entry in made:
        data, found = entry.function("make")(profile, rules, pva, extraction.summary["profile"])
        handle_of[entry.key].write(data)
        warnings += ["{}: {}".format(entry.name, warning) for warning in found]
    return extraction._replace(warnings=warnings)
