"""`extract stages PROFILE [--rules FILE] [--top N] [--json]`, through the real console
script; and examples/rules-bert.toml on a profile named as a BERT names its steps."""

import json
import sqlite3
from collections import Counter, OrderedDict

import pytest

from support.cases import copy_case, generator, golden_case_folder, sha256
from support.cli import invoke_extract, run_extract
from support.paths import EDGE, GOLDEN, REPO
from support.spec_oracle import DEFAULT_RULES, default_stage

BERT_RULES = REPO / "examples" / "rules-bert.toml"

SELECTORS = ["kernel", "anchor", "attention_exchange", "input_delivered", "output_begins"]


def stages_json(*args, **kwargs) -> dict:
    result = invoke_extract("stages", *args, "--json", **kwargs)
    assert result.code == 0, result
    assert result.stderr == ""
    return json.loads(result.stdout)


def stages_text(*args, **kwargs) -> str:
    result = invoke_extract("stages", *args, **kwargs)
    assert result.code == 0, result
    return result.stdout.decode("utf-8")


def by_label(answer: dict) -> dict:
    return {stage["label"]: stage for stage in answer["stages"]}


def by_selector(answer: dict) -> dict:
    return {selector["selector"]: selector for selector in answer["selectors"]}


def tally(rows):
    """{label: (rows, distinct names, cycles)} of (label, name, cycles) rows."""
    counts = OrderedDict()
    for label, name, cycles in rows:
        entry = counts.setdefault(label, [0, set(), 0])
        entry[0] += 1
        entry[1].add(name)
        entry[2] += cycles
    return {label: (n, len(names), c) for label, (n, names, c) in counts.items()}


# --- the golden ViT profile, default rules ---------------------------------------------


def golden_rows(profile):
    """(step, kind, name, cycles) of every step row, straight from SQL (docs/formats/summary.md's
    name rule: the compute set's non-empty name, else the program's, else "")."""
    db = sqlite3.connect("file:{}?mode=ro".format(profile), uri=True)
    rows = db.execute(
        "SELECT s.id, s.type, COALESCE(NULLIF(c.name, ''), NULLIF(p.name, ''), ''), i.cycles "
        "FROM steps s JOIN steps_by_ipu i ON i.step_id = s.id "
        "LEFT JOIN compute_sets c ON c.compute_set = s.compute_set "
        "LEFT JOIN programs p ON p.id = s.program ORDER BY s.id"
    ).fetchall()
    db.close()
    return rows


@pytest.fixture(scope="module")
def golden_answer(tmp_path_factory):
    profile = copy_case(golden_case_folder(), tmp_path_factory.mktemp("golden"))
    before = sha256(profile)
    answer = stages_json(profile, pva=False)  # no pva needed
    assert sha256(profile) == before
    return profile, answer, golden_rows(profile)


def test_golden_totals(golden_answer):
    profile, answer, rows = golden_answer
    assert answer["profile"] == str(profile)
    assert answer["step_rows"] == len(rows) > 1000
    assert answer["steps"] == len({r[0] for r in rows})
    assert answer["names"] == len({r[2] for r in rows})
    assert answer["cycles"] == sum(r[3] for r in rows)
    assert answer["rules"]["source"].endswith("stage_rules.toml")
    assert len(answer["rules"]["sha256"]) == 64


def test_golden_stages_are_the_first_matching_rule(golden_answer):
    _profile, answer, rows = golden_answer
    expected = tally((default_stage(name), name, cycles) for _, _, name, cycles in rows)
    labels = [label for _, label in DEFAULT_RULES] + ["other"]
    assert [s["label"] for s in answer["stages"]] == labels
    for stage in answer["stages"]:
        assert (stage["rows"], stage["names"], stage["cycles"]) == expected.get(
            stage["label"], (0, 0, 0)
        ), stage["label"]
        assert stage["fallback"] is (stage["label"] == "other")
    assert by_label(answer)["PV"]["patterns"] == ["/attn/MatMul_1"]
    # every stage of the reference's first body is among those that took rows
    kernels = json.loads((GOLDEN / "expected.json").read_text())["kernels"]
    assert all(by_label(answer)[k["stage"]]["rows"] > 0 for k in kernels)


