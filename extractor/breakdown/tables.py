"""The breakdown's tables, made from a window's sums (sums.WindowSums), and two
breakdowns compared table by table.

One window: per IPU with rows, its rows, all cycles and span, then four tables that
each add up to the IPU's all cycles: kinds, stages (rules order, then the fallback),
ops (one per op and kind) and layers; the tile balance and the repeated compute sets.
Two windows compared: every table's rows joined on their key, with the cycles of each
side, the change and a status; each table's changes add up to the IPU's change.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.steps import sum64
from .keys import kind_text, layer_of, op_of
from .sums import WindowSums

#: The key fields of each table's rows, in the file's order.
KEY_FIELDS = {
    "kinds": ("kind",),
    "stages": ("stage",),
    "ops": ("op", "kind", "stage"),
    "layers": ("layer",),
}
TABLES = tuple(KEY_FIELDS)


def _share(cycles: int, total: int) -> float:
    return cycles / total if total else 0.0


def window_table(
    run: Optional[int],
    sums: WindowSums,
    stages: Sequence[str],
    depth: int,
    tiles_per_ipu: Optional[int],
) -> dict:
    """The file's object for one window (docs/formats/breakdown.md)."""
    ipus = [
        _ipu_table(ipu, sums, stages, depth, tiles_per_ipu)
        for ipu in sorted({key[0] for key in sums.sums})
    ]
    return {
        "run": run,
        "first_step": sums.first_step,
        "last_step": sums.last_step,
        "rows": sums.row_count,
        "ipus": ipus,
    }


def _ipu_table(
    ipu: int,
    sums: WindowSums,
    stage_order: Sequence[str],
    depth: int,
    tiles_per_ipu: Optional[int],
) -> dict:
    rows = 0
    total = 0
    kinds: Dict[str, List[int]] = {}  # kind: [rows, cycles]
    stages: Dict[str, Dict[str, int]] = {}  # stage: {kind: cycles}
    ops: Dict[Tuple[str, str], List[Any]] = {}  # (op, kind): [stage, rows, cycles, min, max]
    layers: Dict[str, Dict[str, int]] = {}  # layer: {kind: cycles}
    layer_of_op: Dict[str, str] = {}
    ote_cycles = ote_tile_cycles = 0
    repeats: Dict[Any, List[int]] = {}  # compute set: [rows, min, max]
    for key, (count, cycles, low, high, tile_cycles, on_tiles) in sums.sums.items():
        if key[0] != ipu:
            continue
        _ipu, program, compute_set, raw_kind = key
        named = sums.names[program, compute_set]
        kind = kind_text(raw_kind)
        stage = named.classes.stage
        op = op_of(named.name)
        rows += count
        total += cycles
        kind_sums = kinds.setdefault(kind, [0, 0])
        kind_sums[0] += count
        kind_sums[1] += cycles
        by_kind = stages.setdefault(stage, {})
        by_kind[kind] = by_kind.get(kind, 0) + cycles
        op_sums = ops.get((op, kind))
        if op_sums is None:  # its first row: keys come in the order of their first rows
            ops[op, kind] = [stage, count, cycles, low, high]
        else:
            op_sums[1] += count
            op_sums[2] += cycles
            op_sums[3] = min(op_sums[3], low)
            op_sums[4] = max(op_sums[4], high)
        layer = layer_of_op.get(op)
        if layer is None:
            layer = layer_of_op[op] = layer_of(op, depth)
        in_layer = layers.setdefault(layer, {})
        in_layer[kind] = in_layer.get(kind, 0) + cycles
        if on_tiles:
            ote_cycles += cycles
            ote_tile_cycles += tile_cycles
            if compute_set is not None:
                seen = repeats.get(compute_set)
                if seen is None:
                    repeats[compute_set] = [count, low, high]
                else:
                    seen[0] += count
                    seen[1] = min(seen[1], low)
                    seen[2] = max(seen[2], high)
    total = sum64(total)
    start, end = sums.low[ipu], sums.high[ipu]
    repeated = [seen for seen in repeats.values() if seen[0] >= 2]
    balance = None
    if tiles_per_ipu and ote_cycles:
        balance = sum64(ote_tile_cycles) / (ote_cycles * tiles_per_ipu)
    return {
        "ipu": ipu,
        "rows": rows,
        "cycles": total,
        "span": None if start is None or end is None else sum64(end - start),
        "kinds": [
            {"kind": kind, "rows": n, "cycles": c, "share": _share(c, total)}
            for kind, (n, c) in sorted(kinds.items(), key=lambda item: (-item[1][1], item[0]))
        ],
        "stages": [
            {
                "stage": stage,
                "cycles": sum64(sum(stages[stage].values())),
                "share": _share(sum(stages[stage].values()), total),
                "kinds": {kind: sum64(c) for kind, c in sorted(stages[stage].items())},
            }
            for stage in stage_order
            if stage in stages
        ],
        "ops": [
            {
                "op": op,
                "kind": kind,
                "stage": stage,
                "executions": n,
                "cycles": sum64(c),
                "share": _share(c, total),
                "mean": c / n,
                "min": lo,
                "max": hi,
            }
            for (op, kind), (stage, n, c, lo, hi) in sorted(
                ops.items(), key=lambda item: (-item[1][2], item[0])
            )
        ],
        "layers": [
            {
                "layer": layer,
                "cycles": sum64(sum(by_kind.values())),
                "share": _share(sum(by_kind.values()), total),
                "kinds": {kind: sum64(c) for kind, c in sorted(by_kind.items())},
            }
            for layer, by_kind in sorted(
                layers.items(), key=lambda item: (-sum(item[1].values()), item[0])
            )
        ],
        "tile_balance": balance,
        "repeats": {
            "compute_sets": len(repeated),
            "identical": sum(1 for seen in repeated if seen[1] == seen[2]),
        },
    }


