"""The report's breakdowns: from each recording's breakdown.json that belongs to its
summary, its first inference's all cycles by kind of step (a lying bar per IPU, drawn by
extractor.barchart) and its ops with the most all cycles, bounded so that any batch
gives a page a browser opens."""

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..barchart import stacked_bars, stacked_bars_svg
from .belonging import belonging_files
from .numbers import number_text
from .parsed import objects, whole

ALL_CYCLES = "all cycles"
# Each recording's top ops: this many per IPU, the first in breakdown.json's order
# (all cycles, most first). Every op is in the file and `extract breakdown`.
TOP_OPS = 10
# A recording's bars and op tables: its first this many IPUs (of window 1). The others
# are counted in words; the table's time: metrics still take the largest over them all.
MAX_BREAKDOWN_IPUS = 16
# An op's name is shown up to this many characters (an ellipsis ends a longer one): a
# hand-made file's names may be of any length.
OP_CHARACTERS = 400
# The page as a whole draws at most this many breakdown rows (a bar or an op, each some
# 300 bytes: some 1.5 MB); the breakdowns past it are listed, not drawn. 100 recordings
# of 4 IPUs fit.
MAX_BREAKDOWN_ROWS = 5000


class OpLine(NamedTuple):
    op: str  # as shown (OP_CHARACTERS at most)
    full: bool  # False: cut short
    kind: str
    stage: str
    executions: str
    cycles: str
    share: str  # "41.1%": of the IPU's all cycles


class IpuOps(NamedTuple):
    ipu: str
    cycles: str  # the IPU's all cycles
    span: str
    ops: List[OpLine]  # the first TOP_OPS
    op_count: int  # how many the file has


class Breakdown(NamedTuple):
    label: str
    path: str
    run: str  # "inference 1", or "every step row" (a window of no run)
    ipus: List[IpuOps]
    ipu_count: int  # the IPUs of window 1; the first MAX_BREAKDOWN_IPUS are shown
    chart_svg: str  # the bars, an inline <svg> ("" when not drawn)
    kinds: List[Tuple[str, int]]  # the legend: (kind, colour index)
    drawn: bool = True  # False: past the page's MAX_BREAKDOWN_ROWS, listed only

    @property
    def rows(self) -> int:
        return len(self.ipus) + sum(len(ipu.ops) for ipu in self.ipus)


def _text(value: Any) -> str:  # Any: parsed JSON
    return value if isinstance(value, str) else ""


def _share(cycles: Optional[int], total: Optional[int]) -> str:
    if cycles is None or not total:
        return ""
    return "{:.1f}%".format(100.0 * cycles / total)


def _op_line(row: dict, total: Optional[int]) -> OpLine:
    name = _text(row.get("op"))
    full = len(name) <= OP_CHARACTERS
    cycles = whole(row.get("cycles"))
    return OpLine(
        name if full else name[: OP_CHARACTERS - 1] + "\u2026",
        full,
        _text(row.get("kind")),
        _text(row.get("stage")),
        number_text(whole(row.get("executions"))),
        number_text(cycles),
        _share(cycles, total),
    )


def build_breakdown(label: str, path: str, data: dict, number: int) -> Breakdown:
    """What the page shows of a breakdown.json (its JSON, belonging to the recording
    `label`): its first window's IPUs, each a bar of all cycles by kind and its TOP_OPS
    ops. `number`: the breakdown's place on the page, naming its chart's title."""
    windows = objects(data.get("windows"))
    window = windows[0] if windows else {}
    run = whole(window.get("run"))
    every = objects(window.get("ipus"))
    shown = every[:MAX_BREAKDOWN_IPUS]
    ipus, names, bars = [], [], []
    kinds: Dict[str, None] = {}
    for ipu in shown:
        total = whole(ipu.get("cycles"))
        ops = objects(ipu.get("ops"))
        ipus.append(
            IpuOps(
                number_text(whole(ipu.get("ipu"))),
                number_text(total),
                number_text(whole(ipu.get("span"))),
                [_op_line(op, total) for op in ops[:TOP_OPS]],
                len(ops),
            )
        )
        cycles: Dict[str, Optional[int]] = {}
        for row in objects(ipu.get("kinds")):
            kind, value = _text(row.get("kind")), whole(row.get("cycles"))
            if value is not None:
                kinds.setdefault(kind, None)
                cycles[kind] = (cycles.get(kind) or 0) + value
        names.append("IPU {}".format(ipus[-1].ipu))
        bars.append(cycles)
    order = list(kinds)
    chart = stacked_bars(
        names,
        order,
        bars,
        unit=ALL_CYCLES,
        title="All cycles by kind of step: " + label,
        title_id="breakdown-chart-{}".format(number),
    )
    return Breakdown(
        label,
        path,
        "inference {}".format(run) if run is not None else "every step row",
        ipus,
        len(every),
        stacked_bars_svg(chart) if shown else "",
        [(item.stage, item.colour) for item in chart.legend],
    )


def read_breakdowns(recordings: Sequence) -> Tuple[List[Breakdown], List[Tuple[str, str, str]]]:
    """The breakdowns to show, in the recordings' order, and the breakdown.json files not
    shown as current, as (label, path, why): one that does not belong to the summary
    beside it, or cannot be read as one. Past MAX_BREAKDOWN_ROWS, a breakdown and every
    one after it is listed, not drawn."""
    files, passed = belonging_files(recordings, "breakdown")
    shown: List[Breakdown] = []
    drawn_rows = 0
    for recording, path, data in files:
        found = build_breakdown(recording.label, path, data, len(shown) + 1)
        if drawn_rows + found.rows > MAX_BREAKDOWN_ROWS:  # it, and every one after
            drawn_rows = MAX_BREAKDOWN_ROWS + 1
            found = found._replace(chart_svg="", drawn=False)
        drawn_rows += found.rows
        shown.append(found)
    return shown, passed
