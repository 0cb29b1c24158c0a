"""Bar charts of cycles per stage, in hand-written SVG: the one module that draws them.

- `grouped_bars_svg`: `extract compare --chart`, a standalone SVG document: a group of
  upright bars per stage, one bar (one colour) per recording, a y axis whose round ticks
  always include zero, and a legend. Labels are written by extractor.escaping's XML rules
  (`xml_text`, `xml_attribute`), so that no name can make the document something other
  than XML. Elements carry classes and `data-` attributes (`bar` with `data-stage`,
  `data-recording`, `data-cycles`) so tests and scripts can read the chart back.
- `stacked_bars` and `stacked_bars_svg`: `extract report`'s chart, inline in the page: a
  lying bar per recording, its stages end to end from zero on one scale, one colour per
  stage (the page's CSS classes `s0`, `s1`... fill them: the page's legend uses the same
  colours). Labels are written by `escaping.html_text`, as Jinja2's autoescaping writes
  the rest of the page.

What the two share is here once: Okabe and Ito's colour-blind-safe colours
(`OKABE_ITO`), the rule of round tick steps (`round_step`), the numbers written with
thousands separated (`thousands`), and bars that stand on the zero line: a negative
number of cycles (only a hand-edited summary holds one) is drawn from zero the other
way, on a scale that reaches to it, never clamped: a chart shows the numbers its table
shows. What differs is said by a parameter or a name: the colours after the first seven
(`RECORDING_COLOURS` go on with evenly spread hues, as a comparison may have many
recordings; `STAGE_COLOURS` are a fixed set that CSS classes name, taken again beyond
it), the steps a tick may take (`GROUPED_STEPS`, `STACKED_STEPS`), and the tick labels
(in full, or shortened with k, M, G where the page's ticks are narrow). No plotting
library: the SVG is a few rectangles and texts. Only SVG is drawn; a PNG would need a
rasteriser the project does not depend on.
"""

import math
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

from .core.metrics import percent_change
from .escaping import html_text, xml_attribute, xml_text

# Okabe and Ito's colour-blind-safe palette, less its black (and yellow last).
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
# A recording's colour (compare): the palette with black last, then evenly spread hues.
RECORDING_COLOURS = OKABE_ITO + ("#000000",)
# A stage's colour (report): the palette, grey, black and brown; the stages take them in
# the table's order, a stage beyond them starts again (each is a CSS class of the page).
STAGE_COLOURS = OKABE_ITO + ("#999999", "#000000", "#8C564B")

# Which cycles the bars are, unless a caller says otherwise: both charts draw stages'
# kernel cycles (the sums of kernel rows' cycles, docs/glossary.md).
KERNEL_CYCLES = "kernel cycles"

# The steps a tick may take, times a power of ten.
GROUPED_STEPS = (1, 2, 2.5, 5, 10)
STACKED_STEPS = (1, 2, 5, 10)


def recording_colour(index: int) -> str:
    """The colour of the index-th recording: RECORDING_COLOURS, then evenly spread hues."""
    if index < len(RECORDING_COLOURS):
        return RECORDING_COLOURS[index]
    hue = (index * 137.508) % 360  # the golden angle keeps neighbours apart
    return "hsl({:.0f}, 65%, 45%)".format(hue)


def round_step(raw: float, steps: Sequence[float]) -> float:
    """The least of `steps` times the power of ten at or below `raw` that is at least
    `raw` (`raw` > 0): a tick step that reads as a round number."""
    power = 10 ** math.floor(math.log10(raw))
    for factor in steps:
        if factor * power >= raw:
            return factor * power
    return steps[-1] * power


def thousands(value: float) -> str:
    """A number with its thousands separated: 1,234,567."""
    return "{:,}".format(value)


# ---- compare: grouped upright bars -------------------------------------------------------

FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'
CHAR_WIDTH = 7.0  # an estimate of a 12px sans-serif character's width


def nice_ticks(maximum: float, count: int = 6, minimum: float = 0) -> List[int]:
    """Round tick values from at most min(0, `minimum`) to at least max(0, `maximum`),
    zero among them: whole steps of 1, 2, 2.5 or 5 x 10^k (GROUPED_STEPS)."""
    low, high = min(0, minimum), max(0, maximum)
    if high <= low:
        return [0, 1]
    step = max(1, round(round_step((high - low) / count, GROUPED_STEPS)))
    bottom = math.floor(low / step) * step
    top = math.ceil(high / step) * step
    return list(range(bottom, top + 1, step))