def test_golden_unmatched_names(golden_answer):
    _profile, answer, rows = golden_answer
    other = Counter()
    cycles = Counter()
    for _, _, name, c in rows:
        if default_stage(name) == "other":
            other[name] += 1
            cycles[name] += c
    ranked = sorted(other, key=lambda n: (-other[n], -cycles[n], n))
    unmatched = answer["unmatched"]
    assert unmatched["label"] == "other"
    assert unmatched["rows"] == sum(other.values())
    assert unmatched["names"] == len(other)
    assert unmatched["top"] == [
        {"name": n, "rows": other[n], "cycles": cycles[n]} for n in ranked[:10]
    ]


def test_golden_selectors(golden_answer):
    _profile, answer, rows = golden_answer
    reference = json.loads((GOLDEN / "expected.json").read_text())
    found = by_selector(answer)
    assert list(found) == SELECTORS
    kernel_rows = [r for r in rows if r[2].endswith("/Convolve")]
    assert (found["kernel"]["rows"], found["kernel"]["pattern"]) == (len(kernel_rows), "/Convolve$")
    assert found["anchor"]["steps"] == reference["qkv_executions"] == 54
    assert found["input_delivered"]["steps"] == len(reference["device_spans"]) == 2
    assert found["output_begins"]["steps"] >= 2
    exchanges = {r[2] for r in rows if r[1] == "DoExchange" and "/blocks.0/attn/" in r[2]}
    assert found["attention_exchange"]["names"] == len(exchanges) > 0
    assert all(s["found"] for s in answer["selectors"])


def test_golden_text(golden_answer):
    profile, answer, _rows = golden_answer
    text = stages_text(profile, pva=False)
    lines = text.splitlines()
    assert lines[
        0
    ] == "{}: {:,} step rows ({:,} steps), {:,} distinct names, {:,} cycles; rules: {}".format(
        profile,
        answer["step_rows"],
        answer["steps"],
        answer["names"],
        answer["cycles"],
        answer["rules"]["source"],
    )
    pv = by_label(answer)["PV"]
    assert [
        "PV",
        "{:,}".format(pv["rows"]),
        "{:,}".format(pv["names"]),
        "{:,}".format(pv["cycles"]),
        "{:.1f}%".format(100.0 * pv["cycles"] / answer["cycles"]),
    ] in [line.split() for line in lines]
    assert "FOUND NOTHING" not in text
    assert "most common unmatched names (stage 'other': " in text
    top = answer["unmatched"]["top"][0]
    assert ["{:,}".format(top["rows"]), "{:,}".format(top["cycles"])] + top["name"].split() in [
        line.split() for line in lines
    ]


def test_top_limits_the_unmatched_names(golden_answer):
    profile, answer, _rows = golden_answer
    limited = stages_json(profile, "--top", "2", pva=False)
    assert limited["unmatched"]["top"] == answer["unmatched"]["top"][:2]
    assert {k: v for k, v in limited.items() if k != "unmatched"} == {
        k: v for k, v in answer.items() if k != "unmatched"
    }
    text = stages_text(profile, "--top", "0", pva=False)
    assert text.rstrip("\n").splitlines()[-1].startswith("most common unmatched names (")
    assert not text.rstrip("\n").endswith(":")


