"""`extract doctor`'s checks of what `extract memory` assumes, against pva: that
`memory_by_tile` has a row per tile of the target (the tile of a row being its
position), which of pva's totals (`includingGaps` or `excludingGaps`) its `total` is, and
that every tile `vars_info` names is one of the target's."""

from typing import Any, List, NamedTuple

from ..core.profile import Profile
from ..core.pvafacts import as_int
from ..core.sqlitefile import SQL_ERRORS
from ..memory.tiles import MEMORY_TABLES
from .doctorchecks import LISTED, OK, WARN, DoctorCheck, doctor_check, tile_count
from .doctorsides import PvaSide

MEANS_ROWS = "extract memory numbers the tiles by memory_by_tile's row order"


class MemorySql(NamedTuple):
    totals: List[Any]  # memory_by_tile.total in row order, as SQLite gives them
    highest_tile: Any  # the largest vars_info.tile (None: no row)


def read_memory_sql(path: Any) -> MemorySql:
    with Profile(path, tables=MEMORY_TABLES, check_start_end=False) as profile:
        try:
            totals = [
                row[0]
                for row in profile.db.execute("SELECT total FROM memory_by_tile ORDER BY rowid")
            ]
            highest = profile.db.execute("SELECT max(tile) FROM vars_info").fetchone()[0]
        except SQL_ERRORS as exc:
            raise profile.error(exc) from exc
    return MemorySql(totals, highest)


def check_memory_by_tile_rows(sql: MemorySql, side: PvaSide) -> DoctorCheck:
    """memory_by_tile has one row per tile of the target."""
    tiles = tile_count(side)
    rows = len(sql.totals)
    data = {"rows": rows, "target_tiles": tiles}
    if tiles is None:
        return doctor_check(
            "memory_by_tile_rows",
            OK,
            "{} rows; pva gives no target.numTiles to compare with".format(rows),
            MEANS_ROWS + "; how many tiles the target has is unknown",
            **data,
        )
    if rows == tiles:
        return doctor_check(
            "memory_by_tile_rows",
            OK,
            "{} rows, one per tile of the target".format(rows),
            MEANS_ROWS + ", one per tile, as it assumes",
            **data,
        )
    return doctor_check(
        "memory_by_tile_rows",
        WARN,
        "{} rows; the target has {} tiles".format(rows, tiles),
        MEANS_ROWS + ": with another count of rows than tiles, its tile numbers may not be pva's",
        **data,
    )


def _pva_totals(side: PvaSide) -> List[List[int]]:
    """[includingGaps, excludingGaps] of each tile pva lists."""
    found = []
    for tile in side.compilation.tiles:
        total = tile.memory.total
        found.append([as_int(total.includingGaps), as_int(total.excludingGaps)])
    return found


def check_memory_totals(sql: MemorySql, side: PvaSide) -> DoctorCheck:
    """Which of pva's per-tile totals memory_by_tile.total is, tile by tile."""
    pva_totals = _pva_totals(side)
    compared = min(len(pva_totals), len(sql.totals))
    including = [t for t in range(compared) if sql.totals[t] == pva_totals[t][0]]
    excluding = [t for t in range(compared) if sql.totals[t] == pva_totals[t][1]]
    neither = [t for t in range(compared) if t not in set(including) | set(excluding)]
    data = {
        "tiles_compared": compared,
        "sql_rows": len(sql.totals),
        "pva_tiles": len(pva_totals),
        "including_gaps": len(including),
        "excluding_gaps": len(excluding),
        "neither": neither[:LISTED],
    }
    if not compared:
        return doctor_check(
            "memory_totals",
            OK,
            "nothing to compare: {} rows in memory_by_tile, {} tiles in pva's report".format(
                len(sql.totals), len(pva_totals)
            ),
            "extract memory's totals are memory_by_tile's, unchecked",
            **data,
        )
    if neither:
        first = neither[0]
        return doctor_check(
            "memory_totals",
            WARN,
            "tile {}'s total is {!r} in memory_by_tile, but {} (includingGaps) and {} "
            "(excludingGaps) in pva; {} of {} tiles match neither".format(
                first,
                sql.totals[first],
                pva_totals[first][0],
                pva_totals[first][1],
                len(neither),
                compared,
            ),
            "extract memory's totals are not what the Graph Analyser shows for these tiles",
            **data,
        )
    if len(including) == compared:
        which = "includingGaps" + (
            " (and excludingGaps: no gaps)" if len(excluding) == compared else ""
        )
    elif len(excluding) == compared:
        which = "excludingGaps"
    else:
        which = "includingGaps on {} tiles, excludingGaps on the others".format(len(including))
    return doctor_check(
        "memory_totals",
        WARN if "on the others" in which else OK,
        "every total of the {} tiles compared is pva's {}".format(compared, which),
        "extract memory's totals are pva's memory.total.{}".format(which.split(" ")[0]),
        which=which,
        **data,
    )


def check_vars_info_tiles(sql: MemorySql, side: PvaSide) -> DoctorCheck:
    """Every tile vars_info names is below the target's tile count."""
    tiles = tile_count(side)
    data = {"highest_tile": sql.highest_tile, "target_tiles": tiles}
    if tiles is None or sql.highest_tile is None:
        return doctor_check(
            "vars_info_tiles",
            OK,
            "not compared: {}".format(
                "pva gives no target.numTiles" if tiles is None else "vars_info has no row"
            ),
            "extract memory counts a row past memory_by_tile's last tile in stray_rows",
            **data,
        )
    if isinstance(sql.highest_tile, int) and sql.highest_tile < tiles:
        return doctor_check(
            "vars_info_tiles",
            OK,
            "every vars_info tile is below the target's {} tiles".format(tiles),
            "every per-tile variable is on one of the target's tiles",
            **data,
        )
    return doctor_check(
        "vars_info_tiles",
        WARN,
        "vars_info names tile {!r}; the target has {} tiles".format(sql.highest_tile, tiles),
        "extract memory leaves such rows out, counted in stray_rows (or refuses a tile "
        "that is not a whole number)",
        **data,
    )
