"""summary_bytes must equal json.dumps(summary, indent=2) + "\\n" for every summary."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from extractor.core.summary_json import summary_bytes
from support.checks import json_bytes

# Text with everything that tells orjson and json apart: non-ASCII, astral characters,
# control characters, DEL, quotes, backslashes, lone surrogates.
text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30)
ints = st.integers(min_value=-(2**63), max_value=2**63)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e16, max_value=1e300),
    st.floats(min_value=-1e-4, max_value=1e-4),
    st.sampled_from([1e-5, 1e16, 1e-4, 9.999999999999999e15, 5e-324, -0.0, 0.1]),
)
scalars = st.one_of(st.none(), st.booleans(), ints, floats, text)
# Keys are text from a profile too (a step's kind, a stage label): any text, mostly ASCII.
keys = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12),
    text,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=25,
)

kernel = st.fixed_dictionaries(
    {
        "step": ints,
        "kind": text,
        "stage": text,
        "name": text,
        "cycles": ints,
        "active_tiles": ints,
        "start": ints,
        "end": ints,
        "max_exchange_code_bytes": ints,
        "vertices": text,
    }
)
min_avg_max = st.one_of(
    st.fixed_dictionaries(
        {
            "min(b)": st.one_of(ints, st.none()),
            "avg(b)": st.one_of(floats, st.none()),
            "max(b)": st.one_of(ints, st.none()),
        }
    )
)
summaries = st.fixed_dictionaries(
    {
        "profile": text,
        "kernels": st.lists(kernel, max_size=4),
        "attention_exchanges": st.lists(
            st.fixed_dictionaries({"name": text, "maximum": ints, "mean": floats}), max_size=4
        ),
        "exchange_memory_per_tile": min_avg_max,
        "device_spans": st.lists(ints, max_size=4),
        "qkv_executions": ints,
        "allocated_memory": st.fixed_dictionaries(
            {"min(total)": ints, "avg(total)": floats, "max(total)": ints}
        ),
    }
)


@settings(max_examples=400, deadline=None)
@given(summaries)
def test_summaries_match_json_dumps(summary):
    assert summary_bytes(summary) == json_bytes(summary)


@settings(max_examples=300, deadline=None)
@given(values)
def test_any_json_value_matches_json_dumps(value):
    assert summary_bytes(value) == json_bytes(value)


def test_the_cases_where_orjson_differs_by_default():
    # Each of these is written differently by plain orjson; checked by hand against
    # Python's json module documentation.
    summary = {
        "name": "\u00e9\U0001f600\x7f\x1b",
        "small": 1e-05,
        "big": 1e16,
        "huge": 2**64,
        "nan": math.nan,
        "empty": [],
        "nothing": {},
    }
    assert summary_bytes(summary) == (
        b'{\n  "name": "\\u00e9\\ud83d\\ude00\\u007f\\u001b",\n  "small": 1e-05,\n'
        b'  "big": 1e+16,\n  "huge": 18446744073709551616,\n  "nan": NaN,\n'
        b'  "empty": [],\n  "nothing": {}\n}\n'
    )


def test_keys_beyond_ascii_at_any_depth():
    # By hand: json.dumps escapes a key as it escapes a value, and the object holding it
    # keeps its indent (here at depth 2, inside a list inside an object).
    value = {"by_stage": [{"kinds": {"DoExchang\u00e9": {"base": 1.5}, "a\x1b": []}}]}
    assert summary_bytes(value) == (
        b'{\n  "by_stage": [\n    {\n      "kinds": {\n        "DoExchang\\u00e9": {\n'
        b'          "base": 1.5\n        },\n        "a\\u001b": []\n      }\n    }\n  ]\n}\n'
    )
