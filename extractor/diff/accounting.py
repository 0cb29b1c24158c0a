"""Two bodies laid side by side, step by step, and every cycle of their difference
accounted for: the diff as one dict, in the JSON's key order (formats.py renders it).

Units are matched by their key, (kind, name with the compiler's ids masked), along the
two sequences as `difflib.SequenceMatcher` aligns them: reproducible, and the same
answer any reader of the rule gets. Each entry's change is the candidate's cycles minus
the base's, so the entries, the kinds and the stages each add up to the whole change.
"""

import difflib
from typing import Callable, Dict, Hashable, List, Optional, Tuple

from ..core.metrics import mask_ids
from .bodies import Side, Unit

#: The fields compared in a pair of units, in the order `fields` lists them; the last
#: two only when both sides were read with pva.
COMPARED = ("cycles", "active_tiles", "vertices", "max_exchange_code_bytes")
STATUSES = ("same", "changed", "added", "removed")


def unit_key(unit: Unit) -> Tuple[str, str]:
    return (unit.kind, mask_ids(unit.name))


def explain(base: Side, candidate: Side, stages: List[str]) -> dict:
    """The diff of two bodies (docs/formats/diff.md's JSON, as a dict). `stages`: every stage label
    of the rules in use, in their order (blocks.json's `stages`)."""
    entries = _entries(base, candidate)
    counts = dict.fromkeys(STATUSES, 0)
    for entry in entries:
        counts[entry["status"]] += 1
    changed = [entry for entry in entries if entry["status"] != "same"]
    # sorted() is stable: ties stay in alignment order
    changed.sort(key=lambda entry: -abs(entry["change"]))
    by_kind = _by_kind(base.units, candidate.units)
    return {
        "base": _side(base),
        "candidate": _side(candidate),
        "differences": _differences(base, candidate),
        "change": candidate.cycles - base.cycles,
        "by_kind": by_kind,
        "by_stage": _by_stage(base.units, candidate.units, stages, [k["kind"] for k in by_kind]),
        "counts": counts,
        "steps": [_public(entry) for entry in changed],
    }


def _side(side: Side) -> dict:
    return {
        "profile": side.profile,
        "run": side.run,
        "block": side.block,
        "first_step": side.first_step,
        "end_step": side.end_step,
        "units": len(side.units),
        "cycles": side.cycles,
    }


def _differences(base: Side, candidate: Side) -> List[dict]:
    found = []
    for fact in ("tiles", "inferences", "bodies", "pva"):
        if getattr(base, fact) != getattr(candidate, fact):
            found.append(
                {"fact": fact, "base": getattr(base, fact), "candidate": getattr(candidate, fact)}
            )
    return found


def _entries(base: Side, candidate: Side) -> List[dict]:
    """Every entry, `same` ones included, in alignment order."""
    facts = base.pva and candidate.pva
    compared = COMPARED if facts else COMPARED[:2]
    matcher = difflib.SequenceMatcher(
        None,
        [unit_key(unit) for unit in base.units],
        [unit_key(unit) for unit in candidate.units],
        autojunk=False,
    )
    entries: List[dict] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for old, new in zip(base.units[i1:i2], candidate.units[j1:j2]):
                fields = [field for field in compared if getattr(old, field) != getattr(new, field)]
                entries.append(_entry("changed" if fields else "same", old, new, fields))
            continue
        for old in base.units[i1:i2]:  # replace and delete
            entries.append(_entry("removed", old, None, []))
        for new in candidate.units[j1:j2]:  # replace and insert
            entries.append(_entry("added", None, new, []))
    return entries


def _entry(status: str, old: Optional[Unit], new: Optional[Unit], fields: List[str]) -> dict:
    shown = old if old is not None else new
    assert shown is not None
    return {
        "status": status,
        "kind": shown.kind,
        "stage": shown.stage,
        "key": mask_ids(shown.name),
        "change": (new.cycles if new else 0) - (old.cycles if old else 0),
        "fields": fields,
        "base": old,
        "candidate": new,
    }


def _public(entry: dict) -> dict:
    """An entry as the JSON writes it: its units as dicts."""
    shown = dict(entry)
    for side in ("base", "candidate"):
        unit = entry[side]
        shown[side] = unit.as_dict() if unit is not None else None
    return shown


def _sums(units: List[Unit], part: Callable[[Unit], Hashable]) -> Dict[Hashable, int]:
    """{part of a unit: the sum of the cycles of the units with it}."""
    found: Dict[Hashable, int] = {}
    for unit in units:
        key = part(unit)
        found[key] = found.get(key, 0) + unit.cycles
    return found


def _by_kind(base: List[Unit], candidate: List[Unit]) -> List[dict]:
    kinds: Dict[str, None] = {}
    for unit in base + candidate:
        kinds.setdefault(unit.kind)
    old = _sums(base, lambda unit: unit.kind)
    new = _sums(candidate, lambda unit: unit.kind)
    return [
        {
            "kind": kind,
            "base": old.get(kind, 0),
            "candidate": new.get(kind, 0),
            "change": new.get(kind, 0) - old.get(kind, 0),
        }
        for kind in kinds
    ]


def _by_stage(
    base: List[Unit], candidate: List[Unit], stages: List[str], kinds: List[str]
) -> List[dict]:
    old = _sums(base, lambda unit: (unit.stage, unit.kind))
    new = _sums(candidate, lambda unit: (unit.stage, unit.kind))
    present = {unit.stage for unit in base + candidate}
    found = []
    for stage in stages:
        if stage not in present:
            continue
        per_kind = {
            kind: {"base": old.get((stage, kind), 0), "candidate": new.get((stage, kind), 0)}
            for kind in kinds
            if (stage, kind) in old or (stage, kind) in new
        }
        low = sum(part["base"] for part in per_kind.values())
        high = sum(part["candidate"] for part in per_kind.values())
        found.append(
            {
                "stage": stage,
                "base": low,
                "candidate": high,
                "change": high - low,
                "kinds": per_kind,
            }
        )
    return found
