"""`extract stages`: how a rules file cuts a profile, for adapting it to a model's naming.

Every step row of the trace (all inferences, every IPU row) is classified exactly as the
summary classifies it (`steps.step_rows`, one NameClassifier), and counted: per stage, its
rows, distinct names and total cycles; the most common names no rule matched; and, for
each selector, what it found. Only SQL is read: pva is never asked.
"""

from pathlib import Path
from typing import Dict, List

from ..core.profile import Profile
from ..core.rules import SELECTORS, StageRules
from ..core.steps import INPUT_DELIVERED_KIND, OUTPUT_BEGINS_KIND, step_rows
from ..errors import shown_path
from ..escaping import terminal_text

EXCHANGE_KIND = "DoExchange"

#: What each selector is tried on here, and what the summary loses when it finds nothing.
SELECTOR_NOTES = {
    "kernel": ("step rows of any kind", "kernels will be empty, qkv_executions 0"),
    "anchor": ("kernel rows", "kernels will be empty, qkv_executions 0"),
    "attention_exchange": (
        "DoExchange step rows (the summary: pva's exchange programs)",
        "attention_exchanges will likely be empty",
    ),
    "input_delivered": ("StreamCopyEnd step rows", "device_spans will be empty"),
    "output_begins": (
        "StreamCopyBegin step rows",
        ("no inference ends: device_spans will be empty"),
    ),
}


class _Tally:
    """Rows, distinct steps, distinct names and cycles of some step rows."""

    __slots__ = ("rows", "steps", "names", "cycles", "_last_step")

    def __init__(self):
        self.rows = 0
        self.steps = 0
        self.names = set()
        self.cycles = 0
        self._last_step = None

    def add(self, row) -> None:
        self.rows += 1
        if row.step != self._last_step:  # rows come in step order
            self.steps += 1
            self._last_step = row.step
        self.names.add(row.name)
        if isinstance(row.cycles, int):
            self.cycles += row.cycles


