"""The trace: a profile's step rows, handed in the spec's order (step id, then stored
order) to the pass that consumes them, and what is said of a trace with none of them or
with no anchor.

`read_trace` is the one place that decides how the rows are read. It first reads them as
steps_by_ipu stores them, with no sort: that is the spec's order when the table is
stored in step order (as Poplar writes it), which is checked as the rows come. Should a
row be out of order, or should that read meet any fault, it makes the pass again, from
scratch, on SQLite's sorted rows, whose results and errors are the ones the spec defines.

A pass (the summary's, summary.py, with or without the blocks riding on it; `extract
blocks`' own, blocks.py) is a function of the rows, called with an iterable of lists of
rows (a list is looped over faster than a generator is resumed): it loops over them
once, keeping what it needs and never the rows, and returns its result. It may be called
twice, so each call starts afresh.
"""

from operator import itemgetter
from typing import TYPE_CHECKING, Callable, Generator, Iterable, List, TypeVar

from ..errors import ProfileError
from .rules import StageRules
from .steps import BadValue

if TYPE_CHECKING:
    from .profile import Profile

T = TypeVar("T")

_step = itemgetter(0)  # a row's step id, in both shapes Profile.step_row_batches gives


class OutOfOrder(Exception):
    """A step row whose step id is smaller than the one before (read in stored order)."""


def read_trace(
    profile: "Profile",
    make_pass: Callable[[Iterable[list]], T],
    *,
    sorted_only: bool = False,
    bodies: bool = False,
) -> T:
    """`make_pass(batches)`: a pass over the step rows of `profile` (a profile.Profile)
    in the spec's order, its result returned. `sorted_only`: SQLite's sorted rows from
    the start (a pass that cannot be made twice, as one writing the step tables).
    `bodies`: the rows as (step, kind, cycles, program, compute_set) only (see
    Profile.step_row_batches)."""
    if not sorted_only and profile.can_read_in_stored_order:
        try:
            return _pass(profile, make_pass, stored_order=True, bodies=bodies)
        except (OutOfOrder, BadValue, ProfileError):
            pass
    return _pass(profile, make_pass, stored_order=False, bodies=bodies)


def _pass(
    profile: "Profile", make_pass: Callable[[Iterable[list]], T], stored_order: bool, bodies: bool
) -> T:
    batches = profile.step_row_batches(stored_order=stored_order, bodies=bodies)
    rows = _in_step_order(batches) if stored_order else batches
    try:
        return make_pass(rows)
    finally:
        rows.close()  # an abandoned read ends its query now
        batches.close()


def _in_step_order(batches: Iterable[list]) -> Generator[list, None, None]:
    """The batches, each checked before it is given: OutOfOrder at a step id smaller than
    the one before it. The check of a batch runs in C (its step ids, sorted: a run that
    is already sorted costs a comparison per row and no move), as cheap as the check of
    each row in the pass's own loop was."""
    last = -(1 << 64)  # below any step id (64-bit integers)
    for batch in batches:
        steps: List[int] = list(map(_step, batch))
        if steps:
            if steps[0] < last or steps != sorted(steps):
                raise OutOfOrder()
            last = steps[-1]
        yield batch


def compile_only_warning() -> str:
    """The warning for a profile with no step rows."""
    return (
        "no steps: a compile-only profile (no execution trace), so no kernels, "
        "device spans or QKV executions"
    )


def no_anchor_warning(rules: StageRules) -> str:
    """The warning for a trace in which no kernel step is an anchor."""
    return (
        "no kernel step matches the anchor selector {!r} (kernels {!r}): kernels is empty".format(
            rules.anchor.pattern, rules.kernel.pattern
        )
    )
