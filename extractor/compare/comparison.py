"""Comparing recordings: several summary.json files side by side, against the first.

A *recording* (readback/recordings.py) is one summary.json, named by its folder (or by --label);
`compare` builds one `Comparison` (the rows of the table, plus the attention exchanges
matched across recordings by `mask_ids`); formats.py renders it.
"""

from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..core import metrics
from ..core.metrics import mask_ids, percent_change
from ..core.model import MinMeanMax, Summary
from ..errors import CompareError
from ..readback.recordings import Recording

# ---- the comparison ----------------------------------------------------------------

STAGES, SPANS, QKV, EXCHANGE_MEMORY, ALLOCATED, EXCHANGES = (
    "kernel stages",
    "device spans",
    "QKV executions",
    "exchange code per tile",
    "allocated memory per tile",
    "attention exchanges",
)
# The rows of the files beside the summaries (derived.py), when one belongs.
ALL_CYCLES, TILE_MEMORY = "all cycles, inference 1 (breakdown.json)", "tile memory (memory.json)"
# The row summing every stage has a section of its own, so no stage label can clash.
STAGE_TOTAL, TOTAL = "kernel stages, total", "all stages"
# The unit of the stage rows and their total: sums of kernel rows' cycles, never all of a
# block's steps (docs/glossary.md); a device span's unit is cycles, its label says span.
KERNEL_CYCLES = "kernel cycles"


class Row(NamedTuple):
    """One line of the table: a value per recording (None where it has none)."""

    section: str
    metric: str
    unit: str
    values: Tuple
    # Percent change against the first recording, per recording (None for the first and
    # where either value is missing or the first is 0); None for rows without one.
    change: Optional[Tuple]
    # The metric's name (extractor.core.metrics) whose values the row holds; None for a row of
    # numbers no metric names (device spans in milliseconds).
    metric_name: Optional[str] = None


class ExchangeCell(NamedTuple):
    name: str  # as the recording names it
    maximum: float
    mean: float


class Exchange(NamedTuple):
    """One attention exchange, matched across recordings by its masked name."""

    key: str  # the masked name
    occurrence: int  # 1 for the first exchange with this masked name in a recording, ...
    cells: Tuple  # ExchangeCell, or None where absent (or unknown: recording without pva)
    matched: bool  # found in every recording that has pva facts

    @property
    def metric_name(self) -> str:
        """The metric (extractor.core.metrics) of its `maximum`."""
        return metrics.attention_exchange_metric(metrics.numbered(self.key, self.occurrence))


class Comparison(NamedTuple):
    recordings: List[Recording]
    clock_mhz: Optional[float]
    rows: List[Row]
    exchanges: List[Exchange]
    # The budget checks (extractor.compare.budget.BudgetCheck) the formats mark; None without
    # a budget.
    checks: Optional[Sequence] = None

    @property
    def stage_rows(self) -> List[Row]:
        return [row for row in self.rows if row.section == STAGES]

    def has_pva(self, index: int) -> bool:
        return self.recordings[index].summary.has_pva

    def with_checks(self, checks: Sequence) -> "Comparison":
        """This comparison with budget checks to mark, and a row for each checked metric
        it has no row for (the device spans' max and mean), after the device spans."""
        rows = list(self.rows)
        checked = {check.metric for check in checks}
        extra = [
            name for name in (metrics.DEVICE_SPAN_MAX, metrics.DEVICE_SPAN_MEAN) if name in checked
        ]
        if extra:
            found = [metrics.metrics(r.summary, r.beside) for r in self.recordings]
            after = max(i for i, row in enumerate(rows) if row.section == SPANS) + 1
            rows[after:after] = [
                _with_change(
                    SPANS,
                    "device span " + name[len(metrics.DEVICE_SPAN) :],
                    "cycles",
                    (each.get(name) for each in found),
                    name,
                )
                for name in extra
            ]
        return self._replace(rows=rows, checks=list(checks))


def _with_change(section, metric, unit, values, metric_name=None) -> Row:
    values = tuple(values)
    change = (None,) + tuple(percent_change(v, values[0]) for v in values[1:])
    return Row(section, metric, unit, values, change, metric_name)


def _ordered_union(sequences) -> list:
    seen, ordered = set(), []
    for sequence in sequences:
        for item in sequence:
            if item not in seen:
                seen.add(item)
                ordered.append(item)
    return ordered


def _exchange_keys(summary: Summary) -> Dict[Tuple[str, int], ExchangeCell]:
    keyed: Dict[Tuple[str, int], ExchangeCell] = {}
    counts: Dict[str, int] = {}
    for exchange in summary.attention_exchanges or ():
        key = mask_ids(exchange.name)
        counts[key] = counts.get(key, 0) + 1
        keyed[(key, counts[key])] = ExchangeCell(*exchange)
    return keyed


