"""The report page: what it shows (`build_page`), and the HTML (`render_page`), made by
the Jinja2 templates in templates/ with autoescaping on, so that every label and name
from a profile reaches the page as text, never as markup; the chart's inline SVG is drawn
by extractor.barchart, whose `html_text` escapes as the templates do.

The page is one file: styles, the SVG chart and the sorting script are inline, and
nothing is fetched (no fonts, no images, no framework). Every number is in the HTML
itself; the script only reorders rows, so the page reads the same with scripts off.
"""

from datetime import datetime, timezone
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from .. import __version__
from ..barchart import STAGE_COLOURS, StackedChart, stacked_bars, stacked_bars_svg
from ..core.blockformats import BLOCKS_NAME
from ..core.metrics import (
    ALLOCATED_MEMORY,
    DEVICE_SPAN,
    DEVICE_SPAN_MEAN,
    EXCHANGE_MEMORY,
    QKV_EXECUTIONS,
    STAGE,
    STAGES_TOTAL,
    SUMMED_OVER_IPUS,
    TIME,
    TIME_CYCLES,
    TIME_KIND,
    TIME_LAYER,
    TIME_SPAN,
    TIME_STAGE,
    device_span_metric,
    kernel_step_ipus,
    metrics,
    percent_change,
)
from ..derived import derived_file
from ..errors import BlocksFileError
from ..readback.provenance import belonging, record_note, stale_problem
from ..readback.recordings import beside
from .batchinfo import IndexFacts, read_heat_map_blocks
from .breakdowns import TOP_OPS, Breakdown, read_breakdowns
from .checks import STATUS_SYMBOLS, CheckLine, check_counts, check_lines, counts_text
from .heatmap import (
    HEAT_LEVELS,
    HEAT_SHADES,
    MAX_HEAT_CELLS,
    WHITE_TEXT_FROM,
    HeatMap,
    build_heat_map,
)
from .numbers import number_text
from .tilemap import TILES_PER_ROW, TileMap, read_tile_maps

EXCHANGE_MEMORY_MAX = EXCHANGE_MEMORY + "max"
ALLOCATED_MEMORY_MAX = ALLOCATED_MEMORY + "max"
DEFAULT_TITLE = "extract report"
# Device spans get a column each up to this many; a recording with more still has its
# mean (and every span in `extract table`).
MAX_SPAN_COLUMNS = 16
# The time: metrics of breakdown.json (all cycles, the span, by kind, stage and layer) get
# a column each up to this many, in that order; `extract table` has every one.
MAX_TIME_COLUMNS = 40

# ---- the table -----------------------------------------------------------------------


class Column(NamedTuple):
    metric: str
    heading: str
    lower_is_better: bool  # False: a change is only "changed" (QKV executions)

    @property
    def tooltip(self) -> str:
        """The heading's title: the metric's name, and for cycles which they are
        (docs/glossary.md): `stage:PV (kernel cycles)`, `device_span:1 (span, in cycles)`."""
        if self.metric.startswith(STAGE) or self.metric == STAGES_TOTAL:
            return self.metric + " (kernel cycles)"
        if self.metric.startswith(DEVICE_SPAN) or self.metric == TIME_SPAN:
            return self.metric + " (span, in cycles)"
        if self.metric.startswith(TIME):
            return self.metric + " (all cycles)"
        return self.metric


class Change(NamedTuple):
    verdict: str  # "worse", "better", "same", "changed"
    symbol: str  # told apart without colour: up (worse), down (better), =, not equal
    text: str  # "+3.2%", or the difference when there is no percentage


class Cell(NamedTuple):
    value: Optional[float]
    text: str
    change: Optional[Change]


class TableRow(NamedTuple):
    label: str
    profile: str
    is_baseline: bool
    cells: List[Cell]


VERDICT_SYMBOLS = {"worse": "\u25b2", "better": "\u25bc", "same": "=", "changed": "\u2260"}
VERDICT_WORDS = {
    "worse": "worse than the baseline",
    "better": "better than the baseline",
    "same": "as the baseline",
    "changed": "differs from the baseline",
}


def change(value, baseline, lower_is_better: bool) -> Optional[Change]:
    """How `value` differs from the baseline's, or None when either is missing."""
    if value is None or baseline is None:
        return None
    difference = value - baseline
    if difference == 0:
        verdict = "same"
    elif not lower_is_better:
        verdict = "changed"
    else:
        verdict = "worse" if difference > 0 else "better"
    percent = percent_change(value, baseline)
    if percent is not None:
        text = "{:+.1f}%".format(percent)
    else:  # the baseline is 0
        text = (
            "{:+,}".format(difference)
            if isinstance(difference, int)
            else "{:+,.1f}".format(difference)
        )
    return Change(verdict, VERDICT_SYMBOLS[verdict], text)