def test_a_shadowed_rule_is_told_apart_from_one_that_matches_nothing(tmp_path, golden_answer):
    profile, _, rows = golden_answer
    rules = tmp_path / "rules.toml"
    rules.write_text(
        'fallback = "rest"\n'
        '[[rules]]\npattern = "/attn/"\nlabel = "attention"\n'
        '[[rules]]\npattern = "/attn/qkv/"\nlabel = "qkv"\n'
        '[[rules]]\npattern = "/no/such/layer/"\nlabel = "nothing"\n'
        '[[rules]]\npattern = "/mlp/fc1/"\nlabel = "mlp"\n'
        '[[rules]]\npattern = "/mlp/fc2/"\nlabel = "mlp"\n'
        '[selectors]\nkernel = "/Convolve$"\nanchor = "/attn/qkv/"\n'
        'attention_exchange = "/blocks\\\\.0/attn/"\n'
        'input_delivered = "^copyFromHost$"\noutput_begins = "^nothing$"\n'
    )
    answer = stages_json(profile, "--rules", rules, pva=False)
    stages = by_label(answer)
    assert list(stages) == ["attention", "qkv", "nothing", "mlp", "rest"]
    qkv_names = {r[2] for r in rows if "/attn/qkv/" in r[2]}
    assert stages["qkv"]["rows"] == 0 and stages["qkv"]["pattern_names"] == len(qkv_names)
    assert stages["nothing"]["rows"] == 0 and stages["nothing"]["pattern_names"] == 0
    mlp = [r for r in rows if "/mlp/fc1/" in r[2] or "/mlp/fc2/" in r[2]]
    assert stages["mlp"]["patterns"] == ["/mlp/fc1/", "/mlp/fc2/"]
    assert (stages["mlp"]["rows"], stages["mlp"]["cycles"]) == (len(mlp), sum(r[3] for r in mlp))
    assert stages["rest"]["fallback"] is True and answer["unmatched"]["label"] == "rest"
    assert answer["rules"]["source"] == str(rules)
    assert not by_selector(answer)["output_begins"]["found"]

    text = stages_text(profile, "--rules", rules, pva=False)
    assert (
        "  'qkv' ('/attn/qkv/'): matches {:,} names, all taken by earlier rules".format(
            len(qkv_names)
        )
        in text.splitlines()
    )
    assert "  'nothing' ('/no/such/layer/'): matches no step name" in text.splitlines()
    assert "output_begins found nothing: no inference ends: device_spans will be empty" in text
    assert "rest (fallback)" in text


# --- a BERT-named profile and examples/rules-bert.toml ----------------------------------

CONV = "poplin::ConvPartial1x1Out<half,half,true,false,16,4,false>"
LAYERS, RUNS = 2, 2

