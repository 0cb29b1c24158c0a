"""Comparing recordings: several summary.json files side by side, against the first.

A *recording* is one summary.json, named by its folder (or by --label). `load_recordings`
reads and checks them; `compare` builds one `Comparison` (the rows of the table, plus the
attention exchanges matched across recordings by `mask_ids`); formats.py renders it.
"""

import os
from pathlib import Path, PurePath
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import CompareError, SummaryFileError, shown_path
from ..batch.discover import SUMMARY_NAME
from .. import metrics as names
from ..metrics import mask_ids
from ..model import MinMeanMax, Summary
from ..provenance import Origin, Origins


# ---- reading recordings ------------------------------------------------------------


class Recording(NamedTuple):
    label: str
    path: Path
    summary: Summary
    # Where it stands against its batch's index (provenance.py); None: not looked up.
    origin: Optional[Origin] = None


class _Found(NamedTuple):
    path: Path
    folder_parts: Tuple[str, ...]  # the absolute folder of the file, as parts
    default_parts: int  # how many trailing parts name it by default


def _parts(folder: Path) -> Tuple[str, ...]:
    # An absolute folder's names, without the root ("/" or a drive).
    return tuple(p for p in folder.parts if p != folder.anchor)


def _find(argument: Path) -> List[_Found]:
    """The summary files an argument stands for: itself, or those below a folder."""
    if not argument.is_dir():
        if not argument.exists():
            raise SummaryFileError(argument, "no such file or folder")
        parent = Path(os.path.abspath(str(argument))).parent
        return [_Found(argument, _parts(parent), 1)]
    found = []
    top = Path(os.path.abspath(str(argument)))
    for folder, subfolders, files in os.walk(str(argument)):
        subfolders.sort()
        if SUMMARY_NAME in files:
            relative = PurePath(os.path.relpath(folder, str(argument))).parts
            relative = tuple(p for p in relative if p != ".")
            parts = _parts(top) + relative
            found.append(_Found(Path(folder, SUMMARY_NAME), parts, max(1, len(relative))))
    if not found:
        raise SummaryFileError(argument, "no {} in this folder or below it".format(SUMMARY_NAME))
    return found


def _default_labels(found: Sequence[_Found]) -> List[str]:
    """Each recording's folder name (relative to a folder argument); where two would
    be the same, enough of their parent folders to tell them apart."""
    width = [f.default_parts for f in found]

    def label(index):
        parts = found[index].folder_parts
        tail = parts[-width[index]:] if width[index] <= len(parts) else parts
        return shown_path("/".join(tail)) or "/"

    while True:
        labels = [label(i) for i in range(len(found))]
        groups: Dict[str, List[int]] = {}
        for index, text in enumerate(labels):
            groups.setdefault(text, []).append(index)
        grew = False
        for members in groups.values():
            if len(members) > 1:
                for index in members:
                    # Longer only where that can tell it from another member.
                    differs = any(found[other].folder_parts != found[index].folder_parts
                                  for other in members)
                    if differs and width[index] < len(found[index].folder_parts):
                        width[index] += 1
                        grew = True
        if not grew:
            break
    # The same folder twice (or one file given twice): number the repeats.
    seen: Dict[str, int] = {}
    for index, text in enumerate(labels):
        seen[text] = seen.get(text, 0) + 1
        if seen[text] > 1:
            labels[index] = "{} ({})".format(text, seen[text])
    return labels


def load_recordings(arguments: Sequence, labels: Sequence[str] = ()) -> List[Recording]:
    """The recordings the arguments name, in order (a folder's sorted by path).

    `labels` rename the first recordings, in order. ValueError when there are more
    labels than recordings or two recordings end up with the same label.
    """
    found = []
    for argument in arguments:
        found.extend(_find(Path(argument)))
    if len(labels) > len(found):
        raise ValueError("{} --label given for {} recording{}".format(
            len(labels), len(found), "s" if len(found) != 1 else ""))
    names = [shown_path(label) for label in labels] + _default_labels(found)[len(labels):]
    for index, name in enumerate(names):
        if names.index(name) != index:
            raise ValueError("two recordings are labelled {!r}: give each its own --label"
                             .format(name))
    origins = Origins()
    return [Recording(name, item.path, Summary.read(item.path), origins.of(item.path))
            for name, item in zip(names, found)]


def files_read(recordings: Sequence[Recording]) -> List[Path]:
    """What reading these recordings reads or may read: each summary, the blocks.json
    beside it and its batch folder's index files (for an output that must not be one)."""
    from ..blockformats import blocks_path

    files: List[Path] = []
    for recording in recordings:
        files += [recording.path, blocks_path(recording.path)]
        batch = recording.origin.batch if recording.origin else None
        if batch is not None:
            files += sorted(batch.glob("index*.jsonl"))
    return files