def stage_order(rules_orders: Sequence[Sequence[str]] = ()) -> List[str]:
    """The order of the table's and the chart's stages: the stage rules' order, not the
    order in which the recordings were read. `rules_orders`: the `stages` of the
    blocks.json files drawn (each the rules its profile was extracted with, in rules
    order), then the installed stage_rules.toml's labels and fallback; each label once,
    where first seen."""
    from ..core.blocks import stage_labels
    from ..core.rules import load_rules

    order: Dict[str, None] = {}
    for labels in list(rules_orders) + [stage_labels(load_rules())]:
        for label in labels:
            order.setdefault(label, None)
    return list(order)


def columns_for(metric_maps: Sequence[Dict], order: Sequence[str] = ()) -> List[Column]:
    """The table's columns: the stages in `order` (stage_order's), then any other stage
    in order of first appearance; their total, each device span and their mean, QKV
    executions, the two memories' max."""
    found: Dict[str, None] = {}
    spans = 0
    for each in metric_maps:
        for name in each:
            if name.startswith(STAGE):
                found.setdefault(name[len(STAGE) :], None)
            elif name.startswith(DEVICE_SPAN) and name[len(DEVICE_SPAN) :].isdigit():
                spans = max(spans, int(name[len(DEVICE_SPAN) :]))
    stages = [label for label in order if label in found]
    stages += [label for label in found if label not in stages]
    columns = [Column(STAGE + label, label, True) for label in stages]
    columns.append(Column(STAGES_TOTAL, "stages total", True))
    columns.extend(
        Column(device_span_metric(n), "device span {}".format(n), True)
        for n in range(1, min(spans, MAX_SPAN_COLUMNS) + 1)
    )
    columns.append(Column(DEVICE_SPAN_MEAN, "device span mean", True))
    columns.append(Column(QKV_EXECUTIONS, "QKV executions", False))
    columns.append(Column(EXCHANGE_MEMORY_MAX, "exchange memory max", True))
    columns.append(Column(ALLOCATED_MEMORY_MAX, "allocated memory max", True))
    return columns + time_columns(metric_maps, order)


def time_columns(metric_maps: Sequence[Dict], order: Sequence[str] = ()) -> List[Column]:
    """The columns of breakdown.json's time: metrics that some recording has: all cycles,
    the span, then by kind, by stage (in `order`, then as first found) and by layer
    (kinds and layers as first found); the first MAX_TIME_COLUMNS of them."""
    found: Dict[str, None] = {}
    for each in metric_maps:
        for name in each:
            if name.startswith(TIME):
                found.setdefault(name, None)
    stages = [TIME_STAGE + label for label in order if TIME_STAGE + label in found]
    names = [name for name in (TIME_CYCLES, TIME_SPAN) if name in found]
    names += [name for name in found if name.startswith(TIME_KIND)]
    names += stages + [n for n in found if n.startswith(TIME_STAGE) and n not in stages]
    names += [name for name in found if name.startswith(TIME_LAYER)]
    headings = {TIME_CYCLES: "all cycles", TIME_SPAN: "span (all rows)"}
    columns = []
    for name in names[:MAX_TIME_COLUMNS]:
        heading = headings.get(name) or name[len(TIME) :].replace(":", " ", 1)
        columns.append(Column(name, heading, True))
    return columns


# ---- the page ------------------------------------------------------------------------


class Untrusted(NamedTuple):
    """A file the page does not show as current, and why (readback/provenance.py's rule)."""

    recording: str  # its label
    path: str
    problem: str


class Page(NamedTuple):
    title: str
    made_at: str
    version: str
    recordings: int
    baseline: str
    passed_over: List[str]  # the labels passed over as the baseline: no kernels
    batch: IndexFacts
    columns: List[Column]
    rows: List[TableRow]
    chart: StackedChart  # its legend is the page's
    chart_svg: str  # the chart itself, an inline <svg> (barchart.stacked_bars_svg)
    heat_maps: List[HeatMap]
    checks: Optional[List[CheckLine]]  # None: no --budget
    check_counts: Dict[str, int]
    check_summary: str  # the counts in words, for the header and the budget section
    stage_colours: Sequence[str]
    heat_levels: int
    verdict_symbols: Dict[str, str]
    verdict_words: Dict[str, str]
    status_symbols: Dict[str, str]
    # Recordings and blocks.json files that are not what their batch last wrote.
    untrusted: List["Untrusted"]
    # (label, IPUs) of the recordings whose kernel cycles add up several IPUs' rows.
    several_ipus: List[Tuple[str, int]]
    # From the breakdown.json files that belong: all cycles by kind, the top ops.
    breakdowns: List[Breakdown]
    breakdowns_passed: int  # the breakdown.json files among `untrusted`
    time_columns: int  # how many of the columns are time: metrics
    # From the memory.json files that belong: each a tile map and its fullest tile's bar.
    tile_maps: List[TileMap]
    tile_maps_passed: int  # the memory.json files among `untrusted`


