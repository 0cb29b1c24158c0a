"""One pva policy for every command (docs/pva.md), each checked through the real CLI on
a host without pva (`run_extract(pva=False)`: the stand-in is not on the path).

- A command whose output holds pva facts (`run`, one profile or a batch; `diff`;
  `trace`; `memory`; `breakdown`) fails without pva unless given `--no-pva`: exit 1,
  before anything is written, one line naming the flag it takes. It never guesses, nor
  warns and goes on.
- A command that examines a profile (`inspect`, `doctor`) reports pva's absence as a
  finding; doctor's verdict says what `extract PROFILE` does on this host.
- The others never ask pva (`blocks`, `stages`: SQL only) or read summaries.
- From Python, the same error names the library's parameter, `use_pva=False`.
"""

import os
import sqlite3
import subprocess
import sys

import pytest
import typer.main

from support.cases import copy_case
from support.checks import one_error
from support.cli import run_extract
from support.fsfuzz import snapshot
from support.paths import EDGE, REPO

CASE = EDGE / "name-rules"  # it has an exchange kernel: pva facts to be missing

#: The line every command that needs pva prints without it (written out by hand).
CLI_LINE = (
    "extract: error: pva: PopVision's Python API was not found: it comes only with the "
    "Poplar SDK; enable it with 'source <poplar_sdk>/enable.sh' and use the SDK's Python, "
    "or add --no-pva to do without the pva facts (No module named 'pva')"
)
#: The same error raised to a Python caller.
LIBRARY_LINE = (
    "pva: PopVision's Python API was not found: it comes only with the Poplar SDK; "
    "enable it with 'source <poplar_sdk>/enable.sh' and use the SDK's Python, or pass "
    "use_pva=False to do without the pva facts (No module named 'pva')"
)

# Each command whose output holds pva facts, as a user runs it, in a folder holding
# p.pop and in/x/profile.pop.
NEEDS_PVA = {
    "run": ["p.pop", "-o", "s.json"],
    "run to standard output": ["p.pop"],
    "run named": ["run", "p.pop", "-o", "s.json"],
    "batch": ["in", "-o", "out"],
    "diff": ["diff", "p.pop", "p.pop", "-o", "d.md"],
    "trace": ["trace", "p.pop", "-o", "t.json"],
    "memory": ["memory", "p.pop", "-o", "m.md"],
    "breakdown": ["breakdown", "p.pop", "-o", "b.md"],
}
EXAMINES = ["inspect", "doctor"]  # report pva as a finding
SQL_ONLY = ["blocks", "stages"]
READS_SUMMARIES = ["compare", "table", "report", "merge"]


@pytest.fixture
def folder(tmp_path):
    copy_case(CASE, tmp_path)
    (tmp_path / "profile.pop").rename(tmp_path / "p.pop")
    copy_case(CASE, tmp_path / "in" / "x")
    return tmp_path


def test_every_command_is_in_one_class_of_the_policy():
    from extractor.cli import app

    commands = typer.main.get_command(app).commands
    needs = {args[0] if args[0] in commands else "run" for args in NEEDS_PVA.values()}
    classes = [needs, set(EXAMINES), set(SQL_ONLY), set(READS_SUMMARIES)]
    assert sorted(set().union(*classes)) == sorted(commands)
    assert sum(len(c) for c in classes) == len(commands)
    # --no-pva is declared by exactly the commands that read pva facts, and inspect
    with_flag = {
        name
        for name, command in commands.items()
        if any("--no-pva" in getattr(p, "opts", ()) for p in command.params)
    }
    assert with_flag == needs | {"inspect"}


@pytest.mark.parametrize("name", sorted(NEEDS_PVA))
def test_without_pva_a_command_that_needs_it_fails_naming_its_flag(folder, name):
    args = NEEDS_PVA[name]
    before = snapshot(folder)
    result = run_extract(*args, cwd=folder, pva=False)
    assert one_error(result, 1) == CLI_LINE
    assert snapshot(folder) == before  # nothing written, the profiles untouched
    # the flag the line names is that command's, and does what it says
    flagged = run_extract(*args, "--no-pva", cwd=folder, pva=False)
    assert flagged.code == 0, flagged
    assert "pva" not in flagged.stderr, flagged


@pytest.mark.parametrize("command", EXAMINES + SQL_ONLY)
def test_without_pva_the_other_profile_commands_run(folder, command):
    result = run_extract(command, "p.pop", cwd=folder, pva=False)
    assert result.code == 0, result
    assert result.stderr == "", result
    if command == "inspect":
        assert "pva: not importable (ModuleNotFoundError: No module named 'pva'); " in (
            result.stdout.decode("utf-8")
        )


VERDICT_WITHOUT_PVA = (
    "extract PROFILE would fail here: pva is not importable; extract --no-pva PROFILE reads it"
)


def _verdict(result) -> str:
    assert result.code == 0, result
    return result.stdout.decode("utf-8").splitlines()[-1]


def test_doctor_without_pva_says_what_extract_does_here_and_it_does(folder):
    result = run_extract("doctor", "p.pop", cwd=folder, pva=False)
    assert _verdict(result).startswith(VERDICT_WITHOUT_PVA + ". "), result
    assert (
        "means: extract PROFILE fails here; extract --no-pva PROFILE leaves "
        "attention_exchanges, max_exchange_code_bytes and vertices null"
    ) in result.stdout.decode("utf-8")
    # what it said, on the same host
    assert run_extract("p.pop", "-o", "s.json", cwd=folder, pva=False).code == 1
    assert run_extract("--no-pva", "p.pop", "-o", "s.json", cwd=folder, pva=False).code == 0


