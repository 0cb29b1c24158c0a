"""`--no-pva`: the SQL facts exactly as in a full run, the three pva facts null.

Every run here that must not need pva runs without it (`pva=False`: the stand-in is not
on the path, so `import pva` fails), as on a laptop without the Poplar SDK. The runs that
check the error of a missing pva run in a subprocess (run_extract), the others in this
process with sys.modules' pva set aside (invoke_extract).
"""

import copy
import json
import shutil
from pathlib import Path

import pytest

from support.cases import copy_case, golden_case_folder, sha256
from support.checks import index_by, json_bytes
from support.cli import invoke_extract, run_extract
from support.paths import EDGE, GOLDEN, GOLDEN_PROFILE_ARG, REPO

EXPECTED_TEXT = (GOLDEN / "expected.json").read_text(encoding="ascii")
EDGE_CASES = sorted(p.name for p in EDGE.iterdir() if (p / "profile.pop").exists())


def without_pva(summary: dict) -> dict:
    """The summary a --no-pva run must give: the pva facts null, nothing else touched."""
    nulled = copy.deepcopy(summary)
    nulled["attention_exchanges"] = None
    for kernel in nulled["kernels"]:
        kernel["max_exchange_code_bytes"] = None
        kernel["vertices"] = None
    return nulled


def test_reloading_the_reference_keeps_its_bytes():
    # The comparisons below rebuild expected bytes from parsed JSON; that is sound only if
    # parsing and dumping gives the reference back byte for byte.
    assert json_bytes(json.loads(EXPECTED_TEXT)) == EXPECTED_TEXT.encode("ascii")


def test_the_fixtures_have_pva_facts_to_null():
    # Otherwise nulling them would prove nothing.
    summary = json.loads(EXPECTED_TEXT)
    assert summary["attention_exchanges"]
    assert all(k["vertices"] for k in summary["kernels"])
    edge = [
        json.loads((EDGE / case / "expected.json").read_text(encoding="ascii"))
        for case in EDGE_CASES
    ]
    assert any(k["max_exchange_code_bytes"] for s in edge for k in s["kernels"])


@pytest.fixture
def work(tmp_path, golden_profile):
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def test_golden_without_pva_is_the_reference_with_pva_fields_null(work, golden_profile):
    expected = json_bytes(without_pva(json.loads(EXPECTED_TEXT)))
    before = sha256(golden_profile)
    result = invoke_extract(
        GOLDEN_PROFILE_ARG, "--no-pva", "-o", "summary.json", cwd=work, pva=False
    )
    assert result.code == 0, result
    assert result.stderr == ""
    assert (work / "summary.json").read_bytes() == expected
    assert sha256(golden_profile) == before
    assert sorted(p.name for p in golden_profile.parent.iterdir()) == [
        "profile.pop",
        "pva-double.json",
    ]


def test_no_pva_to_standard_output(work):
    expected = json_bytes(without_pva(json.loads(EXPECTED_TEXT)))
    result = invoke_extract("--no-pva", GOLDEN_PROFILE_ARG, cwd=work, pva=False)
    assert result.code == 0, result
    assert result.stdout == expected
    assert (
        invoke_extract("run", GOLDEN_PROFILE_ARG, "--no-pva", "-o", "-", cwd=work, pva=False).stdout
        == expected
    )


def test_no_pva_never_asks_pva_even_when_it_is_there(tmp_path):
    # The stand-in is importable but cannot open this report (no pva-double.json): a full
    # run fails, a --no-pva run must not notice.
    folder = tmp_path / "inference"
    folder.mkdir()
    shutil.copy2(str(golden_case_folder() / "profile.pop"), str(folder / "profile.pop"))
    full = invoke_extract(folder / "profile.pop", pva=True)
    assert full.code == 1 and "PopVision could not open the report" in full.stderr
    result = invoke_extract(folder / "profile.pop", "--no-pva", pva=True)
    assert result.code == 0, result
    summary = json.loads(result.stdout)
    expected = without_pva(json.loads(EXPECTED_TEXT))
    expected["profile"] = str(folder / "profile.pop")
    assert result.stdout == json_bytes(expected)
    assert summary["attention_exchanges"] is None


