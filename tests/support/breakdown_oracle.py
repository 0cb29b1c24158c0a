"""A second, deliberately plain reading of docs/formats/breakdown.md, for the breakdown's
tests (tests/test_breakdown_oracle.py, tests/test_breakdown_property.py).

`oracle_breakdown(profile, label, ...)` lets SQLite do the sums: one view of the step
rows (each row's IPU its place among its step's rows, `row_number()` over the step's
rows in stored order), then a GROUP BY per table, with the spec's keys as SQL functions
written here (the op: masked and folded part by part, the layer, the stage). It imports
nothing from `extractor`. `oracle_compared(base, candidate)` joins two of its results
as the spec says. `check_invariants` holds a result (one profile or two) to the sums
that must add up.
"""

import json
import re
from pathlib import Path

from support.blocks_oracle import connect, read_rules, stage_of, step_names

_ROWS = """
CREATE TEMP VIEW r AS
SELECT s.id AS step,
       coalesce(CAST(s.type AS TEXT), '') AS kind,
       coalesce(i.cycles, 0) AS cycles,
       step_name(s.program, s.compute_set) AS name,
       s.compute_set AS cs,
       coalesce(i.active_tiles, 0) AS tiles,
       i.cycles_base + i.active_cycles_from_min AS start,
       i.cycles_base + i.active_cycles_to_max AS finish,
       row_number() OVER (PARTITION BY s.id ORDER BY i.rowid) - 1 AS ipu
FROM steps AS s JOIN steps_by_ipu AS i ON i.step_id = s.id
"""

_DELIMITERS = re.compile(r"([/,{}])")
_DIGITS = re.compile(r"[0-9]+")
_PREFIX = re.compile(r"(cs|copy)[0-9]+_")
_NUMBERED_END = re.compile(r"\.[0-9]+")


def op_of(name):
    """The spec's op, read part by part: the name cut at `/ , { }`; a part after `{`,
    `,` or `/` (or the first) that starts `cs<digits>_` / `copy<digits>_` gets `#` for
    the digits; a part after `/` made of digits only is `#`; a part ending `.<digits>`
    ends `.*` instead."""
    if name == "":
        return "(unnamed)"
    tokens = _DELIMITERS.split(name)  # text, delimiter, text, ...
    out = []
    for at, part in enumerate(tokens):
        if at % 2:
            out.append(part)
            continue
        before = tokens[at - 1] if at else ""
        found = _PREFIX.match(part) if before in ("", "{", ",", "/") else None
        if found:
            part = found.group(1) + "#_" + part[found.end() :]  # noqa: PLW2901
        if before == "/" and _DIGITS.fullmatch(part):
            part = "#"  # noqa: PLW2901
        ends = [m for m in _NUMBERED_END.finditer(part) if m.end() == len(part)]
        if ends:
            part = part[: ends[0].start()] + ".*"  # noqa: PLW2901
        out.append(part)
    return "".join(out)


def layer_of(op, depth):
    """The first `/`-path of the op, cut to `depth` parts; `(no layer)` without `/`."""
    if "/" not in op:
        return "(no layer)"
    path = op[op.index("/") :]
    for end, char in enumerate(path):
        if char in ",{}":
            path = path[:end]
            break
    return "/" + "/".join(path.split("/")[1 : depth + 1])


def folded_frames(op):
    if "/" not in op:
        return ["(no layer)"]
    return layer_of(op, 10**6).split("/")[1:]


def tiles_per_ipu(profile):
    """The pva stand-in's tiles per IPU (its target's tilesPerIpu), else None."""
    double = Path(profile).parent / "pva-double.json"
    if not double.is_file():
        return None
    target = json.loads(double.read_text(encoding="utf-8")).get("target") or {}
    tiles = target.get("tilesPerIpu")
    return tiles if isinstance(tiles, int) and tiles > 0 else None


def with_tiles_per_ipu(profile, tiles):
    """Give the pva stand-in of the profile (a copy) a target with `tiles` per IPU."""
    double = Path(profile).parent / "pva-double.json"
    facts = json.loads(double.read_text(encoding="utf-8"))
    facts.setdefault("target", {})["tilesPerIpu"] = tiles
    double.write_text(json.dumps(facts), encoding="utf-8")


