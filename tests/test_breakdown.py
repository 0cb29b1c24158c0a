"""`extract breakdown` through the real CLI: its edge cases (no input-delivered step, a
run that is not there, NULL cycles and kinds, hostile names in every text format,
--all, several IPUs, options out of range), its formats' exact text on a case checked
by hand, two profiles compared, and where it writes. The numbers themselves are held
to the spec by tests/test_breakdown_oracle.py and tests/test_breakdown_property.py."""

import csv
import io
import json
import sqlite3

import pytest

from support.badinput import loosen
from support.cases import copy_case
from support.checks import one_error
from support.cli import invoke_extract
from support.paths import EDGE, REPO

GOLDEN = "fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop"
RECOMPILED = "fixtures/vit-f8weight-recompiled/profile.pop"


def _case(tmp_path, *statements, name="one-anchor"):
    """A copy of an edge case with SQL statements run on it; its path."""
    profile = copy_case(EDGE / name, tmp_path / "case")
    db = sqlite3.connect(str(profile))
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return profile


def _run(*args, cwd=REPO):
    return invoke_extract("breakdown", *args, "--no-pva", cwd=cwd, pva=False)


def _ok(result) -> str:
    assert result.code == 0, result
    return result.stdout.decode("utf-8")


# one-anchor: inference 1 is steps 2 (copyFromHost) to 10 (copyToHost); the cycles read
# off the profile's steps_by_ipu by hand (docs: fixtures/edge/README.md's baseline).
ONE_ANCHOR_FOLDED = """\
inference 1;IPU 0;(no layer);StreamCopyBegin 40
inference 1;IPU 0;(no layer);StreamCopyEnd 40
inference 1;IPU 0;m;blocks;blocks.*;attn;Softmax;Exp;OnTileExecute 45
inference 1;IPU 0;m;blocks;blocks.*;attn;qkv;Convolve;ExchangePre;DoExchange 25
inference 1;IPU 0;m;blocks;blocks.*;attn;qkv;Convolve;OnTileExecute 260
inference 1;IPU 0;m;blocks;blocks.*;mlp;fc1;Convolve;ExchangePre;DoExchange 18
inference 1;IPU 0;m;blocks;blocks.*;mlp;fc1;Convolve;OnTileExecute 410
inference 1;IPU 0;m;blocks;blocks.*;mlp;fc2;Convolve;ExchangePre;DoExchange 20
inference 1;IPU 0;m;blocks;blocks.*;mlp;fc2;Convolve;OnTileExecute 270
"""


def test_folded_on_a_case_checked_by_hand():
    assert _ok(_run(EDGE / "one-anchor/profile.pop", "-f", "folded")) == ONE_ANCHOR_FOLDED


def test_json_on_a_case_checked_by_hand():
    got = json.loads(_ok(_run(EDGE / "one-anchor/profile.pop", "-f", "json")))
    window = got["windows"][0]
    assert (window["run"], window["first_step"], window["last_step"], window["rows"]) == (
        1, 2, 10, 9
    )  # fmt: skip
    ipu = window["ipus"][0]
    assert ipu["cycles"] == 40 + 25 + 260 + 45 + 18 + 410 + 20 + 270 + 40 == 1128
    assert ipu["span"] == 1250 - 50  # step 2 starts at 50, step 10 ends at 1250
    assert [(k["kind"], k["rows"], k["cycles"]) for k in ipu["kinds"]] == [
        ("OnTileExecute", 4, 260 + 45 + 410 + 270),
        ("DoExchange", 3, 25 + 18 + 20),
        ("StreamCopyBegin", 1, 40),  # a tie: by kind
        ("StreamCopyEnd", 1, 40),
    ]
    assert [(s["stage"], s["cycles"]) for s in ipu["stages"]] == [
        ("score layout / softmax", 45),
        ("fused QKV projection", 285),
        ("MLP up", 428),
        ("MLP down", 290),
        ("other", 80),
    ]
    assert [(layer["layer"], layer["cycles"]) for layer in ipu["layers"]] == [
        ("/m/blocks/blocks.*/mlp/fc1", 428),
        ("/m/blocks/blocks.*/mlp/fc2", 290),
        ("/m/blocks/blocks.*/attn/qkv", 285),
        ("(no layer)", 80),
        ("/m/blocks/blocks.*/attn/Softmax", 45),
    ]
    assert ipu["tile_balance"] is None  # --no-pva
    assert ipu["repeats"] == {"compute_sets": 0, "identical": 0}


def test_no_input_delivered_step_is_one_window_of_every_row(tmp_path):
    profile = _case(tmp_path, "UPDATE programs SET name = 'notFromHost' WHERE id = 21")
    result = _run(profile, "-f", "json")
    got = json.loads(_ok(result))
    assert [(w["run"], w["first_step"], w["last_step"], w["rows"]) for w in got["windows"]] == [
        (None, 1, 12, 12)
    ]
    assert result.stderr == (
        "extract: warning: {}: no input-delivered step ('^copyFromHost$'): one window of "
        "every step row\n".format(profile)
    )
    # asked for a run, it has none: a usage error
    line = one_error(_run(profile, "--run", "1"), 2)
    assert line == (
        "extract: error: {}: no run 1: it has no inference (no input-delivered step "
        "matching '^copyFromHost$')".format(profile)
    )


