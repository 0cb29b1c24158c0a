"""Two bodies laid side by side, step by step, and every cycle of their difference
accounted for: the diff as one dict, in the JSON's key order (formats.py renders it).

Units are matched by their key, (kind, name with the compiler's ids masked), along the
two sequences as `difflib.SequenceMatcher` aligns them (alignment.py: the same
opcodes, faster): reproducible, and the same answer any reader of the rule gets. Each
entry's change is the candidate's cycles minus the base's, so the entries, the kinds and
the stages each add up to the whole change. Every sum and change goes through the one
64-bit rule of the sums a file holds (steps.sum64).
"""

from typing import Callable, Dict, Hashable, List, Optional, Tuple

from ..core.metrics import mask_ids
from ..core.steps import BadValue, sum64
from ..errors import ProfileError, UsageError
from .alignment import TooLong, opcodes
from .bodies import Side, Unit

#: The fields compared in a pair of units, in the order `fields` lists them; the last
#: two only when both sides were read with pva.
COMPARED = ("cycles", "active_tiles", "vertices", "max_exchange_code_bytes")
STATUSES = ("same", "changed", "added", "removed")
#: The most steps left to align on both sides, once the bodies' common first and last
#: steps are set aside (alignment.py): beyond it, difflib's time (which grows faster
#: than the steps, the more so as their keys repeat) is refused.
MAX_ALIGNED = 20_000


def unit_keys(
    units: List[Unit], known: Dict[Tuple[str, str], Tuple[str, str]]
) -> List[Tuple[str, str]]:
    """Each unit's key, (kind, masked name): made once per kind and name (`known`)."""
    found = []
    for unit in units:
        pair = (unit.kind, unit.name)
        key = known.get(pair)
        if key is None:
            key = known[pair] = (unit.kind, mask_ids(unit.name))
        found.append(key)
    return found


def explain(base: Side, candidate: Side, stages: List[str]) -> dict:
    """The diff of two bodies (docs/formats/diff.md's JSON, as a dict). `stages`: every stage label
    of the rules in use, in their order (blocks.json's `stages`). UsageError when what
    the two bodies' common first and last steps leave to align is longer than
    MAX_ALIGNED steps on both sides."""
    counts = dict.fromkeys(STATUSES, 0)
    changed = _entries(base, candidate, counts)
    # sorted() is stable: ties stay in alignment order
    changed.sort(key=lambda entry: -abs(entry["change"]))
    by_kind = _by_kind(base, candidate)
    return {
        "base": _side(base),
        "candidate": _side(candidate),
        "differences": _differences(base, candidate),
        "change": _fits(candidate.cycles - base.cycles, candidate),
        "by_kind": by_kind,
        "by_stage": _by_stage(base, candidate, stages, [k["kind"] for k in by_kind]),
        "counts": counts,
        "steps": [_public(entry) for entry in changed],
    }


def _fits(value: int, side: Side) -> int:
    """`value` (steps.sum64: the one 64-bit rule of the sums a file holds), a sum of
    `side`'s cycles or the change from the other side to it; else the ProfileError of
    `side`'s profile."""
    try:
        return sum64(value)
    except BadValue as exc:
        raise ProfileError(side.profile, str(exc)) from None


def _side(side: Side) -> dict:
    return {
        "profile": side.profile,
        "run": side.run,
        "block": side.block,
        "first_step": side.first_step,
        "end_step": side.end_step,
        "units": len(side.units),
        "cycles": _fits(side.cycles, side),
    }


def _differences(base: Side, candidate: Side) -> List[dict]:
    found = []
    for fact in ("tiles", "inferences", "bodies", "pva"):
        if getattr(base, fact) != getattr(candidate, fact):
            found.append(
                {"fact": fact, "base": getattr(base, fact), "candidate": getattr(candidate, fact)}
            )
    return found


