"""The bad-input corpus (tests/support/badinput.py) through the real console script: each case
alone, and all of them inside one batch beside good profiles.

Always: the input's bytes unchanged and nothing new beside it; an error is one line
naming the file (no traceback), exit 1, with a previous output left as it was and no
partial file; a summary is exactly `json.dumps(summary, indent=2) + "\\n"`.
"""

import json
import re
from pathlib import Path

import pytest

from support import badinput as bad
from support.cases import copy_case, golden_case_folder, sha256
from support.checks import index_by, json_bytes
from support.cli import invoke_extract
from support.paths import EDGE
from support.spec_oracle import Refused, oracle_summary

CASES = bad.corpus()
PREVIOUS = b"previous summary\n"


def folder_state(folder: Path) -> dict:
    return {p.name: sha256(p) if p.is_file() else "<dir>" for p in sorted(folder.iterdir())}


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def expected_outcome(case, profile: Path, label: str):
    """("summary", bytes) or ("error", pattern) or ("either", None)."""
    expect = case.expect
    if isinstance(expect, bad.Error):
        return "error", expect.pattern
    if isinstance(expect, bad.Summary):
        summary = bad.base_summary(label)
        expect.change(summary)
        return "summary", json_bytes(summary)
    if isinstance(expect, bad.Oracle):
        try:
            return "summary", json_bytes(oracle_summary(profile, label))
        except Refused:
            return "error", ""
    return "either", None


def extract_alone(case, root: Path):
    """The case damaged in its own folder under `root` and extracted alone, over a
    previous summary: (folder, profile, out, the folder's state before, expected outcome,
    the run's result)."""
    folder = root / slug(case.name)
    profile = bad.write_base(folder)
    case.damage(folder)
    out = root / (slug(case.name) + ".out")
    out.mkdir()
    (out / "summary.json").write_bytes(PREVIOUS)
    outcome = expected_outcome(case, profile, str(profile))
    before = folder_state(folder)
    result = invoke_extract(profile, "-o", out / "summary.json", timeout=60)
    return folder, profile, out, before, outcome, result


