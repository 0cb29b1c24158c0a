"""Values of a derived file's parsed JSON, read leniently: the page shows what it can of
a hand-made or odd file (a field of the wrong type is as good as absent), never fails on
one. The files were checked to belong to their summaries before (belonging.py)."""

from typing import Any, List, Optional


def whole(value: Any) -> Optional[int]:  # Any: parsed JSON
    """`value` when it is a whole number (not true or false), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def objects(value: Any) -> List[dict]:  # Any: parsed JSON
    """The objects of `value` when it is a list (anything else in it left out), else []."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
