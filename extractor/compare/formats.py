"""The output formats of a comparison: a renderer (extractor.render) per `extract compare
--format` name, registered in render.COMPARE_FORMATS; each renders the whole text, ending
with a newline, as UTF-8 (a lone surrogate, which a summary may hold, as \\udXXX).
`to_markdown`, `to_csv` and `to_json` give the text itself.

Numbers are never rounded in CSV and JSON; markdown rounds for reading (means to 0.1,
milliseconds to 0.001, percentages to 0.1). Every row of the CSV and JSON carries its
metric's name (extractor.core.metrics) as `metric_name`. A comparison with budget checks
(`Comparison.with_checks`) has each checked value marked: in markdown after the value (✅,
or ❌ with the budget and how far past its limit), in CSV in a `<label> budget` column
after each recording's, and in JSON as the list `budgets` (docs/formats/budget.md).

Names and labels are written by extractor.escaping's rules: markdown cells by
`markdown_cell` (exchange names as code spans, `markdown_code`), CSV text cells by
`csv_text_cell` (numbers are never touched).
"""

import csv
import io
import json
import math
from typing import Dict, List, Optional, Tuple

from ..core import metrics
from ..errors import shown_path
from ..escaping import csv_cell, markdown_cell, markdown_code
from ..render import Renderer
from .budget import FAIL, FAILING, MISSING, OK, SKIPPED, BudgetCheck, budget_line, excess
from .comparison import BALANCE_UNIT, EXCHANGES, STAGE_TOTAL, STAGES, Comparison, Exchange

ABSENT = "\u2014"  # an em dash: this recording has no such value


def _number(value, unit: str) -> str:
    if value is None:
        return ABSENT
    if isinstance(value, float):
        if unit == BALANCE_UNIT:
            return "{:.4f}".format(value)
        return "{:.3f}".format(value) if unit.startswith("ms") else "{:.1f}".format(value)
    return str(value)


def _percent(change: Optional[float]) -> str:
    return "" if change is None else " ({:+.1f}%)".format(change)


def _exchange_metric(exchange: Exchange) -> str:
    name = markdown_code(exchange.key)
    if exchange.occurrence > 1:
        name += " ({})".format(exchange.occurrence)
    return ("attention exchange: " if exchange.matched else "unmatched attention exchange: ") + name


# ---- budget marks ---------------------------------------------------------------

PASSED_MARK, FAILED_MARK = "\u2705", "\u274c"  # a green tick, a red cross


def _checks_by_cell(comparison: Comparison) -> Dict[Tuple[str, str], List[BudgetCheck]]:
    """The budget checks by (recording label, metric name), each cell's in order."""
    cells: Dict[Tuple[str, str], List[BudgetCheck]] = {}
    for check in comparison.checks or ():
        cells.setdefault((check.recording, check.metric), []).append(check)
    return cells


def _amount(value, unit: str) -> str:
    text = _number(value, unit)
    return "{:.2g}".format(value) if isinstance(value, float) and float(text) == 0 else text


def _past(check: BudgetCheck) -> Tuple[float, str]:
    """How far a failed check's value is past its limit, and `over` or `under`."""
    past = excess(check)
    assert past is not None, check
    return abs(past), "over" if past > 0 else "under"


def _failure(check: BudgetCheck, unit: str) -> str:
    """`+2%: 769 over limit 38022.5`, `>=1000: 12 under limit 1000`, `+2%: missing`."""
    if check.status == MISSING:
        return "{}: missing".format(check.budget)
    amount, side = _past(check)
    return "{}: {} {} limit {}".format(
        check.budget, _amount(amount, unit), side, _amount(check.limit, unit)
    )