def test_a_run_that_is_not_there_names_the_runs_there_are():
    line = one_error(_run(GOLDEN, "--run", "1", "--run", "3", "--run", "7"), 2)
    assert line == "extract: error: {}: no run 3, 7: the runs there are 1 to 2".format(GOLDEN)


@pytest.mark.parametrize(
    "args,line",
    [
        (["--run", "1", "--all"], "--run and --all: give one or the other"),
        (["--run", "0"], "--run 0: runs are numbered from 1"),
        (["--depth", "0"], "--depth 0: give 1 to 64"),
        (["--depth", "65"], "--depth 65: give 1 to 64"),
        (["--top", "-1"], "--top -1: give how many ops and layers to list (0 or more)"),
        (
            [RECOMPILED, "-f", "folded"],
            "--format folded: a flame graph shows one profile's cycles, not two compared "
            + "(give one profile, or another format)",
        ),
    ],
)
def test_usage_errors(args, line):
    assert one_error(_run(GOLDEN, *args), 2) == "extract: error: " + line


def test_an_output_that_is_the_profile_is_refused_and_nothing_changes(tmp_path):
    profile = copy_case(EDGE / "one-anchor", tmp_path)
    before = profile.read_bytes()
    result = _run(profile, "-o", profile)
    assert result.code == 2, result
    assert profile.read_bytes() == before


def test_written_to_a_file_and_nothing_on_standard_output(tmp_path):
    result = _run(EDGE / "one-anchor/profile.pop", "-f", "folded", "-o", tmp_path / "b.folded")
    assert _ok(result) == "" and result.stderr == ""
    assert (tmp_path / "b.folded").read_text() == ONE_ANCHOR_FOLDED


def test_null_cycles_count_zero_and_a_null_kind_is_empty(tmp_path):
    profile = _case(
        tmp_path,
        *loosen("steps_by_ipu").split("; "),
        *loosen("steps").split("; "),
        "UPDATE steps_by_ipu SET cycles = NULL WHERE step_id = 4",
        "UPDATE steps SET type = NULL WHERE id = 6",
    )
    got = json.loads(_ok(_run(profile, "-f", "json")))
    ipu = got["windows"][0]["ipus"][0]
    assert ipu["cycles"] == 1128 - 260
    assert {k["kind"]: (k["rows"], k["cycles"]) for k in ipu["kinds"]}[""] == (1, 18)
    qkv = [o for o in ipu["ops"] if o["op"] == "/m/blocks/blocks.*/attn/qkv/Convolve"]
    assert [(o["executions"], o["cycles"], o["min"], o["max"], o["mean"]) for o in qkv] == [
        (1, 0, 0, 0, 0.0)
    ]
    folded = _ok(_run(profile, "-f", "folded"))
    assert "inference 1;IPU 0;m;blocks;blocks.*;mlp;fc1;Convolve;ExchangePre; 18\n" in folded


HOSTILE = "=HYPERLINK(x)|*a*;b\nc <img src=x> `d`"


def test_hostile_names_in_csv_markdown_and_folded(tmp_path):
    profile = _case(
        tmp_path,
        "UPDATE compute_sets SET name = '/m/{}/x' WHERE compute_set = 2".format(
            HOSTILE.replace("'", "''")
        ),
        "UPDATE steps SET type = '@kind;\r' WHERE id = 3",
    )
    folded = _ok(_run(profile, "-f", "folded"))
    assert "inference 1;IPU 0;m;=HYPERLINK(x)|*a*_b_c <img src=x> `d`;x;OnTileExecute 45\n" in (
        folded
    )
    assert "inference 1;IPU 0;m;blocks;blocks.*;attn;qkv;Convolve;ExchangePre;@kind__ 25\n" in (
        folded
    )
    assert all(
        line.count(" ") >= 1 and line.rsplit(" ", 1)[1].isdigit()
        for line in folded.split("\n")[:-1]
    )
    rows = list(csv.reader(io.StringIO(_ok(_run(profile, "-f", "csv")))))
    ops = [row for row in rows if row[2] == "ops"]
    assert ["1", "0", "ops", "OnTileExecute", "other", "/m/" + HOSTILE + "/x"] in [
        row[:6] for row in ops
    ]
    kinds = [row[3] for row in rows if row[2] == "kinds"]
    assert "'@kind;\r" in kinds  # a formula guarded, the carriage return kept inside quotes
    markdown = _ok(_run(profile, "--top", "50"))
    span = "``/m/=HYPERLINK(x)\\|*a*;b\\nc <img src=x> `d`/x``"  # a code span, on one line
    assert "| {} | OnTileExecute | other | 1 | 45 | 4.0% |".format(span) in markdown
    assert "| @kind;\\r | 1 | 25 | 2.2% |" in markdown  # the kind as text, its \\r shown
    assert markdown.count("<img") == markdown.count(span) == 2  # the op's row, its layer's


