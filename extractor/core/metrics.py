"""The metric names: one vocabulary for every table the tool writes (docs/formats/budget.md,
"Metrics"). `metrics(summary)` gives a summary's numbers under these names, in the order
the comparison lists its rows; a number that is null or absent in the summary is absent
here. compare's rows, budgets, `extract table` and the report all name numbers this way.
"""

import re
from typing import Dict, List, Optional, Union

from .model import Summary

Number = Union[int, float]

STAGE = "stage:"  # + a stage's label
STAGES_TOTAL = "stages:total"
DEVICE_SPAN = "device_span:"  # + the span's number from 1, or "max" / "mean"
DEVICE_SPAN_MAX = DEVICE_SPAN + "max"
DEVICE_SPAN_MEAN = DEVICE_SPAN + "mean"
QKV_EXECUTIONS = "qkv_executions"
EXCHANGE_MEMORY = "exchange_memory:"  # + "min", "mean" or "max"
ALLOCATED_MEMORY = "allocated_memory:"  # + "min", "mean" or "max"
STATISTICS = ("min", "mean", "max")
ATTENTION_EXCHANGE = "attention_exchange:"  # + the exchange's masked name


def stage_metric(label: str) -> str:
    return STAGE + label


def device_span_metric(number: int) -> str:
    """The n-th device span's name, n from 1."""
    return DEVICE_SPAN + str(number)


def attention_exchange_metric(masked_name: str) -> str:
    return ATTENTION_EXCHANGE + masked_name


# ---- masking compiler ids ----------------------------------------------------------

# `cs23_`, `copy617_`: a compute set's or copy's number, prefixed to a program name. As
# the spec says: only at the start of the name or right after `{`, `,` or `/` (the
# lookbehind: not after any character other than those three), so never inside a word
# (`abcs23_`) nor after `-`, `.` or a space (`a-cs5_/b` is kept).
_PREFIX_ID = re.compile(r"(?<![^{,/])(cs|copy)[0-9]+_")
# `/1570/`: a path part that is only digits (an op's number in the graph). Parts end at
# `/` and, in the `{a,b}_to_c` names of copies, at `,` `{` `}`, or at the end of the name
# (`\Z`: `$` would also match before a final newline).
_NUMERIC_PART = re.compile(r"(?<=/)[0-9]+(?=[/,{}]|\Z)")


def mask_ids(name: str) -> str:
    """The exchange name with the compiler's numeric ids replaced by `#`.

    `cs23_` -> `cs#_`, `copy617_` -> `copy#_`, and a path part that is only digits
    (`/1570/`) -> `/#/`. These ids change between compilations of the same model;
    everything else in the name (`blocks.0`, `MatMul_1`, `Conv_1`) is kept.

    >>> mask_ids("cs23_/a/qkv/MatMul/1570/Conv_1/Convolve/ExchangePre")
    'cs#_/a/qkv/MatMul/#/Conv_1/Convolve/ExchangePre'
    """
    return _NUMERIC_PART.sub("#", _PREFIX_ID.sub(r"\1#_", name))


def numbered(masked_name: str, occurrence: int) -> str:
    """The name of the `occurrence`-th exchange (from 1) of a summary with this masked
    name: the masked name itself, then `<masked name> (2)`, `(3)`, ..."""
    return masked_name if occurrence == 1 else "{} ({})".format(masked_name, occurrence)


# ---- a summary's metrics -------------------------------------------------------------


def metrics(summary: Summary, beside: Optional[Dict[str, Number]] = None) -> Dict[str, Number]:
    """The summary's numbers by metric name, in the comparison's row order: stages (in
    the order they first appear), their total, each device span then their max and mean,
    the QKV executions, exchange then allocated memory (min, mean, max), the attention
    exchanges in pva order; then `beside`, the metrics of the files beside the summary
    that belong to it (breakdown_metrics, memory_metrics: a recording's `beside`).
    Null or absent numbers are left out."""
    found: Dict[str, Number] = {}

    def put(name: str, value: Optional[Number]) -> None:
        if value is not None:
            found[name] = value

    for label, cycles in summary.stage_cycles().items():
        put(stage_metric(label), cycles)
    put(STAGES_TOTAL, summary.stages_total)
    spans = summary.device_spans
    for number, span in enumerate(spans, start=1):
        put(device_span_metric(number), span)
    if spans:
        put(DEVICE_SPAN_MAX, max(spans))
        put(DEVICE_SPAN_MEAN, sum(spans) / len(spans))
    put(QKV_EXECUTIONS, summary.qkv_executions)
    for prefix, values in (
        (EXCHANGE_MEMORY, summary.exchange_memory),
        (ALLOCATED_MEMORY, summary.allocated_memory),
    ):
        for statistic, value in zip(STATISTICS, values):
            put(prefix + statistic, value)
    seen: Dict[str, int] = {}
    for exchange in summary.attention_exchanges or ():
        masked = mask_ids(exchange.name)
        seen[masked] = seen.get(masked, 0) + 1
        put(attention_exchange_metric(numbered(masked, seen[masked])), exchange.maximum)
    for name, value in (beside or {}).items():
        found.setdefault(name, value)
    return found


