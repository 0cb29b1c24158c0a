"""The alignment of two key sequences: exactly the opcodes of
`difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()` (diff-spec's rule),
without difflib's worst case where the two share a long common start or end.

difflib matches the longest block of equal keys first (the earliest in `a` among the
longest, then the earliest in `b`), then does the same on each side of it. Its search
takes time that grows with the length of a range times how often its keys repeat, and
a body's keys repeat a lot (the same layer, step after step): two identical bodies of
50,000 steps took 32 s. Yet when the common start of a range (its common prefix) is
the block difflib would choose, the block is known without a search: here that is
proven, not assumed, before it is taken. The common prefix, of length p, is difflib's
choice when no block of p + 1 equal keys is shared by the two ranges (the prefix starts
first in `a`, so it wins ties); the common suffix, of length s, when no other pair of
places shares s equal keys. Both are checked in linear time by comparing the hashes of
every window of that length (a rolling hash); a hash shared by chance only sends the
range to difflib, whose answer is then the same, only slower. What no such block
explains is aligned by difflib itself, on that range alone (difflib's answer on a range
depends only on the keys in it).
"""

import difflib
from typing import Dict, Hashable, List, Optional, Sequence, Set, Tuple

#: (tag, i1, i2, j1, j2), as difflib's get_opcodes gives them.
Opcode = Tuple[str, int, int, int, int]
#: (i, j, size): a[i:i + size] == b[j:j + size], as difflib's get_matching_blocks.
Block = Tuple[int, int, int]

_MODULUS = (1 << 61) - 1  # a prime: the rolling hash's values are below it
_BASE = 1_000_003


class TooLong(Exception):
    """What is left for difflib is longer than `most` keys on both sides."""

    def __init__(self, a_range: Tuple[int, int], b_range: Tuple[int, int]) -> None:
        super().__init__(a_range, b_range)
        self.a_range = a_range  # (first, end) indexes in a
        self.b_range = b_range


def opcodes(
    a: Sequence[Hashable], b: Sequence[Hashable], most: Optional[int] = None
) -> List[Opcode]:
    """difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes(), exactly.
    TooLong, before difflib is called, when the ranges left for it (what the common
    start and end do not explain) are both longer than `most` keys."""
    numbers: Dict[Hashable, int] = {}  # each distinct key as a small number, for hashing
    first = [numbers.setdefault(key, len(numbers)) for key in a]
    second = [numbers.setdefault(key, len(numbers)) for key in b]
    return _opcodes(_matching_blocks(first, second, most), len(first), len(second))


def _matching_blocks(a: List[int], b: List[int], most: Optional[int]) -> List[Block]:
    """difflib's get_matching_blocks() of a and b (the final (len(a), len(b), 0) too)."""
    alo, ahi, blo, bhi = 0, len(a), 0, len(b)
    found: List[Block] = []
    while alo < ahi and blo < bhi:
        prefix = _common_prefix(a, alo, ahi, b, blo, bhi)
        suffix = _common_suffix(a, alo + prefix, ahi, b, blo + prefix, bhi)
        if prefix and prefix >= suffix and not _shares(a, alo, ahi, b, blo, bhi, prefix + 1):
            found.append((alo, blo, prefix))
            alo, blo = alo + prefix, blo + prefix
        elif suffix > prefix and not _shares(a, alo, ahi, b, blo, bhi, suffix, suffix=True):
            found.append((ahi - suffix, bhi - suffix, suffix))
            ahi, bhi = ahi - suffix, bhi - suffix
        else:
            if most is not None and min(ahi - alo, bhi - blo) > most:
                raise TooLong((alo, ahi), (blo, bhi))
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            found += [(alo + i, blo + j, n) for i, j, n in matcher.get_matching_blocks() if n]
            break
    found.sort()
    merged: List[Block] = []
    for i, j, size in found:  # adjacent blocks become one, as difflib leaves them
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        else:
            merged.append((i, j, size))
    merged.append((len(a), len(b), 0))
    return merged


def _opcodes(blocks: List[Block], a_length: int, b_length: int) -> List[Opcode]:
    """difflib's get_opcodes() from its matching blocks."""
    found: List[Opcode] = []
    i = j = 0
    for block_i, block_j, size in blocks:
        if i < block_i and j < block_j:
            found.append(("replace", i, block_i, j, block_j))
        elif i < block_i:
            found.append(("delete", i, block_i, j, block_j))
        elif j < block_j:
            found.append(("insert", i, block_i, j, block_j))
        i, j = block_i + size, block_j + size
        if size:
            found.append(("equal", block_i, i, block_j, j))
    return found


def _common_prefix(a: List[int], alo: int, ahi: int, b: List[int], blo: int, bhi: int) -> int:
    length = 0
    most = min(ahi - alo, bhi - blo)
    while length < most and a[alo + length] == b[blo + length]:
        length += 1
    return length


def _common_suffix(a: List[int], alo: int, ahi: int, b: List[int], blo: int, bhi: int) -> int:
    length = 0
    most = min(ahi - alo, bhi - blo)
    while length < most and a[ahi - 1 - length] == b[bhi - 1 - length]:
        length += 1
    return length


def _window_hashes(keys: List[int], low: int, high: int, size: int) -> List[int]:
    """The rolling hash of every window of `size` keys in keys[low:high], in order."""
    if size > high - low:
        return []
    top = pow(_BASE, size - 1, _MODULUS)
    value = 0
    for key in keys[low : low + size]:
        value = (value * _BASE + key + 1) % _MODULUS
    found = [value]
    for index in range(low + size, high):
        value = ((value - (keys[index - size] + 1) * top) * _BASE + keys[index] + 1) % _MODULUS
        found.append(value)
    return found


def _shares(
    a: List[int],
    alo: int,
    ahi: int,
    b: List[int],
    blo: int,
    bhi: int,
    size: int,
    suffix: bool = False,
) -> bool:
    """Whether a[alo:ahi] and b[blo:bhi] may share a window of `size` equal keys (by
    its hash: True can be a chance, never False where they do); with `suffix`, other
    than the two ranges' last windows, which are known to be equal."""
    first = _window_hashes(a, alo, ahi, size)
    second = _window_hashes(b, blo, bhi, size)
    if not first or not second:
        return False
    if not suffix:
        seen: Set[int] = set(first)
        return any(value in seen for value in second)
    counts: Dict[int, int] = {}
    for value in first:
        counts[value] = counts.get(value, 0) + 1
    last_a, last_b = first[-1], len(second) - 1
    for index, value in enumerate(second):
        count = counts.get(value, 0)
        if count and not (index == last_b and value == last_a and count == 1):
            return True
    return False