def check_stages(path, rules: StageRules, top: int = 10) -> dict:
    """Per stage and per selector, what `rules` match in the profile's step rows."""
    path = Path(path)
    everything = _Tally()
    stages: Dict[str, _Tally] = {}
    unmatched: Dict[str, List[int]] = {}  # name: [rows, cycles]
    selectors = {key: _Tally() for key in SELECTORS}
    exchange_names: Dict[str, bool] = {}  # name: does the attention-exchange selector find it
    with Profile(path) as profile:
        for row in step_rows(profile, rules):
            everything.add(row)
            classes = row.classes
            stages.setdefault(classes.stage, _Tally()).add(row)
            if classes.stage == rules.fallback:
                counts = unmatched.setdefault(row.name, [0, 0])
                counts[0] += 1
                counts[1] += row.cycles if isinstance(row.cycles, int) else 0
            if classes.kernel:
                selectors["kernel"].add(row)
            if classes.anchor:
                selectors["anchor"].add(row)
            if row.kind == INPUT_DELIVERED_KIND and classes.input_delivered:
                selectors["input_delivered"].add(row)
            if row.kind == OUTPUT_BEGINS_KIND and classes.output_begins:
                selectors["output_begins"].add(row)
            if row.kind == EXCHANGE_KIND:
                found = exchange_names.get(row.name)
                if found is None:
                    found = bool(rules.attention_exchange.search(row.name))
                    exchange_names[row.name] = found
                if found:
                    selectors["attention_exchange"].add(row)

    labels = []  # stage labels in rules order, then the fallback
    for rule in rules.rules:
        if rule.label not in labels:
            labels.append(rule.label)
    if rules.fallback not in labels:
        labels.append(rules.fallback)
    stage_entries = []
    for label in labels:
        tally = stages.get(label, _Tally())
        patterns = [rule.pattern for rule in rules.rules if rule.label == label]
        stage_entries.append(
            {
                "label": label,
                "fallback": label == rules.fallback,
                "patterns": [pattern.pattern for pattern in patterns],
                "rows": tally.rows,
                "names": len(tally.names),
                "cycles": tally.cycles,
                # Names any of its patterns match, whichever rule took them: more than `names`
                # means earlier rules took some.
                "pattern_names": sum(
                    1 for name in everything.names if any(p.search(name) for p in patterns)
                ),
            }
        )

    ranked = sorted(unmatched.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
    fallback = stages.get(rules.fallback, _Tally())
    return {
        "profile": shown_path(path),
        "rules": {"source": shown_path(rules.source), "sha256": rules.sha256},
        "step_rows": everything.rows,
        "steps": everything.steps,
        "names": len(everything.names),
        "cycles": everything.cycles,
        "stages": stage_entries,
        "unmatched": {
            "label": rules.fallback,
            "rows": fallback.rows,
            "names": len(fallback.names),
            "cycles": fallback.cycles,
            "top": [
                {"name": name, "rows": rows, "cycles": cycles}
                for name, (rows, cycles) in ranked[:top]
            ],
        },
        "selectors": [
            {
                "selector": key,
                "pattern": getattr(rules, key).pattern,
                "tried_on": SELECTOR_NOTES[key][0],
                "rows": selectors[key].rows,
                "steps": selectors[key].steps,
                "names": len(selectors[key].names),
                "found": selectors[key].rows > 0,
            }
            for key in SELECTORS
        ],
    }


# --- text for people ------------------------------------------------------------------


def _count(number: int, noun: str) -> str:
    return "{:,} {}{}".format(number, noun, "" if number == 1 else "s")


def _share(part: int, whole: int) -> str:
    return "{:.1f}%".format(100.0 * part / whole) if whole else "-"


def _table(
    header: List[str], rows: List[List[str]], left: int = 1, last_free: bool = False
) -> List[str]:
    """Columns padded to width: the first `left` columns to the left, the others right;
    `last_free` leaves the last column as it is (a name, however long). Cells are
    measured as `escaping.terminal_text` writes them."""
    header = [terminal_text(cell) for cell in header]
    rows = [[terminal_text(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = []
    for cells in [header] + rows:
        parts = [
            cell.ljust(width) if index < left else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths))
        ]
        if last_free:
            parts[-1] = cells[-1]
        lines.append("  " + "  ".join(parts).rstrip())
    return lines


def stages_text(answer: dict) -> str:
    """The human-readable form of check_stages' answer. Step names, stage labels and
    patterns are the profile's and the rules file's: every line is written by
    `escaping.terminal_text`, so that none reaches the terminal as a control sequence."""
    total = answer["cycles"]
    lines = [
        "{}: {:,} step rows ({:,} steps), {:,} distinct names, {:,} cycles; rules: {}".format(
            answer["profile"],
            answer["step_rows"],
            answer["steps"],
            answer["names"],
            total,
            answer["rules"]["source"],
        )
    ]
    if answer["step_rows"] == 0:
        lines.append("no step rows: a compile-only profile (no execution trace); nothing to match")
    lines.append("")
    lines.append("stages (first matching rule wins):")
    rows = []
    for stage in answer["stages"]:
        label = stage["label"] + (" (fallback)" if stage["fallback"] else "")
        rows.append(
            [
                label,
                "{:,}".format(stage["rows"]),
                "{:,}".format(stage["names"]),
                "{:,}".format(stage["cycles"]),
                _share(stage["cycles"], total),
            ]
        )
    lines.extend(_table(["stage", "rows", "names", "cycles", "share"], rows))

    empty = [s for s in answer["stages"] if s["rows"] == 0 and not s["fallback"]]
    if empty and answer["step_rows"]:
        lines.append("")
        lines.append("stages no step row went to:")
        for stage in empty:
            patterns = ", ".join("'{}'".format(p) for p in stage["patterns"])
            if stage["pattern_names"]:
                why = "matches {}, all taken by earlier rules".format(
                    _count(stage["pattern_names"], "name")
                )
            else:
                why = "matches no step name"
            lines.append("  {!r} ({}): {}".format(stage["label"], patterns, why))

    lines.append("")
    lines.append("selectors:")
    rows = []
    for selector in answer["selectors"]:
        found = (
            "{}, {}, {}".format(
                _count(selector["rows"], "row"),
                _count(selector["steps"], "step"),
                _count(selector["names"], "name"),
            )
            if selector["found"]
            else "FOUND NOTHING"
        )
        rows.append(
            [
                selector["selector"],
                "'{}'".format(selector["pattern"]),
                found,
                "in " + selector["tried_on"],
            ]
        )
    lines.extend(_table(["selector", "pattern", "found", "tried on"], rows, left=4))
    for selector in answer["selectors"]:
        if not selector["found"] and answer["step_rows"]:
            lines.append(
                "  {} found nothing: {}".format(
                    selector["selector"], SELECTOR_NOTES[selector["selector"]][1]
                )
            )

    unmatched = answer["unmatched"]
    lines.append("")
    if not unmatched["rows"]:
        lines.append("unmatched names: none (every step row has a rule's stage)")
    else:
        lines.append(
            "most common unmatched names (stage {!r}: {:,} rows, {:,} names, {} of "
            "cycles){}".format(
                unmatched["label"],
                unmatched["rows"],
                unmatched["names"],
                _share(unmatched["cycles"], total),
                ":" if unmatched["top"] else "",
            )
        )
        rows = [
            ["{:,}".format(n["rows"]), "{:,}".format(n["cycles"]), _quote(n["name"])]
            for n in unmatched["top"]
        ]
        if rows:
            lines.extend(_table(["rows", "cycles", "name"], rows, left=0, last_free=True))
    return "".join(terminal_text(line) + "\n" for line in lines)


def _quote(name: str) -> str:
    return name if name else '""'
