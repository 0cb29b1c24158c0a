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


# ---- their metrics in table, compare and budgets, only while they belong ----------------


def _table(cwd: Path, *paths) -> dict:
    """`extract table --format csv`'s values, by (recording, metric)."""
    import csv
    import io

    result = invoke_extract("table", *paths, "--format", "csv", cwd=cwd)
    assert result.code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout.decode())))
    return {(row["recording"], row["metric"]): row["value"] for row in rows}


def _of(found: dict, recording: str, prefix: str) -> dict:
    return {m: v for (r, m), v in found.items() if r == recording and m.startswith(prefix)}


def _time_metrics(breakdown: dict) -> dict:
    """The spec's time: metrics of a breakdown.json, read here: the largest over the IPUs
    of its first window."""
    found = {}
    for ipu in breakdown["windows"][0]["ipus"]:
        named = [("time:cycles", ipu["cycles"]), ("time:span", ipu["span"])]
        named += [("time:kind:" + k["kind"], k["cycles"]) for k in ipu["kinds"]]
        named += [("time:stage:" + k["stage"], k["cycles"]) for k in ipu["stages"]]
        named += [("time:layer:" + k["layer"], k["cycles"]) for k in ipu["layers"]]
        for name, cycles in named:
            found[name] = str(max(cycles, int(found.get(name, cycles))))
    return found


def test_table_reads_their_metrics_only_while_they_belong(tmp_path):
    copy_case(TILE_MEMORY, tmp_path / "runs" / "a")
    copy_case(EDGE / "multi-ipu", tmp_path / "runs" / "b")
    result = invoke_extract("runs", "-o", "out", "--breakdown", "--memory", cwd=tmp_path)
    assert result.code == 0, result.stderr
    found = _table(tmp_path, "out")
    # fixtures/tile-memory/README.md: the fullest tile 40 holds 707628 bytes, three tiles
    # are over the limit of 638976, so the headroom is 638976 - 707628.
    memory = _of(found, "a", "memory:")
    assert (memory["memory:max"], memory["memory:over"], memory["memory:headroom"]) == (
        "707628",
        "3",
        "-68652",
    )
    assert found[("a", "memory:min")] == found[("a", "allocated_memory:min")]
    assert found[("a", "memory_category:stack:max")] == "16384"
    assert ("a", "liveness:peak") in found
    for label in ("a", "b"):
        breakdown = json.loads((tmp_path / "out" / label / "breakdown.json").read_bytes())
        assert _of(found, label, "time:") == _time_metrics(breakdown)
    # A breakdown.json changed since the index recorded it: its metrics are gone, the
    # rest stay.
    stale = tmp_path / "out" / "a" / "breakdown.json"
    stale.write_bytes(stale.read_bytes() + b"\n")
    found = _table(tmp_path, "out")
    assert _of(found, "a", "time:") == {} and _of(found, "b", "time:") != {}
    assert _of(found, "a", "memory:") == memory
    # The batch run again without --memory: the memory.json left beside is not this
    # extraction's (the index line says memory false), so it is not read as current.
    result = invoke_extract("runs", "-o", "out", "--force", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert (tmp_path / "out" / "a" / "memory.json").exists()
    found = _table(tmp_path, "out")
    assert [m for (_r, m) in found if m.split(":")[0] in ("time", "memory", "liveness")] == []


def test_a_single_runs_files_belong_only_when_they_agree(tmp_path):
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "b")
    single = tmp_path / "single" / "summary.json"
    result = invoke_extract(profile, "-o", single, "--breakdown", "--memory")
    assert result.code == 0, result.stderr
    found = _table(tmp_path, "single")
    assert _of(found, "single", "memory:") != {} and _of(found, "single", "time:") != {}
    # Another profile's files, put beside it: foreign, never read (no index to go by).
    other = copy_case(TILE_MEMORY, tmp_path / "a")
    elsewhere = tmp_path / "elsewhere" / "summary.json"
    result = invoke_extract(other, "-o", elsewhere, "--breakdown", "--memory")
    assert result.code == 0, result.stderr
    for name in DERIVED:
        (single.parent / name).write_bytes((elsewhere.parent / name).read_bytes())
    found = _table(tmp_path, "single")
    assert _of(found, "single", "memory:") == {} and _of(found, "single", "time:") == {}
    # The same profile under the same name, but a memory.json whose totals are not the
    # summary's allocated memory: foreign too.
    memory = json.loads((elsewhere.parent / "memory.json").read_bytes())
    memory["profile"] = str(profile)
    (single.parent / "memory.json").write_text(json.dumps(memory, indent=2) + "\n")
    assert _of(_table(tmp_path, "single"), "single", "memory:") == {}
    # The same profile's name, but a first window that does not hold the summary's
    # kernels (multi-ipu's first body: steps 4 to 8): foreign.
    breakdown = json.loads((elsewhere.parent / "breakdown.json").read_bytes())
    breakdown["profile"] = str(profile)
    breakdown["windows"][0]["first_step"] = 5
    (single.parent / "breakdown.json").write_text(json.dumps(breakdown, indent=2) + "\n")
    assert _of(_table(tmp_path, "single"), "single", "time:") == {}
    breakdown["windows"][0]["first_step"], breakdown["windows"][0]["last_step"] = 0, 100
    (single.parent / "breakdown.json").write_text(json.dumps(breakdown, indent=2) + "\n")
    assert _of(_table(tmp_path, "single"), "single", "time:") != {}  # weaker than an index
    # Not JSON (not written by extract at all): passed over too, the rest of the table
    # as it was.
    (single.parent / "memory.json").write_bytes(b"not json")
    found = _table(tmp_path, "single")
    assert _of(found, "single", "memory:") == {} and ("single", "stage:MLP up") in found