def _markdown_mark(checks: List[BudgetCheck], unit: str) -> str:
    """What follows a checked value: ✅ when its checks passed, else ❌ and each failed
    budget with how far the value is past its limit; skipped budgets named."""
    failed = [c for c in checks if c.status in FAILING]
    skipped = [c.budget for c in checks if c.status == SKIPPED]
    parts = []
    if failed:
        parts.append("{} {}".format(FAILED_MARK, "; ".join(_failure(c, unit) for c in failed)))
    elif any(c.status == OK for c in checks):
        parts.append(PASSED_MARK)
    if skipped:
        parts.append("({} skipped: no baseline)".format(", ".join(skipped)))
    return " " + " ".join(parts)


def _csv_mark(checks: List[BudgetCheck]) -> str:
    """`ok +2%`, `fail +2%: 769 over limit 38022.54`, `missing +2%`, `skipped +2%`;
    several joined by `; `."""
    texts = []
    for check in checks:
        text = "{} {}".format(check.status, check.budget)
        if check.status == FAIL:
            amount, side = _past(check)
            text += ": {} {} limit {}".format(_csv_value(amount), side, _csv_value(check.limit))
        texts.append(text)
    return "; ".join(texts)


def to_markdown(comparison: Comparison) -> str:
    """One GitHub-flavoured markdown table, recordings as columns, ending with a newline;
    with budget checks, each checked value marked and the verdict line below."""
    labels = [markdown_cell(r.label) for r in comparison.recordings]
    marks = _checks_by_cell(comparison)

    def mark(index: int, metric_name: Optional[str], unit: str) -> str:
        checks = marks.get((comparison.recordings[index].label, metric_name or ""))
        return _markdown_mark(checks, unit) if checks else ""

    lines = ["| | unit | " + " | ".join(labels) + " |", "|---|---|" + "---:|" * len(labels)]
    for row in comparison.rows:
        metric = {STAGES: "stage: " + row.metric, STAGE_TOTAL: "stages, total"}.get(
            row.section, row.metric
        )
        cells = []
        for index, value in enumerate(row.values):
            text = _number(value, row.unit)
            if row.change is not None and value is not None:
                text += _percent(row.change[index])
            cells.append(text + mark(index, row.metric_name, row.unit))
        lines.append(
            "| {} | {} | {} |".format(
                markdown_cell(metric), markdown_cell(row.unit), " | ".join(cells)
            )
        )
    for exchange in comparison.exchanges:
        cells = []
        for index, cell in enumerate(exchange.cells):
            if not comparison.has_pva(index):
                cells.append("no pva facts")
            elif cell is None:
                cells.append(ABSENT)
            else:
                cells.append("{} / {:.1f}".format(cell.maximum, cell.mean))
            cells[-1] += mark(index, exchange.metric_name, "bytes")
        lines.append(
            "| {} | code bytes per tile, max / mean | {} |".format(
                _exchange_metric(exchange), " | ".join(cells)
            )
        )
    note = _several_ipus_note(comparison)
    if note:
        lines += ["", note]
    if comparison.checks is not None:
        lines += ["", budget_line(comparison.checks)]
    return "\n".join(lines) + "\n"


def _several_ipus_note(comparison: Comparison) -> str:
    """What the stage rows are for the recordings on several IPUs ("" when none is)."""
    several = [
        "{} ({} IPUs)".format(markdown_cell(recording.label), ipus)
        for recording, ipus in (
            (r, metrics.kernel_step_ipus(r.summary)) for r in comparison.recordings
        )
        if ipus > 1
    ]
    if not several:
        return ""
    return "Several IPUs: the stage rows and their total of {} are {}.".format(
        ", ".join(several), metrics.SUMMED_OVER_IPUS
    )


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):  # a guard: the inputs are checked to be finite
            raise ValueError("refusing to write a non-finite number ({!r}) in CSV".format(value))
        return repr(value)
    return str(value)


