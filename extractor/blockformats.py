"""blocks.json's three formats (blocks-spec.md, "Other formats"), as bytes:
`BLOCK_FORMATS[name](blocks dict)`.

- json: the bytes of summary.json's kind (render.summary_bytes: two-space indent,
  non-ASCII escaped, final newline);
- csv: RFC 4180 as the step tables are written (UTF-8 without a byte-order mark, CRLF),
  one line per body; a stage with no kernel rows in a body, and a null end_step, are
  empty cells;
- markdown: the statistics, one line per stage with kernel rows, then the total.
"""

import csv
import io

from .render import summary_bytes

LINE_END = "\r\n"


def to_json(blocks: dict) -> bytes:
    return summary_bytes(blocks)


def to_csv(blocks: dict) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=LINE_END)
    stages = blocks["stages"]
    writer.writerow(["run", "block", "first_step", "end_step", "kernels"] + stages
                    + ["total"])
    for body in blocks["blocks"]:
        cycles = body["cycles"]
        writer.writerow([body["run"], body["block"], body["first_step"],
                         "" if body["end_step"] is None else body["end_step"],
                         body["kernels"]]
                        + [cycles.get(label, "") for label in stages] + [body["total"]])
    return out.getvalue().encode("utf-8")


MARKDOWN_HEADER = ("| stage | blocks | min | median | mean | max | stdev | min at | "
                   "max at |")


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _number(value) -> str:
    return "{:.1f}".format(value) if isinstance(value, float) else str(value)


def _at(where) -> str:
    return "run {}, block {}".format(*where)


def _line(name: str, stats: dict) -> str:
    cells = [_cell(name), str(stats["blocks"])] + [
        _number(stats[key]) for key in ("min", "median", "mean", "max", "stdev")] + [
        _at(stats["min_at"]), _at(stats["max_at"])]
    return "| " + " | ".join(cells) + " |"


def to_markdown(blocks: dict) -> bytes:
    """A GitHub-flavoured markdown table of cycles over the blocks: one line per stage
    that has kernel rows, then `total` (none without blocks); means and standard
    deviations to 0.1 cycle."""
    lines = [MARKDOWN_HEADER, "|---|" + "---:|" * 6 + "---|---|"]
    for label, stats in blocks["stats"].items():
        lines.append(_line(label, stats))
    if blocks["total"] is not None:
        lines.append(_line("**total**", blocks["total"]))
    # A lone surrogate in a label (a name not UTF-8) is shown as \udXXX.
    return ("\n".join(lines) + "\n").encode("utf-8", "backslashreplace")


BLOCK_FORMATS = {"json": to_json, "csv": to_csv, "markdown": to_markdown}
