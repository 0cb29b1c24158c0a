"""The metric names (docs/formats/budget.md, "Metric names") of a summary, checked by hand against
the reference summary, and their edge cases."""

import copy
import json
from pathlib import Path

from extractor.core.metrics import metrics
from extractor.core.model import Summary

# The committed copy of the reference summary (test_run.py checks it is the shared one).
REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "vit-f8weight" / "expected.json"


def _reference() -> dict:
    return json.loads(REFERENCE.read_text())


def test_reference_metrics_by_hand():
    found = metrics(Summary(_reference()))
    # Checked by hand against the reference file: the six stages' sums add up to
    # 37277 + 8488 + 12900 + 14153 + 48248 + 52187 = 173253.
    assert found["stage:fused QKV projection"] == 37277
    assert found["stage:MLP down"] == 52187
    assert found["stages:total"] == 173253
    assert found["device_span:1"] == 15987664 and found["device_span:2"] == 15987659
    assert found["device_span:max"] == 15987664
    assert found["device_span:mean"] == 15987661.5
    assert "device_span:3" not in found
    assert found["qkv_executions"] == 54
    assert found["allocated_memory:max"] == 596494
    assert found["exchange_memory:min"] == 4436
    names = [n for n in found if n.startswith("attention_exchange:")]
    assert names[0].startswith("attention_exchange:copy#_Copy_/visual/trunk/blocks/blocks.0/")
    assert all("cs#_" in n or "copy#_" in n for n in names)
    # The order is the comparison's: stages first, attention exchanges last.
    keys = list(found)
    assert (
        keys.index("stages:total")
        < keys.index("device_span:1")
        < keys.index("qkv_executions")
        < keys.index("exchange_memory:min")
        < keys.index(names[0])
    )


def test_null_values_and_repeated_masked_names():
    data = copy.deepcopy(_reference())
    data["device_spans"] = []
    data["allocated_memory"] = {"min(total)": None, "avg(total)": None, "max(total)": None}
    data["attention_exchanges"] = [
        {"name": "cs1_/a/ExchangePre", "maximum": 5, "mean": 1.0},
        {"name": "cs2_/a/ExchangePre", "maximum": 7, "mean": 1.0},
        {"name": "cs3_/a/ExchangePre", "maximum": 9, "mean": 1.0},
    ]
    data["kernels"][0]["cycles"] = None
    found = metrics(Summary(data))
    assert not any(n.startswith("device_span:") for n in found)
    assert not any(n.startswith("allocated_memory:") for n in found)
    assert "stage:" + data["kernels"][0]["stage"] not in found
    assert "stages:total" not in found
    assert found["attention_exchange:cs#_/a/ExchangePre"] == 5
    assert found["attention_exchange:cs#_/a/ExchangePre (2)"] == 7
    assert found["attention_exchange:cs#_/a/ExchangePre (3)"] == 9


def test_without_pva_no_attention_exchanges():
    data = _reference()
    data["attention_exchanges"] = None
    assert not any(n.startswith("attention_exchange:") for n in metrics(Summary(data)))
