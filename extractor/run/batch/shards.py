"""Shards: a batch cut into N shares (`--shard K/N`, or `slurm` for an array job's task).

Each shard takes every N-th profile of the sorted list and writes its own index file
(`batchnames.index_name`); `extract merge` folds them together.
"""

import os
from typing import NamedTuple, Optional

from ...wholetext import read_whole, shown_text


class Shard(NamedTuple):
    """Shard `number` (1-based) of `total`: every total-th profile of the sorted list.
    (Not `count`: a field of that name hides tuple.count.)"""

    number: int
    total: int

    def take(self, items: list) -> list:
        return items[self.number - 1 :: self.total]


def parse_shard(text: str, environ=os.environ) -> Shard:
    """`K/N` (1 <= K <= N), or `slurm` for the array task's share. ValueError if bad."""
    if text == "slurm":
        task = _slurm_number(environ, "SLURM_ARRAY_TASK_ID", least=0)
        count = _slurm_number(environ, "SLURM_ARRAY_TASK_COUNT", least=1)
        first = _slurm_number(environ, "SLURM_ARRAY_TASK_MIN", least=0, default=0)
        step = _slurm_number(environ, "SLURM_ARRAY_TASK_STEP", least=1, default=1)
        if task < first:
            raise ValueError(
                "SLURM array task {} is below SLURM_ARRAY_TASK_MIN={}".format(task, first)
            )
        number = (task - first) // step + 1
        if not 1 <= number <= count:
            raise ValueError("SLURM array task {} is outside its {} tasks".format(task, count))
        return Shard(number, count)
    parts = text.split("/")
    given = [read_whole(part) for part in parts] if len(parts) == 2 else [None]
    shard_number, shard_count = given[0], given[-1]
    if shard_number is None or shard_count is None:
        raise ValueError("--shard takes K/N (e.g. 2/8) or slurm, not {}".format(shown_text(text)))
    if not 1 <= shard_number <= shard_count:
        raise ValueError("--shard K/N needs 1 <= K <= N, not {!r}".format(text))
    return Shard(shard_number, shard_count)


def _slurm_number(environ, name: str, least: int, default: Optional[int] = None) -> int:
    """A SLURM_ARRAY_TASK_* variable: a whole number (wholetext's, signed) of at least
    `least`; `default` when unset or empty, if it may be. ValueError if not."""
    text = environ.get(name)
    if not text and default is not None:
        return default
    if text is None:
        raise ValueError("--shard slurm needs {} (run it inside a SLURM array job)".format(name))
    value = read_whole(text, signed=True)
    if value is None:
        raise ValueError("{}={}: not a whole number".format(name, shown_text(text)))
    if value < least:
        raise ValueError("{}={}: must be {} or more".format(name, value, least))
    return value
