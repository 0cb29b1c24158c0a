"""The stage rules file: defaults, --rules, and every way a rules file can be wrong."""

import re

import pytest

from extractor.core.rules import default_rules_path, load_rules, parse_rules
from extractor.errors import RulesError
from support.cli import invoke_extract
from support.paths import REPO

GOOD = """
fallback = "other"
[[rules]]
pattern = "/attn/"
label = "attention"
[selectors]
kernel = "/Convolve$"
anchor = "/attn/qkv/"
attention_exchange = "/blocks\\\\.0/attn/"
input_delivered = "^copyFromHost$"
output_begins = "copyToHost$"
"""


def test_default_rules_are_the_specs_table():
    rules = load_rules()
    assert [(r.pattern.pattern, r.label) for r in rules.rules] == [
        ("/attn/Softmax/", "score layout / softmax"),
        ("/attn/MatMul_1", "PV"),
        ("/attn/MatMul/", "QK transpose"),
        ("/attn/qkv/", "fused QKV projection"),
        ("/attn/proj/", "output projection"),
        ("/attn/", "Q/K scaling or conversion"),
        ("/mlp/fc1/", "MLP up"),
        ("/mlp/fc2/", "MLP down"),
        ("/mlp/", "MLP activation"),
    ]
    assert rules.fallback == "other"
    assert rules.kernel.pattern == "/Convolve$"
    assert rules.anchor.pattern == "/attn/qkv/"
    assert rules.attention_exchange.pattern == r"/blocks\.0/attn/"
    assert rules.input_delivered.pattern == "^copyFromHost$"
    assert rules.output_begins.pattern == "copyToHost$"


def test_the_repository_holds_one_copy_of_the_defaults():
    assert (
        default_rules_path() == REPO / "stage_rules.toml"
        or default_rules_path().read_bytes() == (REPO / "stage_rules.toml").read_bytes()
    )
    assert not (REPO / "extractor" / "stage_rules.toml").exists()


@pytest.mark.parametrize(
    "name, stage",
    [
        ("/b/blocks.0/attn/Softmax/1/Out", "score layout / softmax"),
        ("/b/blocks.0/attn/MatMul_1/1585/Conv_1/Convolve", "PV"),
        ("/b/blocks.0/attn/MatMul/1583/Conv_1/Convolve", "QK transpose"),
        ("/b/blocks.0/attn/qkv/MatMul/1570/Conv_1/Convolve", "fused QKV projection"),
        ("/b/blocks.0/attn/proj/MatMul/1588/Conv_1/Convolve", "output projection"),
        ("/b/blocks.0/attn/Mul/1755/Op/Multiply", "Q/K scaling or conversion"),
        ("/b/blocks.0/mlp/fc1/MatMul/1601/Conv_1/Convolve", "MLP up"),
        ("/b/blocks.0/mlp/fc2/MatMul/1608/Conv_1/Convolve", "MLP down"),
        ("/b/blocks.0/mlp/act/Gelu", "MLP activation"),
        ("/b/blocks.0/norm1/Sub", "other"),
        ("", "other"),
    ],
)
def test_first_matching_rule_wins(name, stage):
    assert load_rules().stage_of(name) == stage


BAD_RULES = [
    ("not toml", "fallback = \n", r"not valid TOML"),
    (
        "bad regex",
        GOOD.replace('pattern = "/attn/"', 'pattern = "/attn/("'),
        r"rule 1: pattern is not a valid regular expression",
    ),
    (
        "bad selector regex",
        GOOD.replace('kernel = "/Convolve$"', 'kernel = "[Convolve"'),
        r"selector 'kernel' is not a valid regular expression",
    ),
    (
        "missing selector",
        GOOD.replace('anchor = "/attn/qkv/"\n', ""),
        r"\[selectors\]: missing selector 'anchor'",
    ),
    ("no selectors", GOOD.split("[selectors]")[0], r"missing table \[selectors\]"),
    ("missing label", GOOD.replace('label = "attention"\n', ""), r"rule 1: missing key 'label'"),
    (
        "wrong type",
        GOOD.replace('label = "attention"', "label = 3"),
        r"rule 1: label must be a string, not an integer",
    ),
    (
        "wrong selector type",
        GOOD.replace('kernel = "/Convolve$"', "kernel = true"),
        r"selector 'kernel' must be a string, not a boolean",
    ),
    ("missing fallback", GOOD.replace('fallback = "other"\n', ""), r"missing key 'fallback'"),
    (
        "no rules",
        GOOD.replace('[[rules]]\npattern = "/attn/"\nlabel = "attention"\n', ""),
        r"no \[\[rules\]\]",
    ),
    (
        "empty rules",
        "rules = []\n" + GOOD.replace('[[rules]]\npattern = "/attn/"\nlabel = "attention"\n', ""),
        r"'rules' is empty",
    ),
    ("typo in a selector", GOOD.replace("anchor =", "anchr ="), r"unknown selector 'anchr'"),
    ("unknown top key", "fallbak = 1\n" + GOOD, r"unknown key 'fallbak'"),
]


@pytest.mark.parametrize("case, text, message", BAD_RULES, ids=[c[0] for c in BAD_RULES])
def test_bad_rules_file_is_a_one_line_usage_error(tmp_path, golden_profile, case, text, message):
    rules = tmp_path / "my rules.toml"
    rules.write_text(text, encoding="utf-8")
    out = tmp_path / "out" / "summary.json"
    result = invoke_extract(golden_profile, "-o", out, "--rules", rules)
    assert result.code == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result
    assert lines[0].startswith("extract: error: {}: ".format(rules)), lines[0]
    assert re.search(message, lines[0]), lines[0]
    assert "Traceback" not in result.stderr
    assert not out.exists() and not out.parent.exists()


def test_missing_rules_file(tmp_path, golden_profile):
    result = invoke_extract(golden_profile, "--rules", tmp_path / "nope.toml")
    assert result.code == 2, result
    assert (
        result.stderr.strip()
        == "extract: error: {}: cannot read: No such file or directory".format(
            tmp_path / "nope.toml"
        )
    )


def test_rules_file_changes_stages(tmp_path, golden_profile):
    rules = tmp_path / "rules.toml"
    rules.write_text(GOOD, encoding="utf-8")
    result = invoke_extract(golden_profile, "-o", "-", "--rules", rules)
    assert result.code == 0, result
    import json

    summary = json.loads(result.stdout)
    assert {k["stage"] for k in summary["kernels"]} == {"attention", "other"}


def test_parse_rules_reports_the_source():
    with pytest.raises(RulesError) as caught:
        parse_rules({"fallback": "x"}, source="mine.toml")
    assert str(caught.value) == "mine.toml: no [[rules]]: at least one stage rule is needed"
