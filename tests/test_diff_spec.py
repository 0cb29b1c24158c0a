"""`extract diff` (docs/formats/diff.md) through the real CLI, held against
tests/support/diff_oracle.py, an independent plain reading of the spec: the JSON's exact
bytes and the CSV's exact text, on the committed fixtures and on generated profiles of
every kind, with every option that changes the result. The oracle itself is checked by
hand first (test_the_oracle_by_hand), and its bodies against blocks_oracle's.

Every case also asserts what it is about (a run, a body to the end of the trace, a unit
summing two IPUs' rows, ...), so that an agreement is not an agreement about nothing.
"""

import pytest

from support.blocks_oracle import oracle_blocks, read_rules
from support.cases import NO_OUTPUT_RULES, generator, two_ipus
from support.diff_oracle import check_accounting, diff_csv, diff_oracle, read_profile
from support.diffcli import expect_diff
from support.paths import EDGE, REPO

GOLDEN = "fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop"
EDGE_NAMES = sorted(p.name for p in EDGE.iterdir() if (p / "profile.pop").exists())
NO_BODIES = ("compile-only", "no-anchors")
WITH_BODIES = [name for name in EDGE_NAMES if name not in NO_BODIES]


def edge(name):
    return "fixtures/edge/{}/profile.pop".format(name)


# ---- the oracle, by hand -------------------------------------------------------------


def test_the_oracle_by_hand():
    """multi-ipu against one-anchor, worked out from the SQL (fixtures/edge/README.md):

    multi-ipu body 0 = steps 4..8 (anchors 4, 9), two rows a step: 4: 260+250 = 510,
    5: 85, 6 (exchange cs3_ fc1): 43, 7: 410+430 = 840, 8 (exchange cs5_ blocks.1
    qkv): 35; total 1513. one-anchor body 0 = steps 4..9 (cut at the output at 10): 260,
    45, 18, 410, 20 (exchange cs5_ blocks.1 fc2), 270 (blocks.1 fc2 Convolve); 1023.
    Keys: the first four pair; base's step 8 is removed, candidate's 8 and 9 added.
    """
    result = diff_oracle(REPO / edge("multi-ipu"), REPO / edge("one-anchor"))
    check_accounting(result)
    assert (result["base"]["cycles"], result["candidate"]["cycles"]) == (1513, 1023)
    assert (result["base"]["end_step"], result["candidate"]["end_step"]) == (9, 10)
    assert result["change"] == -490
    assert result["counts"] == {"same": 0, "changed": 4, "added": 2, "removed": 1}
    assert result["differences"] == [
        {"fact": "tiles", "base": 8, "candidate": 4},
        {"fact": "bodies", "base": 2, "candidate": 1},
    ]
    assert [(e["status"], e["change"]) for e in result["steps"]] == [
        ("changed", -430),
        ("added", 270),
        ("changed", -250),
        ("changed", -40),
        ("removed", -35),
        ("changed", -25),
        ("added", 20),
    ]
    removed = result["steps"][4]
    assert removed["key"] == "cs#_/m/blocks/blocks.1/attn/qkv/Convolve/ExchangePre"
    assert removed["base"]["name"] == "cs5_/m/blocks/blocks.1/attn/qkv/Convolve/ExchangePre"
    assert removed["base"]["max_exchange_code_bytes"] == 16
    assert removed["stage"] == "fused QKV projection" and removed["candidate"] is None
    assert result["steps"][0]["fields"] == ["cycles", "active_tiles"]
    assert [k["kind"] for k in result["by_kind"]] == ["OnTileExecute", "DoExchange"]
    assert [(s["stage"], s["base"], s["candidate"]) for s in result["by_stage"]] == [
        ("score layout / softmax", 85, 45),
        ("fused QKV projection", 545, 260),
        ("MLP up", 883, 428),
        ("MLP down", 0, 290),
    ]
    assert result["by_stage"][1]["kinds"] == {
        "OnTileExecute": {"base": 510, "candidate": 260},
        "DoExchange": {"base": 35, "candidate": 0},
    }
    assert diff_csv(result).split("\r\n")[1:3] == [
        (
            "changed,MLP up,OnTileExecute,/m/blocks/blocks.0/mlp/fc1/Convolve,7,7,840,410,-430,"
            "cycles;active_tiles"
        ),
        "added,MLP down,OnTileExecute,/m/blocks/blocks.1/mlp/fc2/Convolve,,9,,270,270,",
    ]