def to_csv(comparison: Comparison) -> str:
    """The table as RFC 4180 CSV (CRLF line ends): section, metric, unit, then each
    recording's value followed, after the first, by its change in percent (and, with
    budget checks, by its `<label> budget` marks); then note and metric_name (empty for
    rows of numbers no metric names: milliseconds, exchanges' means)."""
    labels = [r.label for r in comparison.recordings]
    budgeted = comparison.checks is not None
    marks = _checks_by_cell(comparison)
    header = ["section", "metric", "unit"]
    for index, label in enumerate(labels):
        header += [label] if index == 0 else [label, "{} change %".format(label)]
        header += ["{} budget".format(label)] if budgeted else []
    header += ["note", "metric_name"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([csv_cell(cell) for cell in header])

    def write(section, metric, unit, values, change, note="", metric_name=None):
        # Text cells through csv_cell; numbers (made text by _csv_value) as they are.
        line = [csv_cell(section), csv_cell(metric), csv_cell(unit)]
        for index, value in enumerate(values):
            line.append(_csv_value(value))
            if index:
                line.append(_csv_value(change[index] if change is not None else None))
            if budgeted:
                line.append(csv_cell(_csv_mark(marks.get((labels[index], metric_name or ""), []))))
        writer.writerow(line + [csv_cell(note), csv_cell(metric_name or "")])

    for row in comparison.rows:
        write(
            row.section, row.metric, row.unit, row.values, row.change, metric_name=row.metric_name
        )
    for exchange in comparison.exchanges:
        metric = (
            exchange.key
            if exchange.occurrence == 1
            else "{} ({})".format(exchange.key, exchange.occurrence)
        )
        note = "" if exchange.matched else "unmatched"
        for field in ("maximum", "mean"):
            write(
                EXCHANGES,
                metric,
                "code bytes per tile, {}".format("max" if field == "maximum" else field),
                [getattr(c, field) if c is not None else None for c in exchange.cells],
                None,
                note,
                exchange.metric_name if field == "maximum" else None,
            )
    return out.getvalue()


def to_json_data(comparison: Comparison) -> dict:
    data = {
        "recordings": [
            {"label": r.label, "path": shown_path(r.path), "pva": comparison.has_pva(i)}
            for i, r in enumerate(comparison.recordings)
        ],
        "clock_mhz": comparison.clock_mhz,
        "rows": [
            {
                "section": row.section,
                "metric": row.metric,
                "metric_name": row.metric_name,
                "unit": row.unit,
                "values": list(row.values),
                "change_percent": list(row.change) if row.change is not None else None,
            }
            for row in comparison.rows
        ],
        "attention_exchanges": [
            {
                "name": e.key,
                "occurrence": e.occurrence,
                "metric_name": e.metric_name,
                "matched": e.matched,
                "values": [c._asdict() if c is not None else None for c in e.cells],
            }
            for e in comparison.exchanges
        ],
    }
    if comparison.checks is not None:
        data["budgets"] = [check._asdict() for check in comparison.checks]
    return data


def to_json(comparison: Comparison) -> str:
    """The comparison as JSON (two-space indent, ending with a newline)."""
    try:
        # NaN and Infinity are not JSON: strict parsers refuse them. A guard (the inputs
        # are checked to be finite), so that no future path can write them.
        return json.dumps(to_json_data(comparison), indent=2, allow_nan=False) + "\n"
    except ValueError as exc:
        raise ValueError("refusing to write a non-finite number in JSON ({})".format(exc)) from exc


class CompareMarkdown(Renderer[Comparison]):
    name, suffix, media_type = "markdown", ".md", "text/markdown"

    def render(self, result: Comparison) -> bytes:
        return to_markdown(result).encode("utf-8", "backslashreplace")


class CompareCsv(Renderer[Comparison]):
    name, suffix, media_type = "csv", ".csv", "text/csv"

    def render(self, result: Comparison) -> bytes:
        return to_csv(result).encode("utf-8", "backslashreplace")


class CompareJson(Renderer[Comparison]):
    name, suffix, media_type = "json", ".json", "application/json"

    def render(self, result: Comparison) -> bytes:
        return to_json(result).encode("utf-8", "backslashreplace")
