"""The breakdown written out, a renderer (extractor.render) per format, registered in
render.BREAKDOWN_FORMATS: markdown (for a person), json (the file as it is), csv (a
line per table row) and folded (flame-graph stacks, one profile only). Each reads the
dict that command.breakdown_profile (one profile) or command.compare_breakdowns (two)
makes, told apart by its `profile` key; none computes a number of its own but the
percents. `top` (markdown's --top) is every renderer's option, used by markdown alone.
"""

import csv
import io
from typing import Any, List, Optional, Sequence

from ..core.steptables import LINE_END
from ..core.summary_json import summary_bytes
from ..escaping import csv_cell, markdown_cell, markdown_code
from ..render import Renderer
from .keys import frame, layer_frames
from .tables import KEY_FIELDS, TABLES

DEFAULT_TOP = 20


def _compared(result: dict) -> bool:
    return "profile" not in result


def _window_name(run: Optional[int]) -> str:
    return "every step row" if run is None else "inference {}".format(run)


def _percent(share: float) -> str:
    return "{:.1f}%".format(share * 100)


def _signed(number: int) -> str:
    return "{:+d}".format(number) if number else "0"


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def _rule(count: int) -> str:
    return "|" + "---|" * count


def _shown(value: Optional[int]) -> str:
    return "n/a" if value is None else str(value)


# ---- markdown: one profile -----------------------------------------------------------


def _ipu_markdown(window: dict, ipu: dict, top: int) -> List[str]:
    kinds = ipu["kinds"]
    largest = ", ".join(
        "{} {}".format(markdown_cell(k["kind"]), _percent(k["share"])) for k in kinds[:3]
    )
    lines = [
        "## {}, IPU {} (steps {} to {})".format(
            _window_name(window["run"]), ipu["ipu"], window["first_step"], window["last_step"]
        ),
        "",
        "{} rows, {} all cycles, span {} cycles; {}.".format(
            ipu["rows"], ipu["cycles"], _shown(ipu["span"]), largest
        ),
        "",
        _row(["kind", "rows", "all cycles", "share"]),
        _rule(4),
    ]
    for k in kinds:
        lines.append(_row([markdown_cell(k["kind"]), k["rows"], k["cycles"], _percent(k["share"])]))
    names = [k["kind"] for k in kinds]
    lines += [
        "",
        "### Stages by kind (all cycles)",
        "",
        _row(["stage", "all cycles", "share"] + [markdown_cell(name) for name in names]),
        _rule(3 + len(names)),
    ]
    for stage in ipu["stages"]:
        by_kind = [stage["kinds"].get(name, 0) for name in names]
        lines.append(
            _row(
                [markdown_cell(stage["stage"]), stage["cycles"], _percent(stage["share"])] + by_kind
            )
        )
    ops = ipu["ops"]
    lines += [
        "",
        "### The {} largest of {} ops (all cycles)".format(min(top, len(ops)), len(ops)),
        "",
        _row(["op", "kind", "stage", "executions", "all cycles", "share", "mean", "min", "max"]),
        _rule(9),
    ]
    for op in ops[:top]:
        lines.append(
            _row(
                [
                    markdown_code(op["op"]),
                    markdown_cell(op["kind"]),
                    markdown_cell(op["stage"]),
                    op["executions"],
                    op["cycles"],
                    _percent(op["share"]),
                    "{:.1f}".format(op["mean"]),
                    op["min"],
                    op["max"],
                ]
            )
        )
    layers = ipu["layers"]
    lines += [
        "",
        "### The {} largest of {} layers (all cycles)".format(min(top, len(layers)), len(layers)),
        "",
        _row(["layer", "all cycles", "share"]),
        _rule(3),
    ]
    for layer in layers[:top]:
        lines.append(
            _row([markdown_code(layer["layer"]), layer["cycles"], _percent(layer["share"])])
        )
    balance = ipu["tile_balance"]
    repeats = ipu["repeats"]
    lines += [
        "",
        "Tile balance (OnTileExecute, cycle-weighted active tiles per tile): {}. Compute "
        "sets executed twice or more: {}, {} of them with the same cycles every time.".format(
            "n/a" if balance is None else "{:.3f}".format(balance),
            repeats["compute_sets"],
            repeats["identical"],
        ),
        "",
    ]
    return lines


def _single_markdown(result: dict, top: int) -> List[str]:
    lines = [
        "# Every cycle of {}, by kind, stage, op and layer".format(
            markdown_cell(result["profile"])
        ),
        "",
        "All cycles: the sum of `cycles` of every step row of the window, per IPU.",
        "",
    ]
    for window in result["windows"]:
        if not window["ipus"]:
            lines += ["## {}: no step rows".format(_window_name(window["run"])), ""]
        for ipu in window["ipus"]:
            lines += _ipu_markdown(window, ipu, top)
    return lines


# ---- markdown: two profiles ----------------------------------------------------------


def _side_steps(side: Optional[dict]) -> str:
    if side is None or side["first_step"] is None:
        return "no rows"
    return "steps {} to {}".format(side["first_step"], side["last_step"])


def _compared_table(title: str, table: str, rows: List[dict], top: Optional[int]) -> List[str]:
    fields = KEY_FIELDS[table]
    shown = rows if top is None else rows[:top]
    heading = (
        title
        if top is None
        else "The {} largest of {} {} changes".format(min(top, len(rows)), len(rows), title.lower())
    )
    lines = [
        "",
        "### {} (all cycles)".format(heading),
        "",
        _row(list(fields) + ["status", "base", "candidate", "change"]),
        _rule(len(fields) + 4),
    ]
    for row in shown:
        keys = [
            markdown_code(row[f]) if f in ("op", "layer") else markdown_cell(row[f]) for f in fields
        ]
        lines.append(
            _row(keys + [row["status"], row["base"], row["candidate"], _signed(row["change"])])
        )
    return lines


