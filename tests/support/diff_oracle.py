"""A second, deliberately plain reading of docs/formats/diff.md, for the tests of `extract diff`.

`diff_oracle(base, candidate, ...)` reads every step row of each profile with one plain
SQL join, reads `pva-double.json` beside each profile as the pva stand-in would serve
it, reads the rules file itself (TOML, through blocks_oracle.read_rules), cuts the
bodies as docs/formats/blocks.md says (blocks_oracle.cut_bodies, which blocks_oracle's own
bodies come from), groups a body's rows into units, aligns the two bodies' keys with
difflib exactly as the spec words it, and builds the JSON document as a dict with its
keys in the spec's order. Everything is held in lists and recomputed from
scratch: slow and obvious on purpose. It imports nothing from `extractor`.

`diff_csv(result)` is the spec's CSV of such a result; `check_accounting(result)` asserts
the spec's exact accounting (and that the counts agree with the entries).

Readings of the spec made here (where its words leave a choice):

- A body is a body of docs/formats/blocks.md (cut at the next anchor or at the first
  output-begins step after its anchor); the default body is the first of them, body 0
  (`--block R:K` numbers bodies "as blocks.json numbers them"; body 0 is the summary's
  first body cut at the first output-begins step).
- `--block R:K` alone selects R:K in both profiles; `--candidate-block` replaces it for
  the candidate only (without `--block`, the base keeps its first body).
- Masking is docs/formats/budget.md's, on the whole name, with ASCII digits; the `(2)`, `(3)`
  suffixes for repeated masked names are the budget's exchanges' and do not apply to
  keys (a body repeats keys, and the alignment is what tells them apart).
- pva facts are those of the summary's kernel field, for every unit: a step whose
  program pva does not list, or whose compute set pva does not have, is an error
  (`PvaMissing`), as it is for a kernel.
"""

import csv
import difflib
import io
import json
import re
from pathlib import Path

from support.blocks_oracle import (
    connect,
    cut_bodies,
    marker_steps,
    read_rules,
    stage_of,
    step_names,
)

STEP_ROWS = """
SELECT s.id, CAST(s.type AS TEXT), s.program, s.compute_set, i.cycles, i.active_tiles
FROM steps AS s JOIN steps_by_ipu AS i ON i.step_id = s.id
ORDER BY s.id, i.rowid
"""
CSV_HEADER = [
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
]
COMPARED = ("cycles", "active_tiles", "vertices", "max_exchange_code_bytes")
PVA_FIELDS = ("vertices", "max_exchange_code_bytes")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class NoBody(Exception):
    """The body asked for does not exist: `extract diff` must exit 2 (a usage error)."""


class PvaMissing(Exception):
    """pva has no facts for a step's program or compute set."""


# ---- masked names (docs/formats/budget.md, "Metric names") ---------------------------------------

_PREFIX = re.compile(r"(\A|[{,/])(cs|copy)[0-9]+_")
_DIGIT_PART = re.compile(r"/[0-9]+(?=[/,{}]|\Z)")


def mask(name: str) -> str:
    """`cs<digits>_` / `copy<digits>_` at the start or after `{`, `,`, `/` become `cs#_` /
    `copy#_`; a path part of digits only (after `/`, before `/ , { }` or the end) `#`."""
    name = _PREFIX.sub(lambda m: m.group(1) + m.group(2) + "#_", name)
    return _DIGIT_PART.sub("/#", name)


# ---- reading a profile ----------------------------------------------------------------


