"""`extract memory`'s formats: markdown (for a person: the out-of-memory question first),
json (memory.json) and csv (a line per tile and category, then a line per tile)."""

import csv
import io
import json
from typing import List, Optional

from ..escaping import csv_text_cell, markdown_cell
from ..render import Renderer
from .model import TileMemory

#: The widest histogram bar, in characters.
BAR_WIDTH = 40
BAR = "\u2588"  # █
CSV_LINE_END = "\r\n"  # RFC 4180, as every CSV extract writes


class MemoryJson(Renderer[TileMemory]):
    """memory.json: `json.dumps(indent=2)` and a newline, as summary.json."""

    name, suffix, media_type = "json", ".json", "application/json"

    def render(self, result: TileMemory) -> bytes:
        return (json.dumps(result.report, indent=2) + "\n").encode("ascii")


class MemoryCsv(Renderer[TileMemory]):
    """`tile,ipu,category,bytes`: a line per tile and category (tile order, then the
    category's name), then a line per tile, every tile, with `total` as its category."""

    name, suffix, media_type = "csv", ".csv", "text/csv"

    def render(self, result: TileMemory) -> bytes:
        per_ipu = result.report["tiles_per_ipu"]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator=CSV_LINE_END)
        writer.writerow(["tile", "ipu", "category", "bytes"])

        def ipu(tile: int) -> str:
            return "" if per_ipu is None else str(tile // per_ipu)

        for tile in sorted(result.categories):
            for name, size in sorted(result.categories[tile].items()):
                writer.writerow([tile, ipu(tile), csv_text_cell(name), size])
        for tile, total in enumerate(result.totals):
            writer.writerow([tile, ipu(tile), "total", total])
        return out.getvalue().encode("utf-8", "backslashreplace")


def _plural(count: int, word: str) -> str:
    return "{} {}{}".format(count, word, "" if count == 1 else "s")


def headline(report: dict) -> str:
    """The answer to "is a tile out of memory, and how close is the rest": the first line
    of the markdown."""
    total = report["total"]
    if total is None:
        return "no tiles: memory_by_tile has no rows"
    limit = report["limit"]
    if limit is not None:
        return "fullest tile {}: {} of {} bytes ({:.1f}%), {} free; {} over the limit".format(
            total["max_tile"],
            total["max"],
            report["bytes_per_tile"],
            100 * limit["used"],
            limit["headroom"],
            _plural(limit["over"], "tile"),
        )
    times = "{:.2f}".format(total["max"] / total["mean"]) if total["mean"] else "-"
    return "fullest tile {}: {} bytes, {} x the mean".format(total["max_tile"], total["max"], times)


def _number(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return "{:.1f}".format(value) if isinstance(value, float) else str(value)


def _table(header: List[str], align: List[str], rows: List[List[str]]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _bar(count: int, largest: int) -> str:
    if not count:
        return ""
    return BAR * max(1, round(count * BAR_WIDTH / largest))


def _about(report: dict) -> str:
    parts = [markdown_cell(report["profile"]), _plural(report["tiles"], "tile")]
    if report["ipus"] is not None and report["tiles_per_ipu"] is not None:
        parts.append(
            "{} of {} tiles".format(_plural(report["ipus"], "IPU"), report["tiles_per_ipu"])
        )
    if report["bytes_per_tile"] is not None:
        parts.append("{} bytes per tile".format(report["bytes_per_tile"]))
    if report["stray_rows"]:
        parts.append("{} of no tile".format(_plural(report["stray_rows"], "vars_info row")))
    if report["liveness"] is None:
        parts.append("without pva")
    return ", ".join(parts)


def memory_markdown(report: dict) -> str:
    """memory.json as GitHub-flavoured markdown: the headline, then the categories, the
    fullest tiles, the histogram, per IPU, liveness and the largest exchanges."""
    lines = [headline(report), "", _about(report)]
    if report["categories"]:
        rows = [
            [
                markdown_cell(c["category"]),
                str(c["sum"]),
                str(c["tiles"]),
                str(c["max"]),
                str(c["max_tile"]),
                _number(c["mean"]),
            ]
            for c in report["categories"]
        ]
        lines += ["", "## Categories", ""]
        lines += _table(
            ["category", "bytes", "tiles", "max", "max tile", "mean"],
            ["---"] + ["---:"] * 5,
            rows,
        )
    if report["fullest"]:
        rows = [
            [
                str(t["tile"]),
                _number(t["ipu"]),
                str(t["total"]),
                _number(t["headroom"]),
                ", ".join(
                    "{} {}".format(markdown_cell(c["category"]), c["bytes"])
                    for c in t["categories"]
                ),
                str(t["unattributed"]),
            ]
            for t in report["fullest"]
        ]
        lines += ["", "## Fullest tiles", ""]
        lines += _table(
            ["tile", "IPU", "total", "headroom", "categories (bytes)", "unattributed"],
            ["---:"] * 4 + ["---", "---:"],
            rows,
        )
    if report["histogram"]:
        largest = max(bucket["tiles"] for bucket in report["histogram"])
        rows = [
            [
                "{}-{}".format(b["from"], b["to"] - 1)
                if b["to"] is not None
                else "{} and more".format(b["from"]),
                str(b["tiles"]),
                _bar(b["tiles"], largest),
            ]
            for b in report["histogram"]
        ]
        lines += ["", "## Tiles by total bytes", ""]
        lines += _table(["bytes", "tiles", ""], ["---:", "---:", "---"], rows)
    if report["per_ipu"]:
        rows = [
            [
                str(i["ipu"]),
                str(i["sum"]),
                str(i["min"]),
                _number(i["mean"]),
                str(i["max"]),
                str(i["max_tile"]),
            ]
            for i in report["per_ipu"]
        ]
        lines += ["", "## Per IPU", ""]
        lines += _table(["IPU", "bytes", "min", "mean", "max", "max tile"], ["---:"] * 6, rows)
    liveness = report["liveness"]
    if liveness is not None:
        lines += ["", "## Liveness", ""]
        lines += _table(
            ["always live", "peak not always live", "at step", "peak"],
            ["---:"] * 4,
            [
                [
                    str(liveness["always_live"]),
                    str(liveness["peak_not_always_live"]),
                    _number(liveness["peak_step"]),
                    str(liveness["peak"]),
                ]
            ],
        )
    if report["exchanges"]:
        rows = [
            [
                markdown_cell(e["name"]),
                markdown_cell(e["stage"]),
                str(e["max"]),
                str(e["max_tile"]),
                str(e["sum"]),
            ]
            for e in report["exchanges"]
        ]
        lines += ["", "## Largest exchanges (code bytes)", ""]
        lines += _table(
            ["program", "stage", "max", "max tile", "sum"], ["---", "---"] + ["---:"] * 3, rows
        )
    return "\n".join(lines) + "\n"


class MemoryMarkdown(Renderer[TileMemory]):
    """The markdown: memory_markdown."""

    name, suffix, media_type = "markdown", ".md", "text/markdown"

    def render(self, result: TileMemory) -> bytes:
        # A lone surrogate in a name (not UTF-8 in the profile) is shown as \udXXX.
        return memory_markdown(result.report).encode("utf-8", "backslashreplace")
