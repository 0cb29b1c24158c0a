"""The one bar-chart module (extractor/barchart.py): its shared rules worked out by hand,
and the report's chart held to the Jinja2 template that drew it before (kept here as the
oracle, its words since saying kernel cycles), byte for byte, hostile names and negative
cycles included. compare's chart is tested through the CLI (test_compare.py,
test_escaping.py)."""

import jinja2
import pytest

from extractor.barchart import (
    GROUPED_STEPS,
    RECORDING_COLOURS,
    STACKED_STEPS,
    STAGE_COLOURS,
    nice_ticks,
    recording_colour,
    round_step,
    short_count,
    stacked_bars,
    stacked_bars_svg,
)
from extractor.escaping import html_text

# The report's chart as templates/report.html.j2 drew it, with the page's settings.
TEMPLATE = """\
<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{{ chart.width }}" height="{{ chart.height }}" viewBox="0 0 {{ chart.width }} {{ chart.height }}" role="img" aria-labelledby="chart-title">
<title id="chart-title">Kernel cycles per stage per recording</title>
{% for tick in chart.ticks %}
<line class="grid" x1="{{ tick.x }}" x2="{{ tick.x }}" y1="{{ chart.top - 4 }}" y2="{{ chart.height }}"/><text class="tick" x="{{ tick.x }}" y="{{ chart.top - 8 }}">{{ tick.text }}</text>
{% endfor %}
{% for bar in chart.bars %}
<g class="bar"><title>{{ bar.label }}: {{ bar.total }} kernel cycles</title><text class="name" x="{{ chart.plot_left - 6 }}" y="{{ bar.y + chart.bar_height - 2 }}">{{ bar.short_label }}</text>
{%- for segment in bar.segments %}<rect class="s{{ segment.colour }}" x="{{ segment.x }}" y="{{ bar.y }}" width="{{ segment.width }}" height="{{ chart.bar_height }}"><title>{{ bar.label }}: {{ segment.stage }}: {{ segment.cycles }} kernel cycles ({{ segment.share }})</title></rect>{% endfor -%}
<text class="total" x="{{ bar.total_x }}" y="{{ bar.y + chart.bar_height - 2 }}">{{ bar.total }}</text></g>
{% endfor %}
</svg>"""  # noqa: E501 - the template's own lines

HOSTILE = ["a<b>&c", 'it\'s "quoted"', "\u00e9t\u00e9 \U0001f600", "x\udcff", "tab\there", "&amp;"]


def _oracle() -> jinja2.Template:
    environment = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    return environment.from_string(TEMPLATE)


@pytest.mark.parametrize("text", HOSTILE + ["plain", ""])
def test_html_text_is_what_jinja2s_autoescaping_writes(text):
    environment = jinja2.Environment(autoescape=True)
    assert html_text(text) == environment.from_string("{{ x }}").render(x=text)


@pytest.mark.parametrize(
    "cycles",
    [
        # two recordings, a stage missing from one
        [{"QKV": 37277, "MLP up": 48248, "PV": 12900}, {"QKV": 33541, "MLP up": 41012}],
        # negative cycles (a hand-edited summary): the scale reaches below zero
        [{"QKV": -100000, "MLP up": 48248}, {"QKV": 250, "MLP up": None, "PV": 0}],
        # nothing to draw: no ticks
        [{"QKV": None}, {}],
    ],
    ids=["two", "negative", "empty"],
)
def test_the_report_chart_is_byte_for_byte_what_its_template_drew(cycles):
    labels = [HOSTILE[0], "r" * 40 + HOSTILE[1]][: len(cycles)]  # one shortened with ...
    stages = ["QKV", "MLP up", "PV<&>'\""]
    cycles = [{("PV<&>'\"" if k == "PV" else k): v for k, v in each.items()} for each in cycles]
    chart = stacked_bars(labels, stages, cycles)
    assert len(chart.bars) == len(cycles)
    assert stacked_bars_svg(chart) == _oracle().render(chart=chart)


def test_a_label_cannot_open_markup_in_the_report_chart():
    chart = stacked_bars(["</svg><script>x</script>"], ["<b>"], [{"<b>": 5}])
    svg = stacked_bars_svg(chart)
    assert "<script>" not in svg and "<b>" not in svg
    # the bar's title, its name and its one segment's title
    assert svg.count("&lt;/svg&gt;&lt;script&gt;") == 3


def test_the_tick_steps_are_round_numbers():
    # raw 28875.5: 10000 to 25000 fall short, 5 x 10^4 is the first at least as large
    assert round_step(28875.5, GROUPED_STEPS) == 50000
    assert round_step(22000, GROUPED_STEPS) == 25000  # 2.5 x 10^4: compare's step only
    assert round_step(22000, STACKED_STEPS) == 50000  # the report's skips 2.5
    assert round_step(10, STACKED_STEPS) == 10  # a power of ten is its own step
    assert round_step(0.3, STACKED_STEPS) == pytest.approx(0.5)
    # compare's ticks: 173253 / 6 = 28875.5 -> whole steps of 50000 from 0 past the top
    assert nice_ticks(173253) == [0, 50000, 100000, 150000, 200000]
    # -100000 to 48248 over 6: 24708 -> 25000, from -100000 up to 50000
    assert nice_ticks(48248, minimum=-100000) == list(range(-100000, 50001, 25000))
    assert nice_ticks(0) == [0, 1]


def test_the_report_ticks_are_short():
    assert [short_count(v) for v in (0, 999, 1000, 1500, 2.5e6, 3e9, -20000)] == [
        "0",
        "999",
        "1k",
        "1.5k",
        "2.5M",
        "3G",
        "\u221220k",
    ]


def test_both_charts_start_with_okabe_and_itos_colours():
    okabe_ito = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"]
    assert list(RECORDING_COLOURS) == okabe_ito + ["#000000"]
    assert list(STAGE_COLOURS) == okabe_ito + ["#999999", "#000000", "#8C564B"]
    assert [recording_colour(i) for i in range(8)] == list(RECORDING_COLOURS)
    # beyond them, the golden angle: 8 x 137.508 = 1100.064 = 3 x 360 + 20.064 degrees
    assert recording_colour(8) == "hsl(20, 65%, 45%)"
