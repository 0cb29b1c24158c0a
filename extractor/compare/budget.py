"""Budgets: how much worse than the baseline a recording may be (docs/formats/budget.md).

`load_budget(path)` reads and checks a budget file (everything that can be checked before
any summary is read); `check_budget(budget, recordings)` checks the recordings of a
comparison against it (the first is the baseline), after checking that every pattern
matches a metric, and gives one `BudgetCheck` per (recording, budget, metric) in the
spec's order. `budget_line(checks)` is the verdict line; `gate_failed(checks)` says
whether the gate fails. The metric names are extractor.core.metrics'; the limits are
computed exactly (fractions), so `+10%` of 70 is 77, never 77.00000000000001 nor 76.99999999999999.
"""

import math
import re
from fnmatch import fnmatchcase
from fractions import Fraction
from pathlib import Path
from typing import Dict, List, NamedTuple, NoReturn, Optional, Sequence, Tuple, Union

from ..core import metrics
from ..errors import ExtractorError, shown_path
from ..inputs import NotRegular, read_regular
from ..tomltext import TomlProblem, parse_toml, toml_type

Number = Union[int, float]

TABLE = "budgets"

# The statuses of a check. FAIL and MISSING fail the gate; SKIPPED is not counted.
OK, FAIL, MISSING, SKIPPED = "ok", "fail", "missing", "skipped"
FAILING = (FAIL, MISSING)

# The operators: relative ones need the baseline's value, absolute bounds do not.
PERCENT, PLUS, AT_MOST, AT_LEAST, EQUAL = "+%", "+", "<=", ">=", "="
RELATIVE = (PERCENT, PLUS, EQUAL)

_SPACE = "[ \t]*"
_NUMBER = "([0-9]+(?:[.][0-9]+)?)"
_FORMS = (
    (PERCENT, re.compile(r"{0}\+{0}{1}{0}%{0}".format(_SPACE, _NUMBER))),
    (PLUS, re.compile(r"{0}\+{0}{1}{0}".format(_SPACE, _NUMBER))),
    (AT_MOST, re.compile(r"{0}<={0}{1}{0}".format(_SPACE, _NUMBER))),
    (AT_LEAST, re.compile(r"{0}>={0}{1}{0}".format(_SPACE, _NUMBER))),
    (EQUAL, re.compile(r"{0}={0}".format(_SPACE))),
)
FORMS_TEXT = "+X%, +X, <= X, >= X or ="


class BudgetError(ExtractorError):
    """The budget file is not usable, or a pattern matches no metric: a usage error."""

    exit_code = 2


class Limit(NamedTuple):
    """One budget: `text` as written with its spaces removed (`+2%`), its operator and
    number (None for `=`)."""

    text: str
    operator: str
    number: Optional[Fraction]

    @property
    def relative(self) -> bool:
        return self.operator in RELATIVE


class Entry(NamedTuple):
    """One key of [budgets]: a metric name or shell pattern, and its budgets in order."""

    pattern: str
    limits: Tuple[Limit, ...]


class Budget(NamedTuple):
    source: str  # the file, as shown in messages
    entries: Tuple[Entry, ...]  # in file order


class BudgetCheck(NamedTuple):
    """One budget held against one metric of one recording."""

    recording: str  # the recording's label (the comparison's column)
    metric: str
    pattern: str  # the budget file's key
    budget: str  # the budget's text, spaces removed
    baseline: Optional[Number]  # the baseline's value; None when it has none
    value: Optional[Number]  # None when missing
    limit: Optional[Number]  # the bound the value was held to; None if missing or skipped
    status: str  # OK, FAIL, MISSING or SKIPPED


# ---- the file ----------------------------------------------------------------------


def _quoted(text: str, limit: int = 60) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[:limit] + "..."


def _finite(number: Fraction) -> bool:
    """Whether `number` is within a float's range (a limit JSON can hold)."""
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


# The most digits a budget's number has before its point (leading zeros aside), and after
# it (trailing zeros aside). A cycle count or a byte count fits in 20 digits; 30 leave
# room, and keep a hostile "<= 1000...0" of thousands of digits from ever reaching int()
# (which refuses more than 4300) or the exact arithmetic of the checks.
MAX_DIGITS = 30


class BadNumber(ValueError):
    """A budget's number that is too large or too precise to hold (str(): why)."""


def _limit_number(digits: str) -> Fraction:
    """The number `digits` (`[0-9]+(.[0-9]+)?`) exactly; BadNumber beyond MAX_DIGITS."""
    whole, _, fraction = digits.partition(".")
    whole, fraction = whole.lstrip("0"), fraction.rstrip("0")
    if len(whole) > MAX_DIGITS:
        raise BadNumber("the number is too large (more than {} digits)".format(MAX_DIGITS))
    if len(fraction) > MAX_DIGITS:
        raise BadNumber(
            "the number is too precise (more than {} digits after the point)".format(MAX_DIGITS)
        )
    return Fraction("{}.{}".format(whole or "0", fraction or "0"))