def read_profile(profile, rules: dict, use_pva: bool) -> dict:
    """Every step row (dicts: step, kind, name, stage, cycles, active_tiles, vertices,
    max_exchange_code_bytes), the bodies (docs/formats/blocks.md) and the facts `differences`
    compares."""
    db = connect(profile)
    try:
        name_of = step_names(db)
        raw = list(db.execute(STEP_ROWS))
        tiles = db.execute("SELECT count(*) FROM memory_by_tile").fetchone()[0]
    finally:
        db.close()
    pva_programs, pva_sets = {}, {}
    if use_pva:
        double = json.loads((Path(profile).parent / "pva-double.json").read_text("utf-8"))
        pva_programs = {p["id"]: p for p in double["programs"]}
        pva_sets = {c["id"]: c for c in double["computeSets"]}

    rows = []
    for step, kind, program, compute_set, cycles, active_tiles in raw:
        name = name_of(program, compute_set)
        vertices = code = None
        if use_pva:
            code = 0
            if program is not None:
                if program not in pva_programs:
                    raise PvaMissing("step {}: program {} unknown to pva".format(step, program))
                entry = pva_programs[program]
                code_bytes = entry.get("codeBytesByTile", [])
                if entry["type"] == "DoExchange" and code_bytes:
                    code = max(code_bytes)
            vertices = ""
            if compute_set is not None:
                if compute_set not in pva_sets:
                    raise PvaMissing("step {}: compute set unknown to pva".format(step))
                vertices = "; ".join(pva_sets[compute_set]["vertices"])
        rows.append(
            {
                "step": step,
                "kind": kind,
                "name": name,
                "stage": stage_of(name, rules),
                "cycles": cycles,
                "active_tiles": active_tiles,
                "vertices": vertices,
                "max_exchange_code_bytes": code,
            }
        )

    bodies = cut_bodies(rows, rules["selectors"])
    return {
        "rows": rows,
        "bodies": bodies,
        "tiles": tiles,
        "inferences": len(marker_steps(rows, rules["selectors"])["inputs"]),
        "anchors": len(bodies),  # a body per anchor
        "pva": bool(use_pva),
    }


def _ranges(numbers) -> str:
    """1, 2, 3, 5 -> "1-3, 5"."""
    parts = []
    for n in sorted(set(numbers)):
        if parts and parts[-1][1] == n - 1:
            parts[-1][1] = n
        else:
            parts.append([n, n])
    return ", ".join(str(a) if a == b else "{}-{}".format(a, b) for a, b in parts)


def choose_body(profile, bodies, selected):
    """The body `selected` ((run, block), or None for the first) names, else NoBody."""
    if not bodies:
        raise NoBody("{}: the profile has no bodies at all".format(profile))
    if selected is None:
        return bodies[0]
    run, block = selected
    runs = [b["run"] for b in bodies]
    if run not in runs:
        raise NoBody("{}: no run {}: the profile has runs {}".format(profile, run, _ranges(runs)))
    for body in bodies:
        if (body["run"], body["block"]) == (run, block):
            return body
    blocks = [b["block"] for b in bodies if b["run"] == run]
    raise NoBody("{}: run {} has blocks {}".format(profile, run, _ranges(blocks)))


def units(rows, body) -> list:
    """The body's units: one per distinct step with first_step <= step < end_step, in
    step order, summing the step's rows' cycles and active_tiles."""
    found = []
    for row in rows:
        if row["step"] < body["first_step"]:
            continue
        if body["end_step"] is not None and row["step"] >= body["end_step"]:
            continue
        if found and found[-1]["step"] == row["step"]:
            found[-1]["cycles"] += row["cycles"]
            found[-1]["active_tiles"] += row["active_tiles"]
        else:
            found.append(dict(row))
    return found


def _unit_object(unit):
    if unit is None:
        return None
    keys = ("step", "name", "cycles", "active_tiles", "vertices", "max_exchange_code_bytes")
    return {key: unit[key] for key in keys}


def _entry(status, base, candidate, fields):
    shown = base if base is not None else candidate
    return {
        "status": status,
        "kind": shown["kind"],
        "stage": shown["stage"],
        "key": mask(shown["name"]),
        "change": (candidate["cycles"] if candidate else 0) - (base["cycles"] if base else 0),
        "fields": fields,
        "base": _unit_object(base),
        "candidate": _unit_object(candidate),
    }


