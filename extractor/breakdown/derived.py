"""breakdown.json beside a summary.json (`extract PROFILE -o summary.json --breakdown`,
and a batch with it): how it is made, read back, and when one that no index vouches
for belongs to the summary beside it (derived.py's entry)."""

from pathlib import Path
from typing import List, Optional, Tuple

from ..core.model import Summary
from ..core.pvafacts import PvaModule
from ..core.rules import StageRules
from ..errors import StrPath
from .command import breakdown_profile
from .formats import BreakdownJson


def breakdown_file(
    profile: StrPath, rules: StageRules, pva: Optional[PvaModule], label: str
) -> Tuple[bytes, List[str]]:
    """The bytes of breakdown.json for `profile` (its first inference, depth 5, as
    `extract breakdown --format json`), "profile" `label`; and its warnings."""
    found = breakdown_profile(Path(profile), rules, pva=pva, label=label)
    return BreakdownJson().render(found.result), found.warnings


def read_breakdown_json(path: StrPath) -> dict:
    """The JSON object of the breakdown.json at `path` (DerivedFileError otherwise)."""
    from ..derived import read_derived_json

    return read_derived_json(path, "breakdown.json")


def breakdown_disagreement(summary: Summary, data: dict) -> Optional[str]:
    """Where a breakdown.json (its JSON) and a summary say different things, in words;
    None when they agree: the same `profile`, and its first window's `first_step` and
    `last_step` bracket the step of every kernel of the summary."""
    if data.get("profile") != summary.profile:
        return "it describes another profile ({!r}, the summary {!r})".format(
            data.get("profile"), summary.profile
        )
    windows = data.get("windows")
    first = windows[0] if isinstance(windows, list) and windows else None
    if not isinstance(first, dict):
        return "it has no window"
    low, high = first.get("first_step"), first.get("last_step")
    steps = [kernel.get("step") for kernel in summary.kernels]
    if not steps:
        return None
    if not (isinstance(low, int) and isinstance(high, int)) or not all(
        isinstance(step, int) and low <= step <= high for step in steps
    ):
        return "its first window (steps {!r} to {!r}) does not hold the summary's kernels".format(
            low, high
        )
    return None
