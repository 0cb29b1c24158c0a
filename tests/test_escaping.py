"""Hostile names through every output format: extractor/escaping.py's rules, through the
real CLI.

Program and compute set names (a profile's), folder names (recordings' labels) and rule
labels are anyone's choice. Each test hands one command names made to break its format
(`=2+3` for a spreadsheet, `|`, newlines and `<img src=x onerror=...>` for markdown,
U+0001 and U+FFFE for XML, ESC[31m and U+202E for a terminal) and parses what comes out
strictly: CSV with the csv module, markdown parsed by markdown-it (GitHub-flavoured
tables) and its rows counted, SVG and JUnit XML with ElementTree. The property tests at
the end hold each rule for arbitrary text, and check that ordinary names are left as
they are.
"""

import csv
import io
import json
import re
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from extractor.escaping import (
    csv_cell,
    csv_text_cell,
    markdown_cell,
    markdown_code,
    terminal_text,
    xml_attribute,
    xml_text,
)
from support.cases import copy_case
from support.cli import invoke_extract
from support.paths import EDGE, GOLDEN, REPO

SUMMARY = GOLDEN / "expected.json"
RULES = REPO / "stage_rules.toml"
SVG = "{http://www.w3.org/2000/svg}"

FORMULA = '=HYPERLINK("http://x.example/","click")'
IMG = "<img src=x onerror=alert(1)>"
ESC = "\x1b[31mred\x1b[0m"
RLO = "\u202eevil"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# What a terminal must never be sent raw (the line breaks between lines aside).
NOT_FOR_TERMINALS = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
# What XML 1.0 cannot hold.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# ---- helpers -----------------------------------------------------------------------


def summary_in(folder: Path, change=None) -> Path:
    """The golden summary, changed by `change(data)`, as `folder`/summary.json."""
    data = json.loads(SUMMARY.read_text())
    if change is not None:
        change(data)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "summary.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="ascii")
    return path


def csv_rows(data: bytes):
    text = data.decode("utf-8")
    assert text.endswith("\r\n")
    return list(csv.reader(io.StringIO(text, newline=""), strict=True))


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def assert_no_formula(rows) -> None:
    """No cell a spreadsheet would run: a cell starting with a formula character must be
    a number (`-5`)."""
    for row in rows:
        for cell in row:
            assert not cell.startswith(FORMULA_STARTS) or is_number(cell), (cell, row)


def unescaped_pipes(line: str) -> int:
    """The cell delimiters of a GitHub table row: pipes without a backslash before them
    (GFM: `\\|` is a pipe inside a cell, even in a code span)."""
    return len(re.findall(r"(?<!\\)\|", line))


def assert_terminal_safe(text: str) -> None:
    found = NOT_FOR_TERMINALS.search(text)
    assert found is None, (found.group(), text)


class Cell:
    """A rendered table cell: `kinds`, its inline tokens' types (`text`, `code_inline`,
    `html_inline`, `em_open`, `link_open`, ...), and `text`, what it reads as."""

    def __init__(self, inline):
        children = inline.children or []
        self.kinds = [child.type for child in children]
        self.text = "".join(child.content for child in children)
        self.codes = [child.content for child in children if child.type == "code_inline"]


def rendered_table(markdown: str):
    """The markdown parsed as GitHub parses its tables (markdown-it: CommonMark with GFM
    tables and strikethrough), as rows of Cells, the header row first; one table."""
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(markdown)
    assert [t.type for t in tokens].count("table_open") == 1, markdown
    rows, row = [], None
    for index, token in enumerate(tokens):
        if token.type == "tr_open":
            row = []
            rows.append(row)
        elif token.type in ("th_open", "td_open"):
            inline = tokens[index + 1]
            assert inline.type == "inline"
            row.append(Cell(inline))
    return rows


def cell_text(cell) -> str:
    return cell.text


# ---- spreadsheet formulas ---------------------------------------------------------

FORMULA_FOLDERS = ["=2+3", "+1", "-2", "@SUM(A1)", "\tx", "\rcr", FORMULA.replace("/", "|")]


