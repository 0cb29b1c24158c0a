"""`extract table`: the recordings' metrics as a long ("tidy") table, one line per
(recording, metric), with the columns `recording`, `profile`, `metric`, `value`.

The metric names and order are metrics.py's (the budget spec's names). CSV is RFC 4180
as the step tables are (UTF-8 without a byte-order mark, CRLF, quoted only where
needed); JSON Lines is one object per line with the same four keys. Numbers are written
as they are in the summary (an int stays an int, a mean keeps every digit). The CSV's
text cells (recording, profile, metric) are written by `escaping.csv_text_cell`: one
that a spreadsheet would read as a formula (`=2+3`, a folder's name) gets a leading `'`;
numbers are never touched. JSON Lines holds the names as they are.
"""

import csv
import io
import json
from typing import Iterator, NamedTuple, Sequence

from ..core.metrics import Number, metrics
from ..escaping import csv_text_cell

COLUMNS = ("recording", "profile", "metric", "value")
FORMATS = ("csv", "jsonl")


class TableLine(NamedTuple):
    recording: str
    profile: str
    metric: str
    value: Number


def table_lines(recordings: Sequence) -> Iterator[TableLine]:
    """Each recording's metrics in metrics.py's order, the recordings in the given order.
    `recordings`: compare's Recording objects (label, path, summary)."""
    for recording in recordings:
        summary = recording.summary
        for metric, value in metrics(summary).items():
            yield TableLine(recording.label, summary.profile, metric, value)


def _number_text(value: Number) -> str:
    # repr: every digit of a float (the shortest text that reads back the same).
    return repr(value) if isinstance(value, float) else str(value)


def render_csv(lines) -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for line in lines:
        writer.writerow(
            (
                csv_text_cell(line.recording),
                csv_text_cell(line.profile),
                csv_text_cell(line.metric),
                _number_text(line.value),
            )
        )
    return text.getvalue()


def render_jsonl(lines) -> str:
    # ensure_ascii=False: names as they are; a lone surrogate (a summary may hold one)
    # is written as \udXXX when the text is encoded (see table_bytes).
    return "".join(
        json.dumps(dict(zip(COLUMNS, line)), ensure_ascii=False, allow_nan=False) + "\n"
        for line in lines
    )


def table_bytes(recordings: Sequence, table_format: str = "csv") -> bytes:
    """The whole table in `table_format` ("csv" or "jsonl"), UTF-8."""
    if table_format not in FORMATS:
        raise ValueError("no table format {!r}: one of {}".format(table_format, ", ".join(FORMATS)))
    render = render_csv if table_format == "csv" else render_jsonl
    return render(table_lines(recordings)).encode("utf-8", "backslashreplace")