# One layer's steps: (kind, name after "/bert/encoder/layer.N", cycles, stage under
# rules-bert.toml). The stages are written by hand from the names, not computed.
LAYER = [
    (
        "DoExchange",
        "/attention/self/query/MatMul/{}/Conv_1/Convolve/ExchangePre",
        31,
        "QKV projection",
    ),
    ("OnTileExecute", "/attention/self/query/MatMul/{}/Conv_1/Convolve", 900, "QKV projection"),
    ("OnTileExecute", "/attention/self/query/Add/{}/Op/Add", 40, "QKV projection"),
    (
        "DoExchange",
        "/attention/self/key/MatMul/{}/Conv_1/Convolve/ExchangePre",
        33,
        "QKV projection",
    ),
    ("OnTileExecute", "/attention/self/key/MatMul/{}/Conv_1/Convolve", 910, "QKV projection"),
    (
        "DoExchange",
        "/attention/self/value/MatMul/{}/Conv_1/Convolve/ExchangePre",
        35,
        "QKV projection",
    ),
    ("OnTileExecute", "/attention/self/value/MatMul/{}/Conv_1/Convolve", 920, "QKV projection"),
    ("OnTileExecute", "/attention/self/Transpose/{}/Op/Transpose", 60, "Q/K scaling or conversion"),
    ("OnTileExecute", "/attention/self/MatMul/{}/Conv_1/Convolve", 500, "QK transpose"),
    ("OnTileExecute", "/attention/self/Div/{}/Op/Divide", 45, "Q/K scaling or conversion"),
    ("OnTileExecute", "/attention/self/Add/{}/Op/Add", 44, "Q/K scaling or conversion"),
    ("OnTileExecute", "/attention/self/Softmax/{}/Exp/Op/Exponent", 120, "score layout / softmax"),
    ("DoExchange", "/attention/self/MatMul_1/{}/Conv_1/Convolve/ExchangePre", 37, "PV"),
    ("OnTileExecute", "/attention/self/MatMul_1/{}/Conv_1/Convolve", 480, "PV"),
    (
        "OnTileExecute",
        "/attention/output/dense/MatMul/{}/Conv_1/Convolve",
        700,
        "output projection",
    ),
    ("OnTileExecute", "/attention/output/Add/{}/Op/Add", 50, "other"),
    ("OnTileExecute", "/attention/output/LayerNorm/{}/Reduce0", 80, "layer norm"),
    ("OnTileExecute", "/intermediate/dense/MatMul/{}/Conv_1/Convolve", 2400, "MLP up"),
    ("OnTileExecute", "/intermediate/intermediate_act_fn/Erf/{}/Op/Erf", 300, "MLP activation"),
    ("OnTileExecute", "/output/dense/MatMul/{}/Conv_1/Convolve", 2300, "MLP down"),
    ("OnTileExecute", "/output/Add/{}/Op/Add", 52, "other"),
    ("OnTileExecute", "/output/LayerNorm/{}/Reduce0", 81, "layer norm"),
]
BEFORE = [
    ("StreamCopyBegin", "copyFromHost", 9, "other"),
    ("StreamCopyEnd", "copyFromHost", 8, "other"),  # input delivered
    ("OnTileExecute", "/bert/embeddings/word_embeddings/Gather/3/Op/Gather", 70, "other"),
    ("OnTileExecute", "/bert/embeddings/LayerNorm/7/Reduce0", 75, "layer norm"),
]
AFTER = [
    ("OnTileExecute", "/bert/pooler/dense/MatMul/900/Conv_1/Convolve", 200, "other"),
    ("Sync", "Sync", 5, "other"),
    ("StreamCopyBegin", "copyToHost", 7, "other"),  # output begins
    ("StreamCopyEnd", "copyToHost", 6, "other"),
]


def bert_trace():
    """One run's steps: (kind, name, cycles, hand-written stage)."""
    steps = list(BEFORE)
    for layer in range(LAYERS):
        prefix = "/bert/encoder/layer.{}".format(layer)
        for number, (kind, tail, cycles, stage) in enumerate(LAYER):
            name = prefix + tail.format(100 * layer + number)
            if kind == "DoExchange":
                name = "cs{}_{}".format(100 * layer + number - 1, name)
            steps.append((kind, name, cycles + layer, stage))
    return steps + AFTER


def bert_steps():
    """Every run's steps, with each row's (run, step id, start, end)."""
    out = []
    step_id, clock = 0, 1000
    for run in range(RUNS):
        for kind, name, base_cycles, stage in bert_trace():
            step_id += 1
            cycles = base_cycles + 3 * run  # runs differ a little, as on hardware
            out.append(
                {
                    "run": run,
                    "id": step_id,
                    "kind": kind,
                    "name": name,
                    "cycles": cycles,
                    "stage": stage,
                    "start": clock,
                    "end": clock + cycles + 4,
                }
            )
            clock += cycles + 10
        clock += 5000
    return out


