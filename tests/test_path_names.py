"""Hostile paths: batch outputs that would collide, names that are not UTF-8,
a linked profile whose log is beside its target, one profile under two spellings in the
index. Every test runs the real CLI: in this process (invoke_extract), except where a
name that is not UTF-8 crosses the process boundary (run_extract).

A path that is not UTF-8 is passed as Python carries it (a lone surrogate per bad byte,
`"a\\udcff"`); subprocess gives the program the byte itself (`a\\xff`).
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from support import badinput as bad
from support.cases import copy_case
from support.checks import index_lines, one_error
from support.cli import invoke_extract, run_extract
from support.paths import EDGE

BAD = os.fsdecode(b"a\xff")  # a folder name that is not UTF-8: the byte 0xff
BAD_SHOWN = "a\\xff"  # how extract shows it: the byte escaped, as Python's \\xNN
CASE = EDGE / "one-anchor"


def summary_of(path) -> dict:
    return json.loads(Path(path).read_bytes())


def relabelled(summary_bytes: bytes, label: str) -> bytes:
    """A summary's bytes with another `profile` value (the spec's json.dumps layout)."""
    summary = json.loads(summary_bytes)
    summary["profile"] = label
    return (json.dumps(summary, indent=2) + "\n").encode("ascii")


# ---- batch arguments with the same folder name -----------------------------


def test_equal_argument_names_get_their_parent_folders(tmp_path):
    # PopRT writes every profile to a folder named inference/.
    for precision in ("fp8", "fp16"):
        copy_case(CASE, tmp_path / "c" / precision / "inference")
    args = ["c/fp8/inference/profile.pop", "c/fp16/inference/profile.pop"]
    result = invoke_extract(*args, "-o", "out", cwd=tmp_path)
    assert result.code == 0, result
    out = tmp_path / "out"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("summary.json")) == [
        "fp16/inference/summary.json",
        "fp8/inference/summary.json",
    ]
    for precision in ("fp8", "fp16"):
        written = summary_of(out / precision / "inference" / "summary.json")
        assert written["profile"] == "c/{}/inference/profile.pop".format(precision)
    assert len(index_lines(out)) == 2
    # The same arguments give the same outputs: nothing is redone.
    again = invoke_extract(*args, "-o", "out", cwd=tmp_path)
    assert again.code == 0, again
    assert again.stderr.splitlines()[-1] == "0 extracted, 2 up to date, 0 failed"


def test_equal_folder_arguments_grow_only_as_far_as_needed(tmp_path):
    for folder in ("a/x/inference", "b/x/inference", "c/y/inference", "d/other"):
        copy_case(CASE, tmp_path / folder)
    result = invoke_extract(
        "a/x/inference", "b/x/inference", "c/y/inference", "d/other", "-o", "out", cwd=tmp_path
    )
    assert result.code == 0, result
    out = tmp_path / "out"
    assert sorted(str(p.relative_to(out).parent) for p in out.rglob("summary.json")) == [
        "a/x/inference",
        "b/x/inference",
        "other",
        "y/inference",
    ]


def test_one_profile_given_twice_is_refused_before_any_work(tmp_path):
    copy_case(CASE, tmp_path / "runs" / "a")
    result = invoke_extract("runs/a/profile.pop", "runs/a/profile.pop", "-o", "out", cwd=tmp_path)
    line = one_error(result, 2)
    assert line.startswith(
        "extract: error: runs/a/profile.pop: the same profile as "
        "runs/a/profile.pop, reached through the arguments"
    ), line
    assert not (tmp_path / "out").exists()


def test_overlapping_arguments_are_refused(tmp_path):
    copy_case(CASE, tmp_path / "runs" / "a")
    copy_case(CASE, tmp_path / "runs" / "b")
    result = invoke_extract("runs", "runs/a", "-o", "out", cwd=tmp_path)
    line = one_error(result, 2)
    assert "the arguments runs and runs/a" in line, line
    assert "give each profile once" in line
    assert not (tmp_path / "out").exists()


def test_a_link_to_another_arguments_profile_is_refused(tmp_path):
    copy_case(CASE, tmp_path / "x")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "profile.pop").symlink_to(tmp_path / "x" / "profile.pop")
    shutil.copy(str(CASE / "pva-double.json"), str(tmp_path / "y"))
    result = invoke_extract("x", "y", "-o", "out", cwd=tmp_path)
    line = one_error(result, 2)
    assert line.startswith(
        "extract: error: y/profile.pop: the same profile as "
        "x/profile.pop, reached through the arguments x and y"
    ), line
    assert not (tmp_path / "out").exists()


def test_outputs_that_still_collide_are_refused(tmp_path):
    # Two profiles of one folder: their parents cannot tell them apart.
    copy_case(CASE, tmp_path / "d")
    os.rename(str(tmp_path / "d" / "profile.pop"), str(tmp_path / "d" / "a.pop"))
    copy_case(CASE, tmp_path / "d")
    result = invoke_extract("d/a.pop", "d/profile.pop", "-o", "out", cwd=tmp_path)
    line = one_error(result, 2)
    assert line == (
        "extract: error: d/profile.pop: its summary would be written to "
        "d/summary.json in the output folder, as d/a.pop's is: give each "
        "profile a folder of its own, or extract them one at a time"
    ), line
    assert not (tmp_path / "out").exists()


# ---- paths that are not UTF-8 (docs/errors.md) ----------------------------------------------


def test_a_non_utf8_folder_in_a_batch_beside_good_ones(tmp_path):
    runs = tmp_path / "runs"
    for folder in (BAD, "good", "z"):
        copy_case(CASE, runs / folder)
    (runs / os.fsdecode(b"b\xfe")).mkdir()
    (runs / os.fsdecode(b"b\xfe") / "profile.pop").write_text("not a database")
    result = run_extract("runs", "-o", "out", cwd=tmp_path)
    assert result.code == 1, result  # b\xfe failed, alone
    assert "unexpected failure" not in result.stderr
    assert (
        "extract: error: runs/b\\xfe/profile.pop: not an SQLite database"
        in result.stderr.splitlines()
    )
    assert result.stderr.splitlines()[-1] == "3 extracted, 0 up to date, 1 failed"
    out = tmp_path / "out"
    good = (out / "good" / "summary.json").read_bytes()
    assert summary_of(out / "good" / "summary.json")["profile"] == "runs/good/profile.pop"
    assert (out / "z" / "summary.json").read_bytes() == relabelled(good, "runs/z/profile.pop")
    # The output folder has the input's own name (the byte), the summary shows it escaped.
    assert (out / BAD / "summary.json").read_bytes() == relabelled(
        good, "runs/{}/profile.pop".format(BAD_SHOWN)
    )
    entries = {e["profile"]: e for e in index_lines(out)}
    assert sorted(entries) == [
        "runs/{}/profile.pop".format(BAD_SHOWN),
        "runs/b\\xfe/profile.pop",
        "runs/good/profile.pop",
        "runs/z/profile.pop",
    ]
    shown = entries["runs/{}/profile.pop".format(BAD_SHOWN)]
    assert shown["status"] == "ok"
    assert shown["output"] == "out/{}/summary.json".format(BAD_SHOWN)
    failed = entries["runs/b\\xfe/profile.pop"]
    assert failed["reason"] == "runs/b\\xfe/profile.pop: not an SQLite database"
    # Rerun: the up-to-date check works for such paths too.
    again = run_extract("runs", "-o", "out", cwd=tmp_path)
    assert again.stderr.splitlines()[-1] == "0 extracted, 3 up to date, 1 failed", again
    assert (
        "[1/4] up to date: runs/{0}/profile.pop == out/{0}/summary.json".format(BAD_SHOWN)
        in again.stderr.splitlines()
    )


def test_a_byte_and_its_escape_as_text_are_refused(tmp_path):
    # `a\xff` the byte and `a\xff` the four characters are shown alike: their index
    # lines would have one key, so the batch is refused rather than losing one.
    copy_case(CASE, tmp_path / "runs" / BAD)
    copy_case(CASE, tmp_path / "runs" / BAD_SHOWN)
    line = one_error(run_extract("runs", "-o", "out", cwd=tmp_path), 2)
    assert line.startswith(
        "extract: error: runs/a\\xff/profile.pop: two profiles are shown by this one name"
    ), line
    assert not (tmp_path / "out").exists()


def test_a_non_utf8_path_alone(tmp_path):
    profile = copy_case(CASE, tmp_path / BAD)
    expected = relabelled(
        run_extract(CASE / "profile.pop").stdout, "{}/profile.pop".format(BAD_SHOWN)
    )
    result = run_extract("{}/profile.pop".format(BAD), cwd=tmp_path)
    assert result.code == 0, result
    assert result.stdout == expected
    # To a file whose own name is not UTF-8, with --csv beside it.
    target = tmp_path / os.fsdecode(b"out\xfe") / "s.json"
    result = run_extract(profile, "-o", target, "--csv", cwd=tmp_path)
    assert result.code == 0, result
    assert summary_of(target)["profile"] == os.fsencode(str(profile)).decode(
        "utf-8", "backslashreplace"
    )
    assert (target.parent / "steps.csv").is_file()
    # An error names the path escaped, in one line.
    missing = run_extract(os.fsdecode(b"nope\xfe/profile.pop"), cwd=tmp_path)
    assert one_error(missing, 1) == "extract: error: nope\\xfe/profile.pop: no such file"


def test_inspect_and_stages_on_a_non_utf8_path(tmp_path):
    copy_case(CASE, tmp_path / BAD)
    argument = "{}/profile.pop".format(BAD)
    shown = "{}/profile.pop".format(BAD_SHOWN)
    for command in ("inspect", "stages"):
        text = run_extract(command, argument, cwd=tmp_path)
        assert text.code == 0, (command, text)
        assert text.stdout.decode("utf-8").startswith(shown + ": "), command
        as_json = run_extract(command, argument, "--json", cwd=tmp_path)
        assert as_json.code == 0, (command, as_json)
        assert json.loads(as_json.stdout)["profile"] == shown, command
    # The rules file's own path is shown the same way.
    rules = tmp_path / os.fsdecode(b"r\xfe.toml")
    rules.write_bytes((Path(__file__).resolve().parent.parent / "stage_rules.toml").read_bytes())
    result = run_extract("stages", argument, "--rules", rules.name, "--json", cwd=tmp_path)
    assert result.code == 0, result
    assert json.loads(result.stdout)["rules"]["source"] == "r\\xfe.toml"


def test_compare_on_non_utf8_paths(tmp_path):
    for folder in (BAD, "good"):
        copy_case(CASE, tmp_path / "runs" / folder)
    assert run_extract("runs", "-o", "out", cwd=tmp_path).code == 0
    markdown = run_extract("compare", "out", cwd=tmp_path)
    assert markdown.code == 0, markdown
    # Markdown escapes the backslash itself; CSV and JSON carry the label as shown.
    assert markdown.stdout.decode("utf-8").splitlines()[0] == "| | unit | a\\\\xff | good |"
    as_csv = run_extract("compare", "out", "--format", "csv", cwd=tmp_path)
    # metric_name: the budget files' metric names
    assert as_csv.stdout.decode("utf-8").splitlines()[0] == (
        "section,metric,unit,a\\xff,good,good change %,note,metric_name"
    )
    as_json = json.loads(
        run_extract(
            "compare",
            "out/{}/summary.json".format(BAD),
            "out/good",
            "--format",
            "json",
            cwd=tmp_path,
        ).stdout
    )
    assert [(r["label"], r["path"]) for r in as_json["recordings"]] == [
        (BAD_SHOWN, "out/{}/summary.json".format(BAD_SHOWN)),
        ("good", "out/good/summary.json"),
    ]
    labelled = run_extract("compare", "out", "--label", os.fsdecode(b"x\xfe"), cwd=tmp_path)
    assert labelled.stdout.decode("utf-8").splitlines()[0] == "| | unit | x\\\\xfe | good |"


# ---- a linked profile whose log is beside its target -----------------------


def _wal_writer(profile: Path) -> subprocess.Popen:
    """Turn `profile` to WAL mode and commit into its log, held open (no checkpoint):
    a live writer. Returns once the commit is in the -wal."""
    db = sqlite3.connect(str(profile))
    assert db.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    db.close()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA wal_autocheckpoint = 0")
db.execute("UPDATE memory_by_tile SET total = total + 1")
print("committed", flush=True)
sys.stdin.read()
""",
            str(profile),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert writer.stdout.readline() == b"committed\n"
    assert Path(str(profile) + "-wal").exists()
    return writer


