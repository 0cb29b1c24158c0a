"""memory.json beside a summary.json (`extract PROFILE -o summary.json --memory`, and a
batch with it): how it is made, read back, and when one that no index vouches for
belongs to the summary beside it (derived.py's entry)."""

from typing import List, Optional, Tuple

from ..core.model import Summary
from ..core.pvafacts import PvaModule
from ..core.rules import StageRules
from ..errors import StrPath
from .command import memory_of, memory_warnings
from .formats import MemoryJson


def memory_file(
    profile: StrPath, rules: StageRules, pva: Optional[PvaModule], label: str
) -> Tuple[bytes, List[str]]:
    """The bytes of memory.json for `profile` (the default --top, pva's bytes per tile,
    as `extract memory --format json`), "profile" `label`; and its warnings."""
    found = memory_of(profile, rules, pva, profile_label=label)
    return MemoryJson().render(found), memory_warnings(found)


def read_memory_json(path: StrPath) -> dict:
    """The JSON object of the memory.json at `path` (DerivedFileError otherwise)."""
    from ..derived import read_derived_json

    return read_derived_json(path, "memory.json")


def memory_disagreement(summary: Summary, data: dict) -> Optional[str]:
    """Where a memory.json (its JSON) and a summary say different things, in words; None
    when they agree: the same `profile`, and its `total`'s min, mean and max are the
    summary's `allocated_memory` (min(total), avg(total), max(total))."""
    if data.get("profile") != summary.profile:
        return "it describes another profile ({!r}, the summary {!r})".format(
            data.get("profile"), summary.profile
        )
    total = data.get("total")
    allocated = summary.allocated_memory
    if total is None:
        figures = (None, None, None)
    elif isinstance(total, dict):
        figures = (total.get("min"), total.get("mean"), total.get("max"))
    else:
        return "its 'total' is not an object"
    if figures != tuple(allocated):
        return "its tiles' total min, mean and max ({}) are not the summary's {} ({})".format(
            ", ".join(map(repr, figures)), "allocated_memory", ", ".join(map(repr, allocated))
        )
    return None
