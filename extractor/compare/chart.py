"""The kernel stages of a comparison as a grouped bar chart, in hand-written SVG.

One group of bars per first-body kernel stage, one bar (and one colour) per recording, a
y axis in cycles with round ticks that always include zero, and a legend. Bars stand on
the zero line: a negative number of cycles (only a hand-edited summary holds one) is a
bar hanging down from it, on a scale that reaches down to it, rather than clamped: the
chart shows the numbers the table shows. No plotting library:
the SVG is a few rectangles and texts. Elements carry classes and `data-` attributes
(`bar` with `data-stage`, `data-recording`, `data-cycles`) so tests and scripts can read
the chart back. Only SVG is offered; a PNG would need a rasteriser the project does not
depend on. Every label is written by extractor.escaping's XML rules (`xml_text`,
`xml_attribute`), so that no name can make the document something other than XML.
"""

import math
from typing import List

from ..core.metrics import percent_change
from ..escaping import xml_attribute, xml_text
from ..output import write_atomic
from .comparison import Comparison

# Okabe and Ito's colour-blind-safe palette, yellow and black last.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'
CHAR_WIDTH = 7.0  # an estimate of a 12px sans-serif character's width
TITLE = "First-body kernel cycles by stage"


def colour(index: int) -> str:
    """The colour of the index-th recording: the palette, then evenly spread hues."""
    if index < len(PALETTE):
        return PALETTE[index]
    hue = (index * 137.508) % 360  # the golden angle keeps neighbours apart
    return "hsl({:.0f}, 65%, 45%)".format(hue)


def nice_ticks(maximum: float, count: int = 6, minimum: float = 0) -> List[int]:
    """Round tick values from at most min(0, `minimum`) to at least max(0, `maximum`),
    zero among them: steps of 1, 2, 2.5 or 5 x 10^k."""
    low, high = min(0, minimum), max(0, maximum)
    if high <= low:
        return [0, 1]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        step = factor * power
        if step >= raw:
            break
    step = max(1, round(step))
    bottom = math.floor(low / step) * step
    top = math.ceil(high / step) * step
    return list(range(bottom, top + 1, step))


def _thousands(value: int) -> str:
    return "{:,}".format(value)


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


def stage_chart_svg(comparison: Comparison) -> str:
    """The SVG document (text) of the comparison's kernel stages."""
    rows = comparison.stage_rows
    labels = [r.label for r in comparison.recordings]
    count = len(labels)
    bar = 28 if count <= 4 else max(8, 112 // count)
    group = max(120, count * bar + 36)

    values = [v for row in rows for v in row.values if v is not None]
    ticks = nice_ticks(max(values, default=0), minimum=min(values, default=0))
    low_value, top_value = ticks[0], ticks[-1]

    tick_width = max(len(_thousands(t)) for t in ticks) * CHAR_WIDTH
    left = 36 + tick_width + 14  # axis title, tick labels, tick marks
    plot_width = group * max(1, len(rows))
    legend_width = 40 + CHAR_WIDTH * max(len(xml_text(label)) for label in labels)
    legend_x = left + plot_width + 24
    width = math.ceil(legend_x + legend_width + 16)
    top, plot_height = 56, 320
    wrap_width = max(8, int((group - 8) / CHAR_WIDTH))
    stage_lines = [_wrap(row.metric, wrap_width) for row in rows]
    label_lines = max([len(lines) for lines in stage_lines] or [1])
    bottom = top + plot_height
    height = int(bottom + 24 + 16 * label_lines + 12)
    height = max(height, int(top + 24 * count + 20))

    def y(value) -> float:
        return bottom - plot_height * (value - low_value) / (top_value - low_value)

    zero = y(0)

    out: List[str] = []
    add = out.append
    add(
        '<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" '
        'viewBox="0 0 {0} {1}" {2} font-size="12">'.format(width, height, FONT)
    )
    add("<title>{}</title>".format(xml_text(TITLE)))
    add(
        '<rect class="background" x="0" y="0" width="{}" height="{}" fill="#ffffff"/>'.format(
            width, height
        )
    )
    add(
        '<text class="title" x="{}" y="28" font-size="16" font-weight="bold">{}</text>'.format(
            left, xml_text(TITLE)
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
            'dominant-baseline="middle">{}</text>'.format(left - 8, ty, _thousands(tick))
        )
    add(
        '<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#333333"/>'.format(
            left, top, bottom
        )
    )
    add(
        '<text class="axis-title" x="18" y="{0:.1f}" text-anchor="middle" '
        'transform="rotate(-90 18 {0:.1f})">cycles</text>'.format(top + plot_height / 2)
    )
    add("</g>")

    # The bars, one group per stage.
    add('<g class="bars">')
    for index, row in enumerate(rows):
        x0 = left + index * group + (group - count * bar) / 2
        for position, value in enumerate(row.values):
            if value is None:
                continue
            x = x0 + position * bar
            # From the zero line up to the value, or down to a negative one.
            bar_top, bar_bottom = sorted((y(value), zero))
            change = percent_change(value, row.values[0]) if position else None
            tooltip = "{}, {}: {} cycles{}".format(
                labels[position],
                row.metric,
                _thousands(value),
                "" if change is None else " ({:+.1f}% against {})".format(change, labels[0]),
            )
            add(
                '<rect class="bar" data-stage={} data-recording={} data-cycles="{}" '
                'x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}">'
                "<title>{}</title></rect>".format(
                    xml_attribute(row.metric),
                    xml_attribute(labels[position]),
                    value,
                    x + 1,
                    bar_top,
                    bar - 2,
                    bar_bottom - bar_top,
                    colour(position),
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
            'text-anchor="middle">'.format(xml_attribute(rows[index].metric), cx, bottom + 20)
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
        "kernel stage of the first body</text>".format(
            left + plot_width / 2, bottom + 24 + 16 * label_lines
        )
    )
    add("</g>")

    # The legend: one swatch and label per recording.
    add('<g class="legend">')
    for position, label in enumerate(labels):
        ly = top + 24 * position
        add('<g class="legend-entry" data-recording={}>'.format(xml_attribute(label)))
        add(
            '<rect x="{:.1f}" y="{}" width="14" height="14" fill="{}"/>'.format(
                legend_x, ly, colour(position)
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


CHART_SUFFIXES = (".svg",)


def write_chart(path, comparison: Comparison) -> None:
    """Write the stage chart to `path` (an .svg file), atomically."""
    # A lone surrogate in a label is already \udXXX (xml_text): XML cannot hold one.
    write_atomic(path, stage_chart_svg(comparison).encode("utf-8"))
