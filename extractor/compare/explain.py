"""After a failed budget: the `extract diff` command line that explains the worst
failing stage, when both recordings name profiles that are there to read.

The worst stage is the failed `stage:<label>` (or `stages:total`) check whose value is
furthest past its limit in proportion to the baseline's value. The bodies are those the
comparison's stage rows describe: the first body (diff's default) for the summary's
own cycles; with `--stat max` or `min`, the block where that stage's maximum or minimum
is (blocks.json's `max_at` / `min_at`). A median or a mean is no one block's: the
first bodies are compared then.
"""

import os
import shlex
from typing import List, Optional, Sequence

from ..core import metrics
from ..escaping import terminal_text
from ..readback.recordings import Recording
from .blockstats import FIRST
from .budget import BudgetCheck, excess

#: The statistic whose block a line suggests, and the key of blocks.json naming it.
_AT = {"max": "max_at", "min": "min_at"}


def _is_stage(metric: str) -> bool:
    return metric.startswith(metrics.STAGE) or metric == metrics.STAGES_TOTAL


def _weight(check: BudgetCheck) -> float:
    past = abs(excess(check) or 0)
    return past / abs(check.baseline) if check.baseline else float(past)


def worst_stage(checks: Sequence[BudgetCheck]) -> Optional[BudgetCheck]:
    """The failed stage check furthest past its limit (the first such, on a tie)."""
    failed = [c for c in checks if _is_stage(c.metric) and excess(c) is not None]
    return max(failed, key=_weight) if failed else None


def _body(data: Optional[dict], metric: str, stat: str) -> Optional[List[int]]:
    """[run, block] of the stage's `stat` in a blocks.json's statistics, or None."""
    if stat not in _AT or data is None:
        return None
    if metric == metrics.STAGES_TOTAL:
        stats = data.get("total")
    else:
        stats = data["stats"].get(metric[len(metrics.STAGE) :])
    return stats.get(_AT[stat]) if stats else None


def diff_suggestion(
    checks: Sequence[BudgetCheck],
    recordings: Sequence[Recording],
    stat: str = FIRST,
    blocks: Optional[Sequence[dict]] = None,
) -> Optional[str]:
    """The line that says which `extract diff` explains the worst failed stage, or None
    (no stage failed, or a profile is not there). `blocks`: each recording's blocks.json
    statistics with --stat (compare's read_block_statistics)."""
    check = worst_stage(checks)
    if check is None:
        return None
    by_label = {recording.label: index for index, recording in enumerate(recordings)}
    index = by_label.get(check.recording)
    if index is None or index == 0:
        return None
    base, candidate = recordings[0], recordings[index]
    profiles = [base.summary.data.get("profile"), candidate.summary.data.get("profile")]
    if not all(isinstance(p, str) and os.path.isfile(p) for p in profiles):
        return None
    words = ["extract", "diff"] + [shlex.quote(str(p)) for p in profiles]
    if stat != FIRST:
        where = [_body(blocks[i] if blocks else None, check.metric, stat) for i in (0, index)]
        if where[0] is not None and where[1] is not None:
            words += ["--block", "{}:{}".format(*where[0])]
            if where[1] != where[0]:
                words += ["--candidate-block", "{}:{}".format(*where[1])]
    return terminal_text(
        "why {} failed in {}: {}".format(check.metric, check.recording, " ".join(words))
    )