def align(base_units, candidate_units, pva_both: bool) -> list:
    """Every entry (same ones included), in alignment order."""
    base_keys = [(u["kind"], mask(u["name"])) for u in base_units]
    candidate_keys = [(u["kind"], mask(u["name"])) for u in candidate_units]
    matcher = difflib.SequenceMatcher(None, base_keys, candidate_keys, autojunk=False)
    compared = COMPARED if pva_both else COMPARED[:2]
    entries = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for t in range(i2 - i1):
                b, c = base_units[i1 + t], candidate_units[j1 + t]
                fields = [f for f in compared if b[f] != c[f]]
                entries.append(_entry("changed" if fields else "same", b, c, fields))
        if tag in ("replace", "delete"):
            for b in base_units[i1:i2]:
                entries.append(_entry("removed", b, None, []))
        if tag in ("replace", "insert"):
            for c in candidate_units[j1:j2]:
                entries.append(_entry("added", None, c, []))
    return entries


# ---- the document ---------------------------------------------------------------------


def diff_oracle(
    base,
    candidate,
    *,
    block=None,
    candidate_block=None,
    rules=None,
    use_pva=True,
    base_label=None,
    candidate_label=None,
) -> dict:
    """The JSON document docs/formats/diff.md gives for `extract diff BASE CANDIDATE`.

    `block`, `candidate_block`: (run, block) tuples, or None (`--block`,
    `--candidate-block`); `rules`: a rules TOML file, or None for stage_rules.toml;
    `use_pva`: False for `--no-pva` (or a pair (base, candidate) of such flags);
    labels: the `profile` values (default: str() of the paths). Raises NoBody for a body
    that does not exist."""
    rule_set = read_rules(rules)
    pva_flags = tuple(use_pva) if isinstance(use_pva, (tuple, list)) else (use_pva, use_pva)
    labels = (
        str(base) if base_label is None else base_label,
        str(candidate) if candidate_label is None else candidate_label,
    )
    selections = (block, candidate_block if candidate_block is not None else block)
    sides = []
    for profile, label, selected, flag in zip((base, candidate), labels, selections, pva_flags):
        data = read_profile(profile, rule_set, flag)
        body = choose_body(profile, data["bodies"], selected)
        sides.append((label, data, body, units(data["rows"], body)))
    (_, base_data, _, base_units), (_, candidate_data, _, candidate_units) = sides

    entries = align(base_units, candidate_units, all(pva_flags))

    def described(label, body, body_units):
        return {
            "profile": label,
            "run": body["run"],
            "block": body["block"],
            "first_step": body["first_step"],
            "end_step": body["end_step"],
            "units": len(body_units),
            "cycles": sum(u["cycles"] for u in body_units),
        }

    differences = []
    for fact, key in (("tiles", "tiles"), ("inferences", "inferences"), ("bodies", "anchors")):
        if base_data[key] != candidate_data[key]:
            differences.append(
                {"fact": fact, "base": base_data[key], "candidate": candidate_data[key]}
            )
    if base_data["pva"] != candidate_data["pva"]:
        differences.append(
            {"fact": "pva", "base": base_data["pva"], "candidate": candidate_data["pva"]}
        )

    kinds = []
    for u in base_units + candidate_units:
        if u["kind"] not in kinds:
            kinds.append(u["kind"])

    def cycles_of(body_units, stage=None, kind=None):
        return sum(
            u["cycles"]
            for u in body_units
            if (stage is None or u["stage"] == stage) and (kind is None or u["kind"] == kind)
        )

    by_kind = []
    for kind in kinds:
        b, c = cycles_of(base_units, kind=kind), cycles_of(candidate_units, kind=kind)
        by_kind.append({"kind": kind, "base": b, "candidate": c, "change": c - b})

    present = {u["stage"] for u in base_units + candidate_units}
    by_stage = []
    for stage in rule_set["labels"]:
        if stage not in present:
            continue
        stage_kinds = {}
        for kind in kinds:
            if any(u["stage"] == stage and u["kind"] == kind for u in base_units + candidate_units):
                stage_kinds[kind] = {
                    "base": cycles_of(base_units, stage, kind),
                    "candidate": cycles_of(candidate_units, stage, kind),
                }
        b, c = cycles_of(base_units, stage), cycles_of(candidate_units, stage)
        by_stage.append(
            {"stage": stage, "base": b, "candidate": c, "change": c - b, "kinds": stage_kinds}
        )

    counts = {status: 0 for status in ("same", "changed", "added", "removed")}
    for entry in entries:
        counts[entry["status"]] += 1
    steps = [e for e in entries if e["status"] != "same"]
    steps.sort(key=lambda e: -abs(e["change"]))  # stable: ties stay in alignment order

    base_doc = described(labels[0], sides[0][2], base_units)
    candidate_doc = described(labels[1], sides[1][2], candidate_units)
    return {
        "base": base_doc,
        "candidate": candidate_doc,
        "differences": differences,
        "change": candidate_doc["cycles"] - base_doc["cycles"],
        "by_kind": by_kind,
        "by_stage": by_stage,
        "counts": counts,
        "steps": steps,
    }


