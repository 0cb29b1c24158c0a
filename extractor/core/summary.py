"""From a profile to its summary: the start/end check (at opening), one pass over the step
rows, then the two aggregate queries.

The rows come in the spec's order from trace.read_trace (as stored when that is step
order, else sorted: see `_read_trace`). The pass feeds two accumulators: `FirstBody` (the
anchors and the kernel rows between the first two of them) and `DeviceSpans` (each
inference's device time); with blocks, a third (blocks.BlockBodies) rides along. Only the
first body's kernel rows ever ask pva for their facts, unless a `step_sink` (the step
tables of `--csv`) is given: it sees every row of the same pass, with the facts and
whether the row is in the first body.

A trace has millions of rows, so the pass does little per row (see `_one_pass`): rows
stay the tuples SQLite gives, their names are looked up once per (program, compute set)
pair, and a StepRow is made only for the first body's kernels (and, with a step sink,
for every row).
"""

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, List, NamedTuple, Optional, Tuple, Union

from ..errors import ProfileError, StrPath, shown_path
from .model import summary_dict
from .profile import Profile, RawStepRow
from .pvafacts import NoPvaFacts, PvaFacts, PvaModule, StepFacts, import_pva
from .rules import StageRules, load_rules
from .steps import (
    DEVICE_KINDS,
    INPUT_DELIVERED_KIND,
    OUTPUT_BEGINS_KIND,
    BadValue,
    NamedStep,
    SqlValue,
    StepNames,
    StepRow,
    StepSink,
    make_step_row,
    whole,
)
from .trace import compile_only_warning, no_anchor_warning, read_trace

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


class FirstBody:
    """Counts anchors (distinct steps) and keeps the kernel rows with A[0] <= step < A[1]."""

    def __init__(self) -> None:
        self.anchors = 0
        self.kernels: List[StepRow] = []
        self._last_anchor: SqlValue = None

    def add(self, raw: RawStepRow, named: NamedStep) -> None:
        """A kernel row (raw, from Profile.step_rows) and its name."""
        classes = named.classes
        if classes.anchor and raw[0] != self._last_anchor:
            self.anchors += 1
            self._last_anchor = raw[0]
        if self.anchors == 1:
            self.kernels.append(make_step_row(raw, named))

    @property
    def in_body(self) -> bool:
        """Whether the row just added is in the first body (A[0] <= step < A[1])."""
        return self.anchors == 1


class DeviceSpans:
    """max(end) - min(start) of the device rows of each inference, in one pass.

    An inference opens at an input-delivered step and closes at the first output-begins
    step after it; several may be open at once, and all close together. Device rows are
    folded into one segment per opening, so closing costs one sweep over the open ones.
    """

    def __init__(self, rules: StageRules) -> None:
        self.rules = rules
        self.spans: List[dict] = []
        self.warnings: List[str] = []
        self.saw_input = False
        self._open: List[int] = []  # input-delivered steps still waiting for output
        self._segments: List[list] = []  # [min start, max end] of device rows since each opening

    def fold(self, low: SqlValue, high: SqlValue) -> None:
        """Device rows seen since the last marker row, as their min start and max end:
        they belong to the newest open inference's segment (to none when none is open)."""
        if self._segments:
            segment = self._segments[-1]
            if low is not None and (segment[0] is None or low < segment[0]):
                segment[0] = low
            if high is not None and (segment[1] is None or high > segment[1]):
                segment[1] = high

    def marker(self, step: SqlValue, kind: str) -> None:
        """An input-delivered or output-begins row (kind and name both match); call
        fold() first with the device rows before it."""
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


_Passed = Tuple[FirstBody, DeviceSpans, bool, Optional["BlockBodies"]]