def _stop(writer: subprocess.Popen) -> None:
    writer.stdin.close()  # it ends when its stdin does
    writer.wait(30)


def test_a_linked_profile_with_a_live_log_beside_its_target(tmp_path):
    store = tmp_path / "store"
    target = bad.write_base(store).rename(store / "run1.pop")
    link_folder = tmp_path / "runs" / "a"
    link_folder.mkdir(parents=True)
    (link_folder / "profile.pop").symlink_to(target)
    os.rename(str(store / "pva-double.json"), str(link_folder / "pva-double.json"))
    writer = _wal_writer(target)
    try:
        before = sorted(p.name for p in store.iterdir())
        single = invoke_extract("runs/a/profile.pop", "-o", "s.json", cwd=tmp_path)
        line = one_error(single, 1)
        assert line.startswith(
            "extract: error: runs/a/profile.pop: a write-ahead log "
            "(run1.pop-wal) is beside the file it resolves to, {}: ".format(
                os.path.realpath(str(target))
            )
        ), line
        assert not (tmp_path / "s.json").exists()
        batch = invoke_extract("runs", "-o", "out", cwd=tmp_path)
        assert batch.code == 0, batch
        assert (
            "extract: note: runs/a/profile.pop: it resolves to {}, and run1.pop-wal is "
            "beside that: still being written, skipped".format(os.path.realpath(str(target)))
        ) in batch.stderr.splitlines()
        assert batch.stderr.splitlines()[-1] == "0 extracted, 0 up to date, 0 failed"
        assert not list((tmp_path / "out").rglob("summary.json"))
        assert sorted(p.name for p in store.iterdir()) == before
    finally:
        _stop(writer)