def build_page(
    recordings: Sequence,
    index: IndexFacts,
    baseline: int = 0,
    title: Optional[str] = None,
    checks=None,
    made_at: Optional[datetime] = None,
    passed_over: Sequence[str] = (),
) -> Page:
    """What the page shows. `recordings`: compare's Recording objects, in order;
    `baseline`: the index of the one changes are measured against (`passed_over`: the
    labels of those passed over as the baseline, compare/baseline.py); `checks`: budget
    checks (or None without a budget)."""
    drawn, untrusted = _heat_map_blocks(recordings)
    breakdowns, passed = read_breakdowns(recordings)
    untrusted += [Untrusted(*item) for item in passed]
    tile_maps, memory_passed = read_tile_maps(recordings)
    untrusted += [Untrusted(*item) for item in memory_passed]
    order = stage_order([blocks.stages for _recording, blocks in drawn])
    found = [metrics(r.summary, r.beside) for r in recordings]
    columns = columns_for(found, order)
    base = found[baseline]
    rows = []
    for number, (recording, values) in enumerate(zip(recordings, found)):
        cells = []
        for column in columns:
            value = values.get(column.metric)
            delta = (
                None
                if number == baseline
                else change(value, base.get(column.metric), column.lower_is_better)
            )
            cells.append(Cell(value, number_text(value), delta))
        rows.append(TableRow(recording.label, recording.summary.profile, number == baseline, cells))
    stage_names = [c.heading for c in columns if c.metric.startswith(STAGE)]
    chart = stacked_bars(
        [row.label for row in rows], stage_names, [r.summary.stage_cycles() for r in recordings]
    )
    heat_maps = []
    drawn_cells = 0
    for recording, blocks in drawn:
        # A heat map's columns: as its first body runs them (heatmap.py), not the table's.
        run_order = [kernel.get("stage") for kernel in recording.summary.kernels]
        heat_map = build_heat_map(recording.label, blocks, run_order)._replace(
            ipus=kernel_step_ipus(recording.summary)
        )
        if drawn_cells + heat_map.cells > MAX_HEAT_CELLS:  # it, and every one after
            drawn_cells = MAX_HEAT_CELLS + 1
            heat_map = heat_map._replace(rows=[], drawn=False)
        drawn_cells += heat_map.cells
        heat_maps.append(heat_map)
    lines = None if checks is None else check_lines(checks)
    counts = check_counts(lines or [])
    made = made_at or datetime.now(timezone.utc)
    return Page(
        title or DEFAULT_TITLE,
        made.strftime("%Y-%m-%d %H:%M:%S UTC"),
        __version__,
        len(recordings),
        recordings[baseline].label,
        list(passed_over),
        index,
        columns,
        rows,
        chart,
        stacked_bars_svg(chart),
        heat_maps,
        lines,
        counts,
        counts_text(counts),
        STAGE_COLOURS,
        HEAT_LEVELS,
        VERDICT_SYMBOLS,
        VERDICT_WORDS,
        STATUS_SYMBOLS,
        untrusted,
        several_ipus(recordings),
        breakdowns,
        len(passed),
        sum(1 for column in columns if column.metric.startswith(TIME)),
        tile_maps,
        len(memory_passed),
    )


def _heat_map_blocks(recordings: Sequence) -> Tuple[List[Tuple], List[Untrusted]]:
    """The blocks.json files to draw, with their recordings, and what the page does not
    show as current: recordings their batch does not vouch for, and blocks.json files
    that do not belong to the summary beside them (never drawn)."""
    drawn, untrusted = [], []
    for recording in recordings:
        note = (
            None
            if recording.origin is None
            else (stale_problem(recording.origin) or record_note(recording.origin))
        )
        if note is not None:
            untrusted.append(Untrusted(recording.label, str(recording.path), note))
        beside(recording, BLOCKS_NAME, BlocksFileError)  # never read out of its folder
        blocks = read_heat_map_blocks(recording.path)
        if blocks is None:
            continue
        problem = belonging(recording, derived_file("blocks"))
        if problem is not None:  # never drawn as current: said instead
            untrusted.append(
                Untrusted(
                    recording.label,
                    str(blocks.path),
                    "not drawn: it does not belong to the summary beside it: " + problem,
                )
            )
            continue
        drawn.append((recording, blocks))
    return drawn, untrusted


def several_ipus(recordings: Sequence) -> List[Tuple[str, int]]:
    """(label, IPUs) of each recording whose first-body kernel steps ran on several
    IPUs (metrics.kernel_step_ipus): their stage cycles add the IPUs' rows up."""
    counted = [(r.label, kernel_step_ipus(r.summary)) for r in recordings]
    return [(label, ipus) for label, ipus in counted if ipus > 1]


def render_page(page: Page) -> bytes:
    """The page's HTML, UTF-8 (a lone surrogate in a name written as \\udXXX)."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("extractor.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    text = environment.get_template("report.html.j2").render(
        page=page,
        summed_over_ipus=SUMMED_OVER_IPUS,
        top_ops=TOP_OPS,
        tiles_per_row=TILES_PER_ROW,
        shades=HEAT_SHADES,
        white_text_from=WHITE_TEXT_FROM,
    )
    return text.encode("utf-8", "backslashreplace")