def _read_trace(
    profile: Profile,
    rules: StageRules,
    step_sink: Optional[StepSink],
    facts: StepFacts,
    blocks_factory: Optional[Callable[[], "BlockBodies"]] = None,
    sql_names: Optional[Tuple[dict, dict]] = None,
) -> _Passed:
    """(FirstBody, DeviceSpans, whether there were rows, the blocks accumulator or None):
    the pass over the step rows (trace.read_trace: stored order where it is step order,
    else sorted; the pass may be made twice). `blocks_factory()` makes a fresh
    accumulator of every body's kernel rows (blocks.BlockBodies) for each attempt of the
    pass. A `step_sink` sees each row once, so it gets sorted rows from the start."""
    program_names, compute_set_names = sql_names if sql_names is not None else profile.names()
    names = StepNames(program_names, compute_set_names, rules, all_notable=step_sink is not None)

    def one_pass(batches: Iterable[list]) -> _Passed:
        return _one_pass(
            batches,
            names,
            rules,
            step_sink,
            facts,
            blocks=blocks_factory() if blocks_factory else None,
        )

    return read_trace(profile, one_pass, sorted_only=step_sink is not None)


def _one_pass(
    batches: Iterable[list],
    names: StepNames,
    rules: StageRules,
    step_sink: Optional[StepSink],
    facts: StepFacts,
    blocks: Optional["BlockBodies"] = None,
) -> _Passed:
    """Most rows are exchange or compute rows that only widen the current inference's
    [min start, max end]: that is done here, on local variables, and handed to `spans`
    at the next marker row. The rest, "notable" rows (kernels and marker candidates, a
    quarter of the rows; every row for a `step_sink`, which gets each as a StepRow), take
    the general path below. Once the first body is over, kernel rows that are not
    anchors no longer need it (`StepNames.counted`), unless `blocks` (every body's
    kernel rows) is given: it sees every notable row."""
    body, spans = FirstBody(), DeviceSpans(rules)
    notable, fill = names.notable.rows, names.notable.fill
    body_over = blocks is not None  # with blocks, every kernel row stays notable
    block_row = blocks.row if blocks is not None else None
    markers = {INPUT_DELIVERED_KIND: "input_delivered", OUTPUT_BEGINS_KIND: "output_begins"}
    low = high = None  # of the device rows since the last marker row
    any_rows = False
    for batch in batches:
        any_rows = True
        for raw in batch:
            step, kind, _, _, start, end, program, compute_set = raw
            try:
                is_notable = notable[compute_set][program]
            except KeyError:  # a pair met for the first time
                is_notable = fill(compute_set, program)
            if is_notable:
                named = names[program, compute_set]
                classes = named.classes
                if kind in markers and getattr(classes, markers[kind]):
                    spans.fold(low, high)  # the device rows before the marker
                    low = high = None
                    spans.marker(step, kind)
                if block_row is not None:
                    block_row(step, kind, raw[2], classes)
                if classes.kernel:
                    body.add(raw, named)
                    if not body_over and body.anchors > 1:
                        body_over = True
                        notable, fill = names.counted.rows, names.counted.fill
                if step_sink is not None:
                    step_sink(make_step_row(raw, named), facts, body.in_body)
            if kind in DEVICE_KINDS:  # never a marker's kind
                if start is not None and (low is None or start < low):
                    low = start
                if end is not None and (high is None or end > high):
                    high = end
    spans.fold(low, high)
    if blocks is not None:
        blocks.finish()
    return body, spans, any_rows, blocks


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
        return _pass(profile, path, rules, pva, use_pva, profile_label, step_sink, blocks)


def _pass(
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
    blocks_factory = None
    if blocks is not None:
        from .blocks import BlockBodies  # only a run asked for blocks.json needs it

        writer = blocks[0]

        def blocks_factory() -> BlockBodies:
            return BlockBodies(rules, label, writer, keep=writer is None)

    names = profile.names()
    facts.expect_names(*names)  # pva must name each program and compute set as SQL does
    body, spans, any_rows, bodies = _read_trace(
        profile, rules, step_sink, facts, blocks_factory, names
    )
    if not any_rows:
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
