"""What lies beside the summaries of a batch: its index (which profiles failed, and
with what warnings) and the blocks.json files (docs/formats/blocks.md), read for the report.

An index is looked for in each folder argument itself (`OUTDIR/index.jsonl`, and the
shards' `index-shard-K-of-N.jsonl`), as `extract PATH... -o OUTDIR` leaves it; a summary
file given alone has none. A blocks.json is read where it sits beside a recording's
summary.json; one that is not as docs/formats/blocks.md describes is an error naming it.
"""

import json
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..core.blockformats import blocks_path, check_blocks, read_blocks_json
from ..readback.index import latest_by_output, read_entries

FAILED = "failed"


class Failure(NamedTuple):
    profile: str
    reason: str


class Warned(NamedTuple):
    profile: str
    warnings: Tuple[str, ...]


class IndexFacts(NamedTuple):
    """What the indexes of the folder arguments say, over all of them."""

    indexes: int  # how many index files were read
    profiles: int  # how many profiles they list (their latest line each)
    failures: List[Failure]
    warned: List[Warned]


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def read_index_facts(arguments: Sequence) -> IndexFacts:
    """The failures and warnings the index files of the folder arguments list (each
    summary's latest line: a profile that failed once and was extracted since is not
    failed). Unreadable or torn lines are passed over, as the batch itself does."""
    indexes = profiles = 0
    failures: List[Failure] = []
    warned: List[Warned] = []
    for argument in arguments:
        folder = Path(argument)
        if not folder.is_dir():
            continue
        entries = []
        for path in sorted(folder.glob("index*.jsonl")):
            indexes += 1
            entries.extend(read_entries(path))
        latest = latest_by_output(entries, folder)
        for _key, entry in sorted(latest.items(), key=lambda item: str(item[0][1])):
            profiles += 1
            profile = _text(entry["profile"])
            if entry.get("status") == FAILED:
                failures.append(Failure(profile, _text(entry.get("reason", "(no reason given)"))))
            warnings = entry.get("warnings")
            if isinstance(warnings, list) and warnings:
                warned.append(Warned(profile, tuple(_text(w) for w in warnings)))
    return IndexFacts(indexes, profiles, failures, warned)


# ---- blocks.json -------------------------------------------------------------------


class HeatMapBody(NamedTuple):
    """A body of a blocks.json, as a row of the heat map (core.blocks.Body is the pass's)."""

    run: int
    block: int
    cycles: Dict[str, Optional[int]]
    total: Optional[int]


class HeatMapBlocks(NamedTuple):
    """A blocks.json, as far as the heat map needs it."""

    path: Path
    stages: List[str]  # the file's "stages", in order
    bodies: List[HeatMapBody]


def _is_int(value) -> bool:
    """A whole number of 64 bits (read_blocks_json refuses any other already)."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def _whole_or_null(value) -> bool:
    return value is None or _is_int(value)


def read_heat_map_blocks(summary_path: Path) -> Optional[HeatMapBlocks]:
    """The blocks.json beside `summary_path`, or None when there is none.
    BlocksFileError when it is there but cannot be read or is not a blocks file."""
    path = blocks_path(summary_path)
    if not path.exists() and not path.is_symlink():
        return None
    data = check_blocks(path, read_blocks_json(path))  # the whole file, as its format says
    bodies = [
        HeatMapBody(body["run"], body["block"], dict(body["cycles"]), body.get("total"))
        for body in data["blocks"]
    ]
    return HeatMapBlocks(path, list(data["stages"]), bodies)
