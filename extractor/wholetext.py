"""Whole numbers written as text by a user: the numbers of `--block R:K` and
`--candidate-block R:K`, of `--shard K/N`, and of SLURM's array task variables. One
reading for all of them.

Such a number is ASCII digits (a leading `-` only where a sign is allowed), at most
`MAX_DIGITS` of them: every such number fits a 64-bit integer, and no run, block, shard
or array task is numbered past that. Nothing else is one: no `+`, no `_` (which int()
takes), no spaces inside, no digits of other scripts (int() takes `\u0664` as 4). The
length is looked at before int() is called, which is slow on a long text and refused
beyond 4300 digits ("unexpected failure: ValueError").
"""

import re
from typing import Optional

#: The most digits a number given as text may have.
MAX_DIGITS = 18

_UNSIGNED = re.compile("[0-9]{{1,{}}}".format(MAX_DIGITS))
_SIGNED = re.compile("-?[0-9]{{1,{}}}".format(MAX_DIGITS))


def read_whole(text: str, signed: bool = False) -> Optional[int]:
    """The whole number `text` is (see above; `signed`: a leading `-` allowed), or None
    when it is none."""
    if (_SIGNED if signed else _UNSIGNED).fullmatch(text) is None:
        return None
    return int(text)


def shown_text(text: str, limit: int = 20) -> str:
    """`text` quoted for a message (its repr), cut to its first `limit` characters and
    `...` when it is longer: a 5000-digit option stays a short line."""
    return repr(text if len(text) <= limit else text[:limit] + "...")