def parse_limit(text: str) -> Optional[Limit]:
    """The budget `text` (`+2%`, `+ 512`, `<= 600000`, `=`...), or None if it is none;
    BadNumber when its number has more than MAX_DIGITS digits before or after the point."""
    for operator, form in _FORMS:
        found = form.fullmatch(text)
        if found is not None:
            number = _limit_number(found.group(1)) if found.groups() else None
            return Limit(re.sub("[ \t]", "", text), operator, number)
    return None


def parse_budget(data: dict, source: str) -> Budget:
    """Check the TOML document `data` of the budget file `source`."""

    def fail(problem: str) -> NoReturn:
        raise BudgetError(source, problem)

    others = [key for key in data if key != TABLE]
    if others:
        what = "table [{}]" if isinstance(data[others[0]], dict) else "key {}"
        fail(
            "{} outside [budgets]: a budget file has only the table [budgets]".format(
                what.format(_quoted(others[0]))
            )
        )
    if TABLE not in data:
        fail("no [budgets] table")
    table = data[TABLE]
    if not isinstance(table, dict):
        fail("'budgets' must be the table [budgets], not {}".format(toml_type(table)))
    if not table:
        fail('[budgets] is empty: give at least one budget ("stage:*" = "+2%")')
    entries = []
    for key, value in table.items():
        where = "key {}".format(_quoted(key))
        if isinstance(value, str):
            texts = [value]
        elif isinstance(value, list):
            if not value:
                fail("{}: an empty list of budgets".format(where))
            texts = value
        else:
            fail(
                "{}: a budget is a string ({}) or a list of them, not {}".format(
                    where, FORMS_TEXT, toml_type(value)
                )
            )
        limits = []
        for text in texts:
            if not isinstance(text, str):
                fail(
                    "{}: a budget is a string ({}), not {}".format(
                        where, FORMS_TEXT, toml_type(text)
                    )
                )
            try:
                limit = parse_limit(text)
            except BadNumber as exc:
                fail("{}: {}: {}".format(where, _quoted(text, 80), exc))
            if limit is None:
                fail(
                    "{}: {} is not a budget (one of {}; X is digits with an optional "
                    "fraction)".format(where, _quoted(text), FORMS_TEXT)
                )
            if limit.number is not None and not _finite(limit.number):
                fail("{}: {}: the number is too large".format(where, _quoted(text, 80)))
            limits.append(limit)
        entries.append(Entry(key, tuple(limits)))
    return Budget(source, tuple(entries))


def load_budget(path) -> Budget:
    """Read and check the budget file `path`; BudgetError (a usage error) naming the file
    and the key if it is missing, unreadable, not TOML or not a budget file."""
    path = Path(path)
    source = shown_path(path)
    try:
        raw = read_regular(path)  # a FIFO or a device is refused, never waited on
    except NotRegular as exc:
        raise BudgetError(source, str(exc)) from exc
    except FileNotFoundError:
        raise BudgetError(source, "no such budget file") from None
    except IsADirectoryError:
        raise BudgetError(source, "is a folder, not a budget file") from None
    except OSError as exc:
        raise BudgetError(source, "cannot read: {}".format(exc.strerror or exc)) from exc
    try:
        data = parse_toml(raw)
    except TomlProblem as exc:
        raise BudgetError(source, str(exc)) from exc
    return parse_budget(data, source)


# ---- the checks --------------------------------------------------------------------


def _rank(name: str) -> Tuple[int, float]:
    """Where a metric stands in the comparison's rows (ties keep the recordings' order)."""
    fixed = {
        metrics.STAGES_TOTAL: 1,
        metrics.DEVICE_SPAN_MAX: 3,
        metrics.DEVICE_SPAN_MEAN: 4,
        metrics.QKV_EXECUTIONS: 5,
    }
    if name in fixed:
        return fixed[name], 0
    if name.startswith(metrics.STAGE):
        return 0, 0
    if name.startswith(metrics.DEVICE_SPAN):
        return 2, int(name[len(metrics.DEVICE_SPAN) :])
    for group, prefix in ((6, metrics.EXCHANGE_MEMORY), (7, metrics.ALLOCATED_MEMORY)):
        if name.startswith(prefix):
            return group, metrics.STATISTICS.index(name[len(prefix) :])
    return 8, 0  # attention exchanges


def metric_order(found: Sequence[Dict[str, Number]]) -> List[str]:
    """Every metric of the recordings (`found`: each one's `metrics()`), in the order the
    comparison lists its rows: stages and attention exchanges as they first appear, then
    spans by number, their max and mean, memory as min, mean, max."""
    union: Dict[str, None] = {}
    for each in found:
        union.update(dict.fromkeys(each))
    return sorted(union, key=_rank)  # stable: first appearance within a group


def _exact(value: Number) -> Fraction:
    return Fraction(value)