@pytest.mark.parametrize("case", WITH_BODIES + ["golden"])
def test_the_oracle_cuts_the_bodies_of_blocks_json(case):
    """Both oracles cut with blocks_oracle.cut_bodies (held to the hand in
    test_blocks.py): the diff oracle's rows, read by its own SQL, give the same bodies."""
    profile = REPO / (GOLDEN if case == "golden" else edge(case))
    bodies = read_profile(profile, read_rules(), use_pva=False)["bodies"]
    blocks = oracle_blocks(profile, "")["blocks"]
    assert bodies == [
        {key: b[key] for key in ("run", "block", "first_step", "end_step")} for b in blocks
    ]


# ---- committed fixtures --------------------------------------------------------------


def test_the_golden_fixture_against_itself():
    want = expect_diff(GOLDEN, GOLDEN)
    units = want["base"]["units"]
    assert units > 100 and want["candidate"]["units"] == units
    assert want["counts"] == {"same": units, "changed": 0, "added": 0, "removed": 0}
    assert want["change"] == 0 and want["steps"] == [] and want["differences"] == []
    assert (want["base"]["run"], want["base"]["block"]) == (1, 0)
    assert all(k["change"] == 0 for k in want["by_kind"] + want["by_stage"])


@pytest.mark.parametrize(
    "block, candidate_block",
    [((2, 0), None), ((1, 0), (2, 0)), ((1, 3), (2, 5)), ((1, 0), (1, 26)), (None, (2, 26))],
)
def test_the_golden_fixtures_bodies(block, candidate_block):
    want = expect_diff(GOLDEN, GOLDEN, block=block, candidate_block=candidate_block)
    chosen = candidate_block or block
    assert (want["candidate"]["run"], want["candidate"]["block"]) == chosen
    assert (want["base"]["run"], want["base"]["block"]) == (block or (1, 0))
    if candidate_block is None:  # the same body of the same file: nothing differs
        assert want["steps"] == [] and want["counts"]["same"] == want["base"]["units"]
    elif block == (1, 0) and candidate_block == (2, 0):  # run 2 replays run 1's programs
        assert want["counts"]["added"] == want["counts"]["removed"] == 0
        assert want["counts"]["changed"] > 0
    else:
        assert want["steps"] != []
    if candidate_block == (2, 26):  # the last body of the trace: cut at the output
        assert want["candidate"]["end_step"] is not None


@pytest.mark.parametrize("case", WITH_BODIES)
def test_edge_cases_against_themselves(case):
    want = expect_diff(edge(case), edge(case))
    assert want["steps"] == [] and want["change"] == 0 and want["differences"] == []
    assert want["counts"]["same"] == want["base"]["units"] > 0


@pytest.mark.parametrize("case", [name for name in WITH_BODIES if name != "multi-ipu"])
def test_edge_cases_against_multi_ipu(case):
    """multi-ipu's units sum two rows each; the other cases have one IPU and 4 tiles
    (no-aggregate-rows: no memory_by_tile rows, so 0)."""
    forth = expect_diff(edge("multi-ipu"), edge(case))
    back = expect_diff(edge(case), edge("multi-ipu"))
    assert forth["change"] == -back["change"]
    assert forth["counts"]["added"] == back["counts"]["removed"]
    tiles = 0 if case == "no-aggregate-rows" else 4
    assert forth["differences"][0] == {"fact": "tiles", "base": 8, "candidate": tiles}
    assert forth["base"]["cycles"] == 1513  # test_the_oracle_by_hand


# ---- generated profiles --------------------------------------------------------------

