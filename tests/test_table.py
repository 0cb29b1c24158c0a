"""`extract table`: one line per (recording, metric), CSV or JSON Lines. The numbers
expected here are restated from the two fixture summaries by this test's own reading of
docs/formats/budget.md's metric table (sums of kernel cycles per stage, ...), or were checked by
hand against the files (said where), never copied from the command's output.
"""

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from extractor.core.metrics import mask_ids
from support.cli import invoke_extract
from support.paths import FIXTURES, GOLDEN

A = GOLDEN / "expected.json"
B = FIXTURES / "vit-f8weight-b" / "expected.json"


def table(*args):
    return invoke_extract("table", *args, pva=False)


def read_csv(data: bytes):
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def expected_metrics(path):
    """docs/formats/budget.md's metrics of a summary, as this test reads the spec."""
    data = json.loads(Path(path).read_text())
    found = {}
    for kernel in data["kernels"]:
        name = "stage:" + kernel["stage"]
        found[name] = found.get(name, 0) + kernel["cycles"]
    found["stages:total"] = sum(k["cycles"] for k in data["kernels"])
    spans = data["device_spans"]
    for number, span in enumerate(spans, start=1):
        found["device_span:{}".format(number)] = span
    found["device_span:max"] = max(spans)
    found["device_span:mean"] = sum(spans) / len(spans)
    found["qkv_executions"] = data["qkv_executions"]
    for prefix, key, fields in (
        ("exchange_memory:", "exchange_memory_per_tile", "b"),
        ("allocated_memory:", "allocated_memory", "total"),
    ):
        for statistic, field in (("min", "min"), ("mean", "avg"), ("max", "max")):
            found[prefix + statistic] = data[key]["{}({})".format(field, fields)]
    seen = {}
    for exchange in data["attention_exchanges"]:
        masked = mask_ids(exchange["name"])
        seen[masked] = seen.get(masked, 0) + 1
        suffix = "" if seen[masked] == 1 else " ({})".format(seen[masked])
        found["attention_exchange:" + masked + suffix] = exchange["maximum"]
    return found


def batch_folder(tmp_path):
    """A batch output folder by hand: fp8/summary.json (A) and fp16/summary.json (B)."""
    out = tmp_path / "out"
    for name, source in (("fp8", A), ("fp16", B)):
        (out / name).mkdir(parents=True)
        shutil.copy(str(source), str(out / name / "summary.json"))
    return out


def test_csv_has_one_line_per_recording_and_metric(tmp_path):
    target = tmp_path / "table.csv"
    result = table(A, B, "--label", "a", "--label", "b", "-o", target)
    assert result.code == 0, result
    assert result.stdout == b""
    data = target.read_bytes()
    assert data.endswith(b"\r\n") and b"\n" not in data.replace(b"\r\n", b"")  # RFC 4180
    assert not data.startswith(b"\xef\xbb\xbf")
    rows = read_csv(data)
    assert rows[0] == ["recording", "profile", "metric", "value"]
    for label, path in (("a", A), ("b", B)):
        mine = [row for row in rows[1:] if row[0] == label]
        profile = json.loads(Path(path).read_text())["profile"]
        assert {row[1] for row in mine} == {profile}
        expected = expected_metrics(path)
        assert len(mine) == len(expected)  # no metric twice
        assert {row[2]: row[3] for row in mine} == {
            k: repr(v) if isinstance(v, float) else str(v) for k, v in expected.items()
        }
    # Checked by hand against expected.json: the first stage, the stage total, and a mean
    # kept to every digit.
    first_a = [row for row in rows if row[0] == "a"]
    assert first_a[0][2:] == ["stage:fused QKV projection", "37277"]
    assert [
        "a",
        "../poprt/profile_logs_f8weight/inference/profile.pop",
        "stages:total",
        "173253",
    ] in rows
    assert [
        "b",
        "../poprt/profile_logs_f8weight_b/inference/profile.pop",
        "exchange_memory:mean",
        "15990.5",
    ] in rows
    assert [
        "a",
        "../poprt/profile_logs_f8weight/inference/profile.pop",
        "device_span:mean",
        "15987661.5",
    ] in rows
    # recordings in the order given, each one's metrics together
    assert [row[0] for row in rows[1:]] == sorted(row[0] for row in rows[1:])


