"""One side of a diff: a body of a profile, read as units (one per step), and the facts of
its profile that make two bodies more or less comparable.

The body is found as blocks.json finds it (core/blocks.py's BlockBodies on the walk over
the step rows, so `run` and `block` number the bodies exactly as `extract blocks` does),
keeping no statistics and no body but the one asked for. The walk then reads its step
range only, and `BodyUnits` sums its rows per step: a unit. Only that body's rows are
ever held.
"""

from pathlib import Path
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ..core.blocks import BlockBodies, Body
from ..core.profile import STEP_TABLES, Profile
from ..core.pvafacts import NoPvaFacts, PvaFacts, PvaModule, StepFacts, SummaryFacts
from ..core.rules import StageRules
from ..core.steps import BadValue, NamedStep, sum64, whole
from ..core.walk import Consumer, walk
from ..errors import ProfileError, UsageError

#: (run, block) of a body, as blocks.json numbers them.
BodyKey = Tuple[int, int]

#: The most steps a body may have: its units are held (about 200 bytes each), and a
#: longer body (one that runs to the end of a long trace) is refused as soon as its
#: rows pass the limit, before they are all read.
MAX_STEPS = 50_000


class LongBody(Exception):
    """A body of more than MAX_STEPS steps."""


class Unit(NamedTuple):
    """The rows of one step of a body, summed (docs/formats/diff.md, JSON: the units)."""

    step: int
    kind: str
    name: str
    stage: str
    cycles: int
    active_tiles: int
    vertices: Optional[str]  # None: read without pva
    max_exchange_code_bytes: Optional[int]

    def as_dict(self) -> dict:
        """The unit as the JSON's steps show it (the real name, no stage or kind)."""
        return {
            "step": self.step,
            "name": self.name,
            "cycles": self.cycles,
            "active_tiles": self.active_tiles,
            "vertices": self.vertices,
            "max_exchange_code_bytes": self.max_exchange_code_bytes,
        }


class Side(NamedTuple):
    """One body of one profile, and what its profile says around it."""

    profile: str  # the label, as given
    run: int
    block: int
    first_step: int
    end_step: Optional[int]
    units: List[Unit]
    tiles: int  # rows of memory_by_tile
    inferences: int  # distinct input-delivered steps
    bodies: int  # anchors
    pva: bool  # whether the pva facts were read

    @property
    def cycles(self) -> int:
        return sum(unit.cycles for unit in self.units)


class BodyFinder:
    """A BodyWriter (core/blocks.py) that sees every body as the pass closes it, keeps
    the one asked for (`wanted`; None: the first) and how many blocks each run has."""

    def __init__(self, wanted: Optional[BodyKey]) -> None:
        self.wanted = wanted
        self.found: Optional[Body] = None
        self.blocks_of_run: Dict[int, int] = {}

    def begin(self, profile_label: str, stages: Sequence[str]) -> None:
        self.found = None
        self.blocks_of_run = {}

    def body(self, body: Body) -> None:
        self.blocks_of_run[body.run] = body.block + 1
        if self.found is None and (self.wanted is None or self.wanted == (body.run, body.block)):
            self.found = body

    def end(self, statistics: dict) -> None:
        pass

    def missing(self, label: str, option: str, rules: StageRules) -> UsageError:
        """The usage error for a body that is not there: which runs and blocks are."""
        if not self.blocks_of_run:
            return UsageError(
                "{}: {}the profile has no bodies at all (no kernel step matches the "
                "anchor selector {!r})".format(
                    label, option + ": " if self.wanted else "", rules.anchor.pattern
                )
            )
        assert self.wanted is not None  # the first body exists once any does
        run, block = self.wanted
        if run not in self.blocks_of_run:
            return UsageError(
                "{}: {}: no run {}: the profile has runs {}".format(
                    label, option, run, spans(self.blocks_of_run)
                )
            )
        return UsageError(
            "{}: {}: no block {} in run {}: run {} has blocks 0-{}".format(
                label, option, block, run, run, self.blocks_of_run[run] - 1
            )
        )


def spans(numbers: Iterable[int]) -> str:
    """Sorted numbers as ranges: `1-2`, `0, 2-5`."""
    parts: List[str] = []
    ordered = sorted(set(numbers))
    start = 0
    for index, number in enumerate(ordered):
        if index + 1 == len(ordered) or ordered[index + 1] != number + 1:
            first = ordered[start]
            parts.append(str(first) if first == number else "{}-{}".format(first, number))
            start = index + 1
    return ", ".join(parts)