def test_a_linked_profile_with_a_journal_beside_its_target_is_skipped(tmp_path):
    copy_case(CASE, tmp_path / "store")
    (tmp_path / "store" / "profile.pop-journal").write_bytes(b"")
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "profile.pop").symlink_to(tmp_path / "store" / "profile.pop")
    shutil.copy(str(CASE / "pva-double.json"), str(tmp_path / "runs" / "a"))
    batch = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert batch.code == 0, batch
    assert any(
        line.startswith("extract: note: runs/a/profile.pop: it resolves to ")
        and line.endswith(", and profile.pop-journal is beside that: still being written, skipped")
        for line in batch.stderr.splitlines()
    ), batch
    assert not list((tmp_path / "out").rglob("summary.json"))


# ---- one line per summary in the index ------------------------------------


def test_two_spellings_of_one_folder_leave_one_line_per_summary(tmp_path):
    for folder in ("a", "b"):
        copy_case(CASE, tmp_path / "runs" / folder)
    first = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert first.code == 0, first
    absolute = str(tmp_path / "runs")
    second = invoke_extract(absolute, "-o", "out", cwd=tmp_path)
    # The profile value changes with the spelling: re-extracted, its line replaced.
    assert second.stderr.splitlines()[-1] == "2 extracted, 0 up to date, 0 failed", second
    out = tmp_path / "out"
    lines = index_lines(out)
    assert [(e["summary"], e["profile"]) for e in lines] == [
        ("a/summary.json", absolute + "/a/profile.pop"),
        ("b/summary.json", absolute + "/b/profile.pop"),
    ]
    for entry in lines:
        assert summary_of(out / entry["summary"])["profile"] == entry["profile"]
    third = invoke_extract(absolute, "-o", "out", cwd=tmp_path)
    assert third.stderr.splitlines()[-1] == "0 extracted, 2 up to date, 0 failed", third
    assert len(index_lines(out)) == 2


