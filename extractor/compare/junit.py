"""Budget checks as a JUnit XML report (`extract compare --budget FILE --junit FILE`), for
CI systems that show test results (GitLab's `artifacts:reports:junit`, GitHub actions that
publish JUnit files, Jenkins).

One `testsuite` per recording that has checks (named by its label), one `testcase` per
check (named `<metric> <budget>`, and the pattern in brackets when it is not the metric's
own name), a `failure` element for a `fail` or `missing` check, a `skipped` element for a
skipped one. Hand-written XML, like the chart: a few elements, no library. Every name
(recordings' labels, metric names holding exchange names) is written by extractor.escaping's
XML rules: a character XML cannot hold becomes a visible escape (`\\x01`, `\\ufffe`).
"""

from typing import Dict, List, Sequence

from ..escaping import xml_attribute, xml_text
from ..output import write_atomic
from .budget import FAIL, FAILING, MISSING, SKIPPED, BudgetCheck, excess


def _attribute(text) -> str:
    return xml_attribute(str(text))


def case_name(check: BudgetCheck) -> str:
    """`stage:MLP down +2%`, or `stage:MLP down +2% [stage:*]` from a pattern."""
    name = "{} {}".format(check.metric, check.budget)
    return name if check.pattern == check.metric else "{} [{}]".format(name, check.pattern)


def _message(check: BudgetCheck) -> str:
    if check.status == MISSING:
        return "{} has no {}; the baseline has {} ({})".format(
            check.recording, check.metric, check.baseline, check.budget
        )
    if check.status == SKIPPED:
        return "the baseline has no {}: {} cannot be checked".format(check.metric, check.budget)
    past = excess(check)
    assert past is not None, check
    return "{} {} is {} {} limit {} ({}{})".format(
        check.metric,
        check.value,
        abs(past),
        "over" if past > 0 else "under",
        check.limit,
        check.budget,
        "" if check.baseline is None else ", baseline {}".format(check.baseline),
    )


def junit_xml(checks: Sequence[BudgetCheck], name: str = "extract compare --budget") -> str:
    """The JUnit XML document (text) of the checks."""
    suites: Dict[str, List[BudgetCheck]] = {}
    for check in checks:
        suites.setdefault(check.recording, []).append(check)

    def counts(group: Sequence[BudgetCheck]) -> str:
        return 'tests="{}" failures="{}" errors="0" skipped="{}"'.format(
            len(group),
            sum(c.status in FAILING for c in group),
            sum(c.status == SKIPPED for c in group),
        )

    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<testsuites name={} {}>".format(_attribute(name), counts(checks)),
    ]
    for recording, group in suites.items():
        out.append("  <testsuite name={} {}>".format(_attribute(recording), counts(group)))
        for check in group:
            opening = "    <testcase classname={} name={}".format(
                _attribute(recording), _attribute(case_name(check))
            )
            if check.status in FAILING:
                out.append(opening + ">")
                message = _message(check)
                out.append(
                    "      <failure type={} message={}>{}</failure>".format(
                        _attribute(FAIL if check.status == FAIL else MISSING),
                        _attribute(message),
                        xml_text(message),
                    )
                )
                out.append("    </testcase>")
            elif check.status == SKIPPED:
                out.append(opening + ">")
                out.append("      <skipped message={}/>".format(_attribute(_message(check))))
                out.append("    </testcase>")
            else:
                out.append(opening + "/>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


def write_junit(
    path, checks: Sequence[BudgetCheck], name: str = "extract compare --budget"
) -> None:
    """Write the JUnit XML report of the checks to `path`, atomically."""
    write_atomic(path, junit_xml(checks, name).encode("utf-8"))