def _windows(db, selectors, runs, every):
    if every:
        return [(None, None, None)]
    inputs = [
        step
        for (step,) in db.execute(
            "SELECT DISTINCT step FROM r WHERE kind = 'StreamCopyEnd' AND matches(?, name) "
            "ORDER BY step",
            (selectors["input_delivered"],),
        )
    ]
    outputs = [
        step
        for (step,) in db.execute(
            "SELECT DISTINCT step FROM r WHERE kind = 'StreamCopyBegin' AND matches(?, name) "
            "ORDER BY step",
            (selectors["output_begins"],),
        )
    ]
    if not inputs:
        return [(None, None, None)]
    found = []
    for run in runs or [1]:
        first = inputs[run - 1]
        after = [step for step in outputs if step > first]
        found.append((run, first, after[0] if after else None))
    return found


def oracle_breakdown(profile, label, runs=(), every=False, depth=5, tiles=None, rules=None):
    """The breakdown.json the spec gives for `profile` (shown as `label`); `tiles`: the
    tiles per IPU pva gives (None: without pva)."""
    rules = rules or read_rules()
    db = connect(profile)
    try:
        db.create_function("step_name", 2, step_names(db))
        db.create_function("op_of", 1, op_of)
        db.create_function("layer_of", 2, layer_of)
        db.create_function("stage_of", 1, lambda name: stage_of(name, rules))
        db.create_function("matches", 2, lambda pattern, text: re.search(pattern, text) is not None)
        db.execute(_ROWS)
        windows = []
        for run, first, last in _windows(db, rules["selectors"], runs, every):
            where, values = "1", []
            if first is not None:
                where, values = "step >= ?", [first]
                if last is not None:
                    where, values = "step BETWEEN ? AND ?", [first, last]
            windows.append(_window(db, run, where, values, rules, depth, tiles))
        return {"profile": label, "windows": windows}
    finally:
        db.close()


def _window(db, run, where, values, rules, depth, tiles):
    def query(sql, *more):
        return list(db.execute(sql.format(where=where), values + list(more)))

    ((count, low, high),) = query("SELECT count(*), min(step), max(step) FROM r WHERE {where}")
    ipus = []
    for ipu, rows, cycles, span in query(
        "SELECT ipu, count(*), sum(cycles), max(finish) - min(start) FROM r WHERE {where} "
        "GROUP BY ipu ORDER BY ipu"
    ):

        def share(part, total=cycles):
            return part / total if total else 0.0

        on = "({where}) AND ipu = ?"
        kinds = [
            {"kind": kind, "rows": n, "cycles": c, "share": share(c)}
            for kind, n, c in query(
                "SELECT kind, count(*), sum(cycles) AS c FROM r WHERE " + on + " GROUP BY kind "
                "ORDER BY c DESC, kind",
                ipu,
            )
        ]
        by_stage = {}
        for stage, kind, c in query(
            "SELECT stage_of(name), kind, sum(cycles) FROM r WHERE " + on + " GROUP BY 1, 2", ipu
        ):
            by_stage.setdefault(stage, {})[kind] = c
        stages = [
            {
                "stage": stage,
                "cycles": sum(by_stage[stage].values()),
                "share": share(sum(by_stage[stage].values())),
                "kinds": dict(sorted(by_stage[stage].items())),
            }
            for stage in rules["labels"]
            if stage in by_stage
        ]
        first_stage = {}
        for op, kind, stage in query(
            "SELECT op_of(name), kind, stage_of(name) FROM r WHERE " + on + " ORDER BY step",
            ipu,
        ):
            first_stage.setdefault((op, kind), stage)
        ops = [
            {
                "op": op,
                "kind": kind,
                "stage": first_stage[op, kind],
                "executions": n,
                "cycles": c,
                "share": share(c),
                "mean": c / n,
                "min": lo,
                "max": hi,
            }
            for op, kind, n, c, lo, hi in query(
                "SELECT op_of(name) AS op, kind, count(*), sum(cycles) AS c, min(cycles), "
                "max(cycles) FROM r WHERE " + on + " GROUP BY op, kind ORDER BY c DESC, op, kind",
                ipu,
            )
        ]
        by_layer = {}
        for layer, kind, c in _layer_rows(db, where, values, depth, ipu):
            by_layer.setdefault(layer, {})[kind] = c
        layers = [
            {
                "layer": layer,
                "cycles": sum(kinds_of.values()),
                "share": share(sum(kinds_of.values())),
                "kinds": dict(sorted(kinds_of.items())),
            }
            for layer, kinds_of in sorted(
                by_layer.items(), key=lambda i: (-sum(i[1].values()), i[0])
            )
        ]
        ((weighted, ote),) = query(
            "SELECT sum(cycles * tiles), sum(cycles) FROM r WHERE "
            + on
            + " AND kind = 'OnTileExecute'",
            ipu,
        )
        repeated = query(
            "SELECT min(cycles) = max(cycles) FROM r WHERE " + on + " AND kind = "
            "'OnTileExecute' AND cs IS NOT NULL GROUP BY cs HAVING count(*) >= 2",
            ipu,
        )
        ipus.append(
            {
                "ipu": ipu,
                "rows": rows,
                "cycles": cycles,
                "span": span,
                "kinds": kinds,
                "stages": stages,
                "ops": ops,
                "layers": layers,
                "tile_balance": weighted / (ote * tiles) if tiles and ote else None,
                "repeats": {
                    "compute_sets": len(repeated),
                    "identical": sum(1 for (same,) in repeated if same),
                },
            }
        )
    return {"run": run, "first_step": low, "last_step": high, "rows": count, "ipus": ipus}


