"""A second, deliberately plain reading of docs/formats/summary.md, for the bad-input tests.

`oracle_summary(profile, label)` reads the seven tables into Python lists with SQL no
cleverer than `SELECT` (plus `CAST(... AS TEXT)` for names, the documented way names of
another storage class are read), reads `pva-double.json` beside the profile as the pva
stand-in would serve it, and applies the spec's definitions literally, row by row. It is
slow and obvious on purpose: it shares no code with `extractor`, so the fuzz tests can
hold the extractor's output against it for profiles nobody worked out by hand.

Where the data cannot mean what the spec needs, it raises `Refused` instead: the
extractor must then exit 1 with a one-line error. These are the decisions of
docs/errors.md, restated independently:

- a required table or column missing; a repeated programs.id, compute_sets.compute_set
  or steps.id;
- a steps.id that is not a whole number, or a start/end ingredient (any steps_by_ipu
  row) that is text or a blob (NULL is allowed: NULL ingredients give a NULL start or
  end, as in SQL); start and end are summed as SQLite sums them (beyond 64 bits: REAL);
- a value reaching the summary (a kernel's cycles, active_tiles, start, end; a device
  span) that is not a whole number (a REAL, e.g. beyond 2**63) -- NULL gives null;
- an exchange-code size (of a counted row) or a memory_by_tile total that is not a
  whole number; a per-tile exchange-code sum beyond 64 bits;
- a kernel whose program pva does not know, or whose compute set it does not have;
- a kernel whose program, or compute set, pva names otherwise than the profile's own
  table does (when that table names it): pva's ids would not be the profile's.
"""

import json
import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

INT64 = (-(2**63), 2**63 - 1)

REQUIRED = {
    "steps": ("id", "type", "program", "compute_set"),
    "steps_by_ipu": (
        "step_id",
        "cycles",
        "active_tiles",
        "cycles_base",
        "active_cycles_from_min",
        "active_cycles_to_max",
    ),
    "programs": ("id", "name"),
    "compute_sets": ("compute_set", "name"),
    "vars_info": ("tile", "category", "size_bytes"),
    "var_categories": ("id", "name"),
    "memory_by_tile": ("total",),
}

# docs/formats/stage-rules.md, "The default rules", copied by hand: the oracle's own.
DEFAULT_RULES = [
    (r"/attn/Softmax/", "score layout / softmax"),
    (r"/attn/MatMul_1", "PV"),
    (r"/attn/MatMul/", "QK transpose"),
    (r"/attn/qkv/", "fused QKV projection"),
    (r"/attn/proj/", "output projection"),
    (r"/attn/", "Q/K scaling or conversion"),
    (r"/mlp/fc1/", "MLP up"),
    (r"/mlp/fc2/", "MLP down"),
    (r"/mlp/", "MLP activation"),
]


def default_stage(name: str) -> str:
    """The stage the default rules give a step name: the first rule whose pattern is
    found in it, else "other"."""
    for pattern, label in DEFAULT_RULES:
        if re.search(pattern, name):
            return label
    return "other"


KERNEL, ANCHOR, ATTENTION = r"/Convolve$", r"/attn/qkv/", r"/blocks\.0/attn/"
INPUT_DELIVERED, OUTPUT_BEGINS = r"^copyFromHost$", r"copyToHost$"


class Refused(Exception):
    """The data cannot give a summary: the extractor must fail with one line."""


class Unreadable(Refused):
    """SQLite itself fails reading a whole table (damage): the extractor, which reads
    only the pages it needs, may or may not meet that damage."""


def _whole(value, what):
    if value is None or type(value) is int:
        return value
    raise Refused("{} is {!r}".format(what, value))


def _connect(profile: Path):
    uri = "file:{}?mode=ro&immutable=1".format(quote(str(profile.resolve()), safe="/"))
    db = sqlite3.connect(uri, uri=True)
    db.text_factory = lambda data: data.decode("utf-8", "replace")
    return db


def _read(db, table, columns, text=()):
    names = [c[1] for c in db.execute('PRAGMA table_info("{}")'.format(table))]
    if not names:
        raise Refused("no table " + table)
    for column in columns:
        if column not in names:
            raise Refused("no column {}.{}".format(table, column))
    parts = ['CAST("{}" AS TEXT)'.format(c) if c in text else '"{}"'.format(c) for c in columns]
    try:
        order = " ORDER BY rowid"
        db.execute('SELECT rowid FROM "{}" LIMIT 0'.format(table))
    except sqlite3.OperationalError:
        order = ""
    return [
        tuple(r) for r in db.execute('SELECT {} FROM "{}"{}'.format(", ".join(parts), table, order))
    ]