def test_budgets_gate_them(tmp_path):
    copy_case(TILE_MEMORY, tmp_path / "runs" / "a")
    copy_case(EDGE / "multi-ipu", tmp_path / "runs" / "b")
    result = invoke_extract("runs", "-o", "out", "--breakdown", "--memory", cwd=tmp_path)
    assert result.code == 0, result.stderr
    gate = tmp_path / "gate.toml"
    gate.write_text('[budgets]\n"memory:max" = "<= 620000"\n"time:stage:*" = "+2%"\n')
    result = invoke_extract(
        "compare", "out/a", "out/b", "--budget", gate, "--format", "csv", cwd=tmp_path
    )
    assert result.code == 3, result.stderr
    lines = result.stdout.decode().splitlines()
    failed = [line for line in lines if "fail" in line]
    # a's fullest tile (707628 bytes) is over 620000; b's MLP up took 455 all cycles
    # against a's 428 (+6.3%), over +2%: the two failures, and only those.
    assert len(failed) == 2, lines
    assert failed[0].startswith('"all cycles, inference 1 (breakdown.json)",time:stage:MLP up,')
    assert ",428,," in failed[0] and ",455,6.3" in failed[0]
    assert failed[1].startswith("tile memory (memory.json),memory:max,bytes,707628,fail <=620000")
    # Without the files, the same budget matches no memory: metric: a usage error.
    plain = invoke_extract("runs", "-o", "plain", cwd=tmp_path)
    assert plain.code == 0, plain.stderr
    result = invoke_extract("compare", "plain/a", "plain/b", "--budget", gate, cwd=tmp_path)
    one_error(result, 2, "memory:max", "matches no metric")


def test_a_derived_file_linked_out_of_the_folder_given_is_never_read(tmp_path):
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "p")
    result = invoke_extract(profile, "-o", tmp_path / "out" / "s" / "summary.json", "--memory")
    assert result.code == 0, result.stderr
    outside = tmp_path / "outside.json"
    (tmp_path / "out" / "s" / "memory.json").rename(outside)
    (tmp_path / "out" / "s" / "memory.json").symlink_to(outside)
    line = one_error(invoke_extract("table", "out", cwd=tmp_path), 1)
    assert line == (
        "extract: error: out/s/memory.json: is a symbolic link that leads out of the "
        "folder given: not read"
    )


def test_a_derived_files_warning_is_named_by_it(tmp_path):
    profile = copy_case(EDGE / "no-aggregate-rows", tmp_path / "p")
    out = tmp_path / "out" / "summary.json"
    result = invoke_extract(profile, "-o", out, "--memory")
    assert result.code == 0, result.stderr
    assert result.stderr == (
        "extract: warning: {}: memory.json: memory_by_tile has no rows: no tile memory to "
        "show\n".format(profile)
    )
    quiet = invoke_extract(profile, "-o", out, "--memory", "-q")
    assert quiet.code == 0 and quiet.stderr == ""
    # A batch records it among the line's warnings.
    result = invoke_extract(tmp_path / "p", "-o", tmp_path / "batch", "--memory", "-q")
    assert result.code == 0, result.stderr
    (entry,) = index_lines(tmp_path / "batch")
    assert entry["warnings"] == ["memory.json: memory_by_tile has no rows: no tile memory to show"]


def test_compare_shows_the_balance_to_four_decimals(tmp_path):
    copy_case(TILE_MEMORY, tmp_path / "runs" / "a")
    result = invoke_extract("runs", "-o", "out", "--memory", cwd=tmp_path)
    assert result.code == 0, result.stderr
    memory = json.loads((tmp_path / "out" / "a" / "memory.json").read_bytes())
    # balance is mean / max: fixtures/tile-memory/README.md's fullest tile, 707628 bytes
    balance = memory["total"]["mean"] / 707628
    assert memory["balance"] == pytest.approx(balance) and 0 < balance < 1
    summary = tmp_path / "out" / "a" / "summary.json"
    result = invoke_extract("compare", summary, summary, cwd=tmp_path)
    assert result.code == 0, result.stderr
    (line,) = [row for row in result.stdout.decode().splitlines() if "memory:balance" in row]
    # Both recordings' cells: the ratio to four decimals, not rounded to a tenth.
    assert line.count("{:.4f}".format(memory["balance"])) == 2, line