def _compared_markdown(result: dict, top: int) -> List[str]:
    lines = [
        "# Every cycle of {} against {}, by kind, stage, op and layer".format(
            markdown_cell(result["candidate"]), markdown_cell(result["base"])
        ),
        "",
        "All cycles: the sum of `cycles` of every step row of the window, per IPU; "
        + "change: the candidate's less the base's.",
        "",
    ]
    whole = 0
    adds_up = True
    for window in result["windows"]:
        base, candidate = window["base"], window["candidate"]
        for ipu in window["ipus"]:
            lines += [
                "## {}, IPU {} (base {}, candidate {})".format(
                    _window_name(base["run"] if base["run"] is not None else candidate["run"]),
                    ipu["ipu"],
                    _side_steps(base),
                    _side_steps(candidate),
                ),
                "",
                "All cycles: base {}, candidate {}, change {}.".format(
                    ipu["base"], ipu["candidate"], _signed(ipu["change"])
                ),
            ]
            lines += _compared_table("Kinds", "kinds", ipu["kinds"], None)
            lines += _compared_table("Stages", "stages", ipu["stages"], None)
            lines += _compared_table("Op", "ops", ipu["ops"], top)
            lines += _compared_table("Layer", "layers", ipu["layers"], top)
            lines.append("")
            whole += ipu["change"]
            for table in TABLES:
                adds_up = adds_up and sum(r["change"] for r in ipu[table]) == ipu["change"]
    lines.append(
        "In every IPU the changes of the kinds, the stages, the ops and the layers each add "
        "up to its change of all cycles{}: {} in all.".format(
            "" if adds_up else " (NOT: a fault of extract)", _signed(whole)
        )
    )
    return lines


# ---- csv -----------------------------------------------------------------------------

SINGLE_HEADER = ("run", "ipu", "table", "kind", "stage", "op", "layer", "rows", "cycles",
                 "share", "mean", "min", "max")  # fmt: skip
COMPARED_HEADER = ("run", "ipu", "table", "kind", "stage", "op", "layer", "status", "base",
                   "candidate", "change")  # fmt: skip


def _csv(result: dict) -> bytes:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator=LINE_END)
    compared = _compared(result)
    writer.writerow(COMPARED_HEADER if compared else SINGLE_HEADER)
    for window in result["windows"]:
        run = window["base"]["run"] if compared else window["run"]
        if compared and run is None:
            run = window["candidate"]["run"]
        for ipu in window["ipus"]:
            for table in TABLES:
                for row in ipu[table]:
                    keys: List[Any] = [csv_cell(row.get(f, "")) for f in KEY_ORDER]
                    if compared:
                        values = [row["status"], row["base"], row["candidate"], row["change"]]
                    else:
                        values = [
                            row.get("rows", row.get("executions")),
                            row["cycles"],
                            repr(row["share"]),
                            None if "mean" not in row else repr(row["mean"]),
                            row.get("min"),
                            row.get("max"),
                        ]
                    writer.writerow([run, ipu["ipu"], table] + keys + values)
    return text.getvalue().encode("utf-8", "backslashreplace")


KEY_ORDER = ("kind", "stage", "op", "layer")


# ---- folded --------------------------------------------------------------------------


def _folded(result: dict) -> bytes:
    lines = []
    for window in result["windows"]:
        top = "all" if window["run"] is None else "inference {}".format(window["run"])
        for ipu in window["ipus"]:
            for op in ipu["ops"]:
                frames = [top, "IPU {}".format(ipu["ipu"])] + layer_frames(op["op"]) + [op["kind"]]
                lines.append("{} {}".format(";".join(frame(f) for f in frames), op["cycles"]))
    lines.sort()
    return "".join(line + "\n" for line in lines).encode("utf-8", "backslashreplace")


# ---- the renderers -------------------------------------------------------------------


class BreakdownRenderer(Renderer[dict]):
    """A format of a breakdown (one profile) or of two compared; `top`: how many ops
    and layers markdown lists."""

    def __init__(self, top: int = DEFAULT_TOP) -> None:
        self.top = top


class BreakdownMarkdown(BreakdownRenderer):
    name, suffix, media_type = "markdown", ".md", "text/markdown"

    def render(self, result: dict) -> bytes:
        lines = (_compared_markdown if _compared(result) else _single_markdown)(result, self.top)
        while lines and lines[-1] == "":
            lines.pop()
        return ("\n".join(lines) + "\n").encode("utf-8", "backslashreplace")


class BreakdownJson(BreakdownRenderer):
    name, suffix, media_type = "json", ".json", "application/json"

    def render(self, result: dict) -> bytes:
        return summary_bytes(result)


class BreakdownCsv(BreakdownRenderer):
    name, suffix, media_type = "csv", ".csv", "text/csv"

    def render(self, result: dict) -> bytes:
        return _csv(result)


class BreakdownFolded(BreakdownRenderer):
    name, suffix, media_type = "folded", ".folded", "text/plain"

    def render(self, result: dict) -> bytes:
        if _compared(result):
            raise ValueError("the folded format shows one profile")
        return _folded(result)