def _unique(rows, index, what):
    seen = set()
    for row in rows:
        key = row[index]
        if key is None:
            continue
        if key in seen:
            raise Refused("repeated " + what)
        seen.add(key)


def _sqlite_add(a, b):
    """a + b as SQLite computes it: 64-bit integers, or a REAL when that overflows."""
    total = a + b
    if type(total) is int and not INT64[0] <= total <= INT64[1]:
        return float(a) + float(b)
    return total


def _sort_key(value):
    # SQLite's order of storage classes: NULL, numbers, text, blobs.
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, value)


def oracle_summary(profile, label: str) -> dict:
    """The summary the spec gives for `profile`, or Refused."""
    profile = Path(profile)
    double = json.loads((profile.parent / "pva-double.json").read_text(encoding="utf-8"))
    if double.get("_test_open_error"):
        raise Refused("pva cannot open the report")
    db = _connect(profile)
    try:
        try:
            steps = _read(db, "steps", REQUIRED["steps"], text=("type",))
            keys = [c for c in db.execute('PRAGMA table_info("steps")') if c[5]]
            steps_id_is_rowid = (
                len(keys) == 1 and keys[0][1] == "id" and str(keys[0][2]).upper() == "INTEGER"
            )
            sbi = _read(db, "steps_by_ipu", REQUIRED["steps_by_ipu"])
            programs = _read(db, "programs", REQUIRED["programs"], text=("name",))
            compute_sets = _read(db, "compute_sets", REQUIRED["compute_sets"], text=("name",))
            vars_info = _read(db, "vars_info", REQUIRED["vars_info"])
            categories = _read(db, "var_categories", REQUIRED["var_categories"])
            memory = _read(db, "memory_by_tile", REQUIRED["memory_by_tile"])
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise Unreadable("SQLite cannot read it: {}".format(exc)) from exc
    finally:
        db.close()
    _unique(programs, 0, "programs.id")
    _unique(compute_sets, 0, "compute_sets.compute_set")
    if not steps_id_is_rowid:  # an INTEGER PRIMARY KEY is unique by SQLite's contract
        _unique(steps, 0, "steps.id")

    program_name = {p[0]: p[1] for p in programs if p[0] is not None}
    cs_name = {c[0]: c[1] for c in compute_sets if c[0] is not None}
    by_step = {}
    for row in sbi:
        by_step.setdefault(row[0], []).append(row)

    # The step rows: every steps row joined to its steps_by_ipu rows, by step id.
    joined = []
    for step_id, kind, program, cs in steps:
        if step_id is None:
            continue
        for _, cycles, tiles, base, low, high in by_step.get(step_id, ()):
            joined.append((step_id, kind, program, cs, cycles, tiles, base, low, high))
    for step_id, _, _, _ in steps:
        if step_id is not None and type(step_id) is not int:
            raise Refused("step id {!r}".format(step_id))
    for row in sbi:
        for value in row[3:]:
            if isinstance(value, (str, bytes)):
                raise Refused("start/end ingredient {!r}".format(value))
    joined.sort(key=lambda r: _sort_key(r[0]))  # stable: rows of one step keep row order

    rows = []
    for step_id, kind, program, cs, cycles, tiles, base, low, high in joined:
        start = None if base is None or low is None else _sqlite_add(base, low)
        end = None if base is None or high is None else _sqlite_add(base, high)
        name = cs_name.get(cs) if cs is not None else None
        if not name:
            name = program_name.get(program) if program is not None else None
        if not name:
            name = ""
        rows.append(
            {
                "step": step_id,
                "kind": kind,
                "name": name,
                "cycles": cycles,
                "active_tiles": tiles,
                "start": start,
                "end": end,
                "program": program,
                "compute_set": cs,
            }
        )

    # Anchors and the first body.
    anchors = []
    for r in rows:
        if re.search(KERNEL, r["name"]) and re.search(ANCHOR, r["name"]):
            if r["step"] not in anchors:
                anchors.append(r["step"])
    pva_programs = {p["id"]: p for p in double["programs"]}
    pva_sets = {c["id"]: c for c in double["computeSets"]}
    kernels = []
    if anchors:
        for r in rows:
            in_body = r["step"] >= anchors[0] and (len(anchors) < 2 or r["step"] < anchors[1])
            if not (in_body and re.search(KERNEL, r["name"])):
                continue
            where = "step {}".format(r["step"])
            if r["program"] is None:
                code = 0
            else:
                p = pva_programs.get(r["program"]) if not isinstance(r["program"], float) else None
                if p is None:
                    raise Refused(where + ": program unknown to pva")
                if program_name.get(r["program"]) not in (None, p["name"]):
                    raise Refused(where + ": pva names its program otherwise")
                cb = p.get("codeBytesByTile", [])
                code = (max(cb) if cb else 0) if p["type"] == "DoExchange" else 0
            if r["compute_set"] is None:
                vertices = ""
            else:
                c = r["compute_set"]
                if type(c) is not int or c < 0 or c not in pva_sets:
                    raise Refused(where + ": compute set unknown to pva")
                if cs_name.get(c) not in (None, pva_sets[c]["name"]):
                    raise Refused(where + ": pva names its compute set otherwise")
                vertices = "; ".join(pva_sets[c]["vertices"])
            kernels.append(
                {
                    "step": r["step"],
                    "kind": r["kind"],
                    "stage": default_stage(r["name"]),
                    "name": r["name"],
                    "cycles": _whole(r["cycles"], where + " cycles"),
                    "active_tiles": _whole(r["active_tiles"], where + " active_tiles"),
                    "start": _whole(r["start"], where + " start"),
                    "end": _whole(r["end"], where + " end"),
                    "max_exchange_code_bytes": code,
                    "vertices": vertices,
                }
            )

    exchanges = []
    for p in double["programs"]:
        if p["type"] == "DoExchange" and re.search(ATTENTION, p["name"]):
            cb = p.get("codeBytesByTile", [])
            exchanges.append(
                {
                    "name": p["name"],
                    "maximum": max(cb) if cb else 0,
                    "mean": sum(cb) / len(cb) if cb else 0.0,
                }
            )

    # b per tile over internalExchangeCode rows with a tile.
    exchange_ids = {c[0] for c in categories if c[1] == "internalExchangeCode"}
    per_tile = {}
    for tile, category, size in vars_info:
        if tile is None or category not in exchange_ids:
            continue
        sizes = per_tile.setdefault(tile, [])
        sizes.append(size)
    bs = []
    for sizes in per_tile.values():
        present = [s for s in sizes if s is not None]
        if not present:
            continue
        running = 0
        for s in present:
            if type(s) is not int:
                raise Refused("exchange code size {!r}".format(s))
            running += s
            if not INT64[0] <= running <= INT64[1]:
                raise Refused("exchange code sum beyond 64 bits")
        bs.append(running)
    totals = [t[0] for t in memory if t[0] is not None]
    for t in totals:
        if type(t) is not int:
            raise Refused("memory total {!r}".format(t))

    # Device spans.
    spans = []
    seen_inputs = []
    for r in rows:
        if (
            r["kind"] == "StreamCopyEnd"
            and re.search(INPUT_DELIVERED, r["name"])
            and r["step"] not in seen_inputs
        ):
            seen_inputs.append(r["step"])
    for opened in seen_inputs:
        closing = None
        for r in rows:
            if (
                r["step"] > opened
                and r["kind"] == "StreamCopyBegin"
                and re.search(OUTPUT_BEGINS, r["name"])
            ):
                closing = r["step"]
                break
        if closing is None:
            continue
        inside = [
            r
            for r in rows
            if opened < r["step"] < closing and r["kind"] in ("DoExchange", "OnTileExecute")
        ]
        starts = [r["start"] for r in inside if r["start"] is not None]
        ends = [r["end"] for r in inside if r["end"] is not None]
        if starts and ends:
            spans.append(_whole(max(ends) - min(starts), "span"))

    def stats(values, names):
        if not values:
            return dict.fromkeys(names)
        mean = 0.0
        for v in values:
            mean += v
        return dict(zip(names, (min(values), mean / len(values), max(values))))

    return {
        "profile": label,
        "kernels": kernels,
        "attention_exchanges": exchanges,
        "exchange_memory_per_tile": stats(bs, ("min(b)", "avg(b)", "max(b)")),
        "device_spans": spans,
        "qkv_executions": len(anchors),
        "allocated_memory": stats(totals, ("min(total)", "avg(total)", "max(total)")),
    }