def _formula_recordings(tmp_path):
    def change(data):
        data["profile"] = FORMULA
        data["qkv_executions"] = -5  # a number: stays -5
        data["kernels"][1]["cycles"] -= 1000  # a fall: a negative change, a number
        data["attention_exchanges"][0]["name"] = "=cmd|' /C calc'!A0"
        data["attention_exchanges"][1]["name"] = "-cs1_/x"

    return [summary_in(tmp_path / folder, change) for folder in FORMULA_FOLDERS]


def test_table_csv_text_cells_are_never_formulas(tmp_path):
    result = invoke_extract("table", *_formula_recordings(tmp_path))
    assert result.code == 0, result
    rows = csv_rows(result.stdout)
    assert rows[0] == ["recording", "profile", "metric", "value"]
    assert_no_formula(rows)
    assert {row[0] for row in rows[1:]} == {"'" + folder for folder in FORMULA_FOLDERS}
    assert {row[1] for row in rows[1:]} == {"'" + FORMULA}
    assert ["'=2+3", "'" + FORMULA, "qkv_executions", "-5"] in rows
    assert ["'=2+3", "'" + FORMULA, "attention_exchange:=cmd|' /C calc'!A0", "64"] in rows


def test_compare_csv_text_cells_are_never_formulas(tmp_path):
    a, *others = _formula_recordings(tmp_path)
    base = summary_in(tmp_path / "base")
    result = invoke_extract("compare", base, a, *others, "-f", "csv")
    assert result.code == 0, result
    rows = csv_rows(result.stdout)
    assert_no_formula(rows)
    header = rows[0]
    assert "'=2+3" in header and "'=2+3 change %" in header and "'@SUM(A1)" in header
    assert any(row[1] == "'=cmd|' /C calc'!A0" for row in rows)
    assert any(row[1] == "'-cs1_/x" for row in rows)  # after `-`: not a prefix to mask
    # Numbers are never touched: the fall in cycles is a negative number, and -5 is -5.
    change = header.index("'=2+3 change %")
    assert any(row[change].startswith("-") and is_number(row[change]) for row in rows[1:])
    qkv = next(row for row in rows if row[-1] == "qkv_executions")
    assert qkv[header.index("'=2+3")] == "-5"


def _profile_with_names(tmp_path, prefix: str) -> Path:
    """The one-anchor fixture with `prefix` before every compute set and program name
    (names still match the rules: they search, and end as before)."""
    profile = copy_case(EDGE / "one-anchor", tmp_path / "case")
    db = sqlite3.connect(str(profile))
    db.execute("UPDATE compute_sets SET name = ? || name", (prefix,))
    db.execute("UPDATE programs SET name = ? || name", (prefix,))
    db.commit()
    db.close()
    return profile


def test_step_tables_text_cells_are_never_formulas(tmp_path):
    profile = _profile_with_names(tmp_path, FORMULA)
    out = tmp_path / "out"
    result = invoke_extract(profile, "-o", out / "summary.json", "--csv", "--no-pva", pva=False)
    assert result.code == 0, result
    for name in ("steps.csv", "first-body.csv"):
        rows = csv_rows((out / name).read_bytes())
        assert rows[0][3] == "name" and len(rows) > 1
        assert_no_formula(rows)
        assert all(row[3].startswith("'" + FORMULA) for row in rows[1:])
    # The summary holds the names as they are (JSON is not a spreadsheet).
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kernels"][0]["name"].startswith(FORMULA + "/m/")


def test_step_tables_vertex_names_are_never_formulas(tmp_path):
    # Vertex type names come from pva, which reads them from the profile.
    profile = copy_case(EDGE / "one-anchor", tmp_path / "case")
    double = profile.parent / "pva-double.json"
    data = json.loads(double.read_text())
    for compute_set in data["computeSets"]:
        compute_set["vertices"] = ["@" + name for name in compute_set["vertices"]]
    double.write_text(json.dumps(data))
    out = tmp_path / "out"
    result = invoke_extract(profile, "-o", out / "summary.json", "--csv")
    assert result.code == 0, result
    rows = csv_rows((out / "steps.csv").read_bytes())
    assert rows[0][9] == "vertices"
    assert_no_formula(rows)
    assert "'@poplin::ConvPartial1x1Out<half,half,true,false,16,4,false>" in {
        row[9] for row in rows
    }