#: memory:balance's unit: a ratio from 0 to 1, shown to four decimals (a tenth would hide
#: what a recompilation moved).
BALANCE_UNIT = "mean / max"


def _beside_unit(name: str) -> str:
    if name == metrics.TIME_SPAN:
        return "cycles"  # a span: wall time in cycles
    if name.startswith(metrics.TIME):
        return "all cycles"
    if name == metrics.MEMORY_BALANCE:
        return BALANCE_UNIT
    if name == metrics.MEMORY_OVER:
        return "tiles"
    return "bytes"


def _beside_rows(recordings: Sequence[Recording]) -> List[Row]:
    """A row per metric of the files beside the summaries that belong to them
    (Recording.beside: breakdown.json's all cycles, memory.json's tile memory), in the
    order the recordings first have them; none when no recording has any."""
    found = [r.beside or {} for r in recordings]
    rows = []
    for name in _ordered_union(found):
        section = ALL_CYCLES if name.startswith(metrics.TIME) else TILE_MEMORY
        values = (each.get(name) for each in found)
        rows.append(_with_change(section, name, _beside_unit(name), values, name))
    return rows


def compare(recordings: List[Recording], clock_mhz: Optional[float] = None) -> Comparison:
    """The comparison table of two or more recordings, against the first.

    CompareError when a recording has nothing in common with the first: no first-body
    kernel stage and no attention exchange (masked name) in both.
    """
    if len(recordings) < 2:
        raise CompareError(
            "compare", "needs two or more recordings, got {}".format(len(recordings))
        )
    summaries = [r.summary for r in recordings]
    rows = []

    stage_cycles = [s.stage_cycles() for s in summaries]
    for stage in _ordered_union(stage_cycles):
        rows.append(
            _with_change(
                STAGES,
                stage,
                KERNEL_CYCLES,
                (c.get(stage) for c in stage_cycles),
                metrics.stage_metric(stage),
            )
        )
    rows.append(
        _with_change(
            STAGE_TOTAL,
            TOTAL,
            KERNEL_CYCLES,
            (s.stages_total for s in summaries),
            metrics.STAGES_TOTAL,
        )
    )

    for number in range(max(len(s.device_spans) for s in summaries)):
        spans = [
            s.device_spans[number] if number < len(s.device_spans) else None for s in summaries
        ]
        metric = "device span {}".format(number + 1)
        rows.append(
            _with_change(SPANS, metric, "cycles", spans, metrics.device_span_metric(number + 1))
        )
        if clock_mhz is not None:
            rows.append(
                Row(
                    SPANS,
                    metric,
                    "ms at {:g} MHz".format(clock_mhz),
                    tuple(None if c is None else c / (clock_mhz * 1000.0) for c in spans),
                    None,
                )
            )

    rows.append(
        Row(
            QKV,
            QKV,
            "count",
            tuple(s.qkv_executions for s in summaries),
            None,
            metrics.QKV_EXECUTIONS,
        )
    )
    for section, prefix, stats in (
        (EXCHANGE_MEMORY, metrics.EXCHANGE_MEMORY, [s.exchange_memory for s in summaries]),
        (ALLOCATED, metrics.ALLOCATED_MEMORY, [s.allocated_memory for s in summaries]),
    ):
        for name in MinMeanMax._fields:  # min, mean, max: the metrics' STATISTICS
            rows.append(
                Row(
                    section,
                    "{}, {}".format(section, name),
                    "bytes",
                    tuple(getattr(each, name) for each in stats),
                    None,
                    prefix + name,
                )
            )

    rows += _beside_rows(recordings)

    keyed = [_exchange_keys(s) for s in summaries]
    known = [s.has_pva for s in summaries]
    exchanges = []
    for key, occurrence in _ordered_union(keyed):
        cells = tuple(k.get((key, occurrence)) for k in keyed)
        matched = all(cell is not None for cell, has in zip(cells, known) if has)
        exchanges.append(Exchange(key, occurrence, cells, matched))

    first = recordings[0]
    for index in range(1, len(recordings)):
        shares_stage = any(stage in stage_cycles[index] for stage in stage_cycles[0])
        shares_exchange = any(key in keyed[0] for key in keyed[index])
        if not (shares_stage or shares_exchange):
            other = recordings[index]
            raise CompareError(
                other.path,
                "nothing in common with {} ({}): no first-body "
                "kernel stage and no attention exchange in both".format(first.path, first.label),
            )
    return Comparison(list(recordings), clock_mhz, rows, exchanges)