def test_several_ipus_each_add_up_on_their_own():
    got = json.loads(_ok(_run(EDGE / "multi-ipu/profile.pop", "-f", "json", "--all")))
    ipus = got["windows"][0]["ipus"]
    assert [ipu["ipu"] for ipu in ipus] == [0, 1]
    assert sum(ipu["rows"] for ipu in ipus) == got["windows"][0]["rows"]
    for ipu in ipus:
        for table in ("kinds", "stages", "ops", "layers"):
            assert sum(row["cycles"] for row in ipu[table]) == ipu["cycles"]
    markdown = _ok(_run(EDGE / "multi-ipu/profile.pop"))
    assert "## inference 1, IPU 0 (steps 2 to 10)" in markdown
    assert "## inference 1, IPU 1 (steps 2 to 10)" in markdown


def test_all_is_one_window_of_every_row():
    got = json.loads(_ok(_run(GOLDEN, "--all", "-f", "json")))
    assert [(w["run"], w["first_step"], w["rows"]) for w in got["windows"]] == [(None, 1, 1106)]
    assert _ok(_run(GOLDEN, "--all", "-f", "folded")).startswith("all;IPU 0;")


def test_an_inference_to_the_end_of_the_trace_is_warned_of():
    profile = EDGE / "no-output-begins/profile.pop"
    result = _run(profile, "-f", "json", "--run", "2")
    assert json.loads(_ok(result))["windows"][0]["last_step"] == 17  # the trace's last
    assert result.stderr == (
        "extract: warning: {}: no output-begins step ('copyToHost$') after the input "
        "delivered at step 13: inference 2 runs to the end of the trace\n".format(profile)
    )
    assert _run(profile, "--run", "2", "-q").stderr == ""


def test_a_compile_only_profile_has_no_rows():
    profile = EDGE / "compile-only/profile.pop"
    result = _run(profile, "-f", "json")
    assert json.loads(_ok(result))["windows"] == [
        {"run": None, "first_step": None, "last_step": None, "rows": 0, "ipus": []}
    ]
    assert result.stderr == (
        "extract: warning: {}: no steps: a compile-only profile (no execution trace), so no "
        "kernels, device spans or QKV executions\n".format(profile)
    )


def test_two_profiles_markdown_says_the_changes_add_up():
    markdown = _ok(_run(GOLDEN, RECOMPILED, "--top", "3"))
    assert markdown.endswith(
        "In every IPU the changes of the kinds, the stages, the ops and the layers each add "
        "up to its change of all cycles: -15178 in all.\n"
    )
    assert "All cycles: base 72191257, candidate 72176079, change -15178." in markdown
    rows = list(csv.reader(io.StringIO(_ok(_run(GOLDEN, RECOMPILED, "-f", "csv")))))
    assert rows[0] == [
        "run", "ipu", "table", "kind", "stage", "op", "layer", "status", "base", "candidate",
        "change",
    ]  # fmt: skip
    for table in ("kinds", "stages", "ops", "layers"):
        assert sum(int(row[10]) for row in rows[1:] if row[2] == table) == -15178


def test_top_cuts_markdown_only():
    markdown = _ok(_run(GOLDEN, "--top", "2"))
    assert "### The 2 largest of 122 ops (all cycles)" in markdown
    assert "### The 2 largest of 16 layers (all cycles)" in markdown
    assert (
        len(
            json.loads(_ok(_run(GOLDEN, "--top", "2", "-f", "json")))["windows"][0]["ipus"][0][
                "ops"
            ]
        )
        == 122
    )


def test_a_kind_stored_as_a_blob_is_read_as_text_everywhere(tmp_path):
    # steps 4 and 9 (OnTileExecute, 4 tiles each) with their kind as a blob: still
    # OnTileExecute, in the kinds and in the tile balance (pva's target: 4 tiles)
    from support.breakdown_oracle import oracle_breakdown, tiles_per_ipu, with_tiles_per_ipu

    profile = _case(
        tmp_path, "UPDATE steps SET type = CAST('OnTileExecute' AS BLOB) WHERE id IN (4, 9)"
    )
    with_tiles_per_ipu(profile, 4)
    result = invoke_extract("breakdown", profile, "-f", "json", cwd=REPO, pva=True)
    got = json.loads(_ok(result))
    ipu = got["windows"][0]["ipus"][0]
    assert (ipu["kinds"][0]["kind"], ipu["kinds"][0]["rows"]) == ("OnTileExecute", 4)
    # cycles x tiles over the OnTileExecute rows, read off steps_by_ipu by hand
    assert ipu["tile_balance"] == (260 * 4 + 45 * 3 + 410 * 2 + 270 * 4) / (985 * 4)
    assert got == oracle_breakdown(profile, str(profile), tiles=tiles_per_ipu(profile))
