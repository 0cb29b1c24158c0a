"""`extract PATH... -o OUTDIR`: batches, through the real console script."""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.cases import copy_case, golden_case_folder, sha256
from support.checks import index_lines
from support.cli import extract_command, invoke_extract, read_terminal
from support.paths import EDGE, PVA_DOUBLE, REPO

GOOD_CASES = ["multi-ipu", "one-anchor", "no-anchors", "compile-only", "unicode-names"]


def make_tree(root: Path) -> dict:
    """A tree of profiles: nested good ones, a corrupt one, a half-written one.
    Returns {relative folder: source case} for the good ones."""
    layout = {
        "vit/fp8": golden_case_folder(),
        "vit/fp16/bs1": golden_case_folder(),
        "edge/multi": EDGE / "multi-ipu",
        "edge/one": EDGE / "one-anchor",
        "edge/none": EDGE / "no-anchors",
        "edge/compile": EDGE / "compile-only",
        "z/unicode": EDGE / "unicode-names",
    }
    for folder, source in layout.items():
        copy_case(source, root / folder)
    (root / "bad").mkdir()
    (root / "bad" / "profile.pop").write_text("not a database")
    (root / "running").mkdir()
    (root / "running" / "profile_a1b2c3.pop").write_bytes(b"SQLite format 3\x00 half")
    copy_case(EDGE / "one-anchor", root / "busy")
    (root / "busy" / "profile.pop-journal").write_bytes(b"")
    return layout


def summaries(outdir: Path) -> dict:
    return {
        str(p.relative_to(outdir).parent): p.read_bytes()
        for p in sorted(outdir.rglob("summary.json"))
    }


def test_batch_mirrors_the_tree_and_isolates_failures(tmp_path):
    root = tmp_path / "runs"
    layout = make_tree(root)
    hashes = {p: sha256(p) for p in root.rglob("*.pop")}
    result = invoke_extract("runs", "-o", "out", "-j", "2", cwd=tmp_path)
    assert result.code == 1, result  # one profile failed
    out = tmp_path / "out"
    assert sorted(summaries(out)) == sorted(layout)
    # Each summary is what `extract PROFILE` writes, with the profile path as given.
    for folder in layout:
        single = invoke_extract("runs/{}/profile.pop".format(folder), cwd=tmp_path)
        assert summaries(out)[folder] == single.stdout, folder
        assert json.loads(single.stdout)["profile"] == "runs/{}/profile.pop".format(folder)
    lines = result.stderr.splitlines()
    assert "extract: error: runs/bad/profile.pop: not an SQLite database" in lines
    assert any("runs/running/profile_a1b2c3.pop: still being written" in line for line in lines)
    assert any("runs/busy/profile.pop: profile.pop-journal beside it" in line for line in lines)
    assert lines[-1] == "7 extracted, 0 up to date, 1 failed"
    # One plain line per finished profile when not on a terminal.
    assert sum(1 for line in lines if line.startswith("[")) == 7
    entries = {e["profile"]: e for e in index_lines(out)}
    assert sorted(entries) == sorted(
        ["runs/{}/profile.pop".format(f) for f in layout] + ["runs/bad/profile.pop"]
    )
    bad = entries["runs/bad/profile.pop"]
    assert bad["status"] == "failed" and "not an SQLite database" in bad["reason"]
    fp8 = entries["runs/vit/fp8/profile.pop"]
    assert fp8["status"] == "ok"
    assert fp8["output"] == "out/vit/fp8/summary.json"
    assert fp8["device_spans"] == [15987664, 15987659] and fp8["qkv_executions"] == 54
    assert fp8["stage_cycles"] == {
        "fused QKV projection": 37277,
        "QK transpose": 8488,
        "PV": 12900,
        "output projection": 14153,
        "MLP up": 48248,
        "MLP down": 52187,
    }
    source = root / "vit" / "fp8" / "profile.pop"
    assert fp8["size"] == source.stat().st_size
    assert fp8["mtime_ns"] == source.stat().st_mtime_ns
    assert len(fp8["rules_sha256"]) == 64 and fp8["tool_version"]
    assert {p: sha256(p) for p in root.rglob("*.pop")} == hashes