def test_merge_keeps_one_line_per_summary(tmp_path):
    for folder in ("a", "b"):
        copy_case(CASE, tmp_path / "runs" / folder)
    assert invoke_extract("runs", "-o", "out", cwd=tmp_path).code == 0
    absolute = str(tmp_path / "runs")
    for shard in ("1/2", "2/2"):
        assert invoke_extract(absolute, "-o", "out", "--shard", shard, cwd=tmp_path).code == 0
    merged = invoke_extract("merge", "out", cwd=tmp_path)
    assert merged.code == 0, merged
    assert merged.stderr == "out/index.jsonl: 2 profiles\n"
    assert [(e["summary"], e["profile"]) for e in index_lines(tmp_path / "out")] == [
        ("a/summary.json", absolute + "/a/profile.pop"),
        ("b/summary.json", absolute + "/b/profile.pop"),
    ]


def test_an_index_written_before_the_summary_key_is_still_read(tmp_path):
    for folder in ("a", "b", "c"):
        copy_case(CASE, tmp_path / "runs" / folder)
    (tmp_path / "runs" / "c" / "profile.pop").write_text("not yet a database")
    assert invoke_extract("runs", "-o", "out", cwd=tmp_path).code == 1
    out = tmp_path / "out"
    old = []
    for entry in index_lines(out):  # as the previous version wrote them
        entry.pop("summary")
        old.append(json.dumps(entry))
    (out / "index.jsonl").write_text("\n".join(old) + "\n")
    copy_case(CASE, tmp_path / "runs" / "c")  # now a good profile
    again = invoke_extract("runs", "-o", "out", cwd=tmp_path)
    assert again.stderr.splitlines()[-1] == "1 extracted, 2 up to date, 0 failed", again
    assert [(e["summary"], e["status"]) for e in index_lines(out)] == [
        ("a/summary.json", "up to date"),
        ("b/summary.json", "up to date"),
        ("c/summary.json", "ok"),
    ]


def test_merge_in_a_non_utf8_output_folder(tmp_path):
    for folder in ("a", "b"):
        copy_case(CASE, tmp_path / "runs" / folder)
    outdir = os.fsdecode(b"out\xff")
    for shard in ("1/2", "2/2"):
        assert run_extract("runs", "-o", outdir, "--shard", shard, cwd=tmp_path).code == 0
    merged = run_extract("merge", outdir, cwd=tmp_path)
    assert merged.code == 0, merged
    assert merged.stderr == "out\\xff/index.jsonl: 2 profiles\n"
    assert [e["output"] for e in index_lines(tmp_path / outdir)] == [
        "out\\xff/a/summary.json",
        "out\\xff/b/summary.json",
    ]