def check_error_line(stderr: str, source: str, pattern: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    prefix = "extract: error: {}: ".format(source)
    assert lines[0].startswith(prefix), lines[0][:300]
    assert re.search(pattern, lines[0][len(prefix) :]), lines[0][:300]
    return lines[0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_alone(tmp_path, case):
    folder, profile, out, before, (kind, expected), result = extract_alone(case, tmp_path)
    assert folder_state(folder) == before  # input bytes unchanged, nothing beside it
    written = (out / "summary.json").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]  # no partial file
    if kind == "either":
        kind = "summary" if result.code == 0 else "error"
        expected = ""
        if result.code == 0:
            summary = json.loads(written)
            expected = json_bytes(summary)  # the bytes rule, at least
    if kind == "error":
        assert result.code == 1, result
        check_error_line(result.stderr, str(profile), expected)
        assert written == PREVIOUS
    else:
        assert result.code == 0, result
        assert written == expected
        assert all(line.startswith("extract: warning: ") for line in result.stderr.splitlines())


def test_oracle_agrees_with_the_hand_worked_cases(tmp_path):
    # The oracle used for the fuzz answers the hand-worked cases as worked by hand.
    checked = 0
    for case in CASES:
        if not isinstance(case.expect, (bad.Summary, bad.Error)) or "truncated" in case.name:
            continue
        folder = tmp_path / slug(case.name)
        profile = bad.write_base(folder)
        case.damage(folder)
        kind, expected = expected_outcome(case, profile, "p")
        if kind == "summary":
            assert json_bytes(oracle_summary(profile, "p")) == expected, case.name
        elif case.name not in ("text file", "png", "gzip", "empty file"):
            with pytest.raises(Refused):
                oracle_summary(profile, "p")
                pytest.fail("the oracle accepts {!r}".format(case.name))
        checked += 1
    assert checked > 50


# ---- the whole corpus inside one batch of good profiles -------------------------------

GOOD = {
    "good/base": None,
    "good/multi-ipu": EDGE / "multi-ipu",
    "good/unicode": EDGE / "unicode-names",
    "good/vit": golden_case_folder(),
}


def test_corpus_inside_a_batch(tmp_path):
    runs = tmp_path / "runs"
    expected = {}  # folder -> ("summary", bytes) | ("error", pattern) | ("either", None)
    for folder, source in GOOD.items():
        if source is None:
            bad.write_base(runs / folder)
        else:
            copy_case(source, runs / folder)
    for case in CASES:
        if not case.batch:
            continue
        folder = "bad/" + slug(case.name)
        profile = bad.write_base(runs / folder)
        case.damage(runs / folder)
        expected[folder] = expected_outcome(case, profile, "runs/{}/profile.pop".format(folder))
    # Hostile tree entries: a dangling profile.pop, a looping one, a folder named
    # profile.pop, a symbolic link loop between folders.
    (runs / "links" / "dangling").mkdir(parents=True)
    (runs / "links" / "dangling" / "profile.pop").symlink_to(tmp_path / "nowhere.pop")
    (runs / "links" / "self").mkdir()
    (runs / "links" / "self" / "profile.pop").symlink_to("profile.pop")
    (runs / "links" / "dir" / "profile.pop").mkdir(parents=True)
    (runs / "links" / "loop").symlink_to(runs / "links")
    before = {str(p): sha256(p) for p in runs.rglob("*") if p.is_file()}
    names_before = sorted(str(p) for p in runs.rglob("*"))

    result = invoke_extract("runs", "-o", "out", "-j", "2", cwd=tmp_path, timeout=300)

    assert result.code == 1, result
    assert "Traceback" not in result.stderr
    assert {str(p): sha256(p) for p in runs.rglob("*") if p.is_file()} == before
    assert sorted(str(p) for p in runs.rglob("*")) == names_before
    out = tmp_path / "out"
    entries = index_by(out, "profile")
    lines = result.stderr.splitlines()
    # Every good profile: written, indexed, and the bytes a single run writes.
    for folder in GOOD:
        label = "runs/{}/profile.pop".format(folder)
        entry = entries[label]
        assert entry["status"] == "ok", entry
        data = (out / folder / "summary.json").read_bytes()
        assert entry["summary_sha256"] == __import__("hashlib").sha256(data).hexdigest()
        assert data == invoke_extract(label, cwd=tmp_path).stdout
    for folder, (expected_kind, expected_pattern) in expected.items():
        kind, pattern = expected_kind, expected_pattern
        label = "runs/{}/profile.pop".format(folder)
        entry = entries[label]
        summary_file = out / folder / "summary.json"
        if kind == "either":
            kind = "summary" if entry["status"] == "ok" else "error"
            pattern = json_bytes(json.loads(summary_file.read_bytes())) if kind == "summary" else ""
        if kind == "error":
            assert entry["status"] == "failed", (folder, entry)
            assert entry["reason"].startswith(label + ": "), entry["reason"][:300]
            assert re.search(pattern, entry["reason"][len(label) + 2 :]), entry["reason"][:300]
            assert not summary_file.exists()
            assert any(line.startswith("extract: error: {}: ".format(label)) for line in lines)
        else:
            assert entry["status"] == "ok", (folder, entry.get("reason", "")[:300])
            assert summary_file.read_bytes() == pattern, folder
    assert entries["runs/links/dangling/profile.pop"]["reason"].endswith(": broken symbolic link")
    assert entries["runs/links/self/profile.pop"]["reason"].endswith(": symbolic link loop")
    assert not any("links/dir" in label for label in entries)  # a folder, searched
    assert any("already searched through a symbolic link" in line for line in lines)
    # Nothing outside OUTDIR, no partial file inside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "runs"]
    assert [p for p in out.rglob("*partial*")] == []
