"""One profile of a batch: its extraction (`extract_one`, in a worker), its index entry
(what it was made from, how, and what came of it), and whether the entry an earlier run
left is still up to date (`is_up_to_date`, in the parent).

The batch adds bookkeeping around `pipeline.extract_profile`, which `extract PROFILE -o
FILE` runs too: a summary's bytes are the same.
"""

import datetime
import hashlib
import os
import stat
from pathlib import Path
from typing import NamedTuple, Optional, Tuple

from ... import __version__
from ...core.blocks import median_stage_cycles
from ...core.model import Summary
from ...core.pipeline import extract_profile
from ...core.steptables import csv_paths
from ...derived import DERIVED_FILES, DerivedFile, chosen
from ...errors import ExtractorError, one_line, shown_path
from ...inputs import read_regular
from ...readback.index import read_in_outdir, resolve_in_outdir
from .discover import BatchItem

OK, UP_TO_DATE, FAILED = "ok", "up to date", "failed"


class RunOptions(NamedTuple):
    """What changes how each profile of a batch is extracted (passed to the workers)."""

    use_pva: bool = True
    csv: bool = False  # also write steps.csv and first-body.csv beside each summary
    # The derived files written beside each summary (their keys in derived.DERIVED_FILES).
    derived: Tuple[str, ...] = ()


def timestamp() -> str:
    """Now, in UTC, as an index entry's `finished_at`."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def _input_facts(profile: Path) -> dict:
    try:
        stat = profile.stat()
    except OSError:
        return {"size": None, "mtime_ns": None}
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _base_entry(item: BatchItem, outdir: Path, rules, options: RunOptions) -> dict:
    """What every index entry says: which input, which output, made how."""
    entry = {
        "profile": item.label,
        "output": shown_path(item.output(outdir)),
        "summary": item.summary_key,
        "rules_sha256": rules.sha256,
        "tool_version": __version__,
        "pva": options.use_pva,
        "csv": options.csv,
    }
    for derived in DERIVED_FILES:  # each: whether this extraction writes it
        entry[derived.key] = derived.key in options.derived
    entry.update(_input_facts(item.profile))
    return entry


def extract_one(item: BatchItem, outdir: Path, rules, options: RunOptions = RunOptions()) -> dict:
    """Extract one profile of a batch and write its summary; return its index entry."""
    output = item.output(outdir)
    entry = _base_entry(item, outdir, rules, options)
    try:
        if not _inside(output, outdir):
            raise ExtractorError(output, "would fall outside the output folder")
        extraction, data = extract_profile(
            item.profile,
            output,
            rules,
            use_pva=options.use_pva,
            csv=options.csv,
            derived=options.derived,
            strict=True,
            profile_label=item.label,
        )
    except ExtractorError as exc:
        entry.update(status=FAILED, reason=str(exc))
    except Exception as exc:  # an input nobody foresaw: fail this profile, not the batch
        entry.update(
            status=FAILED,
            reason="{}: unexpected failure: {}: {}".format(
                shown_path(item.profile), type(exc).__name__, one_line(exc)
            ),
        )
    else:
        entry.update(
            status=OK,
            summary_sha256=hashlib.sha256(data).hexdigest(),
            warnings=extraction.warnings,
            **Summary(extraction.summary).headline(),
        )
        if options.csv:
            entry["csv_bytes"] = _csv_sizes(output)
        for derived in chosen(options.derived):
            entry[derived.sha256_key] = _derived_sha256(derived, output)
        if "blocks" in options.derived:
            entry["median_stage_cycles"] = median_stage_cycles(extraction.blocks)
    entry["finished_at"] = timestamp()
    return entry


def _inside(path: Path, folder: Path) -> bool:
    real_folder = os.path.realpath(str(folder))
    real_parent = os.path.realpath(str(path.parent))
    return os.path.commonpath([real_folder, real_parent]) == real_folder


def _csv_sizes(output: Path) -> Optional[dict]:
    """The sizes of the step tables beside a summary, or None if one is missing."""
    try:
        return {path.name: path.stat().st_size for path in csv_paths(output.parent)}
    except OSError:
        return None


def _derived_sha256(derived: DerivedFile, output: Path) -> Optional[str]:
    """The SHA-256 of the derived file beside a summary (blocks.json...), or None if it
    is not a regular file."""
    path = derived.path(output)
    try:
        if not stat.S_ISREG(os.lstat(str(path)).st_mode):  # a link is never followed
            return None
        return hashlib.sha256(read_regular(path)).hexdigest()
    except OSError:
        return None


def is_up_to_date(
    item: BatchItem, outdir: Path, rules, options: RunOptions, previous: Optional[dict]
) -> bool:
    """Its last entry succeeded with this input, named as now (the summary's `profile`
    value), these rules, options and tool version, and the summary it wrote is still
    there, unchanged (and, for a --csv run, the step tables written with it, at the sizes
    they had; for a run with derived files, --blocks..., each written with it, unchanged)."""
    if previous is None or previous.get("status") not in (OK, UP_TO_DATE):
        return False
    if previous.get("profile") != item.label:
        return False
    if previous.get("pva") != options.use_pva:
        return False
    output = item.output(outdir)
    # Its summary is read only where it resolves inside OUTDIR's real path: a folder
    # that is a link out of OUTDIR (made since) is never read through (nor its
    # blocks.json), whatever the index line says.
    relative = output.relative_to(outdir).as_posix()
    if resolve_in_outdir(outdir, relative) is None:
        return False
    # Extracted without the step tables, or they have gone or changed since: not for --csv.
    if options.csv and (
        not previous.get("csv")
        or previous.get("csv_bytes") is None
        or previous.get("csv_bytes") != _csv_sizes(item.output(outdir))
    ):
        return False
    # Extracted without a derived file asked for now (blocks.json...), or it has gone or
    # changed since: not up to date for its option.
    for derived in chosen(options.derived):
        if (
            not previous.get(derived.key)
            or previous.get(derived.sha256_key) is None
            or previous.get(derived.sha256_key) != _derived_sha256(derived, output)
        ):
            return False
    facts = _input_facts(item.profile)
    if facts["size"] is None or any(previous.get(k) != v for k, v in facts.items()):
        return False
    if previous.get("rules_sha256") != rules.sha256 or previous.get("tool_version") != __version__:
        return False
    if previous.get("output") != shown_path(output):
        return False
    try:
        if not stat.S_ISREG(os.lstat(str(output)).st_mode):  # a link is never followed
            return False
    except OSError:
        return False
    # read_in_outdir: inside OUTDIR only, never a FIFO put in its place since (it would
    # block the batch forever), never more than a summary's bound.
    data = read_in_outdir(outdir, relative)
    return data is not None and hashlib.sha256(data).hexdigest() == previous.get("summary_sha256")


def failed_entry(item: BatchItem, outdir: Path, rules, options: RunOptions, reason: str) -> dict:
    """The entry of a profile whose extraction gave none: its worker died, ran out of
    time or could not start, or the extraction failed outside extract_one's own net."""
    entry = _base_entry(item, outdir, rules, options)
    entry.update(
        status=FAILED,
        reason="{}: {}".format(shown_path(item.profile), reason),
        finished_at=timestamp(),
    )
    return entry
