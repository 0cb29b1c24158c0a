"""The report's heat maps: a blocks.json's blocks by stages, each column shaded from its
fewest cycles to its most, bounded so that any batch gives a page a browser opens."""

from typing import List, NamedTuple, Optional, Sequence

from .batchinfo import HeatMapBlocks
from .numbers import ABSENT, number_text

#: The shades of the heat maps and the tile maps, light to dark (one palette for both).
HEAT_SHADES = (
    "#fff7ec",
    "#fee8c8",
    "#fdd49e",
    "#fdbb84",
    "#fc8d59",
    "#ef6548",
    "#d7301f",
    "#b30000",
    "#7f0000",
)
HEAT_LEVELS = len(HEAT_SHADES)  # from the column's least cycles (0) to its most (8)
#: Text on the shades from this index on (the sixth, #ef6548, and darker) is white.
WHITE_TEXT_FROM = 5


def shade_level(value: float, low: float, high: float) -> int:
    """The shade of `value` from `low` (0) to `high` (HEAT_LEVELS - 1), the nearest; 0
    when they are one value."""
    if high == low:
        return 0
    return round((HEAT_LEVELS - 1) * (value - low) / float(high - low))


# A heat map shows at most this many blocks (rows): a profile recording many inferences
# would otherwise make the page too big to open. The shades and the slowest block are
# still worked out over them all, and the slowest is shown even beyond the limit.
MAX_HEAT_ROWS = 200
# And at most this many stages (columns, besides the total): the first that have cycles,
# in the blocks.json's "stages" order (then any other labels its blocks have, sorted). A
# hand-made or damaged file can have thousands of labels: 400 blocks of 40 labels each
# made a 39 MB page. The total still counts every stage.
MAX_HEAT_COLUMNS = 24
# The page as a whole draws at most this many heat-map cells (about 30 bytes each: some
# 3 MB); the heat maps past it are listed, not drawn. 201 rows of 25 columns are 5,025
# cells: some 20 full heat maps fit.
MAX_HEAT_CELLS = 100000


class HeatCell(NamedTuple):
    text: str
    level: Optional[int]  # None: no kernel rows of that stage in the block


class HeatRow(NamedTuple):
    run: int
    block: int
    cells: List[HeatCell]
    slowest: bool  # the body with the largest total


class HeatMap(NamedTuple):
    label: str
    path: str
    columns: List[str]  # the stages that have cycles in some block, then "total"
    rows: List[HeatRow]
    slowest: Optional[str]  # "run 1, block 11: 123,456 kernel cycles"
    bodies: int  # how many blocks the file has
    first_shown: int  # the rows show the first this many (MAX_HEAT_ROWS), and the slowest
    stages_not_shown: int = 0  # stages with cycles beyond MAX_HEAT_COLUMNS: no column
    drawn: bool = True  # False: past the page's MAX_HEAT_CELLS, listed only (no rows)
    ipus: int = 1  # the IPUs its summary's kernel steps ran on (several: cycles add up)

    @property
    def cells(self) -> int:
        return sum(len(row.cells) for row in self.rows)


def build_heat_map(label: str, blocks: HeatMapBlocks, run_order: Sequence[str] = ()) -> HeatMap:
    """Blocks by stages: each cell shaded by where it falls between its column's least
    and most cycles, so that the slow block of each stage stands out. The columns are in
    the order the first body runs its stages (`run_order`: the summary's kernels' stages,
    in step order), then the rest in the file's `stages` order. At most MAX_HEAT_COLUMNS
    stages get a column, and MAX_HEAT_ROWS blocks a row."""
    with_cycles = {
        stage for body in blocks.bodies for stage, value in body.cycles.items() if value is not None
    }
    listed = set(blocks.stages)
    present = [
        s
        for s in dict.fromkeys(list(run_order) + list(blocks.stages))
        if s in with_cycles and (s in listed or s in run_order)
    ]
    present += sorted({s for b in blocks.bodies for s in b.cycles} - set(present) - listed)
    not_shown = max(0, len(present) - MAX_HEAT_COLUMNS)
    present = present[:MAX_HEAT_COLUMNS]
    table = [[body.cycles.get(stage) for stage in present] + [body.total] for body in blocks.bodies]
    columns = present + ["total"]
    ranges = []
    for index in range(len(columns)):
        known: List[int] = []
        for row in table:
            cell = row[index]
            if cell is not None:
                known.append(cell)
        ranges.append((min(known), max(known)) if known else (0, 0))
    totals = [body.total for body in blocks.bodies if body.total is not None]
    slowest_total = max(totals) if totals else None
    slowest_index = (
        next((i for i, body in enumerate(blocks.bodies) if body.total == slowest_total), None)
        if totals
        else None
    )
    rows = []
    for index, (body, values) in enumerate(zip(blocks.bodies, table)):
        if index >= MAX_HEAT_ROWS and index != slowest_index:
            continue
        cells = []
        for value, (low, high) in zip(values, ranges):
            if value is None:
                cells.append(HeatCell(ABSENT, None))
                continue
            cells.append(HeatCell(number_text(value), shade_level(value, low, high)))
        rows.append(HeatRow(body.run, body.block, cells, index == slowest_index))
    slowest = None
    if slowest_index is not None:
        body = blocks.bodies[slowest_index]
        slowest = "run {}, block {}: {} kernel cycles".format(
            body.run, body.block, number_text(body.total)
        )
    return HeatMap(
        label,
        str(blocks.path),
        columns,
        rows,
        slowest,
        len(blocks.bodies),
        min(len(blocks.bodies), MAX_HEAT_ROWS),
        not_shown,
    )
