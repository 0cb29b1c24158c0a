"""The SQL side of `extract memory`: each tile's total and its bytes by category.

Two queries do the work: one scan of `memory_by_tile` (a row per tile, in rowid order:
the tile of a row is its position) and one `GROUP BY tile, category` pass over
`vars_info` (millions of rows), whose result has a row per tile and category. Nothing
is kept per `vars_info` row.
"""

from typing import Any, Dict, List, NamedTuple, Optional

from ..core.profile import Profile
from ..core.sqlitefile import SQL_ERRORS, storage_class
from ..errors import ProfileError, StrPath

#: The tables `extract memory` reads (docs/formats/memory.md).
MEMORY_TABLES = ("vars_info", "var_categories", "memory_by_tile")

_TOTALS = "SELECT total FROM memory_by_tile ORDER BY rowid"
_MEAN = "SELECT avg(total) FROM memory_by_tile"
_CATEGORY_NAMES = "SELECT id, CAST(name AS TEXT) FROM var_categories"
# One pass: SQLite sorts the rows by (tile, category) and sums each group. min and max
# check the sizes at the cost of a comparison: SQLite orders text and blobs after every
# number (max gives them), a fraction makes the sum a REAL, a negative size is the min.
_BY_TILE_AND_CATEGORY = """
SELECT tile, category, sum(size_bytes), count(*), min(size_bytes), max(size_bytes)
FROM vars_info
GROUP BY tile, category
"""
_NOT_WHOLE_SIZE = (
    "SELECT size_bytes FROM vars_info WHERE tile = ? AND category IS ? "
    "AND typeof(size_bytes) NOT IN ('integer', 'null') LIMIT 1"
)


class TileRows(NamedTuple):
    """What the profile's SQL says of its tiles' memory."""

    totals: List[int]  # memory_by_tile.total, by tile
    mean: Optional[float]  # SQLite's avg(total); None without tiles
    categories: Dict[int, Dict[str, int]]  # tile -> {category name: bytes}, tiles with rows
    stray_rows: int  # vars_info rows of no tile (NULL, negative, past the last tile)


def category_name(category: Any, names: Dict[Any, str]) -> str:  # Any: a SQLite value
    """The name var_categories gives `category`, else `category <id>`."""
    name = names.get(category)
    if name is not None:
        return name
    return "category {}".format("null" if category is None else category)


def read_tiles(path: StrPath) -> TileRows:
    """The tiles' totals and bytes by category of the profile at `path` (read-only).
    ProfileError for a total that is NULL, negative or not a whole number (naming the
    tile), a size that is negative or not a whole number, a tile that is not a whole
    number, or var_categories naming one id twice."""
    with Profile(path, tables=MEMORY_TABLES, check_start_end=False) as profile:
        try:
            return _read(profile)
        except SQL_ERRORS as exc:
            raise profile.error(exc) from exc


def read_totals(path: StrPath, most: Optional[int] = None) -> List[int]:
    """Every tile's total of the profile at `path` (read-only; only `memory_by_tile` is
    required): one scan of memory_by_tile in rowid order, the ProfileErrors of
    `read_tiles` for a bad total. `most`: stop after this many tiles and one more (a
    caller that expects `most` learns there are more without reading them all)."""
    with Profile(path, tables=("memory_by_tile",), check_start_end=False) as profile:
        try:
            _check_rowid(profile)
            return _totals(profile, most)
        except SQL_ERRORS as exc:
            raise profile.error(exc) from exc


def _check_rowid(profile: Profile) -> None:
    if not profile.has_rowid("memory_by_tile"):
        raise ProfileError(
            profile.path,
            "table 'memory_by_tile' has no rowid: its rows have no order to number the tiles by",
        )


def _totals(profile: Profile, most: Optional[int] = None) -> List[int]:
    totals = []  # type: List[int]
    for tile, (total,) in enumerate(profile.db.execute(_TOTALS)):
        if most is not None and tile > most:
            break
        if type(total) is not int or total < 0:
            shown = "NULL" if total is None else storage_class(total)
            problem = "negative" if type(total) is int else "not a whole number"
            raise ProfileError(
                profile.path,
                "memory_by_tile: the total of tile {} is {}: {} (a tile's total is a "
                "whole number of bytes)".format(tile, shown, problem),
            )
        totals.append(total)
    return totals


def _read(profile: Profile) -> TileRows:
    _check_rowid(profile)
    profile.check_unique("var_categories", "id")
    totals = _totals(profile)
    mean = profile.db.execute(_MEAN).fetchone()[0] if totals else None
    names = {key: name for key, name in profile.db.execute(_CATEGORY_NAMES) if name is not None}  # type: Dict[Any, str]
    categories = {}  # type: Dict[int, Dict[str, int]]
    stray = 0
    count = len(totals)
    for tile, category, size, rows, smallest, largest in profile.db.execute(_BY_TILE_AND_CATEGORY):
        if tile is not None and type(tile) is not int:
            raise ProfileError(
                profile.path,
                "vars_info: a tile is {}, not a whole number".format(storage_class(tile)),
            )
        if tile is None or tile < 0 or tile >= count:
            stray += rows
            continue
        if type(size) is float or (largest is not None and type(largest) is not int):
            value = profile.db.execute(_NOT_WHOLE_SIZE, (tile, category)).fetchone()
            raise ProfileError(
                profile.path,
                "vars_info: a size_bytes of tile {} is {}, not a whole number".format(
                    tile, storage_class(value[0] if value else None)
                ),
            )
        if smallest is not None and smallest < 0:
            raise ProfileError(
                profile.path,
                "vars_info: a size_bytes of tile {} is negative ({})".format(tile, smallest),
            )
        name = category_name(category, names)
        of_tile = categories.setdefault(tile, {})
        of_tile[name] = of_tile.get(name, 0) + (size or 0)
    return TileRows(totals, mean, categories, stray)