def _text_cell(text):
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def diff_csv(result: dict) -> str:
    """The text of `--format csv`: RFC 4180 (CRLF records, QUOTE_MINIMAL) as the step
    tables, text cells from outside guarded against spreadsheet formulas as there."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    for entry in result["steps"]:
        base, candidate = entry["base"], entry["candidate"]
        writer.writerow(
            [
                entry["status"],
                _text_cell(entry["stage"]),
                _text_cell(entry["kind"]),
                _text_cell(entry["key"]),
                "" if base is None else base["step"],
                "" if candidate is None else candidate["step"],
                "" if base is None else base["cycles"],
                "" if candidate is None else candidate["cycles"],
                entry["change"],
                ";".join(entry["fields"]),
            ]
        )
    return out.getvalue()


def check_accounting(result: dict) -> None:
    """The spec's exact accounting, and the counts against the entries."""
    change = result["change"]
    assert change == result["candidate"]["cycles"] - result["base"]["cycles"]
    assert change == sum(e["change"] for e in result["steps"])
    assert change == sum(k["change"] for k in result["by_kind"])
    assert change == sum(s["change"] for s in result["by_stage"])
    for side in ("base", "candidate"):
        assert result[side]["cycles"] == sum(k[side] for k in result["by_kind"])
        assert result[side]["cycles"] == sum(s[side] for s in result["by_stage"])
    for kind in result["by_kind"]:
        assert kind["change"] == kind["candidate"] - kind["base"]
    kind_order = [k["kind"] for k in result["by_kind"]]
    for stage in result["by_stage"]:
        assert stage["change"] == stage["candidate"] - stage["base"]
        for side in ("base", "candidate"):
            assert stage[side] == sum(k[side] for k in stage["kinds"].values()), stage
        listed = list(stage["kinds"])
        assert listed == [k for k in kind_order if k in listed], stage
    counts = result["counts"]
    assert list(counts) == ["same", "changed", "added", "removed"]
    for status in ("changed", "added", "removed"):
        assert counts[status] == sum(1 for e in result["steps"] if e["status"] == status)
    assert all(e["status"] != "same" for e in result["steps"])
    paired = counts["same"] + counts["changed"]
    assert result["base"]["units"] == paired + counts["removed"]
    assert result["candidate"]["units"] == paired + counts["added"]
    changes = [abs(e["change"]) for e in result["steps"]]
    assert changes == sorted(changes, reverse=True)
    for entry in result["steps"]:
        base, candidate = entry["base"], entry["candidate"]
        assert entry["change"] == (candidate["cycles"] if candidate else 0) - (
            base["cycles"] if base else 0
        )
        assert (entry["fields"] != []) == (entry["status"] == "changed")
        assert (base is None) == (entry["status"] == "added")
        assert (candidate is None) == (entry["status"] == "removed")