def read_side(
    path: Path,
    label: str,
    rules: StageRules,
    wanted: Optional[BodyKey],
    option: str,
    pva: Optional[PvaModule],
) -> Side:
    """The body `wanted` ((run, block); None: the first) of the profile at `path`, as
    units; `pva` None: without the pva facts. UsageError when there is no such body
    (`option` names the option that asked for it); ProfileError when the profile
    cannot be read; UsageError too when the body has more than MAX_STEPS steps."""
    finder = BodyFinder(wanted)
    try:
        with Profile(path, tables=STEP_TABLES + ("memory_by_tile",), check_start_end=False) as db:
            sql_names = db.names()
            found = BlockBodies(rules, label, finder, statistics=False)
            walk(db, rules, [found], sql_names)
            body = finder.found
            if body is None:
                raise finder.missing(label, option, rules)
            facts: SummaryFacts = NoPvaFacts() if pva is None else PvaFacts(pva, path)
            facts.expect_names(*sql_names)
            units = BodyUnits(facts)
            try:
                walk(db, rules, [units], sql_names, steps=(body.first_step, body.end_step))
            except LongBody:
                raise _long_body(label, option if wanted else "", body) from None
            tiles = db.tile_count()
    except BadValue as exc:
        raise ProfileError(path, str(exc)) from exc
    return Side(
        label,
        body.run,
        body.block,
        body.first_step,
        body.end_step,
        units.units,
        tiles,
        found.inferences,
        found.count,
        pva is not None,
    )


def _long_body(label: str, option: str, body: Body) -> UsageError:
    """The usage error for a body of more than MAX_STEPS steps (`option`: the one that
    chose it, "" for the default body)."""
    return UsageError(
        label,
        "{}the body of run {}, block {} (from step {} to {}) has more than {:,} steps: too "
        "long to align step by step; pass {} R:K of a shorter body (extract blocks lists "
        "them), or --rules whose anchor selector cuts the trace shorter".format(
            option + ": " if option else "",
            body.run,
            body.block,
            body.first_step,
            "the end of the trace" if body.end_step is None else "before {}".format(body.end_step),
            MAX_STEPS,
            option or "--block",
        ),
    )


class BodyUnits(Consumer):
    """The rows of one body, summed per step into Units, as the walk over the body's
    steps hands them (`walk(steps=...)`). A NULL cycles or active_tiles adds nothing, as
    in SQL's sum. LongBody at the first row of a step past the MAX_STEPS-th."""

    restartable = False  # a range of steps is read sorted, once
    times = True  # active_tiles
    every_row = True

    def __init__(self, facts: StepFacts) -> None:
        self.facts = facts

    def begin(self) -> None:
        self.units: List[Unit] = []
        self._rows: List[tuple] = []  # the rows of the step being read, a row per IPU
        self._named: Optional[NamedStep] = None
        # (program, compute set, kind) -> what a unit of it shows but its step and
        # sums: the same for every step of the pair, asked of names and pva once.
        self._known: Dict[
            Tuple[object, object, object], Tuple[str, str, str, Optional[str], Optional[int]]
        ] = {}

    def row(self, raw: tuple, named: NamedStep) -> None:
        if self._rows and raw[0] != self._rows[0][0]:
            self._close()
            if len(self.units) == MAX_STEPS:
                raise LongBody()
        if not self._rows:
            self._named = named
        self._rows.append(raw)

    def end(self) -> None:
        if self._rows:
            self._close()

    def _close(self) -> None:
        """The step read so far, as a unit."""
        step_rows, self._rows = self._rows, []
        step, kind, cycles, program, compute_set, tiles = step_rows[0][:6]  # the pair: every row's
        if len(step_rows) > 1 or cycles.__class__ is not int or tiles.__class__ is not int:
            where = "step {}: steps_by_ipu.".format(step)
            cycles = sum64(sum(whole(row[2], where + "cycles") or 0 for row in step_rows))
            tiles = sum64(sum(whole(row[5], where + "active_tiles") or 0 for row in step_rows))
        shown = self._known.get((program, compute_set, kind))
        if shown is None:
            named = self._named
            assert named is not None  # the first row of the step's
            shown = self._known[program, compute_set, kind] = (
                _kind_text(kind),
                named.name,
                named.classes.stage,
                self.facts.vertices(compute_set),
                self.facts.max_exchange_code_bytes(program),
            )
        self.units.append(
            Unit(step, shown[0], shown[1], shown[2], cycles, tiles, shown[3], shown[4])
        )


def _kind_text(kind: object) -> str:
    """steps.type as text: a blob read as UTF-8 (bad bytes replaced), NULL as ""."""
    if kind is None:
        return ""
    if isinstance(kind, bytes):
        return kind.decode("utf-8", "replace")
    return str(kind)