# ---- from the files beside a summary (derived.py): breakdown.json, memory.json -------

TIME = "time:"  # breakdown.json's all cycles: + "cycles", "span", "kind:<kind>", ...
TIME_CYCLES = TIME + "cycles"
TIME_SPAN = TIME + "span"
TIME_KIND = TIME + "kind:"  # + a step kind (OnTileExecute, DoExchange, ...)
TIME_STAGE = TIME + "stage:"  # + a stage's label (or other)
TIME_LAYER = TIME + "layer:"  # + a layer
MEMORY = "memory:"  # memory.json's tiles: + "sum", "min", "mean", "max", "balance", ...
MEMORY_FIGURES = ("sum", "min", "mean", "max")
MEMORY_BALANCE = MEMORY + "balance"
MEMORY_OVER = MEMORY + "over"
MEMORY_HEADROOM = MEMORY + "headroom"
MEMORY_CATEGORY = "memory_category:"  # + a category's name, ":sum" or ":max"
LIVENESS_PEAK = "liveness:peak"


def memory_category_metric(name: str, figure: str) -> str:
    """`memory_category:<name>:<figure>` (figure: "sum" or "max")."""
    return "{}{}:{}".format(MEMORY_CATEGORY, name, figure)


def _number(value: object) -> Optional[Number]:
    """`value` when it is a JSON number (not a boolean); else None (left out)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def _field(data: object, *keys: str) -> object:
    """data[k1][k2]... where each step is an object holding the key; else None."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _objects(value: object) -> List[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def breakdown_metrics(data: dict) -> Dict[str, Number]:
    """The `time:` metrics of a breakdown.json (its JSON, belonging to the summary):
    each the largest over the IPUs of its first window, all cycles (the span: wall
    time in cycles): time:cycles, time:span, time:kind:<kind>, time:stage:<label>,
    time:layer:<layer>. A value that is not a number is left out."""
    found: Dict[str, Number] = {}

    def put(name: str, value: object) -> None:
        number = _number(value)
        if number is not None and (name not in found or number > found[name]):
            found[name] = number

    windows = _objects(data.get("windows"))
    for ipu in _objects(windows[0].get("ipus")) if windows else []:
        put(TIME_CYCLES, ipu.get("cycles"))
        put(TIME_SPAN, ipu.get("span"))
        for prefix, table, key in (
            (TIME_KIND, "kinds", "kind"),
            (TIME_STAGE, "stages", "stage"),
            (TIME_LAYER, "layers", "layer"),
        ):
            for row in _objects(ipu.get(table)):
                if isinstance(row.get(key), str):
                    put(prefix + row[key], row.get("cycles"))
    return found


def memory_metrics(data: dict) -> Dict[str, Number]:
    """The tile memory metrics of a memory.json (its JSON, belonging to the summary):
    memory:sum, :min, :mean, :max (the tiles' totals), memory:balance, memory:over and
    memory:headroom (with a limit), memory_category:<name>:sum and :max, liveness:peak
    (with pva). Null or absent values, or ones that are not numbers, are left out."""
    found: Dict[str, Number] = {}

    def put(name: str, value: object) -> None:
        number = _number(value)
        if number is not None:
            found[name] = number

    for figure in MEMORY_FIGURES:
        put(MEMORY + figure, _field(data, "total", figure))
    put(MEMORY_BALANCE, data.get("balance"))
    put(MEMORY_OVER, _field(data, "limit", "over"))
    put(MEMORY_HEADROOM, _field(data, "limit", "headroom"))
    for category in _objects(data.get("categories")):
        if isinstance(category.get("category"), str):
            for figure in ("sum", "max"):
                put(memory_category_metric(category["category"], figure), category.get(figure))
    put(LIVENESS_PEAK, _field(data, "liveness", "peak"))
    return found


# ---- several IPUs ---------------------------------------------------------------------

#: What a stage's cycles are when a step ran on several IPUs (the summary's kernels hold
#: a row per IPU of each step, and stage cycles add them all up), in one wording for
#: compare's markdown, the report and blocks' markdown.
SUMMED_OVER_IPUS = (
    "kernel cycles, each kernel step's cycles added up over its rows on every IPU it ran "
    "on: the IPUs run at the same time, so these sums are not the time a step took"
)


def kernel_step_ipus(summary: Summary) -> int:
    """How many IPUs a first-body kernel step ran on, as far as the summary tells: the
    most kernel rows one step has (a step has a row per IPU it ran on); 0 without
    kernels. summary.json records no IPU count: this is what its kernels show."""
    rows: Dict[object, int] = {}
    for kernel in summary.kernels:
        step = kernel.get("step")
        rows[step] = rows.get(step, 0) + 1
    return max(rows.values()) if rows else 0


def percent_change(value: Optional[Number], first: Optional[Number]) -> Optional[float]:
    """The change of `value` against `first` in percent of the size of `first`:
    100 * (value - first) / |first|, positive when `value` is more (also when `first`
    is negative: -100 to -50 is +50%); None when it cannot be said (either missing, or
    `first` 0)."""
    if value is None or first is None or first == 0:
        return None
    return (value - first) * 100.0 / abs(first)