def _rules(tmp_path, labels: dict) -> Path:
    """The installed rules with some labels replaced (as TOML basic strings)."""
    text = RULES.read_text(encoding="utf-8")
    for old, new in labels.items():
        line = 'label = "{}"'.format(old)
        assert line in text
        text = text.replace(line, "label = {}".format(json.dumps(new)))
    path = tmp_path / "rules.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_blocks_csv_header_labels_are_never_formulas(tmp_path):
    rules = _rules(tmp_path, {"fused QKV projection": FORMULA, "MLP up": "-up", "PV": "@pv"})
    result = invoke_extract(
        "blocks", EDGE / "multi-ipu" / "profile.pop", "--rules", rules, "-f", "csv", pva=False
    )
    assert result.code == 0, result
    rows = csv_rows(result.stdout)
    assert_no_formula(rows)
    assert {"'" + FORMULA, "'-up", "'@pv"} <= set(rows[0])


# ---- markdown ---------------------------------------------------------------------

MARKDOWN_FOLDERS = ["a|b", "line\nbreak", IMG, "x" + ESC, RLO, "ctl\x01", "\\|", "x_"]
STAGES = [
    "st|age",
    "[x](http://x.example/)",
    "<b>bold</b>\n| fake | row |",
    "*em* _em_ `c`",
    "a\\",
    "a\u2028b",
]
EXCHANGES = ["cs1_/a|b`c\n" + IMG, "\x1b[2J/x", "``/y|"]


def _markdown_recordings(tmp_path):
    def change(data):
        for kernel, stage in zip(data["kernels"], STAGES):
            kernel["stage"] = stage
        for exchange, name in zip(data["attention_exchanges"], EXCHANGES):
            exchange["name"] = name

    return [summary_in(tmp_path / folder, change) for folder in MARKDOWN_FOLDERS]


CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")


def assert_markdown_table(text: str, columns: int):
    """Every line a table row of `columns` cells, nothing a terminal or a page would
    take as markup or a control sequence (`<` and `>` only inside code spans, where
    they are text); the rendered rows."""
    assert_terminal_safe(text)
    assert "<" not in CODE_SPAN.sub("", text) and ">" not in CODE_SPAN.sub("", text)
    lines = text.splitlines()
    assert all(unescaped_pipes(line) == columns + 1 for line in lines), lines
    rows = rendered_table(text)
    assert len(rows) == len(lines) - 1  # the delimiter row is no row
    assert all(len(row) == columns for row in rows)
    return rows


def test_compare_markdown_rows_stay_rows_and_names_stay_text(tmp_path):
    result = invoke_extract("compare", *_markdown_recordings(tmp_path))
    assert result.code == 0, result
    text = result.stdout.decode("utf-8")
    rows = assert_markdown_table(text, 2 + len(MARKDOWN_FOLDERS))
    # Rendered, each name reads as itself, its controls as visible escapes; no markup
    # but the exchanges' code spans.
    assert [cell_text(c) for c in rows[0]] == ["", "unit"] + [
        terminal_text(folder) for folder in MARKDOWN_FOLDERS
    ]
    for row in rows:
        for cell in row:
            assert set(cell.kinds) <= {"text", "code_inline"}, cell.kinds
    first_cells = [cell_text(row[0]) for row in rows]
    for stage in STAGES:
        assert "stage: " + terminal_text(stage) in first_cells
    codes = [code for row in rows for code in row[0].codes]
    assert codes[: len(EXCHANGES)] == [
        terminal_text(name.replace("cs1_", "cs#_")) for name in EXCHANGES
    ]


