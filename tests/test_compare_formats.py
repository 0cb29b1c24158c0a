"""Every output format of `extract compare` (render.COMPARE_FORMATS), through the real CLI,
against one contract: exit 0, nothing on stderr, UTF-8 text ending with a newline,
every recording and every kernel stage in it; CSV and JSON parse, markdown is a table.
Each format's own details are in test_compare.py."""

import csv
import io
import json
import re
from pathlib import Path

import pytest

from extractor.render import COMPARE_FORMATS as FORMATS
from support.cli import invoke_extract
from support.paths import FIXTURES

RECORDINGS = (
    FIXTURES / "vit-f8weight" / "expected.json",
    FIXTURES / "vit-f8weight-b" / "expected.json",
)
# A non-ASCII label and one that markdown must escape (`|`), with a plain one.
LABELS = ("baseline", "fp8 \u00e9t\u00e9", "no|pva")


def _markdown_table(text: str, labels) -> list:
    """The cells of each line of a markdown table (checking each line is a table row)."""
    rows = []
    for line in text.splitlines():
        assert line.startswith("|") and line.endswith("|"), line
        rows.append(
            [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        )
    assert {len(row) for row in rows} == {2 + len(labels)}, rows
    return rows


def _strings(data) -> list:
    """Every string in parsed JSON (keys included)."""
    if isinstance(data, dict):
        return [text for key, value in data.items() for text in [key] + _strings(value)]
    if isinstance(data, list):
        return [text for value in data for text in _strings(value)]
    return [data] if isinstance(data, str) else []


def _cells(name: str, text: str, labels):
    """The texts a format's grammar says the output holds (its cells), checking the
    grammar; None for a format this test knows no grammar of."""
    if name == "csv":
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert text.count("\r\n") == text.count("\n") == len(rows)  # RFC 4180 line ends
        assert {len(row) for row in rows} == {len(rows[0])}
        return [cell for row in rows for cell in row]
    if name == "json":
        data = json.loads(text)
        assert [r["label"] for r in data["recordings"]] == list(labels)
        return _strings(data)
    if name == "markdown":
        return [cell for row in _markdown_table(text, labels) for cell in row]
    return None


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> list:
    """Three summaries: the two committed recordings, and the first without pva facts."""
    folder = tmp_path_factory.mktemp("recordings")
    third = json.loads(RECORDINGS[0].read_text(encoding="utf-8"))
    third["attention_exchanges"] = None
    (folder / "summary.json").write_text(json.dumps(third), encoding="utf-8")
    return list(RECORDINGS) + [folder / "summary.json"]


def _stages(paths) -> set:
    return {
        kernel["stage"]
        for path in paths
        for kernel in json.loads(Path(path).read_text(encoding="utf-8"))["kernels"]
    }


def test_there_are_formats_and_the_cli_offers_exactly_them():
    assert list(FORMATS) == ["markdown", "csv", "json"]
    assert all(FORMATS[name].name == name for name in FORMATS)
    help_text = invoke_extract("compare", "--help", env={"COLUMNS": "200"}).stdout.decode()
    # `<markdown|csv|json>`, or `[markdown|csv|json]` from the older typer of Python 3.8.
    offered = re.search(r"--format\s+-f\s+[<\[]([a-z|]+)[>\]]", help_text)
    assert offered, help_text
    assert offered.group(1).split("|") == list(FORMATS)


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_format_keeps_the_common_contract(name, recordings):
    args = ["compare", "--format", name, "--clock-mhz", "1850"]
    for label in LABELS:
        args += ["--label", label]
    result = invoke_extract(*(args + recordings))
    assert (result.code, result.stderr) == (0, ""), result
    text = result.stdout.decode("utf-8")  # strict: UTF-8 or a failure
    assert text.endswith("\n") and not text.endswith("\n\n")
    cells = _cells(name, text, LABELS)
    shown = text if cells is None else "\n".join(cells)
    assert all(label in shown for label in LABELS), shown
    stages = _stages(recordings)
    assert stages, "the recordings have no stage: the test cannot see"
    assert all(stage in shown for stage in stages), (stages, shown)
