"""A mistyped command name is a usage error, not a path for the default command.

`extract PROFILE` runs `run`, so any first word that is not a command is taken for a
path: `extract comapre A.json B.json` used to run a batch over the three words. Now a
first word that is not an existing file or folder, is made of letters only, and is one
typo from a command name (two for a name of six letters or more) is refused with
`unknown command 'X' (did you mean 'Y'?)`, exit 2, before anything is read or written.
An existing path of such a name still runs as a path; a word far from every command is
still a path, with its usual error.
"""

import json
import shutil

import pytest

from support.cases import sha256
from support.checks import one_error
from support.cli import invoke_extract, run_extract
from support.fsfuzz import snapshot
from support.paths import EDGE

PROFILE = EDGE / "name-rules" / "profile.pop"

# Each command with a typo of each kind, the distances worked out by hand: two
# neighbours swapped, a letter missing, a letter extra (one typo each).
TYPOS = [
    ("rnu", "run"),
    ("rn", "run"),
    ("runs", "run"),
    ("mrege", "merge"),
    ("merg", "merge"),
    ("merges", "merge"),
    ("comapre", "compare"),
    ("compar", "compare"),
    ("comparre", "compare"),
    ("dfif", "diff"),
    ("dif", "diff"),
    ("diffs", "diff"),
    ("blcoks", "blocks"),
    ("block", "blocks"),
    ("blockss", "blocks"),
    ("talbe", "table"),
    ("tabe", "table"),
    ("tables", "table"),
    ("reprot", "report"),
    ("repot", "report"),
    ("reports", "report"),
    ("trcae", "trace"),
    ("trac", "trace"),
    ("traces", "trace"),
    ("inpsect", "inspect"),
    ("inspec", "inspect"),
    ("inspects", "inspect"),
    ("stgaes", "stages"),
    ("stage", "stages"),
    ("stagess", "stages"),
    ("dcotor", "doctor"),
    ("docto", "doctor"),
    ("doctors", "doctor"),
    # a capital is a wrong letter; six letters and more allow two typos
    ("Diff", "diff"),
    ("cmopaer", "compare"),
]


def test_every_command_has_its_typos_here():
    listed = invoke_extract("--help", env={"COLUMNS": "200"}).stdout.decode()
    commands = {meant for _, meant in TYPOS}
    for command in commands:
        assert " {} ".format(command) in listed, command
    assert len(commands) == 11  # run merge compare diff blocks table report trace ...


@pytest.mark.parametrize("typo,meant", TYPOS)
def test_a_typo_of_a_command_is_a_usage_error(tmp_path, typo, meant):
    shutil.copyfile(str(PROFILE), str(tmp_path / "a.pop"))
    before = snapshot(tmp_path)
    result = invoke_extract(typo, "a.pop", "a.pop", "-o", "out", cwd=tmp_path)
    line = one_error(result, 2)
    assert line == "extract: error: unknown command '{}' (did you mean '{}'?)".format(typo, meant)
    assert snapshot(tmp_path) == before  # no out/, no summary, no index


@pytest.mark.parametrize(
    "args,meant",
    [
        (["diffs", "A.pop", "B.pop", "-o", "out"], "diff"),
        (["comapre", "A.json", "B.json"], "compare"),
    ],
)
def test_the_typos_of_the_first_hour_are_caught_by_the_real_command(tmp_path, args, meant):
    # Before: `diffs` ran a batch over both profiles into out/; `comapre` asked for -o DIR.
    for name in ("A.pop", "B.pop"):
        shutil.copyfile(str(PROFILE), str(tmp_path / name))
    (tmp_path / "A.json").write_text("{}", encoding="ascii")
    (tmp_path / "B.json").write_text("{}", encoding="ascii")
    before = snapshot(tmp_path)
    digest = sha256(tmp_path / "A.pop")
    result = run_extract(*args, cwd=tmp_path)
    expected = "extract: error: unknown command '{}' (did you mean '{}'?)".format(args[0], meant)
    assert one_error(result, 2) == expected
    assert snapshot(tmp_path) == before
    assert sha256(tmp_path / "A.pop") == digest


def test_a_file_named_like_a_typo_is_a_profile(tmp_path):
    shutil.copyfile(str(PROFILE), str(tmp_path / "diffs"))
    result = run_extract("diffs", "--no-pva", "-o", "summary.json", cwd=tmp_path, pva=False)
    assert result.code == 0, result
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="ascii"))
    assert summary["profile"] == "diffs"
    # the summary of that profile, read under another name
    shutil.copyfile(str(PROFILE), str(tmp_path / "other.pop"))
    other = invoke_extract("other.pop", "--no-pva", cwd=tmp_path, pva=False)
    assert other.code == 0, other
    expected = json.loads(other.stdout)
    expected["profile"] = "diffs"
    assert summary == expected


def test_a_folder_named_like_a_typo_is_a_batch(tmp_path):
    (tmp_path / "comapre" / "x").mkdir(parents=True)
    shutil.copyfile(str(PROFILE), str(tmp_path / "comapre" / "x" / "profile.pop"))
    result = run_extract("comapre", "--no-pva", "-o", "out", cwd=tmp_path, pva=False)
    assert result.code == 0, result
    assert "1 extracted, 0 up to date, 0 failed" in result.stderr
    summary = json.loads((tmp_path / "out" / "x" / "summary.json").read_text(encoding="ascii"))
    assert summary["profile"] == "comapre/x/profile.pop"


def test_a_command_name_is_the_command_even_beside_a_folder_of_that_name(tmp_path):
    # A folder named `compare` in the working folder changes nothing: `extract compare`
    # is the command (`extract ./compare -o out` would be the batch).
    (tmp_path / "compare").mkdir()
    result = invoke_extract("compare", cwd=tmp_path)
    assert result.code == 2 and "Missing argument" in result.stderr, result
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("word", ["xyzzy", "profile", "a", "mreg", "run2", "diff.pop"])
def test_a_word_far_from_every_command_is_a_path(tmp_path, word):
    # Two typos from a name of five letters or less, a digit or a dot: a path, which
    # does not exist, told as such and naming it.
    result = run_extract(word, "--no-pva", "-o", "summary.json", cwd=tmp_path, pva=False)
    assert one_error(result, 1) == "extract: error: {}: no such file".format(word)
    assert list(tmp_path.iterdir()) == []