def test_blocks_markdown_rows_stay_rows_and_labels_stay_text(tmp_path):
    hostile = {
        "fused QKV projection": "a|b<img src=x onerror=alert(1)>\n| x |",
        "MLP up": "**total**\x1b[31m\u202e",
    }
    rules = _rules(tmp_path, hostile)
    result = invoke_extract(
        "blocks", EDGE / "multi-ipu" / "profile.pop", "--rules", rules, "-f", "markdown", pva=False
    )
    assert result.code == 0, result
    # Two IPUs: a note follows the table, after a blank line (test_several_ipus.py).
    table, _, note = result.stdout.decode("utf-8").partition("\n\n")
    assert note.startswith("Several IPUs (2): ") and note.count("\n") == 1
    assert_terminal_safe(note)
    rows = assert_markdown_table(table + "\n", 9)
    assert [cell_text(row[0]) for row in rows[1:]] == [
        terminal_text(label) for label in hostile.values()
    ] + ["total"]
    # The total's bold is the table's own; a label's stars are text.
    assert "strong_open" in rows[-1][0].kinds
    assert all(set(row[0].kinds) == {"text"} for row in rows[1:-1])


def test_ordinary_markdown_is_unchanged():
    # The README's example lines, and an exchange name with `_` and `#`, as before.
    result = invoke_extract(
        "blocks", "fixtures/edge/multi-ipu/profile.pop", "-f", "markdown", cwd=REPO, pva=False
    )
    assert result.stdout.decode("utf-8").splitlines()[2] == (
        "| fused QKV projection | 2 | 510 | 530.0 | 530.0 | 550 | 20.0 | run 1, block 0 "
        "| run 1, block 1 |"
    )
    name = "cs#_/visual/trunk/blocks/blocks.0/attn/Mul_1/#/Op/Multiply/ExchangePre"
    assert markdown_code(name) == "`{}`".format(name)
    for label in (
        "score layout / softmax",
        "Q/K scaling or conversion",
        "MLP up",
        "vit-f8weight",
        "profile_logs_f8weight",
        "fp8 w",
        "stage: PV",
    ):
        assert markdown_cell(label) == label


# ---- XML: the chart and the JUnit report ------------------------------------------

XML_FOLDERS = ["ctl\x01", "\ufffe", "x" + ESC, IMG, "q\"'&<"]
XML_STAGES = ["\x01stage", "st\uffffage", "<g onload=x>"]


def _xml_recordings(tmp_path, worse=False):
    """A baseline and one recording per XML_FOLDERS name, with XML_STAGES as stage labels
    and an exchange named with characters XML cannot hold; `worse`: the recordings have
    more cycles and code bytes than the baseline (their budget checks fail)."""

    def change(data, more):
        for kernel, stage in zip(data["kernels"], XML_STAGES):
            kernel["stage"] = stage
            kernel["cycles"] += more * 100000
        data["attention_exchanges"][0]["name"] = "cs1_/\x02x\ufffe<y>&"
        data["attention_exchanges"][0]["maximum"] += more * 1000

    more = 1 if worse else 0
    base = summary_in(tmp_path / "base", lambda data: change(data, 0))
    return [base] + [
        summary_in(tmp_path / folder, lambda data: change(data, more)) for folder in XML_FOLDERS
    ]


def shown_in_xml(text: str) -> str:
    """What an XML parser reads back from a name: XML's forbidden characters as visible
    escapes, the rest as it is."""
    return NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def test_chart_is_xml_whatever_the_labels(tmp_path):
    chart = tmp_path / "c.svg"
    result = invoke_extract("compare", *_xml_recordings(tmp_path), "--chart", chart)
    assert result.code == 0, result
    raw = chart.read_bytes()
    root = ET.fromstring(raw)  # strict: a forbidden character is an error
    assert NOT_XML.search(raw.decode("utf-8")) is None
    labels = ["base"] + XML_FOLDERS
    legend = [g for g in root.iter(SVG + "g") if g.get("class") == "legend-entry"]
    assert [g.get("data-recording") for g in legend] == [shown_in_xml(x) for x in labels]
    assert ["".join(g.find(SVG + "text").itertext()) for g in legend] == [
        shown_in_xml(x) for x in labels
    ]
    stages = {r.get("data-stage") for r in root.iter(SVG + "rect") if r.get("class") == "bar"}
    assert {shown_in_xml(s) for s in XML_STAGES} <= stages
    assert not [
        e for e in root.iter() if e.tag in (SVG + "img", SVG + "g") and e.get("onload")
    ]  # the names are text, never elements