def test_metric_order_is_the_comparisons(tmp_path):
    rows = read_csv(table(A).stdout)
    names = [row[2] for row in rows[1:]]
    # stages first (in order of first appearance in the kernels), then their total, the
    # spans, their max and mean, QKV, the two memories, the exchanges
    stages = list(
        dict.fromkeys("stage:" + k["stage"] for k in json.loads(A.read_text())["kernels"])
    )
    assert names[: len(stages) + 1] == stages + ["stages:total"]
    assert names[len(stages) + 1 : len(stages) + 6] == [
        "device_span:1",
        "device_span:2",
        "device_span:max",
        "device_span:mean",
        "qkv_executions",
    ]
    assert names[len(stages) + 6 : len(stages) + 12] == [
        "exchange_memory:min",
        "exchange_memory:mean",
        "exchange_memory:max",
        "allocated_memory:min",
        "allocated_memory:mean",
        "allocated_memory:max",
    ]
    assert all(name.startswith("attention_exchange:") for name in names[len(stages) + 12 :])


def test_jsonl_holds_the_same_lines_with_numbers_as_numbers(tmp_path):
    out = batch_folder(tmp_path)
    as_csv = read_csv(table(out).stdout)[1:]
    result = table(out, "--format", "jsonl", "-o", tmp_path / "t.jsonl")
    assert result.code == 0, result
    lines = (tmp_path / "t.jsonl").read_bytes().decode("utf-8").split("\n")
    assert lines[-1] == ""
    objects = [json.loads(line) for line in lines[:-1]]
    assert all(list(o) == ["recording", "profile", "metric", "value"] for o in objects)
    assert [[o["recording"], o["profile"], o["metric"], o["value"]] for o in objects] == [
        [r[0], r[1], r[2], float(r[3]) if "." in r[3] else int(r[3])] for r in as_csv
    ]
    # a batch folder's recordings are named by their folders, sorted by path
    assert list(dict.fromkeys(o["recording"] for o in objects)) == ["fp16", "fp8"]
    assert {
        o["metric"]: o["value"] for o in objects if o["recording"] == "fp8"
    } == expected_metrics(A)


def test_labels_that_need_quoting(tmp_path):
    label = 'fp8, "big" \u00e9\u6f22'
    result = table(A, "--label", label)
    assert result.code == 0, result
    assert b'"fp8, ""big"" \xc3\xa9\xe6\xbc\xa2",' in result.stdout
    assert {row[0] for row in read_csv(result.stdout)[1:]} == {label}


def test_an_existing_table_is_replaced_whole(tmp_path):
    target = tmp_path / "table.csv"
    target.write_bytes(b"old\n" * 100000)
    assert table(A, "-o", target).code == 0
    assert target.read_bytes().startswith(b"recording,profile,metric,value\r\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]  # no temporary left


def test_a_summary_made_without_pva_has_no_exchange_lines(tmp_path):
    data = json.loads(A.read_text())
    data["attention_exchanges"] = None
    path = tmp_path / "nopva" / "summary.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    names = [row[2] for row in read_csv(table(path).stdout)[1:]]
    assert names and not any(name.startswith("attention_exchange:") for name in names)


def one_line_error(result, code):
    assert result.code == code, result
    assert result.stderr.startswith("extract: error: ") and result.stderr.count("\n") == 1
    return result.stderr


def test_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad" / "summary.json"
    bad.parent.mkdir()
    bad.write_text("{}")
    assert str(bad) in one_line_error(table(A, bad), 1)
    assert "no such file" in one_line_error(table(tmp_path / "nothing.json"), 1)
    folder = tmp_path / "afolder"
    folder.mkdir()
    assert str(folder) in one_line_error(table(A, "-o", folder), 1)
    assert "two recordings are labelled" in one_line_error(
        table(A, B, "--label", "x", "--label", "x"), 2
    )
    assert table(A, "--format", "xml").code == 2
    assert sorted(p.name for p in folder.iterdir()) == []


@pytest.mark.parametrize("table_format", ["csv", "jsonl"])
def test_a_lone_surrogate_in_a_name_is_written_escaped(tmp_path, table_format):
    # A summary may hold one (\ud800 in its JSON); UTF-8 cannot: it is shown as \ud800.
    text = A.read_text().replace('"MLP up"', '"MLP \\ud800 up"')
    path = tmp_path / "s" / "summary.json"
    path.parent.mkdir()
    path.write_text(text)
    result = table(path, "--format", table_format)
    assert result.code == 0, result
    result.stdout.decode("utf-8")  # valid UTF-8
    assert b"stage:MLP \\ud800 up" in result.stdout
