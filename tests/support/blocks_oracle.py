"""A second, deliberately plain reading of blocks-spec.md, for tests/test_blocks.py.

`oracle_blocks(profile, label, rules_path=None)` reads the step rows with one plain SQL
join, reads the rules file itself (TOML), and applies the spec's definitions literally,
body by body, with the whole list of rows in memory: slow and obvious on purpose. It
imports nothing from `extractor`. Statistics are computed exactly (fractions) and only
then turned into floats, so they do not lean on the `statistics` module either.
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


def step_rows(profile) -> list:
    """Every step row as a dict (step, kind, name, cycles), in the spec's order."""
    uri = "file:{}?mode=ro".format(quote(str(Path(profile).resolve()), safe="/"))
    db = sqlite3.connect(uri, uri=True)
    db.text_factory = lambda data: data.decode("utf-8", "replace")
    try:
        programs = dict(db.execute("SELECT id, CAST(name AS TEXT) FROM programs"))
        sets = dict(db.execute("SELECT compute_set, CAST(name AS TEXT) FROM compute_sets"))
        raw = list(db.execute(STEP_ROWS))
    finally:
        db.close()
    rows = []
    for step, kind, cycles, program, compute_set in raw:
        name = sets.get(compute_set) if compute_set is not None else None
        if not name:
            name = programs.get(program) if program is not None else None
        rows.append({"step": step, "kind": kind, "name": name or "", "cycles": cycles})
    return rows


def _stage(name, rules):
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


def oracle_blocks(profile, label: str, rules_path=None) -> dict:
    rules = read_rules(rules_path)
    selectors = rules["selectors"]
    rows = step_rows(profile)

    def is_kernel(row):
        return re.search(selectors["kernel"], row["name"]) is not None

    anchors = sorted(
        {r["step"] for r in rows if is_kernel(r) and re.search(selectors["anchor"], r["name"])}
    )
    outputs = sorted(
        {
            r["step"]
            for r in rows
            if r["kind"] == "StreamCopyBegin" and re.search(selectors["output_begins"], r["name"])
        }
    )
    inputs = sorted(
        {
            r["step"]
            for r in rows
            if r["kind"] == "StreamCopyEnd" and re.search(selectors["input_delivered"], r["name"])
        }
    )
    bodies = []
    for k, begin in enumerate(anchors):
        ends = [anchors[k + 1]] if k + 1 < len(anchors) else []
        ends += [o for o in outputs if o > begin][:1]
        end = min(ends) if ends else None
        run = len([i for i in inputs if i < begin])
        block = len([b for b in bodies if b["run"] == run])
        kernel_rows = [
            r
            for r in rows
            if is_kernel(r) and r["step"] >= begin and (end is None or r["step"] < end)
        ]
        cycles = {}
        for r in kernel_rows:
            stage = _stage(r["name"], rules)
            cycles[stage] = cycles.get(stage, 0) + (r["cycles"] or 0)
        ordered = {lab: cycles[lab] for lab in rules["labels"] if lab in cycles}
        bodies.append(
            {
                "run": run,
                "block": block,
                "first_step": begin,
                "end_step": end,
                "kernels": len(kernel_rows),
                "cycles": ordered,
                "total": sum(r["cycles"] or 0 for r in kernel_rows),
            }
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