def write_bert_profile(folder):
    """The BERT-named profile, written with the fixture generator's public API."""
    gen = generator()
    spec = gen.ProfileSpec(tiles=4)
    programs, compute_sets = {}, {}
    for step in bert_steps():
        kind, name = step["kind"], step["name"]
        compute_set = None
        if kind == "OnTileExecute":
            if name not in compute_sets:
                vertices = [CONV] if name.endswith("/Convolve") else ["popops::Op<half>"]
                compute_sets[name] = gen.ComputeSet(len(compute_sets) + 1, name, vertices)
            compute_set = compute_sets[name].id
            program_name = "OnTileExecute: " + name
        else:
            program_name = name
        key = (kind, program_name)
        if key not in programs:
            code = [4 * (len(programs) % 5), 8, 0, 12] if kind == "DoExchange" else None
            programs[key] = gen.Program(len(programs) + 1, program_name, kind, code)
        spec.steps.append(
            gen.Step(step["id"], kind, programs[key].id, compute_set, run=step["run"])
        )
        spec.steps_by_ipu.append(
            gen.step_row(step["id"], step["start"], step["end"], step["cycles"], 4)
        )
    spec.programs = list(programs.values())
    spec.compute_sets = list(compute_sets.values())
    spec.var_categories = [(1, "variable"), (2, "internalExchangeCode")]
    spec.vars_info = [gen.VarRow(tile, 2, 64 + 8 * tile) for tile in range(4)]
    spec.memory_by_tile = [5000, 6000, 7000, 8000]
    return gen.write_case(spec, folder)


@pytest.fixture(scope="module")
def bert_profile(tmp_path_factory):
    return write_bert_profile(tmp_path_factory.mktemp("bert"))


def test_bert_profile_with_the_bert_rules(bert_profile):
    answer = stages_json(bert_profile, "--rules", BERT_RULES, pva=False)
    steps = bert_steps()
    expected = tally((s["stage"], s["name"], s["cycles"]) for s in steps)
    assert answer["step_rows"] == len(steps) == RUNS * (8 + LAYERS * len(LAYER))
    assert answer["cycles"] == sum(s["cycles"] for s in steps)
    assert [s["label"] for s in answer["stages"]] == [
        "score layout / softmax",
        "PV",
        "QK transpose",
        "QKV projection",
        "output projection",
        "layer norm",
        "Q/K scaling or conversion",
        "MLP up",
        "MLP activation",
        "MLP down",
        "other",
    ]
    for stage in answer["stages"]:
        assert (stage["rows"], stage["names"], stage["cycles"]) == expected[stage["label"]], stage[
            "label"
        ]
    # QKV: query, key and value (a matmul and an exchange each, and query's bias add) per
    # layer and run
    assert by_label(answer)["QKV projection"]["rows"] == 7 * LAYERS * RUNS

    selectors = by_selector(answer)
    assert all(s["found"] for s in answer["selectors"])
    assert selectors["kernel"]["rows"] == (8 * LAYERS + 1) * RUNS  # the pooler's too
    assert selectors["anchor"]["steps"] == LAYERS * RUNS
    assert selectors["anchor"]["names"] == LAYERS
    assert (selectors["attention_exchange"]["rows"], selectors["attention_exchange"]["names"]) == (
        4 * RUNS,
        4,
    )  # layer 0's
    assert selectors["input_delivered"]["steps"] == RUNS
    assert selectors["output_begins"]["steps"] == RUNS

    other = [s for s in steps if s["stage"] == "other"]
    top = answer["unmatched"]["top"]
    assert answer["unmatched"]["rows"] == len(other)
    # Worked out by hand from the tables above: the stream copies recur twice per run, every
    # other name once per run (cycles: the table's, + the layer number, + 3 in run 1);
    # ties go to the name with more cycles.
    assert top == [
        {"name": "copyFromHost", "rows": 4, "cycles": 9 + 8 + 12 + 11},
        {"name": "copyToHost", "rows": 4, "cycles": 7 + 6 + 10 + 9},
        {"name": "/bert/pooler/dense/MatMul/900/Conv_1/Convolve", "rows": 2, "cycles": 403},
        {"name": "/bert/embeddings/word_embeddings/Gather/3/Op/Gather", "rows": 2, "cycles": 143},
        {"name": "/bert/encoder/layer.1/output/Add/120/Op/Add", "rows": 2, "cycles": 109},
        {"name": "/bert/encoder/layer.0/output/Add/20/Op/Add", "rows": 2, "cycles": 107},
        {"name": "/bert/encoder/layer.1/attention/output/Add/115/Op/Add", "rows": 2, "cycles": 105},
        {"name": "/bert/encoder/layer.0/attention/output/Add/15/Op/Add", "rows": 2, "cycles": 103},
        {"name": "Sync", "rows": 2, "cycles": 13},
    ]

    text = stages_text(bert_profile, "--rules", BERT_RULES, pva=False)
    assert "FOUND NOTHING" not in text
    assert "stages no step row went to" not in text


