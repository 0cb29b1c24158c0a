"""`extract PROFILE -o FILE`: the core command, through the real console script."""

import hashlib
import json
import sqlite3
import sys
import zipfile
from pathlib import Path

import pytest

from support.cases import copy_case, golden_case_folder, sha256
from support.cli import extract_command, invoke_extract, pva_double, run_extract
from support.imports import IMPORT_TIME, TYPER_RUN, imported_modules, typer_imports
from support.paths import EDGE, GOLDEN, GOLDEN_PROFILE_ARG, PVA_DOUBLE, REFERENCE_SHA256, REPO

EXPECTED = (GOLDEN / "expected.json").read_bytes()
EDGE_CASES = sorted(p.name for p in EDGE.iterdir() if (p / "profile.pop").exists())


def test_reference_copy_is_the_reference():
    # EXPECTED, which every test here compares with, is the reference summary's bytes.
    assert hashlib.sha256(EXPECTED).hexdigest() == REFERENCE_SHA256


def test_golden_profile_gives_the_reference_bytes(golden_profile, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    before = sha256(golden_profile)
    result = invoke_extract(GOLDEN_PROFILE_ARG, "-o", "summary.json", cwd=work)
    assert result.code == 0, result
    assert (work / "summary.json").read_bytes() == EXPECTED
    assert result.stderr == ""
    assert sha256(golden_profile) == before
    leftovers = sorted(p.name for p in golden_profile.parent.iterdir())
    assert leftovers == ["profile.pop", "pva-double.json"]  # no -journal, -wal, -shm


def test_standard_output_and_python_m_give_the_same_bytes(golden_profile, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    assert invoke_extract(GOLDEN_PROFILE_ARG, "-o", "-", cwd=work).stdout == EXPECTED
    assert invoke_extract(GOLDEN_PROFILE_ARG, cwd=work).stdout == EXPECTED
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE))
    done = subprocess.run(
        [sys.executable, "-m", "extractor", GOLDEN_PROFILE_ARG],
        cwd=str(work),
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED


def test_explicit_run_command_is_the_default_one(golden_profile, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    assert invoke_extract("run", GOLDEN_PROFILE_ARG, cwd=work).stdout == EXPECTED


def test_missing_output_folders_are_created(golden_profile, tmp_path):
    out = tmp_path / "a" / "b" / "c" / "summary.json"
    result = invoke_extract(golden_profile, "-o", out)
    assert result.code == 0, result
    assert json.loads(out.read_bytes())["qkv_executions"] == 54


def test_read_only_profile_in_read_only_folder(golden_profile, tmp_path):
    folder = golden_profile.parent
    golden_profile.chmod(0o444)
    folder.chmod(0o555)
    try:
        result = invoke_extract(golden_profile, "-o", tmp_path / "s.json")
        assert result.code == 0, result
        assert sorted(p.name for p in folder.iterdir()) == ["profile.pop", "pva-double.json"]
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("case", EDGE_CASES)
def test_edge_case_gives_its_hand_checked_summary(case):
    profile = "fixtures/edge/{}/profile.pop".format(case)
    before = sha256(REPO / profile)
    result = invoke_extract(profile, "-o", "-", cwd=REPO)
    assert result.code == 0, result
    assert result.stdout == (EDGE / case / "expected.json").read_bytes()
    assert "Traceback" not in result.stderr
    assert sha256(REPO / profile) == before


EDGE_WARNINGS = {
    "no-anchors": r"anchor selector '/attn/qkv/'",
    "no-output-begins": r"no output-begins step .* no device span",
    "empty-inference": r"no exchange or compute rows: no device span",
    "compile-only": r"no steps: a compile-only profile",
}


@pytest.mark.parametrize("case, pattern", sorted(EDGE_WARNINGS.items()))
def test_edge_case_warns_on_stderr(case, pattern):
    import re

    if case not in EDGE_CASES:
        pytest.fail("fixture fixtures/edge/{} is missing".format(case))
    result = invoke_extract("fixtures/edge/{}/profile.pop".format(case), "-o", "-", cwd=REPO)
    assert result.code == 0, result
    warnings = [
        line for line in result.stderr.splitlines() if line.startswith("extract: warning: ")
    ]
    assert any(re.search(pattern, line) for line in warnings), result.stderr


def test_quiet_hides_warnings():
    result = invoke_extract("fixtures/edge/no-anchors/profile.pop", "-q", cwd=REPO)
    assert result.code == 0 and result.stderr == "", result


# ---- bad input: one line, exit 1, nothing written, input unchanged -------------------


def _drop_table(profile: Path, table: str) -> None:
    with sqlite3.connect(str(profile)) as db:
        db.execute("DROP TABLE {}".format(table))


def _drop_column(profile: Path, table: str, column: str) -> None:
    with sqlite3.connect(str(profile)) as db:
        db.execute("ALTER TABLE {} DROP COLUMN {}".format(table, column))


def _truncate(profile: Path) -> None:
    data = profile.read_bytes()
    profile.write_bytes(data[: len(data) // 2])


def _not_sqlite(profile: Path) -> None:
    profile.write_text("this is not a database\n" * 100)


def _empty(profile: Path) -> None:
    profile.write_bytes(b"")


def _no_pva_data(profile: Path) -> None:
    (profile.parent / "pva-double.json").unlink()


BAD_PROFILES = [
    ("not sqlite", _not_sqlite, r"not an SQLite database"),
    ("truncated", _truncate, r"truncated|not an SQLite database|malformed"),
    ("missing table", lambda p: _drop_table(p, "memory_by_tile"), r"no table 'memory_by_tile'"),
    (
        "missing column",
        lambda p: _drop_column(p, "steps_by_ipu", "active_cycles_to_max"),
        r"table 'steps_by_ipu' has no column 'active_cycles_to_max'",
    ),
    (
        "missing var_categories",
        lambda p: _drop_table(p, "var_categories"),
        r"no table 'var_categories'",
    ),
    ("pva refuses it", _no_pva_data, r"PopVision could not open the report"),
]


@pytest.mark.parametrize("case, damage, message", BAD_PROFILES, ids=[c[0] for c in BAD_PROFILES])
def test_bad_profile_is_one_line_exit_1_and_nothing_written(
    tmp_path, golden_profile, case, damage, message
):
    import re

    damage(golden_profile)
    before = sha256(golden_profile)
    out = tmp_path / "out" / "summary.json"
    out.parent.mkdir()
    out.write_bytes(b"previous summary\n")
    result = invoke_extract(golden_profile, "-o", out)
    assert result.code == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result
    assert lines[0].startswith("extract: error: {}: ".format(golden_profile)), lines[0]
    assert re.search(message, lines[0]), lines[0]
    assert out.read_bytes() == b"previous summary\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["summary.json"]
    assert sha256(golden_profile) == before


def test_missing_file_and_directory(tmp_path):
    result = invoke_extract(tmp_path / "nope.pop", "-o", tmp_path / "s.json")
    assert (result.code, result.stderr) == (
        1,
        "extract: error: {}: no such file\n".format(tmp_path / "nope.pop"),
    )
    link = tmp_path / "dangling.pop"
    link.symlink_to(tmp_path / "gone.pop")
    result = invoke_extract(link, "-o", tmp_path / "s.json")
    assert (result.code, result.stderr) == (
        1,
        "extract: error: {}: broken symbolic link\n".format(link),
    )
    assert not (tmp_path / "s.json").exists()


def test_without_pva_the_error_says_how_to_enable_it(golden_profile, tmp_path):
    out = tmp_path / "summary.json"
    result = run_extract(golden_profile, "-o", out, pva=False)
    assert result.code == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert "PopVision's Python API was not found" in lines[0]
    assert "enable.sh" in lines[0] and "--no-pva" in lines[0]
    assert not out.exists()


def test_output_onto_the_profile_is_refused(golden_profile):
    before = sha256(golden_profile)
    result = invoke_extract(golden_profile, "-o", golden_profile)
    assert result.code == 2, result
    assert "-o would write over an input of this command" in result.stderr
    assert sha256(golden_profile) == before


def test_unknown_option_is_a_usage_error(golden_profile):
    result = invoke_extract(golden_profile, "--frobnicate")
    assert result.code == 2, result


def test_unwritable_output_is_one_line(golden_profile, tmp_path):
    # A regular file where a folder is needed: fails for root too, unlike permissions.
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    result = invoke_extract(golden_profile, "-o", blocker / "summary.json")
    assert result.code == 1, result
    assert result.stderr == (
        "extract: error: {}: cannot write: a part of {} is a file, not a folder\n".format(
            blocker / "summary.json", blocker
        )
    )
    assert blocker.read_text() == "a file, not a folder"


def test_version():
    from extractor import __version__

    result = invoke_extract("--version")
    assert (result.code, result.stdout.decode()) == (0, "extract {}\n".format(__version__))
    # Installed under the distribution's own name ("extractor" is another project's).
    import importlib.metadata

    assert importlib.metadata.version("popvision-extractor") == __version__


# ---- the library, without the CLI -----------------------------------------------------


def test_pva_facts_are_fetched_once_each(golden_profile):
    pva = pva_double()
    from extractor import summarize

    pva.reset_access_counts()
    summarize(golden_profile, pva=pva)
    repeated = {key: n for key, n in pva.access_counts.items() if n > 1}
    assert pva.access_counts, "the stand-in counted nothing: the test cannot see"
    assert repeated == {}


def test_dependencies_are_declared_with_no_upper_bound():
    # rich is imported directly (the batch's progress bar); a CLI framework pinned below
    # a version conflicts with other tools sharing the user's (SDK) virtualenv.
    import importlib.metadata
    import re

    required = {}
    for line in importlib.metadata.requires("popvision-extractor") or []:
        if "extra ==" not in line:
            name = re.match(r"[A-Za-z0-9_.-]+", line).group(0).lower()
            required[name] = line
    assert {"typer", "rich", "orjson"} <= set(required), required
    assert [line for line in required.values() if "<" in line.split(";")[0]] == []


def test_package_imports_without_pva():
    import subprocess

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import sys; sys.modules['pva'] = None; import extractor, "
                "extractor.cli; print(extractor.summarize.__name__)"
            ),
        ],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == b"summarize"


def test_wheel_carries_the_default_rules(tmp_path, wheel):
    import subprocess

    # The distribution's name is not the package's: "extractor" on the index is another
    # project. The wheel installs the package `extractor` and the command `extract`.
    with zipfile.ZipFile(str(wheel)) as archive:
        names = archive.namelist()
        assert (
            archive.read("extractor/stage_rules.toml") == (REPO / "stage_rules.toml").read_bytes()
        )
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        assert "\nName: popvision-extractor\n" in archive.read(info).decode()
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
        assert "extract = extractor.cli:main" in entry_points
        archive.extractall(str(tmp_path / "site"))
    assert not any(n.startswith(("tests/", "fixtures/")) for n in names)
    # Run the unpacked wheel from an unrelated folder: the rules must come from inside it.
    import os

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), str(PVA_DOUBLE)]))
    work = tmp_path / "elsewhere"
    work.mkdir()
    case = copy_case(
        golden_case_folder(), tmp_path / "poprt" / "profile_logs_f8weight" / "inference"
    )
    done = subprocess.run(
        [sys.executable, "-m", "extractor", GOLDEN_PROFILE_ARG],
        cwd=str(work),
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED
    assert case.exists()


def test_code_runs_on_python_3_8():
    import subprocess

    vermin = str(Path(sys.executable).with_name("vermin"))
    done = subprocess.run(
        [
            vermin,
            "-t=3.8-",
            "--no-tips",
            "--violations",
            "--eval-annotations",
            str(REPO / "extractor"),
            str(REPO / "tests"),
            str(REPO / "fixtures"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout.decode()


def test_killed_writes_never_leave_a_partial_summary(golden_profile, tmp_path):
    import os
    import signal
    import subprocess
    import time

    work = tmp_path / "work"
    work.mkdir()
    out = work / "summary.json"
    out.write_bytes(b"previous\n")
    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE))
    for delay in (0.05, 0.15, 0.25, 0.35, 0.45, 0.6, 0.8):
        process = subprocess.Popen(
            extract_command() + [GOLDEN_PROFILE_ARG, "-o", str(out)],
            cwd=str(work),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        data = out.read_bytes()
        assert data in (b"previous\n", EXPECTED)
    # Whatever the kills left behind, the next write cleans up after them; a temporary
    # file of a live writer (this test's own process) or of another host stays.
    import socket

    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    abandoned = work / ".summary.json.{}.{}.abc.partial".format(host, dead.pid)
    live = work / ".summary.json.{}.{}.def.partial".format(host, os.getpid())
    remote = work / ".summary.json.otherhost.{}.ghi.partial".format(dead.pid)
    for planted in (abandoned, live, remote):
        planted.write_bytes(b"{")
    assert run_extract(GOLDEN_PROFILE_ARG, "-o", out, cwd=work).code == 0
    assert out.read_bytes() == EXPECTED
    assert sorted(p.name for p in work.iterdir()) == sorted(
        ["summary.json", live.name, remote.name]
    )


def test_a_single_extraction_imports_only_what_it_needs(tmp_path):
    # Start-up is a fixed cost of every extraction (BENCHMARKS.md): the batch machinery
    # and the pva stand-in are not needed for one profile with --no-pva. Whatever typer
    # imports to run a command is allowed: typer is the CLI's framework, with no upper
    # bound on its version. (rich is not listed: the older typer of Python 3.8 imports it.)
    typer_run = typer_imports(TYPER_RUN)
    profile = copy_case(golden_case_folder(), tmp_path / "p")
    result = run_extract(profile, "-o", tmp_path / "s.json", "--no-pva", env=IMPORT_TIME)
    assert result.code == 0, result
    imported = imported_modules(result.stderr)
    assert "extractor.core.summary" in imported  # the list is the real one
    # extractor.run.batch, .compare, .diagnose and .report are packages: no module of theirs
    # either; jinja2 is the report's alone.
    unwanted = {
        "extractor.run.batch",
        "extractor.compare",
        "extractor.diagnose",
        "extractor.report",
        "extractor.core.steptables",
        "multiprocessing",
        "pva",
        "jinja2",
    }
    assert (imported - typer_run) & unwanted == set()


def test_the_library_names_are_all_importable_from_the_package():
    # The package imports its modules on first use (start-up time): every public name
    # must still be there, as docs/library.md uses them.
    import extractor

    for name in extractor.__all__:
        assert getattr(extractor, name) is not None, name
    assert set(extractor.__all__) <= set(dir(extractor))
    with pytest.raises(AttributeError):
        _ = extractor.no_such_name  # the access is what raises
