"""The first of some tracks, in order, whose last slice ends at or before a time, found
in O(log n) (TrackSet's rule once a kind has many tracks: rows that overlap by the
thousand would otherwise cost a scan of every track each)."""

from typing import List, Optional

_NEVER = float("inf")


class FirstFit:
    """The ends of tracks 0, 1, ... as a tree of minima: leaves from `_size`."""

    def __init__(self, ends: List[int]) -> None:
        self._count = 0
        self._size = 1
        self._tree: List[float] = [_NEVER, _NEVER]
        for end in ends:
            self.append(end)

    def append(self, end: int) -> None:
        if self._count == self._size:  # full: twice the leaves, the ends kept
            leaves = self._tree[self._size :]
            self._size *= 2
            self._tree = [_NEVER] * (2 * self._size)
            for index, value in enumerate(leaves):
                self.set(index, value)
        self._count += 1
        self.set(self._count - 1, end)

    def set(self, index: int, end: float) -> None:
        tree = self._tree
        at = index + self._size
        tree[at] = end
        at //= 2
        while at:
            left, right = tree[2 * at], tree[2 * at + 1]
            tree[at] = left if left <= right else right
            at //= 2

    def first(self, time: int) -> Optional[int]:
        """The first track whose end is at or before `time` (None: none is)."""
        tree = self._tree
        if tree[1] > time:
            return None
        at = 1
        while at < self._size:
            at *= 2
            if tree[at] > time:
                at += 1
        return at - self._size
