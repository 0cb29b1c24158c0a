"""From a profile to its summary: the start/end check (at opening), one walk over the step
rows, then the two aggregate queries.

The walk (walk.py) feeds two consumers: `FirstBody` (the anchors and the kernel rows
between the first two of them) and `DeviceSpans` (each inference's device time); with
blocks, a third (blocks.BlockBodies) rides along, and with a `step_sink` (the step
tables of `--csv`) a fourth sees every row, with the facts and whether the row is in the
first body. Only the first body's kernel rows ever ask pva for their facts, unless a
step sink is given.
"""

from pathlib import Path
from typing import TYPE_CHECKING, List, NamedTuple, Optional, Tuple, Union

from ..errors import ProfileError, StrPath, shown_path
from .model import summary_dict
from .profile import Profile, RawStepRow
from .pvafacts import NoPvaFacts, PvaFacts, PvaModule, StepFacts, import_pva
from .rules import StageRules, load_rules
from .steps import (
    INPUT_DELIVERED_KIND,
    BadValue,
    NamedStep,
    SqlValue,
    StepRow,
    StepSink,
    make_step_row,
    whole,
)
from .walk import Consumer, compile_only_warning, no_anchor_warning, walk

if TYPE_CHECKING:  # blocks.py is imported only by a run that asks for blocks.json
    from .blocks import BlockBodies, BodyWriter


#: The warning for a profile whose vars_info holds no rows.
NO_LOWERED_VARS = (
    "vars_info is empty: the profile was probably made without "
    "autoReport.outputLoweredVars (set it to true with autoReport.all), so "
    "exchange_memory_per_tile's min, avg and max are null"
)


class Extraction(NamedTuple):
    """A summary (a dict in the spec's key order) and the warnings met making it; with
    `blocks=True`, also every body of the same pass (blocks.BlockBodies: docs/formats/blocks.md)."""

    summary: dict
    warnings: List[str]
    blocks: Optional["BlockBodies"] = None


class FirstBody(Consumer):
    """Counts anchors (distinct steps) and keeps the kernel rows with A[0] <= step < A[1]."""

    times = True  # its rows become StepRows, with their start and end

    def begin(self) -> None:
        self.anchors = 0
        self.kernels: List[StepRow] = []
        self._last_anchor: SqlValue = None
        self.plain_kernels = True

    def kernel(self, raw: RawStepRow, named: NamedStep) -> None:
        """A kernel row (raw, from Profile.step_rows) and its name: past the first body,
        only anchors still matter (counted as QKV executions)."""
        classes = named.classes
        if classes.anchor and raw[0] != self._last_anchor:
            self.anchors += 1
            self._last_anchor = raw[0]
            if self.anchors > 1:
                self.plain_kernels = False
        if self.anchors == 1:
            self.kernels.append(make_step_row(raw, named))

    @property
    def in_body(self) -> bool:
        """Whether the row just added is in the first body (A[0] <= step < A[1])."""
        return self.anchors == 1


class DeviceSpans(Consumer):
    """max(end) - min(start) of the device rows of each inference, in one walk.

    An inference opens at an input-delivered step and closes at the first output-begins
    step after it; several may be open at once, and all close together. Device rows are
    folded into one segment per opening, so closing costs one sweep over the open ones.
    """

    times = True

    def __init__(self, rules: StageRules) -> None:
        self.rules = rules

    def begin(self) -> None:
        self.spans: List[int] = []
        self.warnings: List[str] = []
        self.saw_input = False
        self._open: List[int] = []  # input-delivered steps still waiting for output
        self._segments: List[list] = []  # [min start, max end] of device rows since each opening

    def devices(self, low: SqlValue, high: SqlValue) -> None:
        """Device rows seen since the last marker row, as their min start and max end:
        they belong to the newest open inference's segment (to none when none is open)."""
        if self._segments:
            segment = self._segments[-1]
            if low is not None and (segment[0] is None or low < segment[0]):
                segment[0] = low
            if high is not None and (segment[1] is None or high > segment[1]):
                segment[1] = high

    def marker(self, step: SqlValue, kind: str) -> None:
        """An input-delivered or output-begins row (kind and name both match); the walk
        calls devices() first with the device rows before it."""
        if kind == INPUT_DELIVERED_KIND:
            self.saw_input = True
            if not self._open or self._open[-1] != step:
                self._open.append(step)
                self._segments.append([None, None])
        elif self._open and step > self._open[-1]:
            self._close()

    def _close(self) -> None:
        # Inference i covers segments i..last: sweep from the last opening backwards.
        spans = [None] * len(self._open)
        low = high = None
        for index in range(len(self._open) - 1, -1, -1):
            seg_low, seg_high = self._segments[index]
            if seg_low is not None and (low is None or seg_low < low):
                low = seg_low
            if seg_high is not None and (high is None or seg_high > high):
                high = seg_high
            if low is not None and high is not None:
                spans[index] = whole(
                    high - low,
                    "the device span of the inference whose input arrived at step {}".format(
                        self._open[index]
                    ),
                )
        for step, span in zip(self._open, spans):
            if span is None:
                self.warnings.append(
                    "the inference whose input arrived at step {} has no "
                    "exchange or compute rows: no device span".format(step)
                )
            else:
                self.spans.append(span)
        self._open, self._segments = [], []

    def finish(self) -> None:
        """The warnings of inferences left open and of a trace with no input (said only
        of a trace with rows, by the summary)."""
        for step in self._open:
            self.warnings.append(
                "no output-begins step ({!r}) after the input delivered at step {}: that "
                "inference gives no device span".format(self.rules.output_begins.pattern, step)
            )
        self._open, self._segments = [], []
        if not self.saw_input:
            self.warnings.append(
                "no input-delivered step ({!r}): device_spans is empty".format(
                    self.rules.input_delivered.pattern
                )
            )