MLP_ANCHOR_RULES = """
fallback = "=rest, \\"quoted\\""
[[rules]]
pattern = "Exchange"
label = "exchanges"
[[rules]]
pattern = "/blocks\\\\.[0-9]+/"
label = "a block"
[selectors]
kernel = "/Convolve$"
anchor = "/mlp/fc1/"
attention_exchange = "/blocks\\\\.0/attn/"
input_delivered = "^copyFromHost$"
output_begins = "copyToHost$"
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    g = generator()
    specs = {
        "several runs": g.vit_spec(blocks=4, runs=3, tiles=8, seed=3, detailed_blocks=(0, 3)),
        "several runs b": g.vit_spec(blocks=4, runs=3, tiles=8, seed=9, detailed_blocks=(0, 2)),
        "multi-ipu": two_ipus(g.vit_spec(blocks=3, runs=2, tiles=8, seed=4, code_bytes="all")),
        "one anchor": g.vit_spec(blocks=1, runs=1, tiles=8, seed=5),
        "one anchor b": g.vit_spec(blocks=1, runs=1, tiles=4, seed=6, code_bytes="all"),
    }
    folder = tmp_path_factory.mktemp("diff-generated")
    paths = {
        kind: g.write_case(spec, folder / kind.replace(" ", "-")) for kind, spec in specs.items()
    }
    for name, text in (("no-output", NO_OUTPUT_RULES), ("mlp-anchor", MLP_ANCHOR_RULES)):
        paths[name] = folder / (name + ".toml")
        paths[name].write_text(text, encoding="utf-8")
    paths["specs"] = specs
    return paths


def test_several_runs(generated):
    a, b = generated["several runs"], generated["several runs b"]
    want = expect_diff(a, b, block=(2, 0))
    assert (want["base"]["run"], want["candidate"]["run"]) == (2, 2)
    want = expect_diff(a, b, block=(1, 3), candidate_block=(2, 3))
    assert want["counts"]["changed"] > 0  # block 3 is detailed in a, not in b
    assert want["counts"]["added"] + want["counts"]["removed"] > 0
    want = expect_diff(a, a, block=(3, 0), candidate_block=(1, 0))
    assert want["counts"]["added"] == want["counts"]["removed"] == 0
    assert want["change"] != 0


def test_a_body_against_another_of_the_same_profile(generated):
    a = generated["several runs"]
    want = expect_diff(a, a, block=(1, 0), candidate_block=(1, 3))
    assert want["base"]["profile"] == want["candidate"]["profile"] == str(a)
    assert want["differences"] == []
    assert want["counts"]["added"] > 0 and want["counts"]["removed"] > 0


def test_a_unit_sums_its_rows_on_several_ipus(generated):
    a, one = generated["multi-ipu"], generated["one anchor b"]
    want = expect_diff(a, a, block=(1, 0), candidate_block=(2, 0))
    spec = generated["specs"]["multi-ipu"]
    first = want["steps"][0]["base"]
    rows = [r for r in spec.steps_by_ipu if r.step_id == first["step"]]
    assert len(rows) == 2 and first["cycles"] == rows[0].cycles + rows[1].cycles
    assert first["active_tiles"] == rows[0].active_tiles + rows[1].active_tiles
    want = expect_diff(one, a)
    assert {"fact": "tiles", "base": 4, "candidate": 8} in want["differences"]


def test_one_anchor_body_to_the_end_of_the_trace(generated):
    """One anchor and no output step the rules know: the body runs to the trace's end."""
    a, b = generated["one anchor"], generated["one anchor b"]
    want = expect_diff(a, b, rules=generated["no-output"])
    assert want["base"]["end_step"] is None and want["candidate"]["end_step"] is None
    spec = generated["specs"]["one anchor"]
    last = max(s.id for s in spec.steps)
    assert want["base"]["units"] == last - want["base"]["first_step"] + 1
    assert [s["stage"] for s in want["by_stage"]] == ["attention", 'mlp "\u2191"', "rest"]
    want = expect_diff(a, b)  # the default rules: cut at the output
    assert want["base"]["end_step"] is not None


def test_rules_change_the_stages_and_the_bodies(generated):
    a, b = generated["several runs"], generated["several runs b"]
    want = expect_diff(a, b, rules=generated["mlp-anchor"], block=(1, 1))
    assert [s["stage"] for s in want["by_stage"]] == [
        "exchanges",
        "a block",
        '=rest, "quoted"',
    ]
    assert diff_csv(want).count("'=rest") == sum(
        1 for e in want["steps"] if e["stage"] == '=rest, "quoted"'
    )
    default = diff_oracle(a, b, block=(1, 1))
    assert default["base"]["first_step"] != want["base"]["first_step"]