def test_rerun_is_incremental_and_force_redoes(tmp_path):
    root = tmp_path / "runs"
    make_tree(root)
    first = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    again = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert again.stderr.splitlines()[-1] == "0 extracted, 7 up to date, 1 failed"
    statuses = {e["profile"]: e["status"] for e in index_lines(tmp_path / "out")}
    assert statuses["runs/vit/fp8/profile.pop"] == "up to date"
    assert len(statuses) == 8  # one line per profile after the run
    # Touching an input, changing the rules, or deleting a summary redoes just that one.
    os.utime(str(root / "edge/one/profile.pop"), ns=(1, 1))
    (tmp_path / "out" / "z/unicode/summary.json").unlink()
    third = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert third.stderr.splitlines()[-1] == "2 extracted, 5 up to date, 1 failed"
    rules = tmp_path / "rules.toml"
    rules.write_text((REPO / "stage_rules.toml").read_text() + "\n# changed\n")
    fourth = invoke_extract("runs", "-o", "out", "--rules", rules, cwd=tmp_path)
    assert fourth.stderr.splitlines()[-1] == "7 extracted, 0 up to date, 1 failed"
    forced = invoke_extract("runs", "-o", "out", "--rules", rules, "--force", cwd=tmp_path)
    assert forced.stderr.splitlines()[-1] == "7 extracted, 0 up to date, 1 failed"
    assert first.code == again.code == third.code == fourth.code == forced.code == 1


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_crashing_worker_fails_only_its_profile(tmp_path, jobs):
    for name in ("a", "b", "c", "d"):
        copy_case(EDGE / "one-anchor", tmp_path / "runs" / name)
    double = tmp_path / "runs" / "b" / "pva-double.json"
    double.write_text(json.dumps(dict(json.loads(double.read_text()), _test_crash="SIGSEGV")))
    result = invoke_extract("runs", "-o", "out", "-j", jobs, cwd=tmp_path)
    assert result.code == 1, result
    assert (
        "extract: error: runs/b/profile.pop: the worker process extracting it died "
        "(killed by SIGSEGV)"
    ) in result.stderr.splitlines()
    assert result.stderr.splitlines()[-1] == "3 extracted, 0 up to date, 1 failed"
    assert sorted(summaries(tmp_path / "out")) == ["a", "c", "d"]


# The parent has imported extract; then the files under it change (a pip upgrade or an
# edit of an editable install under a running batch) so that a worker cannot import it.
_BREAK_THEN_RUN = r"""
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import extractor.run.batch.run
from extractor.cli import main
from pathlib import Path
Path(sys.argv[1], "extractor", "core", "pipeline.py").write_text(
    "raise ImportError('pipeline.py\\nwas replaced')\n")
sys.argv[1:2] = []
main()
"""


def test_a_worker_that_cannot_import_extract_fails_its_profiles_in_one_line_each(tmp_path):
    # No traceback from a worker, whatever stops it: its bootstrap is
    # ours, so an import that fails is one reason per profile, in the index and on stderr.
    import shutil
    import sys

    site = tmp_path / "site"
    shutil.copytree(
        str(REPO / "extractor"),
        str(site / "extractor"),
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(str(REPO / "stage_rules.toml"), str(site / "stage_rules.toml"))
    for name in ("a", "b"):
        copy_case(EDGE / "one-anchor", tmp_path / "runs" / name)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _BREAK_THEN_RUN,
            str(site),
            "runs",
            "-o",
            "out",
            "-j",
            "2",
            "--no-pva",
        ],
        cwd=str(tmp_path),
        capture_output=True,
        timeout=120,
        check=False,
    )
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    assert "Traceback" not in stderr, stderr
    reason = (
        "the worker process could not start: cannot import extract's worker: "
        "ImportError: pipeline.py was replaced"
    )
    for name in ("a", "b"):
        assert (
            "extract: error: runs/{}/profile.pop: {}".format(name, reason) in stderr.splitlines()
        ), stderr
    assert stderr.splitlines()[-1] == "0 extracted, 0 up to date, 2 failed"
    assert sorted(
        (e["profile"], e["status"], e["reason"]) for e in index_lines(tmp_path / "out")
    ) == [
        ("runs/a/profile.pop", "failed", "runs/a/profile.pop: " + reason),
        ("runs/b/profile.pop", "failed", "runs/b/profile.pop: " + reason),
    ]