@pytest.mark.parametrize("case", ["no-output-begins", "compile-only", "name-rules"])
def test_edge_case_without_pva_says_what_the_full_run_says(case):
    # Cases with warnings, and with an exchange kernel (name-rules); every edge case's
    # bytes are checked in the batch below. The summaries' "profile" is the path as typed
    # from the repository root.
    argument = "fixtures/edge/{}/profile.pop".format(case)
    before = sha256(REPO / argument)
    full = invoke_extract(argument, cwd=REPO, pva=True)
    bare = invoke_extract(argument, "--no-pva", cwd=REPO, pva=False)
    assert full.code == 0 and bare.code == 0, (full, bare)
    expected = json.loads((EDGE / case / "expected.json").read_text(encoding="ascii"))
    assert full.stdout == json_bytes(expected)
    assert bare.stdout == json_bytes(without_pva(expected))
    assert bare.stderr == full.stderr  # the same warnings, nothing said differently
    assert sha256(REPO / argument) == before


def test_without_pva_and_without_the_flag_the_error_names_the_flag(work):
    result = run_extract(GOLDEN_PROFILE_ARG, "-o", "summary.json", cwd=work, pva=False)
    assert result.code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("extract: error: pva: ")
    assert "--no-pva" in lines[0] and "enable.sh" in lines[0]
    assert "Traceback" not in result.stderr
    assert not (work / "summary.json").exists()


def _batch_tree(root: Path) -> dict:
    """The golden profile and every edge case under root/in: {relative folder: expected
    full summary, "profile" being the batch's label}."""
    sources = {"vit/inference": (golden_case_folder(), GOLDEN / "expected.json")}
    for case in EDGE_CASES:
        sources["edge/" + case] = (EDGE / case, EDGE / case / "expected.json")
    expected = {}
    for relative, (folder, summary_file) in sources.items():
        copy_case(folder, root / "in" / relative)
        summary = json.loads(summary_file.read_text(encoding="ascii"))
        summary["profile"] = "in/{}/profile.pop".format(relative)
        expected[relative] = summary
    return expected


def test_batch_without_pva(tmp_path):
    expected = _batch_tree(tmp_path)
    result = invoke_extract("in", "-o", "out", "--no-pva", "-j", "2", cwd=tmp_path, pva=False)
    assert result.code == 0, result
    for relative, summary in expected.items():
        written = (tmp_path / "out" / relative / "summary.json").read_bytes()
        assert written == json_bytes(without_pva(summary)), relative
    index = index_by(tmp_path / "out", "profile")
    assert sorted(index) == sorted(s["profile"] for s in expected.values())
    assert all(entry["pva"] is False and entry["status"] == "ok" for entry in index.values())

    # Unchanged and asked the same way: up to date. Asked with pva: extracted again, in full.
    count = len(expected)
    again = invoke_extract("in", "-o", "out", "--no-pva", cwd=tmp_path, pva=False)
    assert again.code == 0, again
    assert "0 extracted, {} up to date".format(count) in again.stderr, again
    full = invoke_extract("in", "-o", "out", cwd=tmp_path, pva=True)
    assert full.code == 0 and "{} extracted".format(count) in full.stderr, full
    for relative, summary in expected.items():
        written = (tmp_path / "out" / relative / "summary.json").read_bytes()
        assert written == json_bytes(summary), relative
    assert all(entry["pva"] is True for entry in index_by(tmp_path / "out", "profile").values())


def test_batch_without_pva_and_without_the_flag_fails_before_any_work(tmp_path):
    _batch_tree(tmp_path)
    result = run_extract("in", "-o", "out", cwd=tmp_path, pva=False)
    assert result.code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "--no-pva" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not list((tmp_path).glob("out/**/summary.json"))
