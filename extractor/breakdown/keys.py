"""What a step row is filed under in a breakdown: its op, its layer, its kind.

- op: the row's name, masked as budgets mask exchange names (core.metrics.mask_ids),
  then folded: a `.<digits>` that ends a path part (before `/`, `,`, `{`, `}` or the
  end) becomes `.*`, so that every block's copy of an op is one op
  (`/blocks/blocks.7/attn` and `/blocks/blocks.0/attn`). An empty name is `(unnamed)`.
- layer at depth D: the op's first `/`-path (from its first `/` up to the first `,`,
  `{`, `}` or the end), cut to its first D parts; `(no layer)` without a `/`.
"""

import re
from typing import List

from ..core.metrics import mask_ids
from ..core.steps import SqlValue

UNNAMED = "(unnamed)"
NO_LAYER = "(no layer)"
MIN_DEPTH, MAX_DEPTH, DEFAULT_DEPTH = 1, 64, 5

# `.7` at the end of a path part (`blocks.7/`, `x.12,`, `a.3}` or `a.3` at the end).
_NUMBERED_PART = re.compile(r"\.[0-9]+(?=[/,{}]|\Z)")
_PATH_END = re.compile(r"[,{}]")
# What splits a line for the folded format's readers: `;` separates frames, and every
# character str.splitlines breaks at ends the line.
_NOT_IN_A_FRAME = re.compile("[;\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def op_of(name: str) -> str:
    """The op a row of this name is counted under."""
    if not name:
        return UNNAMED
    return _NUMBERED_PART.sub(".*", mask_ids(name))


def layer_path(op: str) -> str:
    """The op's first `/`-path, whole ("" when it has no `/`)."""
    at = op.find("/")
    if at < 0:
        return ""
    path = op[at:]
    found = _PATH_END.search(path)
    return path if found is None else path[: found.start()]


def layer_of(op: str, depth: int) -> str:
    """The op's layer at `depth` (1 to 64): its first `/`-path cut to `depth` parts."""
    path = layer_path(op)
    if not path:
        return NO_LAYER
    parts = path.split("/")  # parts[0] is "" (before the leading `/`)
    return "/".join(parts[: depth + 1])


def layer_frames(op: str) -> List[str]:
    """The op's layer parts at full depth, as the folded format's frames."""
    path = layer_path(op)
    if not path:
        return [NO_LAYER]
    return path.split("/")[1:]


def frame(text: str) -> str:
    """`text` as one frame of a folded stack: `;` and line breaks become `_`."""
    return _NOT_IN_A_FRAME.sub("_", text)


def kind_text(kind: SqlValue) -> str:
    """A step's kind as text: NULL is "", a blob is read as UTF-8 (as the step tables
    read it), another value as SQLite's text of it."""
    if kind is None:
        return ""
    if isinstance(kind, bytes):
        return kind.decode("utf-8", "replace")
    return kind if isinstance(kind, str) else str(kind)