def _entries(base: Side, candidate: Side, counts: Dict[str, int]) -> List[dict]:
    """Every entry but the `same` ones (only counted, in `counts`, as the others are),
    in alignment order."""
    facts = base.pva and candidate.pva
    compared = COMPARED if facts else COMPARED[:2]
    known: Dict[Tuple[str, str], Tuple[str, str]] = {}
    try:
        aligned = opcodes(
            unit_keys(base.units, known), unit_keys(candidate.units, known), most=MAX_ALIGNED
        )
    except TooLong as exc:
        raise _too_long(base, candidate, exc) from None
    entries: List[dict] = []
    for tag, i1, i2, j1, j2 in aligned:
        if tag == "equal":
            for old, new in zip(base.units[i1:i2], candidate.units[j1:j2]):
                fields = [field for field in compared if getattr(old, field) != getattr(new, field)]
                if fields:
                    entries.append(_entry("changed", old, new, fields, candidate))
                else:
                    counts["same"] += 1
            continue
        for old in base.units[i1:i2]:  # replace and delete
            entries.append(_entry("removed", old, None, [], candidate))
        for new in candidate.units[j1:j2]:  # replace and insert
            entries.append(_entry("added", None, new, [], candidate))
    for entry in entries:
        counts[entry["status"]] += 1
    return entries


def _too_long(base: Side, candidate: Side, exc: TooLong) -> UsageError:
    """The usage error for bodies that differ over too many steps to align."""
    (i1, i2), (j1, j2) = exc.a_range, exc.b_range
    return UsageError(
        candidate.profile,
        "its body (run {}, block {}) and the base's (run {}, block {}) differ from their "
        "steps {} and {} to their steps {} and {}: {:,} and {:,} steps to align, more than "
        "the {:,} diff aligns on both sides (difflib's time grows faster than the steps); "
        "pass --block R:K (and --candidate-block R:K) of shorter bodies, which extract "
        "blocks lists".format(
            candidate.run,
            candidate.block,
            base.run,
            base.block,
            candidate.units[j1].step,
            base.units[i1].step,
            candidate.units[j2 - 1].step,
            base.units[i2 - 1].step,
            exc.left[1],
            exc.left[0],
            MAX_ALIGNED,
        ),
    )


def _entry(
    status: str, old: Optional[Unit], new: Optional[Unit], fields: List[str], candidate: Side
) -> dict:
    shown = old if old is not None else new
    assert shown is not None
    return {
        "status": status,
        "kind": shown.kind,
        "stage": shown.stage,
        "key": mask_ids(shown.name),
        "change": _fits((new.cycles if new else 0) - (old.cycles if old else 0), candidate),
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


def _sums(side: Side, part: Callable[[Unit], Hashable]) -> Dict[Hashable, int]:
    """{part of a unit: the sum of the cycles of `side`'s units with it}."""
    found: Dict[Hashable, int] = {}
    for unit in side.units:
        key = part(unit)
        found[key] = found.get(key, 0) + unit.cycles
    for value in found.values():
        _fits(value, side)
    return found


def _by_kind(base: Side, candidate: Side) -> List[dict]:
    kinds: Dict[str, None] = {}
    for side in (base, candidate):
        for unit in side.units:
            kinds.setdefault(unit.kind)
    old = _sums(base, lambda unit: unit.kind)
    new = _sums(candidate, lambda unit: unit.kind)
    return [
        {
            "kind": kind,
            "base": old.get(kind, 0),
            "candidate": new.get(kind, 0),
            "change": _fits(new.get(kind, 0) - old.get(kind, 0), candidate),
        }
        for kind in kinds
    ]


def _by_stage(base: Side, candidate: Side, stages: List[str], kinds: List[str]) -> List[dict]:
    old = _sums(base, lambda unit: (unit.stage, unit.kind))
    new = _sums(candidate, lambda unit: (unit.stage, unit.kind))
    present = {unit.stage for side in (base, candidate) for unit in side.units}
    found = []
    for stage in stages:
        if stage not in present:
            continue
        per_kind = {
            kind: {"base": old.get((stage, kind), 0), "candidate": new.get((stage, kind), 0)}
            for kind in kinds
            if (stage, kind) in old or (stage, kind) in new
        }
        low = _fits(sum(part["base"] for part in per_kind.values()), base)
        high = _fits(sum(part["candidate"] for part in per_kind.values()), candidate)
        found.append(
            {
                "stage": stage,
                "base": low,
                "candidate": high,
                "change": _fits(high - low, candidate),
                "kinds": per_kind,
            }
        )
    return found