# ---- pva facts, masked keys ----------------------------------------------------------


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    """one-anchor's trace (body 0: steps 4..9) with step 7's compute set given other
    vertex types, with the exchange program of step 6 given other code bytes (each runs
    on no other step), and a copy with every compiler id changed: program and compute
    set ids, the `csN_` in names, step ids (fixtures/generate.py's edited_spec)."""
    g = generator()
    spec = g.edge_cases()["one-anchor"][0]
    folder = tmp_path_factory.mktemp("diff-edited")
    cases = {"base": g.write_case(spec, folder / "base")}
    for name, edits in (
        ("vertices", g.Edits(changes=(g.Change(7, vertices=(g.QUARTER_CONV_VERTEX,)),))),
        ("code", g.Edits(changes=(g.Change(6, code_bytes=(4, 4, 4, 45)),))),
        ("ids", g.Edits(renumber=g.Renumber(101, programs=100, compute_sets=7, copies=40))),
    ):
        cases[name] = g.write_case(g.edited_spec(spec, edits), folder / name)
    return cases


def test_vertices_are_compared_with_pva_only(edited):
    want = expect_diff(edited["base"], edited["vertices"])
    assert [(e["status"], e["fields"], e["change"]) for e in want["steps"]] == [
        ("changed", ["vertices"], 0)
    ]
    assert want["steps"][0]["base"]["vertices"] != want["steps"][0]["candidate"]["vertices"]
    # --no-pva, with pva there and without it (pva missing and no --no-pva is an error:
    # docs/pva.md, tests/test_pva_policy.py)
    for pva, use_pva in ((True, False), (False, False)):
        want = expect_diff(edited["base"], edited["vertices"], pva=pva, use_pva=use_pva)
        assert want["steps"] == [] and want["counts"]["changed"] == 0
        assert want["differences"] == []


def test_exchange_code_is_compared_with_pva_only(edited):
    want = expect_diff(edited["base"], edited["code"])
    assert [(e["kind"], e["fields"]) for e in want["steps"]] == [
        ("DoExchange", ["max_exchange_code_bytes"])
    ]
    want = expect_diff(edited["base"], edited["code"], use_pva=False)
    assert want["steps"] == []
    nulls = expect_diff(edge("multi-ipu"), edge("one-anchor"), use_pva=False)
    for entry in nulls["steps"]:
        for side in ("base", "candidate"):
            if entry[side] is not None:
                assert entry[side]["vertices"] is None
                assert entry[side]["max_exchange_code_bytes"] is None
        assert set(entry["fields"]) <= {"cycles", "active_tiles"}


def test_other_compiler_ids_give_the_same_keys(edited):
    want = expect_diff(edited["base"], edited["ids"])
    assert want["counts"] == {"same": 6, "changed": 0, "added": 0, "removed": 0}
    renamed = diff_oracle(edited["base"], edited["ids"], use_pva=False)
    assert renamed["candidate"]["first_step"] != renamed["base"]["first_step"]
    names = [
        {r["name"] for r in read_profile(edited[side], read_rules(), use_pva=False)["rows"]}
        for side in ("base", "ids")
    ]
    assert "cs8_/m/blocks/blocks.0/attn/qkv/Convolve/ExchangePre" in names[1] - names[0]


def test_hostile_names_in_the_csv(tmp_path):
    """A key a spreadsheet would run, with a comma and quotes: quoted, and a `'` first."""
    g = generator()
    spec = g.edge_cases()["one-anchor"][0]
    for c in spec.compute_sets:
        if c.name == "/m/blocks/blocks.0/attn/Softmax/Exp":
            c.name = '=HYPERLINK("x,y")/attn/Softmax/Exp'
    base = g.write_case(spec, tmp_path / "base")
    softmax_cycles = g.Edits(changes=(g.Change(5, cycles=545),))  # 45 before
    candidate = g.write_case(g.edited_spec(spec, softmax_cycles), tmp_path / "c")
    want = expect_diff(base, candidate)
    assert want["steps"][0]["key"] == '=HYPERLINK("x,y")/attn/Softmax/Exp'
    line = diff_csv(want).split("\r\n")[1]
    assert line.startswith('changed,score layout / softmax,OnTileExecute,"\'=HYPERLINK(""x,y"")')