def test_jobs_do_not_change_bytes(tmp_path):
    root = tmp_path / "runs"
    make_tree(root)
    invoke_extract("runs", "-o", "one", "-j", "1", cwd=tmp_path)
    invoke_extract("runs", "-o", "two", "-j", "2", cwd=tmp_path)
    invoke_extract("runs", "-o", "four", "-j", "4", cwd=tmp_path)
    assert (
        summaries(tmp_path / "one") == summaries(tmp_path / "two") == summaries(tmp_path / "four")
    )
    assert len(summaries(tmp_path / "one")) == 7


def test_quiet_prints_errors_and_the_last_line(tmp_path):
    make_tree(tmp_path / "runs")
    result = invoke_extract("runs", "-o", "out", "--quiet", cwd=tmp_path)
    assert result.stderr.splitlines() == [
        "extract: error: runs/bad/profile.pop: not an SQLite database",
        "7 extracted, 0 up to date, 1 failed",
    ]


def test_several_arguments_go_under_their_own_names(tmp_path):
    copy_case(golden_case_folder(), tmp_path / "a" / "x")
    copy_case(EDGE / "one-anchor", tmp_path / "b" / "x")
    copy_case(EDGE / "no-anchors", tmp_path / "single")
    result = invoke_extract("a", "b", "single/profile.pop", "-o", "out", cwd=tmp_path)
    assert result.code == 0, result
    assert sorted(summaries(tmp_path / "out")) == ["a/x", "b/x", "single"]


def test_no_output_escapes_outdir(tmp_path):
    # A symlink inside OUTDIR pointing elsewhere must not be written through.
    copy_case(EDGE / "one-anchor", tmp_path / "runs" / "evil")
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "evil").symlink_to(tmp_path / "elsewhere")
    result = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert result.code == 1, result
    assert "outside the output folder" in result.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_symlink_loop_is_passed_over(tmp_path):
    copy_case(EDGE / "one-anchor", tmp_path / "runs" / "a")
    (tmp_path / "runs" / "a" / "loop").symlink_to(tmp_path / "runs")
    result = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert result.code == 0, result
    assert "symbolic link" in result.stderr
    assert sorted(summaries(tmp_path / "out")) == ["a"]


