"""memory.json (docs/formats/memory.md) from the SQL's tiles and pva's facts.

`TileMemory` is the command's result: `report`, memory.json as a dict in its keys' order,
and what the CSV needs beyond it (every tile's total and bytes by category).
"""

from typing import Dict, List, NamedTuple, Optional, Sequence

from ..core.rules import StageRules
from .pvamemory import PvaMemory
from .tiles import TileRows

#: memory.json's keys, in order.
MEMORY_KEYS = (
    "profile",
    "tiles",
    "ipus",
    "tiles_per_ipu",
    "bytes_per_tile",
    "total",
    "balance",
    "limit",
    "histogram",
    "categories",
    "fullest",
    "per_ipu",
    "liveness",
    "exchanges",
    "stray_rows",
)
HISTOGRAM_BUCKETS = 16
DEFAULT_TOP = 5


class TileMemory(NamedTuple):
    """`extract memory`'s result."""

    report: dict  # memory.json
    totals: List[int]  # by tile
    categories: Dict[int, Dict[str, int]]  # tile -> {category: bytes}, tiles with rows


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _lowest_at_max(values: Sequence[int], offset: int = 0) -> int:
    return offset + values.index(max(values))


def _histogram(totals: List[int], bytes_per_tile: Optional[int]) -> List[dict]:
    if not totals:
        return []
    if bytes_per_tile is not None:
        width = _ceil_div(bytes_per_tile, HISTOGRAM_BUCKETS)
        edges = [k * width for k in range(HISTOGRAM_BUCKETS + 1)] + [None]
    else:
        width = max(1, _ceil_div(max(totals) + 1, HISTOGRAM_BUCKETS))
        edges = [k * width for k in range(HISTOGRAM_BUCKETS + 1)]
    counts = [0] * (len(edges) - 1)
    last = len(counts) - 1
    for total in totals:
        counts[min(total // width, last)] += 1
    return [{"from": edges[k], "to": edges[k + 1], "tiles": counts[k]} for k in range(len(counts))]


def _by_bytes(of_tile: Dict[str, int]) -> List[dict]:
    ordered = sorted(of_tile.items(), key=lambda item: (-item[1], item[0]))
    return [{"category": name, "bytes": size} for name, size in ordered]


def _categories(categories: Dict[int, Dict[str, int]]) -> List[dict]:
    found = {}  # type: Dict[str, List[int]]  # name -> [sum, tiles, max, max_tile]
    for tile in sorted(categories):
        for name, size in categories[tile].items():
            entry = found.get(name)
            if entry is None:
                found[name] = [size, 1, size, tile]
                continue
            entry[0] += size
            entry[1] += 1
            if size > entry[2]:
                entry[2], entry[3] = size, tile
    ordered = sorted(found.items(), key=lambda item: (-item[1][0], item[0]))
    return [
        {
            "category": name,
            "sum": total,
            "tiles": tiles,
            "max": most,
            "max_tile": most_tile,
            "mean": total / tiles,
        }
        for name, (total, tiles, most, most_tile) in ordered
    ]


def _fullest(
    rows: TileRows, top: int, tiles_per_ipu: Optional[int], bytes_per_tile: Optional[int]
) -> List[dict]:
    ranked = sorted(range(len(rows.totals)), key=lambda tile: (-rows.totals[tile], tile))
    fullest = []
    for tile in ranked[:top]:
        total = rows.totals[tile]
        of_tile = rows.categories.get(tile, {})
        fullest.append(
            {
                "tile": tile,
                "ipu": None if tiles_per_ipu is None else tile // tiles_per_ipu,
                "total": total,
                "headroom": None if bytes_per_tile is None else bytes_per_tile - total,
                "categories": _by_bytes(of_tile),
                "unattributed": total - sum(of_tile.values()),
            }
        )
    return fullest


def _per_ipu(totals: List[int], tiles_per_ipu: int) -> List[dict]:
    per_ipu = []
    for ipu in range(_ceil_div(len(totals), tiles_per_ipu)):
        first = ipu * tiles_per_ipu
        part = totals[first : first + tiles_per_ipu]
        per_ipu.append(
            {
                "ipu": ipu,
                "sum": sum(part),
                "min": min(part),
                "max": max(part),
                "max_tile": _lowest_at_max(part, first),
                "mean": sum(part) / len(part),
            }
        )
    return per_ipu


def _liveness(facts: PvaMemory) -> dict:
    steps = facts.not_always_live
    peak = max(steps) if steps else 0
    return {
        "always_live": facts.always_live,
        "peak_not_always_live": peak,
        "peak_step": steps.index(peak) if steps else None,
        "peak": facts.always_live + peak,
    }


def _exchanges(facts: PvaMemory, top: int, rules: StageRules) -> List[dict]:
    ranked = sorted(facts.exchanges, key=lambda code: -code.max)  # stable: pva's order
    return [
        {
            "name": code.name,
            "stage": rules.stage_of(code.name),
            "max": code.max,
            "max_tile": code.max_tile,
            "sum": code.sum,
        }
        for code in ranked[:top]
    ]


def tile_memory(
    profile_label: str,
    rows: TileRows,
    facts: Optional[PvaMemory],
    rules: StageRules,
    top: int = DEFAULT_TOP,
    bytes_per_tile: Optional[int] = None,
) -> TileMemory:
    """memory.json of the profile (`profile_label`: its path as given) from its SQL
    `rows` and pva's `facts` (None: without pva, every pva field null); `top`: how many
    fullest tiles and exchanges; `bytes_per_tile`: the limit, over pva's."""
    totals = rows.totals
    ipus = facts.ipus if facts is not None else None
    tiles_per_ipu = facts.tiles_per_ipu if facts is not None else None
    if bytes_per_tile is None and facts is not None:
        bytes_per_tile = facts.bytes_per_tile
    report = dict.fromkeys(MEMORY_KEYS)  # type: dict
    report.update(
        profile=profile_label,
        tiles=len(totals),
        ipus=ipus,
        tiles_per_ipu=tiles_per_ipu,
        bytes_per_tile=bytes_per_tile,
        histogram=[],
        categories=[],
        fullest=[],
        stray_rows=rows.stray_rows,
    )
    if totals:
        most, least = max(totals), min(totals)
        report["total"] = {
            "sum": sum(totals),
            "min": least,
            "min_tile": totals.index(least),
            "mean": rows.mean,
            "median": sorted(totals)[(len(totals) - 1) // 2],
            "max": most,
            "max_tile": totals.index(most),
        }
        report["balance"] = rows.mean / most if most and rows.mean is not None else None
        if bytes_per_tile is not None:
            report["limit"] = {
                "over": sum(1 for total in totals if total > bytes_per_tile),
                "headroom": bytes_per_tile - most,
                "used": most / bytes_per_tile,
            }
        report["histogram"] = _histogram(totals, bytes_per_tile)
        report["categories"] = _categories(rows.categories)
        report["fullest"] = _fullest(rows, top, tiles_per_ipu, bytes_per_tile)
        if tiles_per_ipu is not None:
            report["per_ipu"] = _per_ipu(totals, tiles_per_ipu)
    if facts is not None:
        report["liveness"] = _liveness(facts)
        report["exchanges"] = _exchanges(facts, top, rules)
    return TileMemory(report, totals, rows.categories)
