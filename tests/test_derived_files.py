"""breakdown.json and memory.json beside summary.json (`extract PROFILE -o summary.json
--breakdown --memory`, and a batch with them), through the real CLI: the same bytes as
`extract breakdown --format json` and `extract memory --format json` give (held by their
own tests), written with the summary or not at all, in the index with their SHA-256, a
batch's up-to-date rule, a killed batch re-run, and the usage errors."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.cases import copy_case, sha256
from support.checks import index_by, index_lines, one_error, partial_files
from support.cli import extract_command, invoke_extract
from support.paths import EDGE, PVA_DOUBLE, REPO

TILE_MEMORY = REPO / "fixtures" / "tile-memory"
DERIVED = ("breakdown.json", "memory.json")


def _command_output(*args, cwd) -> bytes:
    result = invoke_extract(*args, cwd=cwd)
    assert result.code == 0, result.stderr
    return result.stdout


def test_single_run_writes_both_beside_the_summary(tmp_path):
    profile = copy_case(TILE_MEMORY, tmp_path / "tile-memory")
    out = tmp_path / "out" / "summary.json"
    result = invoke_extract(profile, "-o", out, "--breakdown", "--memory", "--blocks", "--csv")
    assert result.code == 0, result.stderr
    # The summary's bytes do not change with them; each file is its command's JSON.
    assert out.read_bytes() == _command_output(profile, cwd=tmp_path)
    assert (out.parent / "breakdown.json").read_bytes() == _command_output(
        "breakdown", profile, "--format", "json", cwd=tmp_path
    )
    assert (out.parent / "memory.json").read_bytes() == _command_output(
        "memory", profile, "--format", "json", cwd=tmp_path
    )
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "blocks.json",
        "breakdown.json",
        "first-body.csv",
        "memory.json",
        "steps.csv",
        "summary.json",
    ]
    # Hand-checked against fixtures/tile-memory/README.md: 64 tiles, the fullest tile 40.
    memory = json.loads((out.parent / "memory.json").read_bytes())
    assert (memory["tiles"], memory["total"]["max"], memory["total"]["max_tile"]) == (
        64,
        707628,
        40,
    )
    assert json.loads((out.parent / "breakdown.json").read_bytes())["profile"] == str(profile)


def test_without_pva_they_are_made_without_it(tmp_path):
    profile = copy_case(TILE_MEMORY, tmp_path / "p")
    out = tmp_path / "out" / "summary.json"
    result = invoke_extract(profile, "-o", out, "--memory", "--breakdown", "--no-pva", pva=False)
    assert result.code == 0, result.stderr
    memory = json.loads((out.parent / "memory.json").read_bytes())
    assert memory["liveness"] is None and memory["tiles_per_ipu"] is None
    windows = json.loads((out.parent / "breakdown.json").read_bytes())["windows"]
    assert all(ipu["tile_balance"] is None for ipu in windows[0]["ipus"])


@pytest.mark.parametrize("option, name", [("--breakdown", "breakdown"), ("--memory", "memory")])
def test_standard_output_cannot_take_them(tmp_path, option, name):
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "p")
    line = one_error(invoke_extract(profile, option, cwd=tmp_path), 2)
    assert line == (
        "extract: error: {} writes {}.json beside the summary: give the summary a file "
        "with -o FILE, not standard output (or run extract {})".format(option, name, name)
    )


def test_a_failing_derived_file_leaves_nothing_new(tmp_path):
    # memory_by_tile with a negative total: the summary can be made, memory.json cannot
    # (its spec refuses it): nothing is written, not even the summary.
    import sqlite3

    profile = copy_case(TILE_MEMORY, tmp_path / "p")
    with sqlite3.connect(str(profile)) as db:
        db.execute("UPDATE memory_by_tile SET total = -5 WHERE tile = 3")
    out = tmp_path / "out" / "summary.json"
    out.parent.mkdir()
    out.write_bytes(b"an earlier summary\n")
    result = invoke_extract(profile, "-o", out, "--memory", "--breakdown")
    assert result.code == 1 and "memory_by_tile" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["summary.json"]
    assert out.read_bytes() == b"an earlier summary\n"


def _tree(root: Path, count: int) -> None:
    for n in range(count):
        source = TILE_MEMORY if n % 2 else EDGE / "multi-ipu"
        copy_case(source, root / "p{:02d}".format(n))


def _statuses(cwd: Path, outdir: str, *extra) -> dict:
    result = invoke_extract("runs", "-o", outdir, "-j", "1", *extra, cwd=cwd)
    assert result.code == 0, result.stderr
    return {key: entry["status"] for key, entry in index_by(cwd / outdir, "summary").items()}


def test_batch_records_them_and_keeps_them_up_to_date(tmp_path):
    _tree(tmp_path / "runs", 2)
    out = tmp_path / "out"
    assert set(_statuses(tmp_path, "plain").values()) == {"ok"}
    for entry in index_lines(tmp_path / "plain"):
        assert entry["breakdown"] is False and entry["memory"] is False
        assert "breakdown_sha256" not in entry and "memory_sha256" not in entry
    assert set(_statuses(tmp_path, "out", "--breakdown", "--memory").values()) == {"ok"}
    for key, entry in index_by(out, "summary").items():
        folder = out / Path(key).parent
        assert entry["breakdown"] is True and entry["memory"] is True
        assert entry["breakdown_sha256"] == sha256(folder / "breakdown.json")
        assert entry["memory_sha256"] == sha256(folder / "memory.json")
        assert (folder / "summary.json").read_bytes() == (
            tmp_path / "plain" / Path(key)
        ).read_bytes()
        profile = tmp_path / "runs" / Path(key).parent / "profile.pop"
        assert (folder / "memory.json").read_bytes() == _command_output(
            "memory",
            Path("runs") / Path(key).parent / "profile.pop",
            "--format",
            "json",
            cwd=tmp_path,
        )
        assert profile.exists()
    both = ("--breakdown", "--memory")
    assert set(_statuses(tmp_path, "out", *both).values()) == {"up to date"}
    # Asking for fewer is up to date too; the plain folder is not, for either option.
    assert set(_statuses(tmp_path, "out", "--memory").values()) == {"up to date"}
    assert set(_statuses(tmp_path, "plain", "--breakdown").values()) == {"ok"}
    assert set(_statuses(tmp_path, "plain", "--memory").values()) == {"ok"}
    # A derived file gone or changed since: that profile again, for its option only.
    (out / "p00" / "breakdown.json").unlink()
    (out / "p01" / "memory.json").write_bytes(b"{}\n")
    got = _statuses(tmp_path, "out", *both)
    assert got == {"p00/summary.json": "ok", "p01/summary.json": "ok"}
    assert (out / "p00" / "breakdown.json").exists()
    assert index_by(out, "summary")["p01/summary.json"]["memory_sha256"] == sha256(
        out / "p01" / "memory.json"
    )


def _start(cwd: Path, *args):
    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE))
    return subprocess.Popen(
        extract_command() + list(args),
        cwd=str(cwd),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _ok_lines(outdir: Path) -> list:
    index = outdir / "index.jsonl"
    data = index.read_bytes() if index.exists() else b""
    whole = data[: data.rfind(b"\n") + 1]
    return [e for e in map(json.loads, whole.splitlines()) if e["status"] == "ok"]


def test_a_killed_batch_rerun_finishes_the_rest_with_their_files(tmp_path):
    total = 16
    _tree(tmp_path / "runs", total)
    out = tmp_path / "out"
    process = _start(tmp_path, "runs", "-o", "out", "-j", "1", "--breakdown", "--memory")
    deadline = time.monotonic() + 60
    while len(_ok_lines(out)) < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished = _ok_lines(out)
    assert 2 <= len(finished) < total
    for entry in finished:  # what the index vouches for is there, whole
        folder = out / Path(entry["summary"]).parent
        assert entry["summary_sha256"] == sha256(folder / "summary.json")
        assert entry["breakdown_sha256"] == sha256(folder / "breakdown.json")
        assert entry["memory_sha256"] == sha256(folder / "memory.json")
    rerun = invoke_extract("runs", "-o", "out", "-j", "2", "--breakdown", "--memory", cwd=tmp_path)
    assert rerun.code == 0, rerun.stderr
    assert rerun.stderr.splitlines()[-1] == "{} extracted, {} up to date, 0 failed".format(
        total - len(finished), len(finished)
    )
    assert partial_files(out) == []
    for key, entry in index_by(out, "summary").items():
        folder = out / Path(key).parent
        for name in DERIVED:
            assert entry[name.split(".")[0] + "_sha256"] == sha256(folder / name)