def folders_read(arguments: Sequence, recordings: Sequence[Recording]) -> List[Path]:
    """The folders whose batch files these recordings come from: the folder arguments,
    each recording's folder and its batch folder."""
    folders = [Path(a) for a in arguments if Path(a).is_dir()]
    for recording in recordings:
        folders.append(recording.path.parent)
        if recording.origin is not None and recording.origin.batch is not None:
            folders.append(recording.origin.batch)
    return folders


# ---- the comparison ----------------------------------------------------------------

STAGES, SPANS, QKV, EXCHANGE_MEMORY, ALLOCATED, EXCHANGES = (
    "kernel stages", "device spans", "QKV executions", "exchange code per tile",
    "allocated memory per tile", "attention exchanges")
# The row summing every stage has a section of its own, so no stage label can clash.
STAGE_TOTAL, TOTAL = "kernel stages, total", "all stages"


class Row(NamedTuple):
    """One line of the table: a value per recording (None where it has none)."""

    section: str
    metric: str
    unit: str
    values: Tuple
    # Percent change against the first recording, per recording (None for the first and
    # where either value is missing or the first is 0); None for rows without one.
    change: Optional[Tuple]
    # The metric's name (extractor.metrics) whose values the row holds; None for a row of
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
        """The metric (extractor.metrics) of its `maximum`."""
        return names.attention_exchange_metric(names.numbered(self.key, self.occurrence))


class Comparison(NamedTuple):
    recordings: List[Recording]
    clock_mhz: Optional[float]
    rows: List[Row]
    exchanges: List[Exchange]
    # The budget checks (extractor.budget.Check) the formats mark; None without a budget.
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
        extra = [name for name in (names.DEVICE_SPAN_MAX, names.DEVICE_SPAN_MEAN)
                 if name in checked]
        if extra:
            found = [names.metrics(r.summary) for r in self.recordings]
            after = max(i for i, row in enumerate(rows) if row.section == SPANS) + 1
            rows[after:after] = [
                _with_change(SPANS, "device span " + name[len(names.DEVICE_SPAN):], "cycles",
                             (each.get(name) for each in found), name)
                for name in extra]
        return self._replace(rows=rows, checks=list(checks))



def percent_change(value, first) -> Optional[float]:
    """100 * (value - first) / first, or None when it cannot be said."""
    if value is None or first is None or first == 0:
        return None
    return (value - first) * 100.0 / first


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


def compare(recordings: List[Recording], clock_mhz: Optional[float] = None) -> Comparison:
    """The comparison table of two or more recordings, against the first.

    CompareError when a recording has nothing in common with the first: no first-body
    kernel stage and no attention exchange (masked name) in both.
    """
    if len(recordings) < 2:
        raise CompareError("compare", "needs two or more recordings, got {}".format(
            len(recordings)))
    summaries = [r.summary for r in recordings]
    rows = []

    stage_cycles = [s.stage_cycles() for s in summaries]
    for stage in _ordered_union(stage_cycles):
        rows.append(_with_change(STAGES, stage, "cycles", (c.get(stage) for c in stage_cycles),
                                 names.stage_metric(stage)))
    rows.append(_with_change(STAGE_TOTAL, TOTAL, "cycles",
                             (s.stages_total for s in summaries), names.STAGES_TOTAL))

    for number in range(max(len(s.device_spans) for s in summaries)):
        spans = [s.device_spans[number] if number < len(s.device_spans) else None
                 for s in summaries]
        metric = "device span {}".format(number + 1)
        rows.append(_with_change(SPANS, metric, "cycles", spans,
                                 names.device_span_metric(number + 1)))
        if clock_mhz is not None:
            rows.append(Row(SPANS, metric, "ms at {:g} MHz".format(clock_mhz), tuple(
                None if c is None else c / (clock_mhz * 1000.0) for c in spans), None))

    rows.append(Row(QKV, QKV, "count", tuple(s.qkv_executions for s in summaries), None,
                    names.QKV_EXECUTIONS))
    for section, prefix, stats in (
            (EXCHANGE_MEMORY, names.EXCHANGE_MEMORY, [s.exchange_memory for s in summaries]),
            (ALLOCATED, names.ALLOCATED_MEMORY, [s.allocated_memory for s in summaries])):
        for name in MinMeanMax._fields:  # min, mean, max: the metrics' STATISTICS
            rows.append(Row(section, "{}, {}".format(section, name), "bytes",
                            tuple(getattr(each, name) for each in stats), None, prefix + name))

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
            raise CompareError(other.path, "nothing in common with {} ({}): no first-body "
                               "kernel stage and no attention exchange in both".format(
                                   first.path, first.label))
    return Comparison(list(recordings), clock_mhz, rows, exchanges)