def test_junit_is_xml_whatever_the_names(tmp_path):
    budget = tmp_path / "budget.toml"
    budget.write_text('[budgets]\n"stage:*" = "+1%"\n"attention_exchange:*" = "+1%"\n')
    report = tmp_path / "r.xml"
    result = invoke_extract(
        "compare", *_xml_recordings(tmp_path, worse=True), "--budget", budget, "--junit", report
    )
    assert result.code == 3, result
    raw = report.read_bytes().decode("utf-8")
    assert NOT_XML.search(raw) is None
    root = ET.fromstring(raw.encode("utf-8"))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [shown_in_xml(x) for x in XML_FOLDERS]
    names = [case.get("name") for case in root.iter("testcase")]
    assert "stage:\\x01stage +1% [stage:*]" in names
    assert "stage:st\\uffffage +1% [stage:*]" in names
    assert "attention_exchange:cs#_/\\x02x\\ufffe<y>& +1% [attention_exchange:*]" in names
    messages = [f.get("message") for f in root.iter("failure")]
    assert any("\\x01stage" in m for m in messages)
    assert any("cs#_/\\x02x\\ufffe<y>&" in (f.text or "") for f in root.iter("failure"))


# ---- negative cycles in the chart ------------------------------------------------


def test_chart_of_negative_cycles(tmp_path):
    def base(data):
        data["kernels"][0]["cycles"] = 1000
        data["kernels"][1]["cycles"] = -200

    def new(data):
        data["kernels"][0]["cycles"] = -500
        data["kernels"][1]["cycles"] = 100

    chart = tmp_path / "c.svg"
    a, b = summary_in(tmp_path / "a", base), summary_in(tmp_path / "b", new)
    assert invoke_extract("compare", a, b, "--chart", chart).code == 0
    root = ET.fromstring(chart.read_bytes())
    bars = [r for r in root.iter(SVG + "rect") if r.get("class") == "bar"]
    axis = next(g for g in root.iter(SVG + "g") if g.get("class") == "x-axis")
    zero = float(axis.find(SVG + "line").get("y1"))
    values = [int(r.get("data-cycles")) for r in bars]
    assert -500 in values and -200 in values
    scale = None
    for bar, value in zip(bars, values):
        y, height = float(bar.get("y")), float(bar.get("height"))
        assert height >= 0
        if value >= 0:  # standing on the zero line
            assert y + height == pytest.approx(zero, abs=0.01)
        else:  # hanging from it
            assert y == pytest.approx(zero, abs=0.01)
        if value:
            scale = scale or height / abs(value)
            assert height == pytest.approx(abs(value) * scale, rel=1e-3, abs=0.02)
    # The scale reaches the lowest value, ticks where the bars' scale puts them.
    ticks = [t for t in root.iter(SVG + "text") if t.get("class") == "tick"]
    numbers = [int(t.text.replace(",", "")) for t in ticks]
    assert 0 in numbers and min(numbers) <= -500 and max(numbers) >= max(values)
    for tick, number in zip(ticks, numbers):
        assert zero - float(tick.get("y")) == pytest.approx(number * scale, abs=0.2)
    # The change is signed by more or fewer cycles, also against a negative baseline.
    titles = {
        (r.get("data-stage"), r.get("data-recording")): r.find(SVG + "title").text for r in bars
    }
    stages = [k["stage"] for k in json.loads(a.read_text())["kernels"]]
    assert "(-150.0% against a)" in titles[(stages[0], "b")]
    assert "(+150.0% against a)" in titles[(stages[1], "b")]


# ---- terminals --------------------------------------------------------------------

