"""The report's budget checks: each as text, failed and missing ones first, and their
counts in one vocabulary (failed, missing, ok, skipped), the same in the page's header
and in its budget section."""

from typing import Dict, List, NamedTuple

from ..compare.budget import FAIL, FAILING, MISSING, OK, SKIPPED
from .numbers import number_text

# compare --budget's statuses, in the order the page counts them: those that fail the
# gate first.
CHECK_STATUSES = (FAIL, MISSING, OK, SKIPPED)
STATUS_SYMBOLS = {OK: "\u2714", FAIL: "\u2718", MISSING: "?", SKIPPED: "\u2013"}
# How the counts name each status: "13 failed, 1 missing, 95 ok".
STATUS_WORDS = {FAIL: "failed", MISSING: "missing", OK: "ok", SKIPPED: "skipped"}


class CheckLine(NamedTuple):
    recording: str
    metric: str
    pattern: str
    budget: str
    baseline: str
    value: str
    limit: str
    status: str


def check_lines(checks) -> List[CheckLine]:
    """Budget checks (extract compare --budget's; any objects with its fields) as text:
    the failed and missing ones first, then the others, each in compare's order."""
    lines = []
    for check in checks:
        recording = check.recording
        recording = getattr(recording, "label", recording)
        lines.append(
            CheckLine(
                str(recording),
                str(check.metric),
                str(check.pattern),
                str(check.budget),
                number_text(check.baseline),
                number_text(check.value),
                number_text(check.limit),
                str(check.status),
            )
        )
    return [line for line in lines if line.status in FAILING] + [
        line for line in lines if line.status not in FAILING
    ]


def check_counts(lines: List[CheckLine]) -> Dict[str, int]:
    """How many checks have each status."""
    return {status: sum(1 for line in lines if line.status == status) for status in CHECK_STATUSES}


def counts_text(counts: Dict[str, int]) -> str:
    """`13 failed, 1 missing, 95 ok` (and `, 2 skipped` when some were)."""
    shown = [FAIL, MISSING, OK] + ([SKIPPED] if counts.get(SKIPPED) else [])
    return ", ".join("{} {}".format(counts.get(s, 0), STATUS_WORDS[s]) for s in shown)