def _number(limit: Fraction) -> Number:
    """A limit as JSON holds it: an integer when whole, else the nearest float."""
    if limit.denominator == 1:
        return int(limit)
    try:
        return float(limit)
    except OverflowError:  # beyond floats (a huge +X% of a huge value): whole part
        return int(limit)


def _bound(limit: Limit, baseline: Optional[Number]) -> Fraction:
    if limit.operator == EQUAL:
        return _exact(baseline)  # type: ignore[arg-type]
    number = limit.number
    assert number is not None
    if limit.operator == PERCENT:
        return _exact(baseline) * (1 + number / 100)  # type: ignore[arg-type]
    if limit.operator == PLUS:
        return _exact(baseline) + number  # type: ignore[arg-type]
    return number


def _within(limit: Limit, value: Number, bound: Fraction) -> bool:
    exact = _exact(value)
    if limit.operator == EQUAL:
        return exact == bound
    if limit.operator == AT_LEAST:
        return exact >= bound
    return exact <= bound


def check_unmatched(budget: Budget, found: Sequence[Dict[str, Number]]) -> None:
    """BudgetError for the first pattern that matches no metric of any recording."""
    every = metric_order(found)
    for entry in budget.entries:
        if not any(fnmatchcase(name, entry.pattern) for name in every):
            raise BudgetError(
                budget.source,
                "key {}: matches no metric of any recording "
                "(metrics are named like stage:<label>, device_span:1, "
                "allocated_memory:max; use a pattern such as stage:* for "
                "metrics only some models have)".format(_quoted(entry.pattern)),
            )


def check_budget(
    budget: Budget, recordings: Sequence, found: Optional[Sequence[Dict[str, Number]]] = None
) -> List[BudgetCheck]:
    """The checks of the recordings (`Recording`s; the first is the baseline) against
    `budget`: for the baseline, its absolute bounds; for each other recording, every
    budget on every metric its pattern matches that the recording (or, for a relative
    budget, the baseline) has. In recording order, then budget file order, then the
    comparison's row order. BudgetError (a usage error) first if a pattern matches no
    metric of any recording. `found`: each recording's metrics (default: its summary's,
    metrics.metrics; compare --stat gives the stages' statistic over blocks)."""
    if found is None:
        found = [metrics.metrics(r.summary, r.beside) for r in recordings]
    check_unmatched(budget, found)
    order = metric_order(found)
    base = found[0]
    checks = []
    for index, recording in enumerate(recordings):
        own = found[index]
        for entry in budget.entries:
            matched = [name for name in order if fnmatchcase(name, entry.pattern)]
            for limit in entry.limits:
                if index == 0 and limit.relative:
                    continue
                for name in matched:
                    check = _check(
                        recording.label, name, entry.pattern, limit, base.get(name), own.get(name)
                    )
                    if check is not None:
                        checks.append(check)
    return checks


def _check(
    label: str,
    metric: str,
    pattern: str,
    limit: Limit,
    baseline: Optional[Number],
    value: Optional[Number],
) -> Optional[BudgetCheck]:
    def made(value, bound, status) -> BudgetCheck:
        return BudgetCheck(
            label,
            metric,
            pattern,
            limit.text,
            baseline,
            value,
            None if bound is None else _number(bound),
            status,
        )

    if not limit.relative:
        if value is None:
            return None  # absolute bounds only check metrics the recording has
        bound = _bound(limit, None)
        return made(value, bound, OK if _within(limit, value, bound) else FAIL)
    if value is None and baseline is None:
        return None
    if value is None:
        return made(None, None, MISSING)
    if baseline is None:
        return made(value, None, SKIPPED)
    bound = _bound(limit, baseline)
    return made(value, bound, OK if _within(limit, value, bound) else FAIL)


# ---- the verdict -------------------------------------------------------------------


def gate_failed(checks: Sequence[BudgetCheck]) -> bool:
    """Whether any check is `fail` or `missing` (exit code 3)."""
    return any(check.status in FAILING for check in checks)


def budget_line(checks: Sequence[BudgetCheck]) -> str:
    """`budget: N of M checks failed` or `budget: all M checks within`, then `, K skipped`
    when K > 0 (M does not count the skipped ones)."""
    failed = sum(check.status in FAILING for check in checks)
    skipped = sum(check.status == SKIPPED for check in checks)
    counted = len(checks) - skipped
    if failed:
        line = "budget: {} of {} checks failed".format(failed, counted)
    else:
        line = "budget: all {} checks within".format(counted)
    return line + (", {} skipped".format(skipped) if skipped else "")


def excess(check: BudgetCheck) -> Optional[Number]:
    """How far a failed check's value is past its limit (positive: over it, negative:
    under it); None unless the check failed."""
    if check.status != FAIL or check.value is None or check.limit is None:
        return None
    difference = _exact(check.value) - _exact(check.limit)
    return _number(difference)