def _layer_rows(db, where, values, depth, ipu):
    return list(
        db.execute(
            "SELECT layer_of(op_of(name), ?), kind, sum(cycles) FROM r WHERE ({}) AND ipu = ? "
            "GROUP BY 1, 2".format(where),
            [depth] + values + [ipu],
        )
    )


# ---- two profiles --------------------------------------------------------------------

KEYS = {"kinds": ("kind",), "stages": ("stage",), "ops": ("op", "kind", "stage"),
        "layers": ("layer",)}  # fmt: skip


def _joined(table, old_rows, new_rows):
    match = ("op", "kind") if table == "ops" else KEYS[table]
    old = {tuple(r[k] for k in match): r for r in old_rows}
    new = {tuple(r[k] for k in match): r for r in new_rows}
    rows = []
    for key in set(old) | set(new):
        a, b = old.get(key), new.get(key)
        shown = a or b
        row = {k: shown[k] for k in KEYS[table]}
        if a is None:
            row["status"] = "added"
        elif b is None:
            row["status"] = "removed"
        else:
            row["status"] = "same" if a["cycles"] == b["cycles"] else "changed"
        row["base"] = a["cycles"] if a else 0
        row["candidate"] = b["cycles"] if b else 0
        row["change"] = row["candidate"] - row["base"]
        rows.append((key, row))
    rows.sort(key=lambda item: (-abs(item[1]["change"]), item[0]))
    return [row for _, row in rows]


def oracle_compared(base, candidate):
    windows = []
    for a, b in zip(base["windows"], candidate["windows"]):
        old = {i["ipu"]: i for i in a["ipus"]}
        new = {i["ipu"]: i for i in b["ipus"]}
        ipus = []
        for number in sorted(set(old) | set(new)):
            x, y = old.get(number), new.get(number)
            entry = {
                "ipu": number,
                "base": x["cycles"] if x else 0,
                "candidate": y["cycles"] if y else 0,
            }
            entry["change"] = entry["candidate"] - entry["base"]
            for table in KEYS:
                entry[table] = _joined(table, x[table] if x else [], y[table] if y else [])
            ipus.append(entry)
        sides = [{k: w[k] for k in ("run", "first_step", "last_step", "rows")} for w in (a, b)]
        windows.append({"base": sides[0], "candidate": sides[1], "ipus": ipus})
    return {"base": base["profile"], "candidate": candidate["profile"], "windows": windows}


def check_invariants(result):
    """Each table adds up to the IPU's all cycles (one profile), or its changes to the
    IPU's change (two); and the IPUs to the window's rows (one profile)."""
    for window in result["windows"]:
        if "profile" in result:
            assert sum(ipu["rows"] for ipu in window["ipus"]) == window["rows"]
        for ipu in window["ipus"]:
            whole = ipu["cycles"] if "profile" in result else ipu["change"]
            field = "cycles" if "profile" in result else "change"
            for table in KEYS:
                assert sum(row[field] for row in ipu[table]) == whole, (table, ipu["ipu"])
            if "profile" in result:
                assert sum(k["rows"] for k in ipu["kinds"]) == ipu["rows"]
                assert sum(o["executions"] for o in ipu["ops"]) == ipu["rows"]
                for stage in ipu["stages"] + ipu["layers"]:
                    assert sum(stage["kinds"].values()) == stage["cycles"]
