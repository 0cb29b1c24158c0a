"""A second, deliberately plain reading of docs/formats/blocks.md, for tests/test_blocks.py.

`oracle_blocks(profile, label, rules_path=None)` reads the step rows with one plain SQL
join, reads the rules file itself (TOML), and applies the spec's definitions literally,
body by body, with the whole list of rows in memory: slow and obvious on purpose. It
imports nothing from `extractor`. Statistics are computed exactly (fractions) and only
then turned into floats, so they do not lean on the `statistics` module either.

The diff and trace oracles read their rows and cut their bodies with the same helpers:
connect, step_names, stage_of, marker_steps and cut_bodies (one reading of the spec's
definitions, checked by hand through tests/expected_blocks).
"""

import math
import re
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path
from urllib.parse import quote

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

DEFAULT_RULES = Path(__file__).resolve().parents[2] / "stage_rules.toml"

STEP_ROWS = """
SELECT s.id, CAST(s.type AS TEXT), i.cycles, s.program, s.compute_set
FROM steps AS s JOIN steps_by_ipu AS i ON i.step_id = s.id
ORDER BY s.id, i.rowid
"""


def read_rules(path=None) -> dict:
    data = tomllib.loads(Path(path or DEFAULT_RULES).read_text(encoding="utf-8-sig"))
    labels = []
    for label in [rule["label"] for rule in data["rules"]] + [data["fallback"]]:
        if label not in labels:
            labels.append(label)
    return {
        "rules": [(rule["pattern"], rule["label"]) for rule in data["rules"]],
        "fallback": data["fallback"],
        "selectors": data["selectors"],
        "labels": labels,
    }


def connect(profile):
    """The profile opened read-only, its text decoded as the spec says (bad UTF-8
    replaced)."""
    uri = "file:{}?mode=ro".format(quote(str(Path(profile).resolve()), safe="/"))
    db = sqlite3.connect(uri, uri=True)
    db.text_factory = lambda data: data.decode("utf-8", "replace")
    return db


def step_names(db):
    """name_of(program, compute_set): a step's name as the spec gives it (its compute
    set's name, else its program's, else ""), from the profile's tables."""
    programs = dict(db.execute("SELECT id, CAST(name AS TEXT) FROM programs"))
    sets = dict(db.execute("SELECT compute_set, CAST(name AS TEXT) FROM compute_sets"))

    def name_of(program, compute_set):
        name = sets.get(compute_set) if compute_set is not None else None
        if not name:
            name = programs.get(program) if program is not None else None
        return name or ""

    return name_of


def step_rows(profile) -> list:
    """Every step row as a dict (step, kind, name, cycles), in the spec's order."""
    db = connect(profile)
    try:
        name_of = step_names(db)
        raw = list(db.execute(STEP_ROWS))
    finally:
        db.close()
    return [
        {"step": step, "kind": kind, "name": name_of(program, compute_set), "cycles": cycles}
        for step, kind, cycles, program, compute_set in raw
    ]


def stage_of(name, rules):
    """The label of the first rule whose pattern the name matches, else the fallback."""
    for pattern, label in rules["rules"]:
        if re.search(pattern, name):
            return label
    return rules["fallback"]


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _stats(entries):
    """entries: [(value, run, block)] in body order."""
    values = [value for value, _, _ in entries]
    n = len(values)
    mean = Fraction(sum(values), n)
    variance = sum((Fraction(v) - mean) ** 2 for v in values) / n
    low, high = min(values), max(values)
    return {
        "blocks": n,
        "min": low,
        "median": _median(values),
        "mean": sum(values) / n,
        "max": high,
        "stdev": math.sqrt(variance),
        "min_at": next([r, b] for v, r, b in entries if v == low),
        "max_at": next([r, b] for v, r, b in entries if v == high),
    }


def is_kernel(row, selectors) -> bool:
    return re.search(selectors["kernel"], row["name"]) is not None


def marker_steps(rows, selectors) -> dict:
    """The steps the selectors mark, each a sorted list of distinct step ids: "anchors"
    (kernel steps the anchor selector matches), "outputs" (StreamCopyBegin steps
    output_begins matches) and "inputs" (StreamCopyEnd steps input_delivered matches)."""

    def steps(test, selector):
        return sorted({r["step"] for r in rows if test(r) and re.search(selector, r["name"])})

    return {
        "anchors": steps(lambda r: is_kernel(r, selectors), selectors["anchor"]),
        "outputs": steps(lambda r: r["kind"] == "StreamCopyBegin", selectors["output_begins"]),
        "inputs": steps(lambda r: r["kind"] == "StreamCopyEnd", selectors["input_delivered"]),
    }


def cut_bodies(rows, selectors) -> list:
    """The spec's bodies, in order, as dicts (run, block, first_step, end_step): one per
    anchor, cut at the next anchor or at the first output-begins step after it (end_step
    None: to the end of the trace); the run counts the input-delivered steps before it,
    the block the bodies of that run before it."""
    marks = marker_steps(rows, selectors)
    anchors = marks["anchors"]
    bodies = []
    for k, first in enumerate(anchors):
        stops = anchors[k + 1 : k + 2] + [o for o in marks["outputs"] if o > first][:1]
        end = min(stops) if stops else None
        run = len([i for i in marks["inputs"] if i < first])
        block = len([b for b in bodies if b["run"] == run])
        bodies.append({"run": run, "block": block, "first_step": first, "end_step": end})
    return bodies


def oracle_blocks(profile, label: str, rules_path=None) -> dict:
    rules = read_rules(rules_path)
    selectors = rules["selectors"]
    rows = step_rows(profile)
    bodies = []
    for body in cut_bodies(rows, selectors):
        begin, end = body["first_step"], body["end_step"]
        kernel_rows = [
            r
            for r in rows
            if is_kernel(r, selectors) and r["step"] >= begin and (end is None or r["step"] < end)
        ]
        cycles = {}
        for r in kernel_rows:
            stage = stage_of(r["name"], rules)
            cycles[stage] = cycles.get(stage, 0) + (r["cycles"] or 0)
        ordered = {lab: cycles[lab] for lab in rules["labels"] if lab in cycles}
        bodies.append(
            dict(
                body,
                kernels=len(kernel_rows),
                cycles=ordered,
                total=sum(r["cycles"] or 0 for r in kernel_rows),
            )
        )
    stats = {}
    for lab in rules["labels"]:
        entries = [(b["cycles"][lab], b["run"], b["block"]) for b in bodies if lab in b["cycles"]]
        if entries:
            stats[lab] = _stats(entries)
    total = _stats([(b["total"], b["run"], b["block"]) for b in bodies]) if bodies else None
    return {
        "profile": label,
        "stages": rules["labels"],
        "blocks": bodies,
        "stats": stats,
        "total": total,
    }


def same(got, want, where="") -> None:
    """Assert `got` equals `want` by value: keys in the same order, numbers alike
    (4 == 4.0), floats within a relative 1e-9 (the spec's comparison)."""
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        assert list(got) == list(want), "{}: keys {} != {}".format(where, list(got), list(want))
        for key in want:
            same(got[key], want[key], "{}.{}".format(where, key))
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), "{}: {!r} != {!r}".format(
            where, got, want
        )
        for index, (g, w) in enumerate(zip(got, want)):
            same(g, w, "{}[{}]".format(where, index))
    elif isinstance(want, float) or isinstance(got, float):
        assert isinstance(got, (int, float)) and not isinstance(got, bool), where
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), "{}: {!r} != {!r}".format(
            where, got, want
        )
    else:
        assert type(got) is type(want) and got == want, "{}: {!r} != {!r}".format(where, got, want)
