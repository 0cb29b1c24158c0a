"""The kernel stages of a comparison as a grouped bar chart (extractor.barchart draws it):
one group of bars per first-body kernel stage, one bar (and one colour) per recording,
written to an SVG file."""

from ..barchart import grouped_bars_svg
from ..output import write_atomic
from .comparison import Comparison

TITLE = "First-body kernel cycles by stage"
X_TITLE = "kernel stage of the first body"


def stage_chart_svg(comparison: Comparison) -> str:
    """The SVG document (text) of the comparison's kernel stages."""
    rows = comparison.stage_rows
    return grouped_bars_svg(
        TITLE,
        X_TITLE,
        [row.metric for row in rows],
        [recording.label for recording in comparison.recordings],
        [row.values for row in rows],
    )


CHART_SUFFIXES = (".svg",)


def write_chart(path, comparison: Comparison) -> None:
    """Write the stage chart to `path` (an .svg file), atomically."""
    # A lone surrogate in a label is already \udXXX (xml_text): XML cannot hold one.
    write_atomic(path, stage_chart_svg(comparison).encode("utf-8"))