def _wrap(text: str, width: int) -> List[str]:
    """Words of `text` in lines of at most `width` characters (a long word keeps its line)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = "{} {}".format(line, word) if line else word
    if line:
        lines.append(line)
    return lines or [""]


def grouped_bars_svg(
    title: str,
    x_title: str,
    stages: Sequence[str],
    labels: Sequence[str],
    values: Sequence[Sequence[Optional[float]]],
    unit: str = KERNEL_CYCLES,
) -> str:
    """The SVG document (text) of a group of bars per stage (`stages`, in order), a bar
    per recording (`labels`, the first the baseline of each bar's change): `values[i][j]`
    the cycles of stage i in recording j (None: no bar, a gap); `unit` says which cycles
    (the y axis's title, each bar's tooltip)."""
    count = len(labels)
    bar = 28 if count <= 4 else max(8, 112 // count)
    group = max(120, count * bar + 36)

    present = [v for row in values for v in row if v is not None]
    ticks = nice_ticks(max(present, default=0), minimum=min(present, default=0))
    low_value, top_value = ticks[0], ticks[-1]

    tick_width = max(len(thousands(t)) for t in ticks) * CHAR_WIDTH
    left = 36 + tick_width + 14  # axis title, tick labels, tick marks
    plot_width = group * max(1, len(stages))
    legend_width = 40 + CHAR_WIDTH * max(len(xml_text(label)) for label in labels)
    legend_x = left + plot_width + 24
    width = math.ceil(legend_x + legend_width + 16)
    top, plot_height = 56, 320
    wrap_width = max(8, int((group - 8) / CHAR_WIDTH))
    stage_lines = [_wrap(stage, wrap_width) for stage in stages]
    label_lines = max([len(lines) for lines in stage_lines] or [1])
    bottom = top + plot_height
    height = int(bottom + 24 + 16 * label_lines + 12)
    height = max(height, int(top + 24 * count + 20))

    def y(value: float) -> float:
        return bottom - plot_height * (value - low_value) / (top_value - low_value)

    zero = y(0)

    out: List[str] = []
    add = out.append
    add(
        '<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" '
        'viewBox="0 0 {0} {1}" {2} font-size="12">'.format(width, height, FONT)
    )
    add("<title>{}</title>".format(xml_text(title)))
    add(
        '<rect class="background" x="0" y="0" width="{}" height="{}" fill="#ffffff"/>'.format(
            width, height
        )
    )
    add(
        '<text class="title" x="{}" y="28" font-size="16" font-weight="bold">{}</text>'.format(
            left, xml_text(title)
        )
    )

    # The y axis: grid lines, ticks, labels and its title.
    add('<g class="y-axis">')
    for tick in ticks:
        ty = y(tick)
        add(
            '<line class="grid" x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" '
            'stroke="#dddddd"/>'.format(left, ty, left + plot_width)
        )
        add(
            '<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#333333"/>'.format(
                left - 5, ty, left
            )
        )
        add(
            '<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="end" '
            'dominant-baseline="middle">{}</text>'.format(left - 8, ty, thousands(tick))
        )
    add(
        '<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#333333"/>'.format(
            left, top, bottom
        )
    )
    add(
        '<text class="axis-title" x="18" y="{0:.1f}" text-anchor="middle" '
        'transform="rotate(-90 18 {0:.1f})">{1}</text>'.format(
            top + plot_height / 2, xml_text(unit)
        )
    )
    add("</g>")

    # The bars, one group per stage.
    add('<g class="bars">')
    for index, (stage, row) in enumerate(zip(stages, values)):
        x0 = left + index * group + (group - count * bar) / 2
        for position, value in enumerate(row):
            if value is None:
                continue
            x = x0 + position * bar
            # From the zero line up to the value, or down to a negative one.
            bar_top, bar_bottom = sorted((y(value), zero))
            change = percent_change(value, row[0]) if position else None
            tooltip = "{}, {}: {} {}{}".format(
                labels[position],
                stage,
                thousands(value),
                unit,
                "" if change is None else " ({:+.1f}% against {})".format(change, labels[0]),
            )
            add(
                '<rect class="bar" data-stage={} data-recording={} data-cycles="{}" '
                'x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}">'
                "<title>{}</title></rect>".format(
                    xml_attribute(stage),
                    xml_attribute(labels[position]),
                    value,
                    x + 1,
                    bar_top,
                    bar - 2,
                    bar_bottom - bar_top,
                    recording_colour(position),
                    xml_text(tooltip),
                )
            )
    add("</g>")

    # The x axis (the zero line the bars stand on) and the stage names under the plot.
    add('<g class="x-axis">')
    add(
        '<line x1="{0:.1f}" y1="{1:g}" x2="{2:.1f}" y2="{1:g}" stroke="#333333"/>'.format(
            left, zero, left + plot_width
        )
    )
    for index, lines in enumerate(stage_lines):
        cx = left + index * group + group / 2
        add(
            '<text class="stage-label" data-stage={} x="{:.1f}" y="{}" '
            'text-anchor="middle">'.format(xml_attribute(stages[index]), cx, bottom + 20)
        )
        for number, line in enumerate(lines):
            add(
                '<tspan x="{:.1f}" dy="{}">{}</tspan>'.format(
                    cx, 0 if number == 0 else 15, xml_text(line)
                )
            )
        add("</text>")
    add(
        '<text class="axis-title" x="{:.1f}" y="{}" text-anchor="middle" fill="#555555">'
        "{}</text>".format(left + plot_width / 2, bottom + 24 + 16 * label_lines, xml_text(x_title))
    )
    add("</g>")

    # The legend: one swatch and label per recording.
    add('<g class="legend">')
    for position, label in enumerate(labels):
        ly = top + 24 * position
        add('<g class="legend-entry" data-recording={}>'.format(xml_attribute(label)))
        add(
            '<rect x="{:.1f}" y="{}" width="14" height="14" fill="{}"/>'.format(
                legend_x, ly, recording_colour(position)
            )
        )
        add(
            '<text x="{:.1f}" y="{}" dominant-baseline="middle">{}</text>'.format(
                legend_x + 20, ly + 7, xml_text(label)
            )
        )
        add("</g>")
    add("</g>")
    add("</svg>")
    return "\n".join(out) + "\n"


# ---- report: stacked lying bars ----------------------------------------------------------


class StackedSegment(NamedTuple):
    stage: str
    colour: int  # the index of its STAGE_COLOURS (the page's CSS class s<colour>)
    x: float
    width: float
    cycles: str
    share: str


class StackedBar(NamedTuple):
    label: str
    short_label: str
    y: float
    segments: List[StackedSegment]
    total: str
    total_x: float


class AxisTick(NamedTuple):
    x: float
    text: str


class StackedChart(NamedTuple):
    width: int
    height: float
    plot_left: int
    plot_width: int
    bar_height: int
    top: int
    ticks: List[AxisTick]
    legend: List[StackedSegment]  # one per stage: its label and colour
    bars: List[StackedBar]
    unit: str = KERNEL_CYCLES  # which cycles: the chart's title and every tooltip say it
    title: str = ""  # the chart's title; "": stacked_title(unit)
    title_id: str = "chart-title"  # its element's id: one per chart on a page


LABEL_WIDTH, PLOT_WIDTH, RIGHT_MARGIN = 240, 620, 110
BAR_HEIGHT, BAR_GAP, CHART_TOP = 12, 5, 26
LABEL_CHARACTERS = 34


def stacked_title(unit: str) -> str:
    """The report chart's title: `Kernel cycles per stage per recording`."""
    return "{} per stage per recording".format(unit[:1].upper() + unit[1:])


def _short(label: str, limit: int = LABEL_CHARACTERS) -> str:
    return label if len(label) <= limit else "\u2026" + label[-(limit - 1) :]


def short_count(value: float) -> str:
    """A tick's label, short: 1.5k, 20M, 3G; below zero with a minus sign."""
    if value < 0:
        return "\u2212" + short_count(-value)  # a minus sign
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return "{:g}{}".format(round(value / size, 3), suffix)
    return "{:g}".format(value)


def stacked_bars(
    labels: Sequence[str],
    stage_names: Sequence[str],
    stage_cycles: Sequence[Dict[str, Optional[int]]],
    unit: str = KERNEL_CYCLES,
    title: str = "",
    title_id: str = "chart-title",
) -> StackedChart:
    """A lying bar per recording (`labels`, in the table's order): its stages' cycles
    (`stage_cycles`, one dict per recording) end to end from zero, on one scale, stages
    in `stage_names`' order. A stage of negative cycles (a profile's numbers are used as
    they are) is drawn leftwards from zero, the scale then reaching below zero; its share
    is not given. The chart grows one bar's height per recording. Ticks are round steps
    of 1, 2 or 5 x 10^k (STACKED_STEPS), about five over the scale, within it. `title`
    and `title_id`: the chart's title (stacked_title(unit) when empty) and its element's
    id, for a page with several charts."""
    colours = {stage: index % len(STAGE_COLOURS) for index, stage in enumerate(stage_names)}
    totals = [sum(v for v in cycles.values() if v) for cycles in stage_cycles]
    above = [sum(v for v in cycles.values() if v and v > 0) for cycles in stage_cycles]
    below = [sum(v for v in cycles.values() if v and v < 0) for cycles in stage_cycles]
    largest, smallest = max(above + [0]), min(below + [0])
    scale = PLOT_WIDTH / float(largest - smallest) if largest > smallest else 0.0
    zero = LABEL_WIDTH - smallest * scale
    bars = []
    for index, (label, cycles, total, positive) in enumerate(
        zip(labels, stage_cycles, totals, above)
    ):
        y = CHART_TOP + index * (BAR_HEIGHT + BAR_GAP)
        right = left = zero
        segments = []
        for stage in stage_names:
            value = cycles.get(stage)
            if not value:
                continue
            width = abs(value) * scale
            if value > 0:
                x, right = right, right + width
                share = "{:.1f}%".format(100.0 * value / positive)
            else:
                left -= width
                x, share = left, ""
            segments.append(
                StackedSegment(
                    stage, colours[stage], round(x, 2), round(width, 2), thousands(value), share
                )
            )
        bars.append(
            StackedBar(label, _short(label), y, segments, thousands(total), round(right + 4, 2))
        )
    ticks = []
    if largest > smallest:
        step = round_step((largest - smallest) / 5.0, STACKED_STEPS)
        first = math.ceil(smallest / step - 1e-9)  # whole steps: no error adds up
        last = math.floor(largest * 1.0001 / step)
        for number in range(first, last + 1):
            at = number * step
            ticks.append(AxisTick(round(zero + at * scale, 2), short_count(at)))
    legend = [StackedSegment(stage, colours[stage], 0, 0, "", "") for stage in stage_names]
    height = CHART_TOP + len(labels) * (BAR_HEIGHT + BAR_GAP) + 6
    return StackedChart(
        LABEL_WIDTH + PLOT_WIDTH + RIGHT_MARGIN,
        height,
        LABEL_WIDTH,
        PLOT_WIDTH,
        BAR_HEIGHT,
        CHART_TOP,
        ticks,
        legend,
        bars,
        unit,
        title,
        title_id,
    )


def stacked_bars_svg(chart: StackedChart, text: Callable[[str], str] = html_text) -> str:
    """The chart as an inline `<svg>` element of the report page (no final newline):
    classes, not colours (the page's CSS fills `s<colour>`, `grid`, `tick`, `name`,
    `total`); every label through `text`."""
    out: List[str] = []
    add = out.append
    add(
        '<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{0}" height="{1}" '
        'viewBox="0 0 {0} {1}" role="img" aria-labelledby="{2}">\n'.format(
            chart.width, chart.height, text(chart.title_id)
        )
    )
    add(
        '<title id="{}">{}</title>\n'.format(
            text(chart.title_id), text(chart.title or stacked_title(chart.unit))
        )
    )
    for tick in chart.ticks:
        add(
            '<line class="grid" x1="{0}" x2="{0}" y1="{1}" y2="{2}"/><text class="tick" '
            'x="{0}" y="{3}">{4}</text>\n'.format(
                tick.x, chart.top - 4, chart.height, chart.top - 8, text(tick.text)
            )
        )
    for bar in chart.bars:
        baseline = bar.y + chart.bar_height - 2  # where the bar's texts stand
        add(
            '<g class="bar"><title>{}: {} {}</title><text class="name" x="{}" '
            'y="{}">{}</text>'.format(
                text(bar.label),
                text(bar.total),
                text(chart.unit),
                chart.plot_left - 6,
                baseline,
                text(bar.short_label),
            )
        )
        for segment in bar.segments:
            add(
                '<rect class="s{}" x="{}" y="{}" width="{}" height="{}"><title>{}: {}: {} '
                "{} ({})</title></rect>".format(
                    segment.colour,
                    segment.x,
                    bar.y,
                    segment.width,
                    chart.bar_height,
                    text(bar.label),
                    text(segment.stage),
                    text(segment.cycles),
                    text(chart.unit),
                    text(segment.share),
                )
            )
        add(
            '<text class="total" x="{}" y="{}">{}</text></g>\n'.format(
                bar.total_x, baseline, text(bar.total)
            )
        )
    add("</svg>")
    return "".join(out)