def test_unreadable_folder_is_reported_and_passed_over(tmp_path, monkeypatch):
    # As root, folder permissions are not enforced, so the OS error is simulated.
    from extractor.run.batch.discover import discover

    copy_case(EDGE / "one-anchor", tmp_path / "runs" / "a")
    (tmp_path / "runs" / "secret").mkdir()
    real_scandir = os.scandir

    def scandir(path="."):
        if str(path).endswith("secret"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = discover([tmp_path / "runs"])
    assert [item.key for item in found.items] == ["a"]
    assert any("secret: cannot read this folder (Permission denied)" in n for n in found.notes)


def test_batch_usage_errors(tmp_path):
    make_tree(tmp_path / "runs")
    assert invoke_extract("runs", cwd=tmp_path).code == 2
    (tmp_path / "afile").write_text("x")
    assert invoke_extract("runs", "-o", "afile", cwd=tmp_path).code == 2
    assert invoke_extract("runs", "-o", "out", "--shard", "3/2", cwd=tmp_path).code == 2
    assert invoke_extract("runs", "-o", "out", "--shard", "x", cwd=tmp_path).code == 2
    assert invoke_extract("runs", "-o", "out", "--jobs", "0", cwd=tmp_path).code == 2
    single = golden_case_folder() / "profile.pop"
    assert invoke_extract(single, "-o", "s.json", "--jobs", "2", cwd=tmp_path).code == 2
    assert not (tmp_path / "out").exists()


def test_shards_cover_every_profile_once_and_merge(tmp_path):
    make_tree(tmp_path / "runs")
    for k in (1, 2, 3):
        invoke_extract("runs", "-o", "out", "--shard", "{}/3".format(k), cwd=tmp_path)
    names = ["index-shard-{}-of-3.jsonl".format(k) for k in (1, 2, 3)]
    shares = [[e["profile"] for e in index_lines(tmp_path / "out", n)] for n in names]
    everything = sorted(p for share in shares for p in share)
    assert len(everything) == len(set(everything)) == 8
    assert all(2 <= len(share) <= 3 for share in shares)
    merged = invoke_extract("merge", "out", cwd=tmp_path)
    assert merged.code == 0, merged
    assert sorted(e["profile"] for e in index_lines(tmp_path / "out")) == everything
    assert len(summaries(tmp_path / "out")) == 7


def test_slurm_shard_reads_the_array_variables(tmp_path):
    make_tree(tmp_path / "runs")
    seen = []
    for task in (4, 5, 6):  # an array declared as --array=4-6
        env = {
            "SLURM_ARRAY_TASK_ID": str(task),
            "SLURM_ARRAY_TASK_COUNT": "3",
            "SLURM_ARRAY_TASK_MIN": "4",
        }
        invoke_extract("runs", "-o", "out", "--shard", "slurm", cwd=tmp_path, env=env)
        seen.append(task)
    for k in (1, 2, 3):
        assert (tmp_path / "out" / "index-shard-{}-of-3.jsonl".format(k)).exists()
    outside = invoke_extract("runs", "-o", "out", "--shard", "slurm", cwd=tmp_path)
    assert outside.code == 2 and "SLURM_ARRAY_TASK_ID" in outside.stderr


def test_run_help_names_every_slurm_variable_the_shard_reads():
    """`--shard slurm` reads four variables (extractor/run/batch/shards.py): help names each,
    and the two that may be unset, with their defaults."""
    source = (REPO / "extractor" / "run" / "batch" / "shards.py").read_text(encoding="utf-8")
    read = set(re.findall(r'"(SLURM_ARRAY_TASK_[A-Z]+)"', source))
    assert read == {
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_STEP",
    }
    wide = {"COLUMNS": "250", "TERMINAL_WIDTH": "250"}
    text = invoke_extract("run", "--help", env=wide).stdout.decode("utf-8")
    text = " ".join(text.replace("│", " ").split())
    for name in sorted(read):
        assert name in text, name
    assert "SLURM_ARRAY_TASK_MIN (0 when unset)" in text
    assert "SLURM_ARRAY_TASK_STEP (1 when unset)" in text


def _start_batch(cwd: Path, *args, stderr=subprocess.DEVNULL):
    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE))
    return subprocess.Popen(
        extract_command() + list(args),
        cwd=str(cwd),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        start_new_session=True,
    )


def _extracted(outdir: Path) -> set:
    """The profiles the index says were extracted (`ok`), by any run so far; an `up to
    date` line (a rerun going over what an earlier run did) is not new work."""
    index = outdir / "index.jsonl"
    data = index.read_bytes() if index.exists() else b""
    whole = data[: data.rfind(b"\n") + 1]  # a line being appended is not read half-way
    return {e["profile"] for e in map(json.loads, whole.splitlines()) if e["status"] == "ok"}


