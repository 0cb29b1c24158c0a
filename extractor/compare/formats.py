"""The output formats of a comparison: `FORMATS` maps each `extract compare --format` name
to a `Format`, whose `render(comparison)` gives the whole text, ending with a newline.

Numbers are never rounded in CSV and JSON; markdown rounds for reading (means to 0.1,
milliseconds to 0.001, percentages to 0.1).
"""

import csv
import io
import json
import math
from typing import Callable, NamedTuple, Optional

from ..errors import shown_path
from .comparison import EXCHANGES, STAGE_TOTAL, STAGES, Comparison, Exchange


class Format(NamedTuple):
    """One output format: its `--format` name, and `render(comparison) -> str`."""

    name: str
    render: Callable[[Comparison], str]


ABSENT = "\u2014"  # an em dash: this recording has no such value


def _markdown_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    return "{0}{1}{0}".format(fence, text.replace("|", "\\|"))


def _number(value, unit: str) -> str:
    if value is None:
        return ABSENT
    if isinstance(value, float):
        return "{:.3f}".format(value) if unit.startswith("ms") else "{:.1f}".format(value)
    return str(value)


def _percent(change: Optional[float]) -> str:
    return "" if change is None else " ({:+.1f}%)".format(change)


def _exchange_metric(exchange: Exchange) -> str:
    name = _code(exchange.key)
    if exchange.occurrence > 1:
        name += " ({})".format(exchange.occurrence)
    return ("attention exchange: " if exchange.matched else "unmatched attention exchange: "
            ) + name


def to_markdown(comparison: Comparison) -> str:
    """One GitHub-flavoured markdown table, recordings as columns, ending with a newline."""
    labels = [_markdown_cell(r.label) for r in comparison.recordings]
    lines = ["| | unit | " + " | ".join(labels) + " |",
             "|---|---|" + "---:|" * len(labels)]
    for row in comparison.rows:
        metric = {STAGES: "stage: " + row.metric, STAGE_TOTAL: "stages, total"}.get(
            row.section, row.metric)
        cells = []
        for index, value in enumerate(row.values):
            text = _number(value, row.unit)
            if row.change is not None and value is not None:
                text += _percent(row.change[index])
            cells.append(text)
        lines.append("| {} | {} | {} |".format(_markdown_cell(metric),
                                               _markdown_cell(row.unit), " | ".join(cells)))
    for exchange in comparison.exchanges:
        cells = []
        for index, cell in enumerate(exchange.cells):
            if not comparison.has_pva(index):
                cells.append("no pva facts")
            elif cell is None:
                cells.append(ABSENT)
            else:
                cells.append("{} / {:.1f}".format(cell.maximum, cell.mean))
        lines.append("| {} | code bytes per tile, max / mean | {} |".format(
            _exchange_metric(exchange), " | ".join(cells)))
    return "\n".join(lines) + "\n"


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):  # a guard: the inputs are checked to be finite
            raise ValueError("refusing to write a non-finite number ({!r}) in CSV".format(
                value))
        return repr(value)
    return str(value)


def to_csv(comparison: Comparison) -> str:
    """The table as RFC 4180 CSV (CRLF line ends): section, metric, unit, then each
    recording's value followed, after the first, by its change in percent; then note."""
    labels = [r.label for r in comparison.recordings]
    header = ["section", "metric", "unit", labels[0]]
    for label in labels[1:]:
        header += [label, "{} change %".format(label)]
    header.append("note")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)

    def write(section, metric, unit, values, change, note=""):
        line = [section, metric, unit, _csv_value(values[0])]
        for index in range(1, len(values)):
            line += [_csv_value(values[index]),
                     _csv_value(change[index] if change is not None else None)]
        writer.writerow(line + [note])

    for row in comparison.rows:
        write(row.section, row.metric, row.unit, row.values, row.change)
    for exchange in comparison.exchanges:
        metric = exchange.key if exchange.occurrence == 1 else "{} ({})".format(
            exchange.key, exchange.occurrence)
        note = "" if exchange.matched else "unmatched"
        for field in ("maximum", "mean"):
            write(EXCHANGES, metric, "code bytes per tile, {}".format(
                "max" if field == "maximum" else field),
                [getattr(c, field) if c is not None else None for c in exchange.cells],
                None, note)
    return out.getvalue()


def to_json_data(comparison: Comparison) -> dict:
    return {
        "recordings": [{"label": r.label, "path": shown_path(r.path),
                        "pva": comparison.has_pva(i)}
                       for i, r in enumerate(comparison.recordings)],
        "clock_mhz": comparison.clock_mhz,
        "rows": [{"section": row.section, "metric": row.metric, "unit": row.unit,
                  "values": list(row.values),
                  "change_percent": list(row.change) if row.change is not None else None}
                 for row in comparison.rows],
        "attention_exchanges": [
            {"name": e.key, "occurrence": e.occurrence, "matched": e.matched,
             "values": [c._asdict() if c is not None else None for c in e.cells]}
            for e in comparison.exchanges],
    }


def to_json(comparison: Comparison) -> str:
    """The comparison as JSON (two-space indent, ending with a newline)."""
    try:
        # NaN and Infinity are not JSON: strict parsers refuse them. A guard (the inputs
        # are checked to be finite), so that no future path can write them.
        return json.dumps(to_json_data(comparison), indent=2, allow_nan=False) + "\n"
    except ValueError as exc:
        raise ValueError("refusing to write a non-finite number in JSON ({})".format(
            exc)) from exc


FORMATS = {each.name: each for each in (
    Format("markdown", to_markdown), Format("csv", to_csv), Format("json", to_json))}
