"""`extract compare --stat`: the stage rows of a comparison as a statistic over every
block (docs/formats/blocks.md), read from the blocks.json beside each summary.json, in place of
the first body's cycles. Only the stage rows and their total change; the rest of the
comparison is the summaries' (`over_blocks` replaces those rows, nothing else).
"""

import math
from typing import List

from ..core import metrics
from ..core.blockformats import BLOCKS_NAME, check_blocks, not_blocks, read_blocks_json
from ..errors import BlocksFileError
from ..readback.recordings import Recording, beside
from ..statchoices import FIRST
from .comparison import KERNEL_CYCLES, STAGE_TOTAL, STAGES, TOTAL, Comparison, Row, _with_change


class MissingBlocks(ValueError):
    """A recording has no blocks.json beside its summary: a usage error (run the batch
    with --blocks)."""


def unit_of(stat: str) -> str:
    """The unit column of the stage rows: which statistic they show."""
    return "{}, {} over blocks".format(KERNEL_CYCLES, stat)


def read_block_statistics(recording: Recording, stat: str) -> dict:
    """The blocks.json beside a recording's summary, checked as far as compare uses it
    (its "stats" and "total": `stat` a number in each), then whole (check_blocks)."""
    path = beside(recording, BLOCKS_NAME, BlocksFileError)
    if not path.exists() and not path.is_symlink():
        raise MissingBlocks(
            "{}: no {} beside it, which --stat {} needs: extract with --blocks".format(
                recording.path, BLOCKS_NAME, stat
            )
        )
    data = read_blocks_json(path)
    if not isinstance(data.get("stats"), dict) or not (
        data.get("total") is None or isinstance(data.get("total"), dict)
    ):
        raise not_blocks(path, 'no "stats" object or "total"')
    for label, stats in list(data["stats"].items()) + [("total", data["total"] or {})]:
        if not isinstance(stats, dict):
            raise not_blocks(path, "stats of {!r} are not an object".format(label))
        value = stats.get(stat)
        if stats and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise not_blocks(path, "{!r} of {!r} is not a number".format(stat, label))
    return check_blocks(path, data)


def stage_rows(blocks: List[dict], stat: str) -> List[Row]:
    """The stage rows and their total, `stat` over each recording's blocks (`blocks`:
    each one's read_block_statistics); a stage absent from a recording's blocks is None there."""
    labels: List[str] = []
    for each in blocks:
        labels.extend(label for label in each["stats"] if label not in labels)
    unit = unit_of(stat)
    rows = [
        _with_change(
            STAGES,
            label,
            unit,
            (each["stats"].get(label, {}).get(stat) for each in blocks),
            metrics.stage_metric(label),
        )
        for label in labels
    ]
    rows.append(
        _with_change(
            STAGE_TOTAL,
            TOTAL,
            unit,
            (each["total"][stat] if each["total"] else None for each in blocks),
            metrics.STAGES_TOTAL,
        )
    )
    return rows


def stat_metrics(recording: Recording, data: dict, stat: str) -> dict:
    """The recording's metrics (metrics.metrics) with `stage:<label>` and `stages:total`
    taken as `stat` over its blocks (`data`: its read_block_statistics), as the comparison's stage
    rows show them: what compare --budget checks with --stat."""
    found = {
        metrics.stage_metric(label): stats[stat] for label, stats in data["stats"].items() if stats
    }
    if data["total"]:
        found[metrics.STAGES_TOTAL] = data["total"][stat]
    for name, value in metrics.metrics(recording.summary, recording.beside).items():
        if not (name.startswith(metrics.STAGE) or name == metrics.STAGES_TOTAL):
            found[name] = value
    return found


def over_blocks(comparison: Comparison, stat: str, blocks: List[dict]) -> Comparison:
    """`comparison` with its stage rows (and their total) showing `stat` over all
    blocks (`blocks`: each recording's read_block_statistics); unchanged for `first`."""
    if stat == FIRST:
        return comparison
    rest = [row for row in comparison.rows if row.section not in (STAGES, STAGE_TOTAL)]
    return comparison._replace(rows=stage_rows(blocks, stat) + rest)