TERMINAL_FOLDER = "\x1b[31mred\u202e\x9b2J"


def _hostile_profile(tmp_path) -> Path:
    """one-anchor in a folder named with escape sequences, with a table, a column and a
    step name holding some too."""
    profile = copy_case(EDGE / "one-anchor", tmp_path / TERMINAL_FOLDER)
    db = sqlite3.connect(str(profile))
    db.execute('CREATE TABLE "t\x1b[2J\u202e" ("c\x1b]0;title\x07" INTEGER)')
    db.execute(
        "UPDATE compute_sets SET name = ? WHERE name = '/m/head/Convolve'",
        ("/m/head\x1b[5m\u2066/x",),
    )
    db.commit()
    db.close()
    return profile


def test_inspect_stages_and_doctor_show_controls_as_escapes(tmp_path):
    profile = _hostile_profile(tmp_path)
    rules = _rules(tmp_path, {"MLP up": "up\x1b[1m\u202d"})
    runs = {
        "inspect": invoke_extract("inspect", profile, "--no-pva", pva=False),
        "stages": invoke_extract("stages", profile, "--rules", rules, pva=False),
        "doctor": invoke_extract("doctor", profile),
    }
    for command, result in runs.items():
        # doctor: exit 1, as the renamed compute set is no longer pva's (a FAIL).
        assert result.code == (1 if command == "doctor" else 0), (command, result)
        text = result.stdout.decode("utf-8")
        assert_terminal_safe(text)
        assert terminal_text(str(profile)) in text.splitlines()[0], command
    inspect = runs["inspect"].stdout.decode("utf-8")
    assert "t\\x1b[2J\\u202e" in inspect and "c\\x1b]0;title\\x07" in inspect
    stages = runs["stages"].stdout.decode("utf-8")
    assert "up\\x1b[1m\\u202d" in stages and "/m/head\\x1b[5m\\u2066/x" in stages


def test_an_error_line_shows_controls_as_escapes(tmp_path):
    broken = tmp_path / TERMINAL_FOLDER / "summary.json"
    broken.parent.mkdir()
    broken.write_text("not json\x1b[2J")
    result = invoke_extract("compare", summary_in(tmp_path / "a"), broken)
    assert result.code == 1, result
    assert_terminal_safe(result.stderr.rstrip("\n"))
    assert len(result.stderr.splitlines()) == 1
    assert terminal_text(str(broken)) in result.stderr


# ---- the rules, for any text ---------------------------------------------------------

PROPERTY = settings(max_examples=100, deadline=None, derandomize=True)
# Besides the generated text, each property is held for the problems the rules answer.
HOSTILE = [
    "=2+3",
    "+1",
    "-1",
    "@x",
    "\tx",
    "\rx",
    "a|b",
    "a\\|b",
    "line\nbreak",
    IMG,
    ESC,
    RLO,
    "\u2066x\u2069",
    "\x85\x9b",
    "\ufffe",
    "\uffff",
    "\x01",
    "\ud800",
    "*a*",
    "_a_",
    "~a~",
    "`a`",
    "``",
    "` a",
    "[a](b)",
    "![a](b)",
    "&lt;",
    "a\\",
    "  a  ",
    " ",
]


def hostile_examples(test):
    for text in HOSTILE:
        test = example(text)(test)
    return test


# Any text, with the characters the rules are about made likely.
SPECIAL = (
    "=+-@\t\r\n|\\`*_~[]<>&\"' \x00\x01\x1b\x7f\x85\x9b\u2028\u2029\u202a\u202e"
    "\u2066\u2069\ud800\udfff\ufffe\uffff"
)
TEXT = st.one_of(
    st.text(st.sampled_from(SPECIAL + "aZ0 #/."), max_size=30),
    st.text(max_size=30),
    st.text(st.one_of(st.characters(), st.sampled_from(SPECIAL)), max_size=30),
)
# Names as profiles and rules files write them.
WORD = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9.#{},:()%/]*", fullmatch=True)
ORDINARY = st.lists(WORD, min_size=1, max_size=5).map(" ".join)
SNAKE = st.lists(st.from_regex(r"[A-Za-z0-9]+", fullmatch=True), min_size=1, max_size=4).map(
    "_".join
)
REAL_NAMES = [k["stage"] for k in json.loads(SUMMARY.read_text())["kernels"]] + [
    "score layout / softmax",
    "Q/K scaling or conversion",
    "vit-f8weight-b",
]