def _wait_for_index_lines(outdir: Path, count: int, process, limit=60.0) -> None:
    """Wait until the running batch has extracted `count` profiles (all runs together);
    0: until it has started (locked its index: the workers are being spawned)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        ended = process.poll() is not None  # before reading: its last lines are then in
        if count == 0 and (outdir / ".index.jsonl.lock").exists():
            return
        if count and len(_extracted(outdir)) >= count:
            return
        if ended:
            break
        time.sleep(0.01)
    pytest.fail("the batch ended or stalled before extracting {} profiles".format(count))


def _last_line_counts(stderr: str):
    import re

    match = re.fullmatch(
        r"(\d+) extracted, (\d+) up to date, (\d+) failed", stderr.splitlines()[-1]
    )
    assert match, stderr
    return tuple(int(n) for n in match.groups())


def _assert_consistent(outdir: Path, expected: dict) -> int:
    """No torn index line, no partial summary; returns how many profiles are indexed ok."""
    index = outdir / "index.jsonl"
    ok = 0
    if index.exists():
        for line in index.read_bytes().splitlines():
            entry = json.loads(line)  # raises on a torn line
            if entry["status"] in ("ok", "up to date"):
                ok += 1
                folder = str(Path(entry["output"]).relative_to("out").parent)
                assert (outdir / folder / "summary.json").read_bytes() == expected[folder]
    for folder, data in summaries(outdir).items():
        assert data == expected[folder], folder
    return ok


def test_sigkill_at_any_moment_then_rerun_finishes_exactly_the_rest(tmp_path):
    root = tmp_path / "runs"
    total = 40  # enough that the batch is still running at the last kill (after 15+)
    for n in range(total):
        copy_case(golden_case_folder() if n % 2 else EDGE / "multi-ipu", root / "p{:02d}".format(n))
    invoke_extract("runs", "-o", "reference", "-j", "2", cwd=tmp_path)
    expected = summaries(tmp_path / "reference")
    assert len(expected) == total
    out = tmp_path / "out"
    # Kill the whole process group (parent and workers) at several points: before any
    # profile is extracted (mid start-up: workers spawning), and after 1, 5 and 9 more
    # extracted (not counting the `up to date` lines a rerun writes first).
    for extracted in (0, 1, 5, 9):
        if out.exists():
            _assert_consistent(out, expected)
        before = len(_extracted(out))
        process = _start_batch(tmp_path, "runs", "-o", "out", "-j", "2")
        _wait_for_index_lines(out, before + extracted if extracted else 0, process)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        _assert_consistent(out, expected)
    finished = {e["profile"] for e in index_lines(out) if e["status"] in ("ok", "up to date")}
    assert 0 < len(finished) < total
    rerun = invoke_extract("runs", "-o", "out", "-j", "2", cwd=tmp_path)
    assert rerun.code == 0, rerun
    extracted, up_to_date, failed = _last_line_counts(rerun.stderr)
    # Exactly the profiles without an index line are extracted again.
    assert (extracted, up_to_date, failed) == (total - len(finished), len(finished), 0)
    assert summaries(out) == expected
    assert [p.name for p in out.rglob(".*partial")] == []
    assert len(index_lines(out)) == total


def test_sigint_exits_130_with_a_consistent_index(tmp_path):
    root = tmp_path / "runs"
    for n in range(40):
        copy_case(golden_case_folder(), root / "p{:02d}".format(n))
    process = _start_batch(tmp_path, "runs", "-o", "out", "-j", "1", stderr=subprocess.PIPE)
    _wait_for_index_lines(tmp_path / "out", 2, process)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    stderr = stderr.decode()
    assert process.returncode == 130, stderr
    assert "extract: error: interrupted" in stderr
    extracted, _up_to_date, failed = _last_line_counts(
        "\n".join(line for line in stderr.splitlines() if not line.startswith("extract: error"))
    )
    lines = index_lines(tmp_path / "out")
    assert len(lines) == len({e["profile"] for e in lines}) == extracted
    assert 2 <= extracted < 40 and failed == 0
    assert [p.name for p in (tmp_path / "out").rglob(".*partial")] == []
    written = list((tmp_path / "out").rglob("summary.json"))
    assert len(written) >= extracted
    for path in written:
        assert json.loads(path.read_bytes())["qkv_executions"] == 54


def test_progress_bar_on_a_terminal(tmp_path):
    import pty
    import re

    make_tree(tmp_path / "runs")
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE), TERM="xterm-256color", COLUMNS="160")
    env.pop("CI", None)  # rich treats CI as a reason to render plainly
    process = subprocess.Popen(
        extract_command() + ["runs", "-o", "out", "-j", "1"],
        cwd=str(tmp_path),
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    written = read_terminal(master)
    process.wait(timeout=60)
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", written.decode("utf-8", "replace"))
    assert process.returncode == 1, screen
    assert re.search(r"extract .*\d+/8 .*eta", screen), screen  # bar, done of total, times
    # The current file, shown after the times on the bar's line (the error line below
    # names runs/bad/profile.pop too: it does not count).
    assert re.search(r"extract .*\d+/8 .*eta\s+\S+\s+runs/\S+\.pop", screen), screen
    assert "extract: error: runs/bad/profile.pop: not an SQLite database" in screen
    assert "[1/8]" not in screen  # no plain per-profile lines on a terminal
    assert screen.rstrip().splitlines()[-1].strip() == "7 extracted, 0 up to date, 1 failed"
