"""The renderer contract (extractor/render.py): each command's registry names renderer
classes of their own names, the CLI offers exactly a registry's names in its order (the
first the default) without importing a renderer, and a stream renderer renders whole
the bytes it streams."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from extractor.core.blocks import extract_blocks
from extractor.core.rules import load_rules
from extractor.render import (
    BLOCKS_FORMATS,
    BREAKDOWN_FORMATS,
    COMPARE_FORMATS,
    DIFF_FORMATS,
    MEMORY_FORMATS,
    TABLE_FORMATS,
    Renderer,
    StreamRenderer,
)
from support.cli import invoke_extract

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop"
MULTI_IPU = REPO / "fixtures/edge/multi-ipu/profile.pop"

REGISTRIES = {
    "compare": COMPARE_FORMATS,
    "diff": DIFF_FORMATS,
    "table": TABLE_FORMATS,
    "blocks": BLOCKS_FORMATS,
    "memory": MEMORY_FORMATS,
    "breakdown": BREAKDOWN_FORMATS,
}
# Each command's formats, written out: a format added or dropped is seen here on purpose.
NAMES = {
    "compare": ["markdown", "csv", "json"],
    "diff": ["markdown", "json", "csv"],
    "table": ["csv", "jsonl"],
    "blocks": ["json", "csv", "markdown"],
    "memory": ["markdown", "json", "csv"],
    "breakdown": ["markdown", "json", "csv", "folded"],
}
EACH = [(command, name) for command, names in NAMES.items() for name in names]


def test_each_command_has_its_formats_in_order():
    assert {command: list(registry) for command, registry in REGISTRIES.items()} == NAMES
    assert {command: registry.default for command, registry in REGISTRIES.items()} == {
        "compare": "markdown",
        "diff": "markdown",
        "table": "csv",
        "blocks": "json",
        "memory": "markdown",
        "breakdown": "markdown",
    }


@pytest.mark.parametrize("command,name", EACH)
def test_a_registered_renderer_is_a_renderer_of_its_name(command, name):
    found = REGISTRIES[command][name]
    assert issubclass(found, Renderer), found
    assert found.name == name
    assert re.fullmatch(r"\.[a-z]+", found.suffix), found.suffix
    assert re.fullmatch(r"(text|application)/[a-z]+", found.media_type), found.media_type
    assert (command, name, issubclass(found, StreamRenderer)) in {
        (command, name, False) for command, name in EACH
    } | {("blocks", "json", True), ("blocks", "csv", True)}


def test_no_two_renderers_share_a_class_name():
    classes = [REGISTRIES[command][name].__name__ for command, name in EACH]
    assert len(set(classes)) == len(classes), classes


def test_a_name_not_registered_is_not_found():
    assert "xml" not in COMPARE_FORMATS
    with pytest.raises(KeyError, match="compare has no format 'xml': one of markdown, csv, json"):
        COMPARE_FORMATS["xml"]


@pytest.mark.parametrize("command", sorted(NAMES))
def test_the_cli_offers_exactly_the_registry(command):
    help_text = invoke_extract(command, "--help", env={"COLUMNS": "200"}).stdout.decode()
    # `<a|b|c>`, or `[a|b|c]` from the older typer of Python 3.8.
    offered = re.search(r"--format\s+-f\s+[<\[]([a-z|]+)[>\]]", help_text)
    assert offered, help_text
    assert offered.group(1).split("|") == NAMES[command]
    line = help_text[offered.start() :].split("\n\n")[0]  # the option's lines
    assert "[default: {}]".format(NAMES[command][0]) in " ".join(line.split()), line


def test_the_cli_starts_without_any_renderer():
    # The choices are names: extract's start-up imports no renderer's module.
    modules = sorted({REGISTRIES[command][name].__module__ for command, name in EACH})
    assert "extractor.compare.formats" in modules  # the list is the real one
    code = "import sys, extractor.cli; print(' '.join(sorted(sys.modules)))"
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, text=True
    ).stdout.split()
    assert "extractor.render" in shown  # the registries were read
    assert [name for name in modules if name in shown] == []


@pytest.mark.parametrize("name", ["json", "csv"])
@pytest.mark.parametrize("profile", [GOLDEN, MULTI_IPU], ids=["golden", "multi-ipu"])
def test_a_stream_renderer_renders_whole_what_it_streams(name, profile):
    streamed = invoke_extract("blocks", profile, "--format", name, pva=False)
    assert (streamed.code, streamed.stderr) == (0, ""), streamed
    kept = extract_blocks(profile, load_rules(None), keep=True).bodies
    assert kept.count > 1  # bodies to replay, more than one
    assert BLOCKS_FORMATS[name]().render(kept) == streamed.stdout


def test_a_stream_renderer_refuses_bodies_not_kept():
    passed = extract_blocks(GOLDEN, load_rules(None)).bodies
    assert passed.count > 0 and passed.bodies == []
    with pytest.raises(ValueError, match="not kept"):
        BLOCKS_FORMATS["json"]().render(passed)


def _contributing_blocks() -> list:
    """The python blocks of CONTRIBUTING.md's "Add an output format"."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Add an output format", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_contributing_example_adds_a_working_format(monkeypatch):
    import ast
    import csv
    import io
    import types

    from extractor.readback.recordings import load_recordings
    from extractor.render import Registry

    code, line = _contributing_blocks()
    module = types.ModuleType("extractor.report.tabletsv")
    module.__package__ = "extractor.report"
    exec(compile(code, "CONTRIBUTING.md", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "extractor.report.tabletsv", module)
    name, place = ast.literal_eval(line.strip().rstrip(","))
    registry = Registry("table", [(name, place)])
    assert list(registry) == ["tsv"] and registry["tsv"].name == "tsv"

    summaries = [
        REPO / "fixtures/vit-f8weight/expected.json",
        REPO / "fixtures/edge/multi-ipu/expected.json",
    ]
    recordings = load_recordings(summaries, ["x\ty", "=z"])
    tsv = registry["tsv"]().render(recordings).decode("utf-8").split("\n")
    rows = list(csv.reader(io.StringIO(TABLE_FORMATS["csv"]().render(recordings).decode())))
    assert len(rows) > 20 and tsv[-1] == ""  # the lines end with a newline
    # The CSV's cells, tab-separated: the tab in a label shown as \t, and no formula guard
    # (a TSV is not read as formulas here: `=z` stays as it is).
    assert rows[1][0] == "x\ty" and tsv[1].startswith("x\\ty\t")
    expected = ["\t".join([row[0].replace("\t", "\\t").lstrip("'")] + row[1:]) for row in rows]
    assert tsv[:-1] == expected