class _SinkRows(Consumer):
    """A step sink (steptables.StepTables, say) as a consumer: every row as a StepRow,
    with the facts and whether it is in the first body (after `first_body` saw it). It
    sees each row once: the walk reads sorted rows from the start."""

    restartable = False
    times = True
    every_row = True

    def __init__(self, sink: StepSink, facts: StepFacts, first_body: FirstBody) -> None:
        self.sink = sink
        self.facts = facts
        self.first_body = first_body

    def row(self, raw: RawStepRow, named: NamedStep) -> None:
        self.sink(make_step_row(raw, named), self.facts, self.first_body.in_body)


def summarize(
    path: StrPath,
    rules: Optional[StageRules] = None,
    *,
    pva: Optional[PvaModule] = None,
    use_pva: bool = True,
    profile_label: Optional[str] = None,
    step_sink: Optional[StepSink] = None,
    blocks: bool = False,
    blocks_writer: Optional["BodyWriter"] = None,
) -> Extraction:
    """The summary of one profile.pop, as docs/formats/summary.md defines it.

    `rules` defaults to the installed stage_rules.toml; `pva` to the importable module;
    `use_pva=False` leaves the three pva facts null; `profile_label` defaults to
    `str(path)` (the "profile" value; a byte that is not UTF-8 shown as `\\xNN`: see
    `shown_path`). `step_sink(row, facts, in_first_body)`, when given, is called for
    every step row in order, during the same pass. `blocks`: also cut every body
    from the same pass (`Extraction.blocks`, a blocks.BlockBodies); `blocks_writer`
    (blockformats) writes them as they close, else they are kept (its `result()`).
    """
    rules = rules if rules is not None else load_rules()
    path = Path(path)
    try:
        return _summarize(
            path,
            rules,
            pva,
            use_pva,
            profile_label,
            step_sink,
            (blocks_writer,) if blocks else None,
        )
    except BadValue as exc:
        raise ProfileError(path, str(exc)) from exc


#: With blocks: (the writer of every body as it closes, or None to keep them).
_BlocksAsked = Optional[Tuple[Optional["BodyWriter"]]]


def _summarize(
    path: Path,
    rules: StageRules,
    pva: Optional[PvaModule],
    use_pva: bool,
    profile_label: Optional[str],
    step_sink: Optional[StepSink],
    blocks: _BlocksAsked,
) -> Extraction:
    with Profile(path) as profile:
        return _summary_of(profile, path, rules, pva, use_pva, profile_label, step_sink, blocks)


def _summary_of(
    profile: Profile,
    path: Path,
    rules: StageRules,
    pva: Optional[PvaModule],
    use_pva: bool,
    profile_label: Optional[str],
    step_sink: Optional[StepSink],
    blocks: _BlocksAsked = None,
) -> Extraction:
    """The summary and its warnings (and, when `blocks` is (writer,), every body): the
    step pass, then the aggregates."""
    facts: Union[NoPvaFacts, PvaFacts]
    if not use_pva:
        facts = NoPvaFacts()
    else:
        facts = PvaFacts(pva if pva is not None else import_pva(), path)
    warnings = []
    label = profile_label if profile_label is not None else shown_path(path)
    body, spans = FirstBody(), DeviceSpans(rules)
    consumers: List[Consumer] = [body, spans]
    bodies: Optional[BlockBodies] = None
    if blocks is not None:
        from . import blocks as block_bodies  # only a run asked for blocks.json needs it

        writer = blocks[0]
        bodies = block_bodies.BlockBodies(rules, label, writer, keep=writer is None)
        consumers.append(bodies)
    if step_sink is not None:
        consumers.append(_SinkRows(step_sink, facts, body))
    names = profile.names()
    facts.expect_names(*names)  # pva must name each program and compute set as SQL does
    if not walk(profile, rules, consumers, names):
        warnings.append(compile_only_warning())
    else:
        if body.anchors == 0:
            warnings.append(no_anchor_warning(rules))
        spans.finish()
        warnings.extend(spans.warnings)
    kernels = [row.record(facts) for row in body.kernels]
    attention_exchanges = facts.attention_exchanges(rules.attention_exchange)
    exchange_memory = profile.exchange_memory_per_tile()
    if not profile.has_vars_info_rows():
        warnings.append(NO_LOWERED_VARS)
    allocated_memory = profile.allocated_memory()
    summary = summary_dict(
        profile=label,
        kernels=kernels,
        attention_exchanges=attention_exchanges,
        exchange_memory_per_tile=exchange_memory,
        device_spans=spans.spans,
        qkv_executions=body.anchors,
        allocated_memory=allocated_memory,
    )
    return Extraction(summary, warnings, bodies)
