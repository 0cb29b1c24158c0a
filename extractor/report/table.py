"""`extract table`: the recordings' metrics as a long ("tidy") table, one line per
(recording, metric), with the columns `recording`, `profile`, `metric`, `value`.

The metric names and order are metrics.py's (the budget spec's names). CSV is RFC 4180
as the step tables are (UTF-8 without a byte-order mark, CRLF, quoted only where
needed); JSON Lines is one object per line with the same four keys. Numbers are written
as they are in the summary (an int stays an int, a mean keeps every digit). The CSV's
text cells (recording, profile, metric) are written by `escaping.csv_text_cell`: one
that a spreadsheet would read as a formula (`=2+3`, a folder's name) gets a leading `'`;
numbers are never touched. JSON Lines holds the names as they are.

A renderer (extractor.render) per format, registered in render.TABLE_FORMATS, renders
the recordings (compare's Recording objects) as UTF-8 (a lone surrogate, which a summary
may hold, as \\udXXX).
"""

import csv
import io
import json
from typing import Iterator, NamedTuple, Sequence

from ..core.metrics import Number, metrics
from ..escaping import csv_text_cell
from ..render import TABLE_FORMATS, Renderer

COLUMNS = ("recording", "profile", "metric", "value")


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
        for metric, value in metrics(summary, recording.beside).items():
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
    # is written as \udXXX when the text is encoded (see TableJsonl).
    return "".join(
        json.dumps(dict(zip(COLUMNS, line)), ensure_ascii=False, allow_nan=False) + "\n"
        for line in lines
    )


class TableCsv(Renderer[Sequence]):
    name, suffix, media_type = "csv", ".csv", "text/csv"

    def render(self, result: Sequence) -> bytes:
        return render_csv(table_lines(result)).encode("utf-8", "backslashreplace")


class TableJsonl(Renderer[Sequence]):
    name, suffix, media_type = "jsonl", ".jsonl", "application/jsonl"

    def render(self, result: Sequence) -> bytes:
        return render_jsonl(table_lines(result)).encode("utf-8", "backslashreplace")


def table_bytes(recordings: Sequence, table_format: str = "csv") -> bytes:
    """The whole table in `table_format` ("csv" or "jsonl"), UTF-8."""
    if table_format not in TABLE_FORMATS:
        raise ValueError(
            "no table format {!r}: one of {}".format(table_format, ", ".join(TABLE_FORMATS))
        )
    return TABLE_FORMATS[table_format]().render(recordings)
