"""The names a batch folder gives its own files, in one place: the batch writes them,
merge and provenance look for its index files by them, and no command writes over one
inside a folder it reads (targets)."""

import fnmatch
from typing import Optional, Tuple

from .derived import DERIVED_NAMES

#: The index a whole batch (or a merge of its shards) writes.
INDEX_NAME = "index.jsonl"

#: The index shard K of N writes: `index-shard-K-of-N.jsonl`.
SHARD_INDEX_PATTERN = "index-shard-*.jsonl"

#: The files a batch writes under fixed names (beside them, its shards' indexes; and the
#: derived files, derived.py, blocks.json first).
BATCH_FILE_NAMES = ("summary.json",) + DERIVED_NAMES + (INDEX_NAME, "steps.csv", "first-body.csv")


def index_name(shard: Optional[Tuple[int, int]] = None) -> str:
    """The index file of a whole batch (`shard` None) or of shard (K, N)."""
    if shard is None:
        return INDEX_NAME
    return SHARD_INDEX_PATTERN.replace("*", "{}-of-{}").format(*shard)


def is_index_name(name: str) -> bool:
    """Whether a file called `name` is a batch's index or one of its shards'."""
    return name == INDEX_NAME or fnmatch.fnmatchcase(name, SHARD_INDEX_PATTERN)


def is_batch_file_name(name: str) -> bool:
    """Whether a file called `name` is one a batch writes."""
    return name in BATCH_FILE_NAMES or is_index_name(name)