def test_bert_profile_with_the_default_rules_finds_no_stages(bert_profile):
    answer = stages_json(bert_profile, pva=False)
    stages = by_label(answer)
    assert stages["other"]["rows"] == answer["step_rows"]
    assert all(s["rows"] == 0 for s in answer["stages"] if s["label"] != "other")
    found = by_selector(answer)
    assert not found["anchor"]["found"] and not found["attention_exchange"]["found"]
    assert found["kernel"]["found"] and found["input_delivered"]["found"]
    text = stages_text(bert_profile, pva=False)
    assert "anchor found nothing: kernels will be empty, qkv_executions 0" in text
    assert "  'fused QKV projection' ('/attn/qkv/'): matches no step name" in text


def test_bert_summary_with_the_bert_rules(bert_profile, tmp_path):
    out = tmp_path / "summary.json"
    result = invoke_extract(bert_profile, "--rules", BERT_RULES, "-o", out, pva=True)
    assert result.code == 0, result
    assert result.stderr == ""
    summary = json.loads(out.read_text())
    steps = bert_steps()
    first_body = [
        s
        for s in steps
        if s["run"] == 0 and "/layer.0/" in s["name"] and s["name"].endswith("/Convolve")
    ]
    assert [(k["step"], k["name"], k["stage"], k["cycles"]) for k in summary["kernels"]] == [
        (s["id"], s["name"], s["stage"], s["cycles"]) for s in first_body
    ]
    assert [k["stage"] for k in summary["kernels"]] == [
        "QKV projection",
        "QKV projection",
        "QKV projection",
        "QK transpose",
        "PV",
        "output projection",
        "MLP up",
        "MLP down",
    ]
    assert summary["qkv_executions"] == LAYERS * RUNS
    assert [e["name"] for e in summary["attention_exchanges"]] == [
        s["name"]
        for s in steps
        if s["run"] == 0 and s["kind"] == "DoExchange" and "/layer.0/" in s["name"]
    ]
    spans = []
    for run in range(RUNS):
        device = [
            s for s in steps if s["run"] == run and s["kind"] in ("DoExchange", "OnTileExecute")
        ]
        spans.append(max(s["end"] for s in device) - min(s["start"] for s in device))
    assert summary["device_spans"] == spans

    default = invoke_extract(bert_profile, "-o", tmp_path / "default.json", pva=True)
    assert default.code == 0
    assert "no kernel step matches the anchor selector '/attn/qkv/'" in default.stderr
    assert json.loads((tmp_path / "default.json").read_text())["kernels"] == []


# --- other profiles, and bad input ------------------------------------------------------


def test_compile_only_profile():
    answer = stages_json(EDGE / "compile-only" / "profile.pop", pva=False)
    assert answer["step_rows"] == 0 and answer["cycles"] == 0
    assert all(s["rows"] == 0 for s in answer["stages"])
    assert answer["unmatched"] == {"label": "other", "rows": 0, "names": 0, "cycles": 0, "top": []}
    assert not any(s["found"] for s in answer["selectors"])
    text = stages_text(EDGE / "compile-only" / "profile.pop", pva=False)
    assert "no step rows: a compile-only profile (no execution trace); nothing to match" in text
    assert "unmatched names: none" in text
    assert "stages no step row went to" not in text  # nothing to say of empty rules


