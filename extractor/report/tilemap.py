"""The report's tile memory: from each recording's memory.json that belongs to its
summary, a map of its tiles (one cell per tile, a block of rows per IPU, the IPUs one
under another, each cell shaded by how full the tile is, the tiles over the limit
outlined) and its fullest tile's bytes by category as a lying bar (drawn by
extractor.barchart), bounded so that any batch gives a page a browser opens.

memory.json holds no tile's total but the fullest ones' (its format is fixed), so the map
takes every tile's total from the profile memory.json names: its `profile`, the path as
the extraction was given it, from the folder the report runs in (as compare's line that
suggests `extract diff` does) or, for a batch's summary, from the folder the batch ran in
(profile_to_read), opened read-only as any profile is, one scan of
memory_by_tile (memory.tiles.read_totals). The totals are drawn only while they still
agree with memory.json: the same number of tiles and the same `total` figures (sum, min,
min_tile, median, max, max_tile). Otherwise (the profile moved, unreadable, changed since)
the recording keeps its bar and, where the map would be, one line says why there is none.
"""

import os
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..barchart import stacked_bars, stacked_bars_svg
from ..derived import derived_file
from ..errors import ExtractorError, one_line, shown_path
from ..escaping import html_text
from .belonging import belonging_files
from .heatmap import shade_level
from .numbers import number_text
from .parsed import objects, whole

# The page as a whole draws at most this many tile cells; the tile maps past it are
# listed, not drawn (nor is their profile read). 64 recordings of one IPU of 1,472 tiles
# (94,208 cells) fit, or 4 recordings of 16 such IPUs. A cell is some 100 to 135 bytes of
# SVG with its tooltip: 94,208 cells with a limit made a 12.7 MB page that headless
# Chromium loaded and laid out in under 2 s.
MAX_TILE_CELLS = 100000
# A row of a map holds at most this many tiles (1,472 tiles of an IPU: 23 rows of 64).
TILES_PER_ROW = 64
# A cell is CELL pixels square, PITCH apart; the IPUs' names take LEFT pixels, and a
# block (an IPU) is BLOCK_GAP pixels below the one before it.
CELL, PITCH, LEFT, BLOCK_GAP, TOP = 10, 11, 64, 8, 4
# The over-limit tiles named in words (all are counted and outlined).
OVER_NAMED = 10
# The fullest tile's bar has a segment per category up to this many (memory.json lists
# them bytes first); the rest are one segment, "other categories". A hand-made file may
# list thousands.
MAX_CATEGORY_SEGMENTS = 24
UNATTRIBUTED = "unattributed"
BYTES = "bytes"


class TileMap(NamedTuple):
    label: str
    path: str  # the memory.json
    profile: str  # as memory.json names it ("" when it names none)
    tiles: int  # memory.json's `tiles`
    headline: str  # the fullest tile and the limit, in words
    map_svg: str  # the map, an inline <svg> ("" when not drawn)
    why: str  # "" or the one line saying why there is no map
    over_text: str  # the tiles over the limit, in words ("" without a limit or a map)
    over: int  # how many tiles of the map are over the limit
    scale_text: str  # what the darkest shade means
    chart_svg: str  # the fullest tile's categories ("" without a fullest tile)
    categories: List[Tuple[str, int]]  # the bar's legend: (category, colour index)
    drawn: bool = True  # False: past the page's MAX_TILE_CELLS, listed only

    @property
    def cells(self) -> int:
        return self.tiles if self.map_svg else 0


def _positive(value: Any) -> Optional[int]:  # Any: parsed JSON
    number = whole(value)
    return number if number is not None and number > 0 else None


def _plural(count: int, word: str) -> str:
    return "{} {}{}".format(number_text(count), word, "" if count == 1 else "s")


