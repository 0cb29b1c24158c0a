"""extractor.core.model: the summary's one type. Its key list against the spec's (the reference
summary's bytes, as fixtures/vit-f8weight/expected.json holds them), reading every
committed summary, refusing what is not a summary (through `extract compare`, where a
person meets it), and the numbers compare and the batch index take from it. Expected
numbers are read off the fixture by hand or computed here from its raw JSON.
"""

import json
from pathlib import Path

import pytest

from extractor.core.model import (
    ALLOCATED_MEMORY_FIELDS,
    EXCHANGE_MEMORY_FIELDS,
    SUMMARY_KEYS,
    AttentionExchange,
    MinMeanMax,
    Summary,
    summary_dict,
)
from extractor.core.steps import STEP_FIELDS
from extractor.errors import SummaryFileError
from support.cases import copy_case, golden_case_folder
from support.checks import index_lines
from support.cli import invoke_extract
from support.paths import FIXTURES, GOLDEN

A = GOLDEN / "expected.json"  # a byte copy of the spec's reference summary
B = FIXTURES / "vit-f8weight-b" / "expected.json"
ALL_EXPECTED = sorted(FIXTURES.glob("**/expected.json"))


def raw(path=A) -> dict:
    return json.loads(Path(path).read_text())


# ---- the keys, against the spec ----------------------------------------------------


def test_there_are_committed_summaries_to_read():
    assert A in ALL_EXPECTED and B in ALL_EXPECTED and len(ALL_EXPECTED) >= 12


def test_the_key_lists_are_the_reference_summarys():
    # json keeps an object's keys in file order: the reference's order is the spec's.
    reference = raw(A)
    assert list(reference) == list(SUMMARY_KEYS)
    assert all(list(kernel) == list(STEP_FIELDS) for kernel in reference["kernels"])
    assert all(list(e) == list(AttentionExchange._fields) for e in reference["attention_exchanges"])
    assert list(reference["exchange_memory_per_tile"]) == list(EXCHANGE_MEMORY_FIELDS)
    assert list(reference["allocated_memory"]) == list(ALLOCATED_MEMORY_FIELDS)


@pytest.mark.parametrize("path", ALL_EXPECTED, ids=lambda p: p.parent.name)
def test_every_committed_summary_reads_and_keeps_its_key_order(path):
    summary = Summary.read(path)
    data = raw(path)
    assert summary.data == data
    assert list(summary.data) == list(SUMMARY_KEYS)
    assert summary.profile == data["profile"]
    assert summary.device_spans == data["device_spans"]
    assert summary.qkv_executions == data["qkv_executions"]
    assert summary.has_pva is (data["attention_exchanges"] is not None)
    total = sum(k["cycles"] for k in data["kernels"])
    assert summary.stages_total == (total if data["kernels"] else None)
    assert sum(summary.stage_cycles().values()) == total


def test_summary_dict_orders_the_keys_and_refuses_others():
    values = {key: index for index, key in enumerate(SUMMARY_KEYS)}
    built = summary_dict(**dict(reversed(list(values.items()))))
    assert list(built) == list(SUMMARY_KEYS) and built == values
    with pytest.raises(TypeError):
        summary_dict(**dict(values, extra=1))
    without = dict(values)
    del without["qkv_executions"]
    with pytest.raises(TypeError):
        summary_dict(**without)


# ---- the accessors, on the golden summary ----------------------------------------------


def test_accessors_of_the_golden_summary():
    summary = Summary.read(A)
    assert summary.stage_cycles() == {
        "fused QKV projection": 37277,
        "QK transpose": 8488,
        "PV": 12900,
        "output projection": 14153,
        "MLP up": 48248,
        "MLP down": 52187,
    }
    assert list(summary.stage_cycles()) == [k["stage"] for k in raw(A)["kernels"]]
    assert summary.stages_total == 37277 + 8488 + 12900 + 14153 + 48248 + 52187
    assert summary.device_spans == [15987664, 15987659]
    assert summary.qkv_executions == 54
    assert summary.exchange_memory == MinMeanMax(4436, 15602.703804347826, 37092)
    assert summary.allocated_memory == MinMeanMax(86179, 550544.296875, 596494)
    exchanges = summary.attention_exchanges
    assert summary.has_pva and exchanges is not None and len(exchanges) == 17
    assert exchanges[1] == AttentionExchange(
        "cs23_/visual/trunk/blocks/blocks.0/attn/qkv/MatMul/1570/matmulGrouped/Conv_1/"
        "Convolve/ExchangePre",
        324,
        171.89945652173913,
    )
    assert summary.headline() == {
        "device_spans": [15987664, 15987659],
        "qkv_executions": 54,
        "stage_cycles": summary.stage_cycles(),
    }