def test_multi_ipu_counts_rows_and_steps():
    answer = stages_json(EDGE / "multi-ipu" / "profile.pop", pva=False)
    assert answer["step_rows"] > answer["steps"]  # several rows per step
    anchor = by_selector(answer)["anchor"]
    expected = json.loads((EDGE / "multi-ipu" / "expected.json").read_text())
    assert anchor["steps"] == expected["qkv_executions"] < anchor["rows"]


def _not_sqlite(tmp_path):
    path = tmp_path / "text.pop"
    path.write_text("hello\n" * 500)
    return path, "extract: error: {}: not an SQLite database".format(path), 1


def _no_table(tmp_path):
    path = tmp_path / "p.pop"
    db = sqlite3.connect(str(path))
    db.execute("CREATE TABLE trace (id)")
    db.close()
    return (
        path,
        "extract: error: {}: no table 'steps': not a PopVision profile, or an "
        "unknown version".format(path),
        1,
    )


def _missing(tmp_path):
    path = tmp_path / "none.pop"
    return path, "extract: error: {}: no such file".format(path), 1


@pytest.mark.parametrize("make", [_not_sqlite, _no_table, _missing])
def test_bad_profiles(tmp_path, make):
    path, line, code = make(tmp_path)
    before = sha256(path) if path.exists() else None
    result = invoke_extract("stages", path, "--json", pva=False)
    assert (result.code, result.stderr, result.stdout) == (code, line + "\n", b"")
    if before is not None:
        assert sha256(path) == before


def test_bad_rules_are_a_usage_error(tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text('fallback = "other"\n[[rules]]\npattern = "("\nlabel = "x"\n')
    result = invoke_extract(
        "stages", EDGE / "multi-ipu" / "profile.pop", "--rules", rules, pva=False
    )
    assert result.code == 2
    assert result.stderr.startswith(
        "extract: error: {}: rule 1: pattern is not a valid regular expression".format(rules)
    )
    assert len(result.stderr.splitlines()) == 1


def test_usage_errors():
    assert invoke_extract("stages", pva=False).code == 2
    result = invoke_extract("stages", EDGE / "multi-ipu" / "profile.pop", "--top", "-1", pva=False)
    assert result.code == 2 and "--top" in result.stderr
    text = invoke_extract("stages", "--help").stdout.decode("utf-8")
    for option in ("--rules", "--top", "--json"):
        assert option in text


def test_non_ascii_names(tmp_path):
    # The edge case's QKV compute set is named ".../qkv/café😀/Convolve"; with no rule for
    # attention it is among the unmatched names, in UTF-8 in the text and escaped in JSON.
    # (It is step 4 of the generator's mini trace: one row, 260 cycles.)
    rules = tmp_path / "rules.toml"
    rules.write_text(
        'fallback = "other"\n[[rules]]\npattern = "/mlp/"\nlabel = "mlp"\n'
        '[selectors]\nkernel = "/Convolve$"\nanchor = "/qkv/"\n'
        'attention_exchange = "/attn/"\ninput_delivered = "^copyFromHost$"\n'
        'output_begins = "copyToHost$"\n'
    )
    profile = EDGE / "unicode-names" / "profile.pop"
    name = "/m/blocks/blocks.0/attn/qkv/caf\u00e9\U0001f600/Convolve"
    text = run_extract(
        "stages", profile, "--rules", rules, pva=False, env={"LC_ALL": "C", "LANG": "C"}
    )
    assert text.code == 0, text
    assert ["1", "260", name] in [line.split() for line in text.stdout.decode("utf-8").splitlines()]
    data = invoke_extract("stages", profile, "--rules", rules, "--json", pva=False).stdout
    assert b"caf\\u00e9\\ud83d\\ude00" in data
    assert {"name": name, "rows": 1, "cycles": 260} in json.loads(data)["unmatched"]["top"]
