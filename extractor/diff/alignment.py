"""The alignment of two key sequences: exactly the opcodes of
`difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()` (the rule of
docs/formats/diff.md), without difflib's worst case where the two are alike over long stretches.

difflib matches the longest block of equal keys first (the earliest in `a` among the
longest, then the earliest in `b`), then does the same on each side of it. Its search
takes time that grows with the length of a range times how often its keys repeat, and
a body's keys repeat a lot (the same layer, step after step): two identical bodies of
50,000 steps took 32 s. Yet where two bodies are alike, the block difflib chooses is
one of the runs of equal keys found by walking the two ranges side by side from their
starts, or from their ends: the longest such run (the earliest on a tie) is taken
without a search when it is proven, not assumed, to be difflib's choice, which it is
when no block one key longer is shared by the two ranges, and no other block as long
is shared that starts earlier in `a` (or as early, and earlier in `b`). Both are
checked in linear time by comparing the hashes of every window of that length (a
rolling hash): a hash shared by chance only sends the range to difflib, whose answer is
then the same, only slower. The ranges on each side of a block taken are treated the
same way; what no such block explains is aligned by difflib itself, on that range alone
(difflib's answer on a range depends only on the keys in it). A proof walks its whole
range, so it is spent only on blocks of `_SHORTEST` keys or more, and on no more than
`_WORK` times the keys of both sequences in all: bodies that share only short blocks
are difflib's whole, as before.
"""

import difflib
from typing import Dict, Hashable, List, Optional, Sequence, Tuple

#: (tag, i1, i2, j1, j2), as difflib's get_opcodes gives them.
Opcode = Tuple[str, int, int, int, int]
#: (i, j, size): a[i:i + size] == b[j:j + size], as difflib's get_matching_blocks.
Block = Tuple[int, int, int]

_TRIES = 8  # candidates for a range's block before it is left to difflib
#: A block shorter than this is left to difflib's search, which finds short ones fast,
#: where a proof walks the whole range: bodies that share only short blocks (unlike
#: bodies) would cost a walk per block.
_SHORTEST = 32
#: The proofs walk at most this many times the keys of both sequences, in all.
_WORK = 64
_MODULUS = (1 << 61) - 1  # a prime: the rolling hash's values are below it
_BASE = 1_000_003


class TooLong(Exception):
    """What is left for difflib is longer than `most` keys on both sides."""

    def __init__(
        self, a_range: Tuple[int, int], b_range: Tuple[int, int], left: Tuple[int, int]
    ) -> None:
        super().__init__(a_range, b_range, left)
        self.a_range = a_range  # (first, end) indexes in a of what is left, all of it
        self.b_range = b_range
        self.left = left  # how many keys are left, in a and in b


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
    found: List[Block] = []
    left: List[Tuple[int, int, int, int]] = []  # the ranges for difflib
    ranges = [(0, len(a), 0, len(b))]
    work = _WORK * (len(a) + len(b))  # keys the proofs may still walk through
    while ranges:
        alo, ahi, blo, bhi = ranges.pop()
        if alo >= ahi or blo >= bhi:
            continue
        block = None
        if work > 0:
            work -= (ahi - alo) + (bhi - blo)
            block = _proven_longest(a, alo, ahi, b, blo, bhi)
        if block is None:
            left.append((alo, ahi, blo, bhi))
            continue
        i, j, size = block
        found.append(block)
        ranges += [(alo, i, blo, j), (i + size, ahi, j + size, bhi)]
    left.sort()
    if left and most is not None:
        counts = sum(r[1] - r[0] for r in left), sum(r[3] - r[2] for r in left)
        if min(counts) > most:
            raise TooLong((left[0][0], left[-1][1]), (left[0][2], left[-1][3]), counts)
    for alo, ahi, blo, bhi in left:
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        found += [(alo + i, blo + j, n) for i, j, n in matcher.get_matching_blocks() if n]
    found.sort()
    merged: List[Block] = []
    for i, j, size in found:  # adjacent blocks become one, as difflib leaves them
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        else:
            merged.append((i, j, size))
    merged.append((len(a), len(b), 0))
    return merged


def _proven_longest(
    a: List[int], alo: int, ahi: int, b: List[int], blo: int, bhi: int
) -> Optional[Block]:
    """The block difflib's find_longest_match gives in a[alo:ahi], b[blo:bhi], when it
    is found and proven (see above) in a few tries; else None. The first candidate is
    the longest run of equal keys with the ranges side by side from their starts or
    from their ends; each shared window that disproves a candidate gives the next: the
    run of equal keys through it."""
    best: Block = (alo, blo, 0)
    for shift in (blo - alo, bhi - ahi):  # j - i along each of the two walks
        run = _longest_run(a, alo, ahi, b, blo, bhi, shift)
        if run[2] > best[2] or (run[2] == best[2] and run < best):
            best = run
    for _ in range(_TRIES):
        size = best[2]
        if size < _SHORTEST:
            return None
        found = _shared(a, alo, ahi, b, blo, bhi, size + 1, None)
        if found is None:
            found = _shared(a, alo, ahi, b, blo, bhi, size, best)
            if found is None:
                return best
        i, j = found
        start = i  # the run of equal keys through the shared window
        while start > alo and start + j - i > blo and a[start - 1] == b[start - 1 + j - i]:
            start -= 1
        end = i
        while end < ahi and end + j - i < bhi and a[end] == b[end + j - i]:
            end += 1
        if end - start < size or (end - start == size and (start, start + j - i) >= best[:2]):
            return None  # hashes shared by chance
        best = (start, start + j - i, end - start)
    return None


def _longest_run(
    a: List[int], alo: int, ahi: int, b: List[int], blo: int, bhi: int, shift: int
) -> Block:
    """The longest run of a[i] == b[i + shift] within the ranges, the earliest of them."""
    low, high = max(alo, blo - shift), min(ahi, bhi - shift)
    best: Block = (alo, blo, 0)
    run = 0
    for i in range(low, high + 1):
        if i < high and a[i] == b[i + shift]:
            run += 1
            continue
        if run > best[2]:
            best = (i - run, i - run + shift, run)
        run = 0
    return best


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


def _shared(
    a: List[int],
    alo: int,
    ahi: int,
    b: List[int],
    blo: int,
    bhi: int,
    size: int,
    before: Optional[Block],
) -> Optional[Tuple[int, int]]:
    """Where (i, j) a[alo:ahi] and b[blo:bhi] may share a window of `size` equal keys
    (by its hash: it can be a chance, but none is missed); with `before`, only one that
    starts earlier in a than `before`, or as early and earlier in b. None: nowhere."""
    first: Dict[int, int] = {}  # a window's hash -> where it first starts
    for index, value in enumerate(_window_hashes(a, alo, ahi, size), alo):
        first.setdefault(value, index)
    for index, value in enumerate(_window_hashes(b, blo, bhi, size), blo):
        start = first.get(value)
        if start is not None and (
            before is None or start < before[0] or (start == before[0] and index < before[1])
        ):
            return start, index
    return None