def _figures(totals: Sequence[int]) -> dict:
    """memory.json's `total` figures that the map's totals must give again."""
    most, least = max(totals), min(totals)
    return {
        "sum": sum(totals),
        "min": least,
        "min_tile": totals.index(least),
        "median": sorted(totals)[(len(totals) - 1) // 2],
        "max": most,
        "max_tile": totals.index(most),
    }


def profile_totals(data: dict, where: Optional[str] = None) -> Tuple[Optional[List[int]], str]:
    """Every tile's total, from the profile memory.json (`data`) names (read at `where`,
    see profile_to_read; None: as named), and ""; or None and the line that says why
    there is no map. A figure of memory.json's that is not a whole number (true, 1.0)
    does not agree with one."""
    profile = data.get("profile")
    tiles = whole(data.get("tiles"))
    if not isinstance(profile, str) or not profile or "\0" in profile:
        return None, "no tile map: memory.json names no profile to read the tiles' totals from"
    profile = where or profile
    shown = shown_path(profile)
    if tiles is None or tiles < 0:
        return None, "no tile map: memory.json gives no number of tiles"
    from ..memory.tiles import read_totals

    try:
        totals = read_totals(profile, most=tiles)
    except (ExtractorError, OSError, ValueError) as exc:
        problem = exc.problem if isinstance(exc, ExtractorError) else one_line(exc)
        return None, "no tile map: profile {} is not readable here ({})".format(shown, problem)
    changed = "no tile map: profile {} has changed since memory.json was written ({})"
    if len(totals) != tiles:
        more = "more than {}".format(tiles) if len(totals) > tiles else len(totals)
        why = "it has {} tiles, memory.json {}".format(more, tiles)
        return None, changed.format(shown, why)
    if not totals:
        return None, "no tile map: memory_by_tile has no rows"
    figures = _figures(totals)
    total = data.get("total")
    recorded = total if isinstance(total, dict) else {}
    differ = [key for key in figures if whole(recorded.get(key)) != figures[key]]
    if differ:
        why = "its tiles' {} {} from memory.json's".format(
            ", ".join(differ), "differs" if len(differ) == 1 else "differ"
        )
        return None, changed.format(shown, why)
    return totals, ""


def map_svg(
    totals: Sequence[int],
    tiles_per_ipu: Optional[int],
    limit: Optional[int],
    title: str,
    title_id: str,
) -> str:
    """The map as an inline `<svg>` (no final newline): a block per IPU (`tiles_per_ipu`;
    None: one block of every tile), one under another, each its rows of TILES_PER_ROW
    cells; a cell's class `m<level>` (its shade, of HEAT_LEVELS: its total over `limit`,
    or over the fullest tile's without one), or `over` for a tile over `limit` (a hollow
    ring: its shape, not only its colour, tells it from every shade), and its tooltip."""
    count = len(totals)
    per_block = tiles_per_ipu if tiles_per_ipu else max(1, count)
    blocks = -(-count // per_block)
    widest = min(per_block, count)  # the fullest block's tiles (pva's figure may be huge)
    columns = min(TILES_PER_ROW, widest)
    block_rows = -(-widest // TILES_PER_ROW)
    block_height = block_rows * PITCH
    width = LEFT + columns * PITCH
    height = TOP + blocks * block_height + (blocks - 1) * BLOCK_GAP + TOP
    scale = limit if limit is not None else max(totals)
    out: List[str] = []
    add = out.append
    add(
        '<svg xmlns="http://www.w3.org/2000/svg" class="tilemap" width="{0}" height="{1}" '
        'viewBox="0 0 {0} {1}" role="img" aria-labelledby="{2}">\n'
        '<title id="{2}">{3}</title>\n'.format(width, height, html_text(title_id), html_text(title))
    )
    for block in range(blocks):
        top = TOP + block * (block_height + BLOCK_GAP)
        first = block * per_block
        if tiles_per_ipu:
            name = "IPU {}".format(block)
            add('<g class="ipu" data-ipu="{}">'.format(block))
            add('<text class="name" x="{}" y="{}">{}</text>\n'.format(LEFT - 6, top + CELL, name))
        else:
            add('<g class="ipu">')
        for tile in range(first, min(count, first + per_block)):
            row, column = divmod(tile - first, TILES_PER_ROW)
            x, y = LEFT + column * PITCH, top + row * PITCH
            total = totals[tile]
            where = "tile {}".format(tile) + (", IPU {}".format(block) if tiles_per_ipu else "")
            tooltip = "{}: {} bytes".format(where, number_text(total))
            if limit is not None:
                tooltip += " ({:.1f}% of the limit{})".format(
                    100.0 * total / limit if limit else 0.0, ", over it" if total > limit else ""
                )
            if limit is not None and total > limit:  # a black ring, hollow: no shade has it
                add(
                    '<rect class="over" x="{}" y="{}" width="{}" height="{}"><title>{}</title>'
                    "</rect>\n".format(x + 1, y + 1, CELL - 2, CELL - 2, html_text(tooltip))
                )
                continue
            level = shade_level(min(total, scale), 0, scale)
            add(
                '<rect class="m{}" x="{}" y="{}" width="{}" height="{}"><title>{}</title>'
                "</rect>\n".format(level, x, y, CELL, CELL, html_text(tooltip))
            )
        add("</g>\n")
    add("</svg>")
    return "".join(out)


def _over_text(over: Sequence[int], tiles: int, limit: Optional[int]) -> str:
    """The tiles `over` the limit (of `tiles`), in words; "" without a limit."""
    if limit is None:
        return ""
    if not over:
        return "No tile is over the limit of {} bytes.".format(number_text(limit))
    named = ", ".join(str(tile) for tile in over[:OVER_NAMED])
    if len(over) > OVER_NAMED:
        named += " and {} more".format(number_text(len(over) - OVER_NAMED))
    return "{} of {} over the limit of {} bytes (black rings): tile{} {}.".format(
        _plural(len(over), "tile"),
        number_text(tiles),
        number_text(limit),
        "s" if len(over) != 1 else "",
        named,
    )


def _headline(data: dict, limit: Optional[int]) -> str:
    tiles = whole(data.get("tiles")) or 0
    fullest = objects(data.get("fullest"))
    if not fullest:
        return "{}; no fullest tile listed".format(_plural(tiles, "tile"))
    top = fullest[0]
    tile, total, ipu = whole(top.get("tile")), whole(top.get("total")), whole(top.get("ipu"))
    where = "fullest tile {}{}".format(
        number_text(tile), "" if ipu is None else " (IPU {})".format(ipu)
    )
    if limit is not None and total is not None:
        text = "{}: {} of {} bytes ({:.1f}%)".format(
            where, number_text(total), number_text(limit), 100.0 * total / limit
        )
        over = data.get("limit")
        counted = whole(over.get("over")) if isinstance(over, dict) else None
        if counted is not None:
            text += "; {} over the limit".format(_plural(counted, "tile"))
        return "{}; {}".format(_plural(tiles, "tile"), text)
    return "{}; {}: {} bytes".format(_plural(tiles, "tile"), where, number_text(total))


def _category_bar(label: str, data: dict, number: int) -> Tuple[str, List[Tuple[str, int]]]:
    """The fullest tile's bytes by category (and the unattributed, when positive): its
    bar and legend; ("", []) without a fullest tile."""
    fullest = objects(data.get("fullest"))
    if not fullest:
        return "", []
    top = fullest[0]
    parts: List[Tuple[str, int]] = []
    for item in objects(top.get("categories")):
        name, size = item.get("category"), whole(item.get("bytes"))
        if isinstance(name, str) and size is not None:
            parts.append((name, size))
    if len(parts) > MAX_CATEGORY_SEGMENTS:
        rest = parts[MAX_CATEGORY_SEGMENTS - 1 :]
        parts = parts[: MAX_CATEGORY_SEGMENTS - 1]
        parts.append(("{} other categories".format(len(rest)), sum(s for _n, s in rest)))
    unattributed = whole(top.get("unattributed"))
    if unattributed is not None and unattributed > 0:
        parts.append((UNATTRIBUTED, unattributed))
    names: List[str] = []
    sizes: Dict[str, int] = {}
    for name, size in parts:  # a name twice (a hand-made file) is one segment
        if name not in sizes:
            names.append(name)
        sizes[name] = sizes.get(name, 0) + size
    tile = whole(top.get("tile"))
    chart = stacked_bars(
        ["tile {}".format(number_text(tile))],
        names,
        [dict(sizes)],
        unit=BYTES,
        title="The fullest tile's bytes by category: " + label,
        title_id="memory-chart-{}".format(number),
    )
    return stacked_bars_svg(chart), [(item.stage, item.colour) for item in chart.legend]


def build_tile_map(
    label: str, path: str, data: dict, number: int, draw: bool = True, where: Optional[str] = None
) -> TileMap:
    """What the page shows of a memory.json (its JSON, belonging to the recording
    `label`): the map of its profile's tiles (read only when `draw`, at `where`: see
    profile_totals) and its fullest tile's categories. `number`: its place on the page,
    naming its charts' titles."""
    tiles = whole(data.get("tiles")) or 0
    limit = _positive(data.get("bytes_per_tile"))
    tiles_per_ipu = _positive(data.get("tiles_per_ipu"))
    profile = data.get("profile")
    found = TileMap(
        label=label,
        path=path,
        profile=shown_path(profile) if isinstance(profile, str) else "",
        tiles=tiles,
        headline=_headline(data, limit),
        map_svg="",
        why="",
        over_text="",
        over=0,
        scale_text="",
        chart_svg="",
        categories=[],
        drawn=draw,
    )
    if not draw:
        return found
    chart, legend = _category_bar(label, data, number)
    found = found._replace(chart_svg=chart, categories=legend)
    totals, why = profile_totals(data, where)
    if totals is None:
        return found._replace(why=why)
    blocks = -(-len(totals) // tiles_per_ipu) if tiles_per_ipu else 1
    title = "Tile memory, one cell per tile{}: {}".format(
        ", one block per IPU" if tiles_per_ipu and blocks > 1 else "", label
    )
    if limit is not None:
        scale = "Shaded by each tile's total over the limit of {} bytes per tile.".format(
            number_text(limit)
        )
    else:
        scale = (
            "No limit known (no bytes per tile): shaded by each tile's total over the "
            "fullest tile's ({} bytes).".format(number_text(max(totals)))
        )
    over = [] if limit is None else [tile for tile, total in enumerate(totals) if total > limit]
    return found._replace(
        map_svg=map_svg(totals, tiles_per_ipu, limit, title, "tilemap-title-{}".format(number)),
        over_text=_over_text(over, len(totals), limit),
        over=len(over),
        scale_text=scale,
    )


def profile_to_read(recording: Any, profile: str) -> str:
    """Where to read `profile` (a path as an extraction was given it) from the folder
    the report runs in: as given when it is absolute or there is such a file here; else,
    for a recording of a batch, from the folder the batch ran in, where the path was
    given (the index line's `output` is the summary's path as the batch was given it:
    the summary's absolute path less those last parts is that folder), when the file is
    there; else as given (and not found: the map's line says so)."""
    if "\0" in profile or os.path.isabs(profile) or os.path.lexists(profile):
        return profile
    origin = recording.origin
    entry = origin.entry if origin is not None else None
    output = entry.get("output") if isinstance(entry, dict) else None
    if not isinstance(output, str) or not output or "\0" in output or os.path.isabs(output):
        return profile
    given = Path(output).parts
    summary = Path(os.path.abspath(str(recording.path))).parts
    if ".." in given or len(given) >= len(summary) or summary[-len(given) :] != given:
        return profile
    there = str(Path(*summary[: -len(given)]) / profile)
    return there if os.path.lexists(there) else profile


def map_profiles(recordings: Sequence) -> List[str]:
    """The profiles the tile maps of these recordings may read (profile_to_read): of the
    summary's `profile` of each recording with a memory.json beside it (one that belongs
    names the same)."""
    memory = derived_file("memory")
    found = []
    for recording in recordings:
        profile = recording.summary.profile
        if not isinstance(profile, str) or not profile or "\0" in profile:
            continue
        if os.path.lexists(str(memory.path(recording.path))):
            found.append(profile_to_read(recording, profile))
    return found


def read_tile_maps(
    recordings: Sequence,
) -> Tuple[List[TileMap], List[Tuple[str, str, str]]]:
    """The tile maps to show, in the recordings' order, and the memory.json files not
    shown as current, as (label, path, why): one that does not belong to the summary
    beside it, or cannot be read as one. Past MAX_TILE_CELLS, a recording's map and every
    one after it is listed, not drawn (nor its profile read)."""
    files, passed = belonging_files(recordings, "memory")
    shown: List[TileMap] = []
    drawn_cells = 0
    for recording, path, data in files:
        tiles = whole(data.get("tiles")) or 0
        draw = drawn_cells + tiles <= MAX_TILE_CELLS
        profile = data.get("profile")
        where = profile_to_read(recording, profile) if isinstance(profile, str) else None
        found = build_tile_map(recording.label, path, data, len(shown) + 1, draw, where)
        drawn_cells = drawn_cells + found.cells if draw else MAX_TILE_CELLS + 1
        shown.append(found)
    return shown, passed
