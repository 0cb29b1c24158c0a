"""Inputs derived from extract's own outputs, made hostile by hand: numbers too large for
what they count (a budget, a blocks.json, a summary, sqlite_stat1), values of the wrong
type in a summary, and a blocks.json whose labels would make the report's heat map
enormous. Each is refused with one line naming the file (and the key), or shown within
a bound; never "unexpected failure" nor a traceback. Every test runs the real CLI."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from support.checks import budget_file, one_error
from support.cli import invoke_extract
from support.paths import EDGE
from support.reportpage import A, parse, vouch_for_blocks, write_summary

# ---- budget files ---------------------------------------------------------------------


def budget(tmp_path: Path, value: str) -> Path:
    return budget_file(tmp_path, '"stage:*" = "{}"\n'.format(value))


@pytest.mark.parametrize(
    "value, problem",
    [
        ("<= " + "9" * 4301, "the number is too large (more than 30 digits)"),
        ("+" + "1" * 31 + "%", "the number is too large (more than 30 digits)"),
        (">= 1." + "5" * 5000, "the number is too precise (more than 30 digits after the point)"),
        ("+0." + "0" * 30 + "1", "the number is too precise (more than 30 digits after the point)"),
    ],
    ids=["4301 digits", "31 digits", "5000 decimals", "31 decimals"],
)
def test_a_budget_number_of_too_many_digits_is_a_usage_error(tmp_path, value, problem):
    path = budget(tmp_path, value)
    error = one_error(invoke_extract("compare", A, A, "--budget", path, pva=False), code=2)
    assert error.startswith("extract: error: {}: key 'stage:*': ".format(path)), error
    assert error.endswith(problem), error


@pytest.mark.parametrize(
    "value",
    ["<= " + "9" * 30, "+ " + "0" * 5000 + "2.5" + "0" * 5000 + "%", ">= 0." + "0" * 29 + "1"],
)
def test_a_budget_number_within_the_digits_is_read(tmp_path, value):
    result = invoke_extract("compare", A, A, "--budget", budget(tmp_path, value), pva=False)
    assert result.code == 0, result
    assert "error" not in result.stderr


# ---- blocks.json ----------------------------------------------------------------------


def blocks_text(number: str) -> str:
    """A blocks.json of one body whose every cycle count is `number` (its text)."""
    stats = '{{"blocks": 1, "min": {0}, "median": {0}, "mean": {0}, "max": {0}}}'.format(number)
    return (
        '{{"profile": "p", "stages": ["PV"], "blocks": [{{"run": 1, "block": 0, '
        '"first_step": 0, "end_step": 1, "kernels": 1, "cycles": {{"PV": {0}}}, '
        '"total": {0}}}], "stats": {{"PV": {1}}}, "total": {1}}}'.format(number, stats)
    )


BAD_NUMBERS = {
    "401 digits": (
        "9" * 401,
        ("the whole number 99999999999999999999... (401 digits) is beyond 64 bits"),
    ),
    "2**63": (str(2**63), "the whole number 9223372036854775808 is beyond 64 bits"),
    "-2**63-1": (str(-(2**63) - 1), "the whole number -9223372036854775809 is beyond 64 bits"),
    "1e400": ("1e400", "the number 1e400 is beyond what a float holds"),
    "1.7e308": ("1.7e308", "the number 1.7e308 is beyond 2**64, more than any cycle count"),
    "-1e20": ("-1e20", "the number -1e20 is beyond 2**64, more than any cycle count"),
    "NaN": ("NaN", "NaN, which is not a JSON number (its numbers are finite)"),
    "-Infinity": ("-Infinity", ("-Infinity, which is not a JSON number (its numbers are finite)")),
}
BLOCKS_READERS = {
    "report": lambda tmp_path, out: ("report", out, "-o", tmp_path / "r.html"),
    "compare --stat": lambda tmp_path, out: (
        "compare",
        out / "x" / "summary.json",
        out / "x" / "summary.json",
        "--stat",
        "median",
    ),
    "compare --chart": lambda tmp_path, out: (
        "compare",
        out / "x" / "summary.json",
        out / "x" / "summary.json",
        "--stat",
        "max",
        "--chart",
        tmp_path / "c.svg",
    ),
}


@pytest.mark.parametrize("reader", sorted(BLOCKS_READERS))
@pytest.mark.parametrize("case", sorted(BAD_NUMBERS))
def test_a_blocks_number_beyond_64_bits_or_not_finite_is_one_line(tmp_path, reader, case):
    number, problem = BAD_NUMBERS[case]
    out = tmp_path / "out"
    write_summary(out / "x", A)
    path = out / "x" / "blocks.json"
    path.write_text(blocks_text(number))
    error = one_error(invoke_extract(*BLOCKS_READERS[reader](tmp_path, out), pva=False))
    assert error == "extract: error: {}: not a blocks file: {}".format(path, problem)


def test_a_blocks_number_at_the_64_bit_bounds_is_read(tmp_path):
    out = tmp_path / "out"
    write_summary(out / "x", A)
    (out / "x" / "blocks.json").write_text(blocks_text(str(2**63 - 1)))
    vouch_for_blocks(out)
    result = invoke_extract("report", out, "-o", tmp_path / "r.html", pva=False)
    assert result.code == 0, result
    assert "{:,}".format(2**63 - 1).encode() in (tmp_path / "r.html").read_bytes()


# ---- summaries: numbers and types -------------------------------------------------------


def _kernel(field, value):
    def edit(data):
        data["kernels"][1][field] = value

    return edit


def _key(key, value):
    def edit(data):
        data[key] = value

    return edit


def _memory(key, field, value):
    def edit(data):
        data[key][field] = value

    return edit


BAD_SUMMARIES = {
    "profile a list": (
        _key("profile", ["a"]),
        ("'profile' is not a string (the profile's path), but a list"),
    ),
    "profile a number": (
        _key("profile", 5),
        ("'profile' is not a string (the profile's path), but a number"),
    ),
    "profile null": (
        _key("profile", None),
        ("'profile' is not a string (the profile's path), but null"),
    ),
    "profile an object": (
        _key("profile", {}),
        ("'profile' is not a string (the profile's path), but an object"),
    ),
    "step text": (
        _kernel("step", "4"),
        ("'kernels'[1] 'step' is not a whole number, but a string"),
    ),
    "step null": (_kernel("step", None), ("'kernels'[1] 'step' is not a whole number, but null")),
    "kind a number": (
        _kernel("kind", 5),
        ("'kernels'[1] 'kind' is neither a string nor null, but a number"),
    ),
    "name a list": (
        _kernel("name", ["a"]),
        ("'kernels'[1] 'name' is neither a string nor null, but a list"),
    ),
    "vertices an object": (
        _kernel("vertices", {}),
        ("'kernels'[1] 'vertices' is neither a string nor null, but an object"),
    ),
    "active_tiles text": (
        _kernel("active_tiles", "4"),
        ("'kernels'[1] 'active_tiles' is neither a whole number nor null, but a string"),
    ),
    "start a fraction": (
        _kernel("start", 1.5),
        ("'kernels'[1] 'start' is neither a whole number nor null, but a number"),
    ),
    "end a boolean": (
        _kernel("end", True),
        ("'kernels'[1] 'end' is neither a whole number nor null, but a boolean"),
    ),
    "max_exchange_code_bytes text": (
        _kernel("max_exchange_code_bytes", "0"),
        ("'kernels'[1] 'max_exchange_code_bytes' is neither a whole number nor null, but a string"),
    ),
    "cycles 2**63": (
        _kernel("cycles", 2**63),
        (
            "'kernels'[1] 'cycles' is "
            "9223372036854775808: beyond the 64-bit integers a profile's cycles "
            "are"
        ),
    ),
    "cycles -2**63-1": (
        _kernel("cycles", -(2**63) - 1),
        (
            "'kernels'[1] 'cycles' is "
            "-9223372036854775809: beyond the 64-bit integers a profile's "
            "cycles are"
        ),
    ),
    # checked before: still refused
    "cycles text": (
        _kernel("cycles", "5"),
        ("'kernels' is not a list of kernels with a stage and cycles"),
    ),
    "exchanges an object": (
        _key("attention_exchanges", {}),
        ("'attention_exchanges' is neither null nor a list of {name, maximum, mean}"),
    ),
    "spans of fractions": (
        _key("device_spans", [1.5]),
        ("'device_spans' is not a list of whole numbers"),
    ),
    "spans null": (_key("device_spans", None), ("'device_spans' is not a list of whole numbers")),
    "qkv null": (_key("qkv_executions", None), "'qkv_executions' is not a whole number"),
    "exchange memory text": (
        _memory("exchange_memory_per_tile", "min(b)", "1"),
        ("'exchange_memory_per_tile' is not an object with min(b), avg(b), max(b)"),
    ),
    "allocated memory a boolean": (
        _memory("allocated_memory", "max(total)", False),
        ("'allocated_memory' is not an object with min(total), avg(total), max(total)"),
    ),
}
SUMMARY_READERS = {
    "table": lambda tmp_path, path: ("table", path),
    "report": lambda tmp_path, path: ("report", path, "-o", tmp_path / "r.html"),
    "compare": lambda tmp_path, path: ("compare", A, path),
}


@pytest.mark.parametrize("reader", sorted(SUMMARY_READERS))
@pytest.mark.parametrize("case", sorted(BAD_SUMMARIES))
def test_a_summary_field_of_the_wrong_type_is_one_line(tmp_path, reader, case):
    edit, problem = BAD_SUMMARIES[case]
    path = write_summary(tmp_path / "bad", A, edit)
    error = one_error(invoke_extract(*SUMMARY_READERS[reader](tmp_path, path), pva=False))
    assert error == "extract: error: {}: not a summary: {}".format(path, problem)


def test_null_kernel_fields_and_zero_cycles_are_a_summary(tmp_path):
    def edit(data):
        for field in (
            "kind",
            "name",
            "vertices",
            "cycles",
            "active_tiles",
            "start",
            "end",
            "max_exchange_code_bytes",
        ):
            data["kernels"][1][field] = None
        data["kernels"][2]["cycles"] = 0

    path = write_summary(tmp_path / "odd", A, edit)
    result = invoke_extract("table", path, pva=False)
    assert result.code == 0, result


def test_a_summary_fraction_beyond_64_bits_is_one_line(tmp_path):
    path = write_summary(tmp_path / "bad", A, _memory("allocated_memory", "avg(total)", 1.0))
    path.write_text(path.read_text().replace('"avg(total)": 1.0', '"avg(total)": -1.7e308'))
    error = one_error(invoke_extract("report", path, "-o", tmp_path / "r.html", pva=False))
    assert error == (
        "extract: error: {}: not a summary: the number -1.7e308 is beyond the "
        "64 bits of a summary's numbers".format(path)
    )


def test_a_summary_number_of_401_digits_is_one_line(tmp_path):
    path = write_summary(tmp_path / "bad", A, _kernel("cycles", 1))
    path.write_text(path.read_text().replace('"cycles": 1,', '"cycles": {},'.format("9" * 401)))
    error = one_error(invoke_extract("report", path, "-o", tmp_path / "r.html", pva=False))
    assert error.startswith("extract: error: {}: not a summary: the whole number ".format(path)), (
        error
    )


# ---- inspect: sqlite_stat1 --------------------------------------------------------------


@pytest.mark.parametrize(
    "stat",
    ["\u00b2", "\u00b23 1", "9" * 5000, "9" * 5000 + " 1"],
    ids=["superscript", "superscript then more", "5000 digits", "5000 digits then more"],
)
def test_a_stat1_count_that_is_not_ascii_digits_is_passed_over(tmp_path, stat):
    profile = tmp_path / "profile.pop"
    shutil.copy(str(EDGE / "one-anchor" / "profile.pop"), str(profile))
    db = sqlite3.connect(str(profile))
    db.execute("ANALYZE")
    assert db.execute("UPDATE sqlite_stat1 SET stat = ? WHERE tbl = 'steps'", (stat,)).rowcount >= 1
    db.commit()
    rows = db.execute("SELECT count(*) FROM steps").fetchone()[0]
    db.close()
    result = invoke_extract("inspect", profile, "--json", pva=False)
    assert result.code == 0, result
    assert result.stderr == ""
    steps = {t["name"]: t for t in json.loads(result.stdout)["tables"]}["steps"]
    assert (steps["rows"], steps["rows_method"]) == (rows, "count")


# ---- the report's heat maps -------------------------------------------------------------


def many_labels_blocks(folder: Path, bodies: int = 400, labels: int = 40) -> None:
    """A blocks.json of `bodies` blocks with `labels` stage labels each, none shared."""
    names = ["s{}-{}".format(b, k) for b in range(bodies) for k in range(labels)]
    blocks = [
        {
            "run": 1,
            "block": b,
            "first_step": b,
            "end_step": b + 1,
            "kernels": labels,
            "cycles": {"s{}-{}".format(b, k): 10 + k for k in range(labels)},
            "total": sum(10 + k for k in range(labels)),
        }
        for b in range(bodies)
    ]
    (folder / "blocks.json").write_text(
        json.dumps({"profile": "p", "stages": names, "blocks": blocks, "stats": {}, "total": None})
    )


def test_a_heat_map_of_thousands_of_stages_shows_the_first_and_a_note(tmp_path):
    from extractor.report.heatmap import MAX_HEAT_COLUMNS

    out = tmp_path / "out"
    write_summary(out / "x", A)
    many_labels_blocks(out / "x")
    vouch_for_blocks(out)
    target = tmp_path / "r.html"
    result = invoke_extract("report", out, "-o", target, pva=False)
    assert result.code == 0, result
    html = target.read_bytes()
    assert len(html) < 1 << 20  # 39 MB unbounded
    details = parse(html).find("details", cls="heat-map")
    heads = [th.text() for th in details.find("thead").find_all("th")]
    assert heads == ["run", "block"] + ["s0-{}".format(k) for k in range(MAX_HEAT_COLUMNS)] + [
        "total"
    ]
    note = details.find("p", cls="note").text()
    assert note.startswith(
        "{} more stages not shown: the first {} with kernel cycles are".format(
            400 * 40 - MAX_HEAT_COLUMNS, MAX_HEAT_COLUMNS
        )
    ), note


def test_labels_beyond_the_stages_list_count_toward_the_columns(tmp_path):
    from extractor.report.heatmap import MAX_HEAT_COLUMNS

    out = tmp_path / "out"
    write_summary(out / "x", A)
    many_labels_blocks(out / "x", bodies=3, labels=20)
    data = json.loads((out / "x" / "blocks.json").read_text())
    data["stages"] = []  # every label is one the list does not have: sorted after it
    (out / "x" / "blocks.json").write_text(json.dumps(data))
    vouch_for_blocks(out)
    target = tmp_path / "r.html"
    assert invoke_extract("report", out, "-o", target, pva=False).code == 0
    details = parse(target.read_bytes()).find("details", cls="heat-map")
    assert len(details.find("thead").find_all("th")) == 2 + MAX_HEAT_COLUMNS + 1
    assert (
        details.find("p", cls="note")
        .text()
        .startswith("{} more stages not shown".format(60 - MAX_HEAT_COLUMNS))
    )


def test_the_page_draws_heat_maps_up_to_a_bound_then_lists_them(tmp_path):
    from extractor.report.heatmap import MAX_HEAT_CELLS, MAX_HEAT_COLUMNS, MAX_HEAT_ROWS

    per_map = MAX_HEAT_ROWS * (MAX_HEAT_COLUMNS + 1)
    drawn = MAX_HEAT_CELLS // per_map
    out = tmp_path / "out"
    labels = ["s{}".format(k) for k in range(MAX_HEAT_COLUMNS)]
    bodies = [
        {
            "run": 1,
            "block": b,
            "first_step": b,
            "end_step": b + 1,
            "kernels": 1,
            "cycles": {label: b for label in labels},
            "total": b * len(labels),
        }
        for b in range(MAX_HEAT_ROWS)
    ]
    text = json.dumps(
        {"profile": "p", "stages": labels, "blocks": bodies, "stats": {}, "total": None}
    )
    for number in range(drawn + 3):
        write_summary(out / "r{:03}".format(number), A)
        (out / "r{:03}".format(number) / "blocks.json").write_text(text)
    vouch_for_blocks(out)
    target = tmp_path / "r.html"
    result = invoke_extract("report", out, "-o", target, pva=False)
    assert result.code == 0, result
    html = target.read_bytes()
    assert len(html) < 8 << 20
    maps = parse(html).find("section", id="heat-maps").find_all("details")
    assert len(maps) == drawn + 3  # every one listed
    assert [len(m.find_all("table")) for m in maps] == [1] * drawn + [0] * 3
    for heat_map in maps[drawn:]:
        assert heat_map.find("p", cls="note").text().startswith("Not drawn: the page")
        assert "open" not in heat_map.attrs


def test_negative_cycles_are_drawn_leftwards_from_zero(tmp_path):
    # A profile's numbers are used as they are, so a summary may hold negative cycles:
    # every bar starts at the zero tick, positive stages rightwards, negative ones left.
    from extractor.barchart import LABEL_WIDTH, PLOT_WIDTH

    out = tmp_path / "out"
    write_summary(out / "a", A)
    write_summary(out / "b", A, _kernel("cycles", -100000))
    target = tmp_path / "r.html"
    result = invoke_extract("report", out, "-o", target, pva=False)
    assert result.code == 0, result
    chart = parse(target.read_bytes()).find("svg", cls="chart")
    ticks = {t.text(): float(t.attrs["x"]) for t in chart.find_all("text", cls="tick")}
    zero = ticks["0"]
    assert any(text.startswith("\u2212") for text in ticks)  # the scale goes below zero
    assert min(ticks.values()) >= LABEL_WIDTH - 0.01
    assert max(ticks.values()) <= LABEL_WIDTH + PLOT_WIDTH + 0.01
    bars = chart.find_all("g", cls="bar")
    assert sorted(bar.find("text", cls="name").text() for bar in bars) == ["a", "b"]
    for bar in bars:
        rects = [(float(r.attrs["x"]), float(r.attrs["width"])) for r in bar.find_all("rect")]
        right = [r for r in rects if r[0] >= zero - 0.01]
        left = [r for r in rects if r[0] < zero - 0.01]
        assert right and abs(right[0][0] - zero) < 0.02  # starts at zero
        for x, width in right:
            assert x + width <= LABEL_WIDTH + PLOT_WIDTH + 0.05
        name = bar.find("text", cls="name").text()
        if name == "b":
            assert len(left) == 1 and abs(left[0][0] + left[0][1] - zero) < 0.02
            assert left[0][0] >= LABEL_WIDTH - 0.01
            assert any("-100,000 kernel cycles" in t.text() for t in bar.find_all("title"))
        else:
            assert left == []