# ---- two breakdowns ------------------------------------------------------------------


def _status(base: Optional[int], candidate: Optional[int]) -> str:
    if base is None:
        return "added"
    if candidate is None:
        return "removed"
    return "same" if base == candidate else "changed"


def _side(window: Optional[dict]) -> Optional[dict]:
    if window is None:
        return None
    return {key: window[key] for key in ("run", "first_step", "last_step", "rows")}


def compared_window(base: dict, candidate: dict) -> dict:
    """Two windows (window_table's), IPU by IPU and table by table."""
    old = {ipu["ipu"]: ipu for ipu in base["ipus"]}
    new = {ipu["ipu"]: ipu for ipu in candidate["ipus"]}
    return {
        "base": _side(base),
        "candidate": _side(candidate),
        "ipus": [
            _compared_ipu(number, old.get(number), new.get(number))
            for number in sorted(set(old) | set(new))
        ],
    }


def _compared_ipu(number: int, base: Optional[dict], candidate: Optional[dict]) -> dict:
    old_total = base["cycles"] if base is not None else 0
    new_total = candidate["cycles"] if candidate is not None else 0
    found: Dict[str, Any] = {
        "ipu": number,
        "base": old_total,
        "candidate": new_total,
        "change": sum64(new_total - old_total),
    }
    for table in TABLES:
        found[table] = _compared_rows(
            table,
            base[table] if base is not None else [],
            candidate[table] if candidate is not None else [],
        )
    return found


def _compared_rows(table: str, base: List[dict], candidate: List[dict]) -> List[dict]:
    fields = KEY_FIELDS[table]
    joined = ("op", "kind") if table == "ops" else fields  # an op's stage is not its key
    old = {tuple(row[f] for f in joined): row for row in base}
    new = {tuple(row[f] for f in joined): row for row in candidate}
    rows = []
    for key in list(old) + [key for key in new if key not in old]:
        before, after = old.get(key), new.get(key)
        shown = before if before is not None else after
        assert shown is not None
        old_cycles = before["cycles"] if before is not None else None
        new_cycles = after["cycles"] if after is not None else None
        row: Dict[str, Any] = {field: shown[field] for field in fields}
        row["status"] = _status(old_cycles, new_cycles)
        row["base"] = old_cycles or 0
        row["candidate"] = new_cycles or 0
        row["change"] = sum64(row["candidate"] - row["base"])
        rows.append(row)
    rows.sort(key=lambda row: (-abs(row["change"]), tuple(row[f] for f in joined)))
    return rows
