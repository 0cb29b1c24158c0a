"""The diff written out: JSON (the model as it is), CSV (one line per step entry) and
markdown (for a person at a terminal or in a pull request), a renderer (extractor.render)
each, registered in render.DIFF_FORMATS. Each reads the dict that accounting.explain
makes; none computes a number of its own but the percent. `top` (markdown's --top) is
every renderer's option, used by markdown alone."""

import csv
import io
from typing import Callable, Dict, List, Optional

from ..core.metrics import percent_change
from ..core.steptables import LINE_END
from ..core.summary_json import summary_bytes
from ..escaping import csv_cell, markdown_cell, markdown_code
from ..render import Renderer

#: How many step entries the markdown lists by default (--top).
DEFAULT_TOP = 20

CSV_HEADER = (
    "status",
    "stage",
    "kind",
    "key",
    "base_step",
    "candidate_step",
    "base_cycles",
    "candidate_cycles",
    "change",
    "fields",
)


def to_json(diff: dict, top: int = DEFAULT_TOP) -> bytes:
    """Two-space indent, keys in the model's order, a final newline (as summary.json)."""
    return summary_bytes(diff)


def to_csv(diff: dict, top: int = DEFAULT_TOP) -> bytes:
    """RFC 4180 as the step tables (CRLF, QUOTE_MINIMAL, text cells guarded against
    formulas); an absent side's cells empty; `fields` joined by `;`."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator=LINE_END)
    writer.writerow(CSV_HEADER)
    for entry in diff["steps"]:
        old, new = entry["base"], entry["candidate"]
        writer.writerow(
            [
                csv_cell(entry["status"]),
                csv_cell(entry["stage"]),
                csv_cell(entry["kind"]),
                csv_cell(entry["key"]),
                old["step"] if old else None,
                new["step"] if new else None,
                old["cycles"] if old else None,
                new["cycles"] if new else None,
                entry["change"],
                csv_cell(";".join(entry["fields"])),
            ]
        )
    return text.getvalue().encode("utf-8")


def signed(number: int) -> str:
    return "{:+d}".format(number) if number else "0"


def percent(change: int, base: int) -> str:
    found = percent_change(base + change, base)
    return "n/a" if found is None else "{:+.2f}%".format(found)


def to_markdown(diff: dict, top: int = DEFAULT_TOP) -> bytes:
    """The headline (the change, then each body: profile, run, block, steps, cycles),
    the facts that differ, the stages by kinds, the `top` largest step entries with
    what changed in words, and the counts with the sum they add up to. A body's cycles
    are all cycles (every step row's, docs/glossary.md): the headline and the stages'
    heading say so."""
    base, candidate, change = diff["base"], diff["candidate"], diff["change"]
    lines = [
        "# extract diff: {} -> {} all cycles, {} ({})".format(
            base["cycles"], candidate["cycles"], signed(change), percent(change, base["cycles"])
        ),
        "",
    ]
    for name, side in (("base", base), ("candidate", candidate)):
        lines.append(
            "- {}: {}, run {}, block {} ({} steps, from {} to {}): {} all cycles".format(
                name,
                markdown_code(side["profile"]),
                side["run"],
                side["block"],
                side["units"],
                side["first_step"],
                "the end of the trace"
                if side["end_step"] is None
                else "before {}".format(side["end_step"]),
                side["cycles"],
            )
        )
    if diff["differences"]:
        lines += ["", "The profiles differ: {}.".format("; ".join(_facts(diff["differences"])))]
    lines += ["", "## Where the time went: all cycles, stages by kinds", ""] + _stage_table(diff)
    lines += ["", _steps_heading(diff, top), ""] + _steps_table(diff["steps"][:top])
    lines += ["", _last_line(diff)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _facts(differences: List[dict]) -> List[str]:
    words = {"tiles": "tiles", "inferences": "inferences", "bodies": "bodies", "pva": "pva facts"}
    shown = []
    for fact in differences:
        values = [fact["base"], fact["candidate"]]
        if fact["fact"] == "pva":
            values = ["read" if value else "not read" for value in values]
        shown.append("{} {} -> {}".format(words[fact["fact"]], *values))
    return shown


def _stage_table(diff: dict) -> List[str]:
    """A line per stage and kind of step in it, with the cycles on each side and the
    change; a stage with several kinds, then a line of its own sums; the totals per
    kind and of all last."""
    lines = ["| stage | kind | base | candidate | change |", "|---|---|---|---|---|"]

    def add(stage: str, kind: str, base: int, candidate: int) -> None:
        lines.append(
            "| {} | {} | {} | {} | {} |".format(
                stage, kind, base, candidate, signed(candidate - base)
            )
        )

    for stage in diff["by_stage"]:
        label = markdown_cell(stage["stage"])
        for kind, sides in stage["kinds"].items():
            add(label, markdown_cell(kind), sides["base"], sides["candidate"])
        if len(stage["kinds"]) > 1:
            add(label, "**all**", stage["base"], stage["candidate"])
    for kind in diff["by_kind"]:
        add("**total**", markdown_cell(kind["kind"]), kind["base"], kind["candidate"])
    add("**total**", "**all**", diff["base"]["cycles"], diff["candidate"]["cycles"])
    return lines


def _steps_heading(diff: dict, top: int) -> str:
    count = len(diff["steps"])
    if count == 0:
        return "## No step changed"
    if count <= top:
        return "## The {} step {}, largest first".format(
            count, "change" if count == 1 else "changes"
        )
    return "## The {} largest of {} step changes".format(top, count)


def _steps_table(entries: List[dict]) -> List[str]:
    if not entries:
        return ["Every step is the same on both sides."]
    lines = [
        "| status | stage | kind | steps | name | base | candidate | change | what changed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for entry in entries:
        old, new = entry["base"], entry["candidate"]
        shown = old if old is not None else new
        cells = [
            entry["status"],
            markdown_cell(entry["stage"]),
            markdown_cell(entry["kind"]),
            "{} -> {}".format(_side_value(old, "step"), _side_value(new, "step")),
            markdown_code(shown["name"]),
            _side_value(old, "cycles"),
            _side_value(new, "cycles"),
            signed(entry["change"]),
            "; ".join(_what_changed(entry)),
        ]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return lines


def _side_value(unit: Optional[dict], field: str) -> str:
    return "\u2014" if unit is None else str(unit[field])


def _what_changed(entry: dict) -> List[str]:
    if entry["status"] == "added":
        return ["only in the candidate"]
    if entry["status"] == "removed":
        return ["only in the base"]
    old, new = entry["base"], entry["candidate"]
    words: Dict[str, Callable[[], str]] = {
        "cycles": lambda: "cycles",
        "active_tiles": lambda: "tiles: {} -> {}".format(old["active_tiles"], new["active_tiles"]),
        "vertices": lambda: _vertices(old["vertices"], new["vertices"]),
        "max_exchange_code_bytes": lambda: "exchange code: {} -> {} bytes".format(
            old["max_exchange_code_bytes"], new["max_exchange_code_bytes"]
        ),
    }
    return [words[field]() for field in entry["fields"]]


def _vertices(old: str, new: str) -> str:
    """The vertex types only on one side, each side's in its order: `a -> b`."""
    before = [name for name in old.split("; ") if name]
    after = [name for name in new.split("; ") if name]
    gone, came = _without(before, after), _without(after, before)
    if not gone and not came:
        return "vertices: the same types, in another order"
    return "vertices: {} -> {}".format(_types(gone), _types(came))


def _without(names: List[str], others: List[str]) -> List[str]:
    """`names` less one occurrence of each of `others`, in order."""
    left = list(others)
    kept = []
    for name in names:
        if name in left:
            left.remove(name)
        else:
            kept.append(name)
    return kept


def _types(names: List[str]) -> str:
    return "; ".join(markdown_code(name) for name in names) if names else "(none)"


def _last_line(diff: dict) -> str:
    counts = diff["counts"]
    differ = counts["changed"] + counts["added"] + counts["removed"]
    total = sum(entry["change"] for entry in diff["steps"])
    return (
        "{} {} differ ({} changed, {} added, {} removed; {} same): their changes add up to "
        "{} cycles, the whole change.".format(
            differ,
            "step" if differ == 1 else "steps",
            counts["changed"],
            counts["added"],
            counts["removed"],
            counts["same"],
            signed(total),
        )
    )


class DiffRenderer(Renderer[dict]):
    """A format of the diff; `top`: how many step entries markdown lists."""

    def __init__(self, top: int = DEFAULT_TOP) -> None:
        self.top = top


class DiffMarkdown(DiffRenderer):
    name, suffix, media_type = "markdown", ".md", "text/markdown"

    def render(self, result: dict) -> bytes:
        return to_markdown(result, self.top)


class DiffJson(DiffRenderer):
    name, suffix, media_type = "json", ".json", "application/json"

    def render(self, result: dict) -> bytes:
        return to_json(result)


class DiffCsv(DiffRenderer):
    name, suffix, media_type = "csv", ".csv", "text/csv"

    def render(self, result: dict) -> bytes:
        return to_csv(result)