def test_a_summary_made_without_pva(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "run")
    result = invoke_extract(profile, "-o", tmp_path / "summary.json", "--no-pva", pva=False)
    assert result.code == 0, result
    summary = Summary.read(tmp_path / "summary.json")
    assert not summary.has_pva and summary.attention_exchanges is None
    assert summary.stage_cycles() == Summary.read(A).stage_cycles()
    assert summary.profile == str(profile)


# ---- refusing what is not a summary, through `extract compare` -------------------------


def _edit(change):
    def edited():
        data = raw(A)
        change(data)
        return json.dumps(data, indent=2)

    return edited


def _set(*path_and_value):
    *path, value = path_and_value

    def change(data):
        for step in path[:-1]:
            data = data[step]
        data[path[-1]] = value

    return _edit(change)


def _drop(*keys):
    return _edit(lambda data: [data.pop(key) for key in keys])


def _text(text):
    return lambda: text


MALFORMED = {
    # a key missing, or several
    "no qkv_executions": (_drop("qkv_executions"), "no 'qkv_executions' key"),
    "no spans nor memory": (
        _drop("device_spans", "allocated_memory"),
        "no 'device_spans', 'allocated_memory' keys",
    ),
    # a value of the wrong type
    "qkv as text": (_set("qkv_executions", "54"), "'qkv_executions' is not a whole number"),
    "qkv as true": (_set("qkv_executions", True), "'qkv_executions' is not a whole number"),
    "qkv as float": (_set("qkv_executions", 54.0), "'qkv_executions' is not a whole number"),
    "span as float": (
        _set("device_spans", [15987664.5]),
        "'device_spans' is not a list of whole numbers",
    ),
    "kernels as object": (
        _set("kernels", {}),
        "'kernels' is not a list of kernels with a stage and cycles",
    ),
    "kernel without stage": (
        _edit(lambda d: d["kernels"][2].pop("stage")),
        "'kernels' is not a list of kernels with a stage and cycles",
    ),
    "exchanges as text": (
        _set("attention_exchanges", "none"),
        ("'attention_exchanges' is neither null nor a list of {name, maximum, mean}"),
    ),
    "exchange mean as text": (
        _edit(lambda d: d["attention_exchanges"][3].update(mean="4.2")),
        ("'attention_exchanges' is neither null nor a list of {name, maximum, mean}"),
    ),
    "memory field missing": (
        _edit(lambda d: d["allocated_memory"].pop("avg(total)")),
        ("'allocated_memory' is not an object with min(total), avg(total), max(total)"),
    ),
    "memory as list": (
        _set("exchange_memory_per_tile", [4436, 15602.7, 37092]),
        ("'exchange_memory_per_tile' is not an object with min(b), avg(b), max(b)"),
    ),
    # extra nesting where a number or a list of numbers belongs
    "qkv in a list": (_set("qkv_executions", [54]), "'qkv_executions' is not a whole number"),
    "spans nested": (
        _set("device_spans", [[15987664], [15987659]]),
        "'device_spans' is not a list of whole numbers",
    ),
    "memory value nested": (
        _set("exchange_memory_per_tile", "max(b)", {"value": 37092}),
        ("'exchange_memory_per_tile' is not an object with min(b), avg(b), max(b)"),
    ),
    "cycles nested": (
        _edit(lambda d: d["kernels"][0].update(cycles={"cycles": 37277})),
        "'kernels' is not a list of kernels with a stage and cycles",
    ),
    "summary in a list": (
        lambda: "[" + A.read_text() + "]",
        "a JSON list where a summary is an object",
    ),
    "nested too deeply": (_text("[" * 100000 + "]" * 100000), "JSON nested too deeply"),
    # numbers no summary holds, wherever they stand
    "NaN mean": (
        lambda: A.read_text().replace("4.627717391304348", "NaN"),
        "NaN, which is not a JSON number (a summary's numbers are finite)",
    ),
    "Infinity span": (
        lambda: A.read_text().replace("15987659", "-Infinity"),
        ("-Infinity, which is not a JSON number (a summary's numbers are finite)"),
    ),
    "1e400": (
        lambda: A.read_text().replace("550544.296875", "1e400"),
        "the number 1e400 is beyond what a float holds",
    ),
    "2**64": (
        lambda: A.read_text().replace("596494", str(2**64)),
        (
            "the whole number 18446744073709551616 (20 digits) is beyond the 64 bits of "
            "a summary's numbers"
        ),
    ),
    # not JSON text at all
    "not UTF-8": (lambda: b"\xff\xfe{}", "not UTF-8 text"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_compare_refuses_what_is_not_a_summary(tmp_path, case):
    make, problem = MALFORMED[case]
    content = make()
    path = tmp_path / "bad" / "summary.json"
    path.parent.mkdir()
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    before = path.read_bytes()
    result = invoke_extract("compare", A, path, pva=False)
    assert (result.code, result.stdout) == (1, b""), result
    assert result.stderr == "extract: error: {}: not a summary: {}\n".format(path, problem)
    assert path.read_bytes() == before  # the input is never modified
    # The library says the same.
    with pytest.raises(SummaryFileError) as caught:
        Summary.read(path)
    assert str(caught.value) == "{}: not a summary: {}".format(path, problem)
    assert caught.value.exit_code == 1


def test_from_json_checks_parsed_data_and_names_its_source():
    data = raw(A)
    assert Summary.from_json(data, "here").data is data
    del data["kernels"]
    with pytest.raises(SummaryFileError) as caught:
        Summary.from_json(data, "here")
    assert str(caught.value) == "here: not a summary: no 'kernels' key"


def test_extra_keys_are_allowed():
    # A newer summary with more keys still compares (they are not read).
    data = dict(raw(A), blocks=[{"nested": [1, 2]}])
    assert Summary.from_json(data, "newer").qkv_executions == 54


# ---- what compare and the batch index take from it ---------------------------------------


def test_compare_rows_are_the_models_numbers():
    result = invoke_extract("compare", A, B, "-f", "json", pva=False)
    assert result.code == 0, result
    rows = {(r["section"], r["metric"]): r["values"] for r in json.loads(result.stdout)["rows"]}
    a, b = Summary.read(A), Summary.read(B)
    for stage, cycles in a.stage_cycles().items():
        assert rows[("kernel stages", stage)][0] == cycles
    assert rows[("kernel stages, total", "all stages")] == [a.stages_total, b.stages_total]
    assert rows[("device spans", "device span 2")] == [a.device_spans[1], b.device_spans[1]]
    assert rows[("QKV executions", "QKV executions")] == [54, 54]
    for name in MinMeanMax._fields:
        assert rows[("exchange code per tile", "exchange code per tile, " + name)] == [
            getattr(a.exchange_memory, name),
            getattr(b.exchange_memory, name),
        ]
        assert rows[("allocated memory per tile", "allocated memory per tile, " + name)] == [
            getattr(a.allocated_memory, name),
            getattr(b.allocated_memory, name),
        ]


def test_the_batch_index_line_carries_the_summarys_headline(tmp_path):
    copy_case(golden_case_folder(), tmp_path / "runs" / "golden")
    result = invoke_extract("runs", "-o", "out", "-j", "1", cwd=tmp_path)
    assert result.code == 0, result
    (entry,) = index_lines(tmp_path / "out")
    summary = Summary.read(tmp_path / "out" / "golden" / "summary.json")
    assert summary.data == dict(raw(A), profile=summary.profile)
    for key, value in summary.headline().items():
        assert entry[key] == value, key
    assert entry["stage_cycles"] == Summary.read(A).stage_cycles()


# ---- a summary extract writes, compare reads --------------------------------------


def test_compare_reads_a_summary_whose_kernel_cycles_are_null(tmp_path):
    # A NULL cycles in the profile is written as null (docs/errors.md, odd data): compare used to
    # refuse the summary extract itself wrote. The stage's sum and the total are unknown
    # for that recording (shown as a dash), never a sum that counts the null as 0.
    from support import badinput as bad

    folders = {}
    for name, damage in (("base", None), ("null", bad._step_column(7, "cycles", "NULL"))):
        profile = bad.write_base(tmp_path / name)
        if damage is not None:
            damage(tmp_path / name)
        result = invoke_extract(profile, "-o", tmp_path / name / "summary.json")
        assert result.code == 0, result
        folders[name] = tmp_path / name / "summary.json"
    null_summary = raw(folders["null"])
    nulls = [k for k in null_summary["kernels"] if k["cycles"] is None]
    assert len(nulls) == 1  # the case is what it says
    stage = nulls[0]["stage"]
    result = invoke_extract("compare", folders["base"], folders["null"], "--format", "json")
    assert result.code == 0, result
    rows = {
        (row["section"], row["metric"]): row["values"] for row in json.loads(result.stdout)["rows"]
    }
    base_stage = sum(k["cycles"] for k in raw(folders["base"])["kernels"] if k["stage"] == stage)
    stage_rows = [key for key in rows if key[1] == stage]
    assert len(stage_rows) == 1
    assert rows[stage_rows[0]] == [base_stage, None]
    total_rows = [values for key, values in rows.items() if key[0].endswith("total")]
    assert len(total_rows) == 1 and total_rows[0][1] is None
    assert total_rows[0][0] == sum(k["cycles"] for k in raw(folders["base"])["kernels"])