def test_doctor_without_pva_keeps_the_other_warnings_in_its_verdict(folder):
    with sqlite3.connect(str(folder / "p.pop")) as db:
        db.execute("DELETE FROM vars_info")  # a profile made without outputLoweredVars
    db.close()
    result = run_extract("doctor", "p.pop", cwd=folder, pva=False)
    assert _verdict(result).startswith(VERDICT_WITHOUT_PVA + ", with the other warnings above. "), (
        result
    )
    flagged = run_extract("--no-pva", "p.pop", "-o", "s.json", cwd=folder, pva=False)
    assert flagged.code == 0 and "vars_info is empty" in flagged.stderr, flagged


def test_doctor_with_pva_says_extract_reads_the_profile(folder):
    result = run_extract("doctor", "p.pop", cwd=folder, pva=True)
    assert _verdict(result).startswith("extract reads this profile as it assumes. "), result
    assert run_extract("p.pop", "-o", "s.json", cwd=folder, pva=True).code == 0


LIBRARY_CALLS = {
    "summarize": "from extractor import summarize; summarize(P{})",
    "ProfileAnalysis": "from extractor import ProfileAnalysis; ProfileAnalysis(P{}).summary()",
    "extract_profile": (
        "from extractor.core.pipeline import extract_profile; extract_profile(P, 's.json', None{})"
    ),
    "run_diff": (
        "from extractor import load_rules; from extractor.diff.command import run_diff; "
        "run_diff(P, P, 'd.md', load_rules(), print{})"
    ),
    "run_memory": (
        "from extractor import load_rules; from extractor.memory.command import run_memory; "
        "run_memory(P, 'm.md', 'markdown', load_rules(), print{})"
    ),
    "ProfileAnalysis.memory": (
        "from extractor import ProfileAnalysis; ProfileAnalysis(P{}).memory()"
    ),
    "run_trace": (
        "from extractor import load_rules; from extractor.timeline.command import run_trace; "
        "run_trace([P], 't.json', load_rules(), print{})"
    ),
}


@pytest.mark.parametrize("call", sorted(LIBRARY_CALLS))
def test_from_python_the_error_names_the_librarys_parameter(folder, call):
    def python(keyword):
        code = (
            "import sys; from pathlib import Path; P = Path('p.pop')\n"
            "from extractor import PvaMissingError\n"
            "try:\n    " + LIBRARY_CALLS[call].format(keyword) + "\n"
            "except PvaMissingError as exc:\n    print(exc); sys.exit(3)\n"
        )
        environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=str(folder),
            env=environment,
            capture_output=True,
            check=False,
        )

    before = snapshot(folder)
    failed = python("")
    assert failed.returncode == 3, failed
    assert failed.stdout.decode("utf-8") == LIBRARY_LINE + "\n"
    assert snapshot(folder) == before
    done = python(", use_pva=False")
    assert done.returncode == 0, done


def test_the_policy_page_is_linked_from_every_page_of_a_command_that_asks_pva():
    for command in ["run", "diff", "trace", "memory", "inspect", "doctor"]:
        page = (REPO / "docs" / "commands" / "{}.md".format(command)).read_text("utf-8")
        assert "](../pva.md" in page, command


@pytest.mark.parametrize("name", ["run", "batch", "diff", "trace", "memory"])
def test_a_pva_that_is_found_but_cannot_load_fails_the_same_way(folder, tmp_path, name):
    # A pva built for another Python: on the path, but its import fails. A batch fails
    # once, before any worker, with the line a single profile gives.
    broken = tmp_path / "sdk" / "pva"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text(
        "raise ImportError('_pva.so: undefined symbol: PyUnicode_AsUTF8')\n", encoding="ascii"
    )
    args = NEEDS_PVA[name]
    before = snapshot(folder)
    result = run_extract(*args, cwd=folder, pva=False, env={"PYTHONPATH": str(broken.parent)})
    assert one_error(result, 1) == CLI_LINE.replace(
        "(No module named 'pva')", "(_pva.so: undefined symbol: PyUnicode_AsUTF8)"
    )
    assert snapshot(folder) == before


def test_doctor_says_extract_fails_where_pva_cannot_open_the_report(tmp_path):
    # The stand-in is importable but opens no report without its pva-double.json.
    copy_case(CASE, tmp_path)
    (tmp_path / "pva-double.json").unlink()
    result = run_extract("doctor", "profile.pop", cwd=tmp_path, pva=True)
    assert result.code == 1, result  # a check failed
    lines = result.stdout.decode("utf-8").splitlines()
    assert lines[-1].startswith(
        "extract PROFILE would fail here: pva could not open the report; "
        "extract --no-pva PROFILE reads it. "
    ), result
    assert (
        "means: extract PROFILE fails on this profile; extract --no-pva PROFILE leaves "
        "attention_exchanges, max_exchange_code_bytes and vertices null"
    ) in result.stdout.decode("utf-8")
    failed = run_extract("profile.pop", "-o", "s.json", cwd=tmp_path, pva=True)
    assert "PopVision could not open the report" in one_error(failed, 1)
    assert run_extract("profile.pop", "--no-pva", "-o", "s.json", cwd=tmp_path).code == 0