@PROPERTY
@given(TEXT)
@hostile_examples
def test_terminal_text_holds_no_control(text):
    shown = terminal_text(text)
    assert NOT_FOR_TERMINALS.search(shown) is None
    assert "\n" not in shown
    assert terminal_text(shown) == shown


@PROPERTY
@given(TEXT)
@hostile_examples
def test_csv_text_cell_is_never_a_formula(text):
    cell = csv_text_cell(text)
    assert not cell.startswith(FORMULA_STARTS)
    assert cell in (text, "'" + text)
    out = io.StringIO()
    csv.writer(out).writerow([csv_cell(text.replace("\x00", "")), 5, -5])
    assert_no_formula(csv.reader(io.StringIO(out.getvalue(), newline="")))


@PROPERTY
@given(TEXT)
@hostile_examples
def test_markdown_cell_renders_as_the_text(text):
    cell = markdown_cell(text)
    assert NOT_FOR_TERMINALS.search(cell) is None and "\n" not in cell
    assert not re.search("[<>]", cell) and unescaped_pipes(cell) == 0
    rows = rendered_table("| h |\n|---|\n| {} |\n".format(cell))
    assert len(rows) == 2 and len(rows[1]) == 1
    shown = rows[1][0]
    assert set(shown.kinds) <= {"text"}  # text only: no markup
    assert shown.text == terminal_text(text).strip()


@PROPERTY
@given(TEXT.filter(lambda t: t != ""))
@hostile_examples
def test_markdown_code_renders_as_the_text(text):
    code = markdown_code(text)
    assert NOT_FOR_TERMINALS.search(code) is None and "\n" not in code
    assert unescaped_pipes(code) == 0
    rows = rendered_table("| h |\n|---|\n| {} |\n".format(code))
    assert len(rows) == 2 and len(rows[1]) == 1
    assert rows[1][0].kinds == ["code_inline"]
    assert rows[1][0].text == terminal_text(text)


@PROPERTY
@given(TEXT)
@hostile_examples
def test_xml_text_and_attribute_read_back(text):
    expected = shown_in_xml(text)
    document = "<a b={}>{}</a>".format(xml_attribute(text), xml_text(text))
    assert NOT_XML.search(document) is None
    element = ET.fromstring(document.encode("utf-8"))
    assert element.get("b") == expected
    assert (element.text or "") == expected


@PROPERTY
@given(st.one_of(ORDINARY, SNAKE, st.sampled_from(REAL_NAMES)))
def test_ordinary_names_are_unchanged(name):
    assert terminal_text(name) == name
    assert csv_text_cell(name) == name
    assert markdown_cell(name) == name
    assert markdown_code(name) == "`{}`".format(name)
    assert xml_text(name) == name and xml_attribute(name) == '"{}"'.format(name)


def test_a_batch_prints_no_terminal_sequence_from_a_folder_name(tmp_path):
    # The batch's progress lines name each profile by its path: a folder named with ESC
    # and a bidi override shows them as escapes, on plain stderr and in a failure line.
    hostile = "e\x1b[31mvil\u202e"
    copy_case(EDGE / "one-anchor", tmp_path / "runs" / hostile)
    (tmp_path / "runs" / (hostile + "bad")).mkdir()
    (tmp_path / "runs" / (hostile + "bad") / "profile.pop").write_text("not a profile")
    result = invoke_extract("runs", "-o", "out", "-j", "1", cwd=tmp_path)
    assert result.code == 1, result
    assert "\x1b" not in result.stderr and "\u202e" not in result.stderr
    assert "e\\x1b[31mvil\\u202e" in result.stderr
