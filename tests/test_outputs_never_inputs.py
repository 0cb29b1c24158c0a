"""No command writes over a file it reads: every file a command is given to read
(profiles, summaries and batch folders, --rules, --budget) is refused as one of its
outputs (-o, --chart, --junit, the --csv, --blocks, --breakdown and --memory files
beside a summary), in one
line (exit 2), with nothing written and the input as it was.

The table below holds one run for each file parameter of each command that writes
a file; `test_every_file_parameter_of_a_writing_command_is_tried` reads the commands'
own signatures, so that a file option added to a command without a case here fails."""

import shutil
import subprocess
import typing
from pathlib import Path

import pytest

from support.cases import copy_case
from support.checks import one_error
from support.cli import invoke_extract
from support.paths import EDGE, REPO

#: The parameters through which commands write (the rest of their Path ones are read).
OUTPUT_PARAMETERS = {"output", "chart", "junit"}

GATE = '[budgets]\n"stage:*" = "+2%"\n'

#: (command, the parameter read, the output option given its file): the run's words, those
#: in capitals being the files of the `inputs` fixture.
CASES = {
    ("run", "paths", "-o"): "PROFILE -o PROFILE",
    ("run", "rules_file", "-o"): "PROFILE -o RULES --rules RULES",
    ("run", "rules_file", "--csv"): "PROFILE -o s.json --csv --rules STEPS",
    ("run", "rules_file", "--blocks"): "PROFILE -o s.json --blocks --rules BLOCKS",
    ("run", "rules_file", "--breakdown"): "PROFILE -o s.json --breakdown --rules BREAKDOWN",
    ("run", "rules_file", "--memory"): "PROFILE -o s.json --memory --rules MEMORY",
    ("blocks", "profile", "-o"): "blocks PROFILE -o PROFILE",
    ("blocks", "rules_file", "-o"): "blocks PROFILE -o RULES --rules RULES",
    ("memory", "profile", "-o"): "memory PROFILE -o PROFILE",
    ("memory", "rules_file", "-o"): "memory PROFILE -o RULES --rules RULES",
    ("trace", "profiles", "-o"): "trace PROFILE -o PROFILE",
    ("trace", "rules_file", "-o"): "trace PROFILE -o RULES --rules RULES",
    ("diff", "base", "--output"): "diff PROFILE OTHER -o PROFILE",
    ("diff", "candidate", "--output"): "diff OTHER PROFILE -o PROFILE",
    ("diff", "rules_file", "--output"): "diff PROFILE OTHER -o RULES --rules RULES",
    ("breakdown", "profile", "--output"): "breakdown PROFILE -o PROFILE",
    ("breakdown", "candidate", "--output"): "breakdown OTHER PROFILE -o PROFILE",
    ("breakdown", "rules_file", "--output"): "breakdown PROFILE -o RULES --rules RULES",
    ("table", "paths", "-o"): "table SUMMARY OTHER_SUMMARY -o SUMMARY",
    ("report", "paths", "-o"): "report SUMMARY OTHER_SUMMARY -o SUMMARY",
    ("report", "budget_file", "-o"): "report SUMMARY OTHER_SUMMARY --budget BUDGET -o BUDGET",
    ("compare", "paths", "--chart"): "compare SVG_SUMMARY SUMMARY --chart SVG_SUMMARY",
    (
        "compare",
        "paths",
        "--junit",
    ): "compare SUMMARY OTHER_SUMMARY --budget BUDGET --junit SUMMARY",
    ("compare", "budget_file", "--chart"): "compare SUMMARY OTHER_SUMMARY --budget SVG --chart SVG",
    (
        "compare",
        "budget_file",
        "--junit",
    ): "compare SUMMARY OTHER_SUMMARY --budget BUDGET --junit BUDGET",
}

#: The options whose file is beside the summary (-o s.json: steps.csv, blocks.json).
BESIDE = {"--csv": "STEPS", "--blocks": "BLOCKS", "--breakdown": "BREAKDOWN", "--memory": "MEMORY"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Two profiles, their summaries, a rules file (also as steps.csv, blocks.json,
    breakdown.json and memory.json:
    TOML under a batch file's name), a budget file (also named .svg)."""
    root = tmp_path_factory.mktemp("inputs")
    files = {
        "PROFILE": copy_case(EDGE / "multi-ipu", root / "a"),
        "OTHER": copy_case(EDGE / "multi-ipu", root / "b"),
    }
    for name, summary in (("SUMMARY", "a"), ("OTHER_SUMMARY", "b")):
        path = root / "out" / summary / "summary.json"
        path.parent.mkdir(parents=True)
        result = invoke_extract(files["PROFILE" if summary == "a" else "OTHER"], "-o", path)
        assert result.code == 0, result
        files[name] = path
    files["SVG_SUMMARY"] = root / "summary.svg"  # a summary may have any name
    shutil.copyfile(str(files["OTHER_SUMMARY"]), str(files["SVG_SUMMARY"]))
    files["RULES"] = root / "rules.toml"
    shutil.copyfile(str(REPO / "stage_rules.toml"), str(files["RULES"]))
    files["STEPS"] = root / "steps.csv"
    files["BLOCKS"] = root / "blocks.json"
    files["BREAKDOWN"] = root / "breakdown.json"
    files["MEMORY"] = root / "memory.json"
    for name in ("STEPS", "BLOCKS", "BREAKDOWN", "MEMORY"):
        shutil.copyfile(str(files["RULES"]), str(files[name]))
    files["BUDGET"] = root / "gate.toml"
    files["SVG"] = root / "gate.svg"
    for name in ("BUDGET", "SVG"):
        files[name].write_text(GATE)
    return root, files


def everything(root: Path) -> dict:
    return {path: path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("case", sorted(CASES), ids=["-".join(case) for case in sorted(CASES)])
def test_an_input_given_as_an_output_is_refused_and_kept(inputs, case):
    root, files = inputs
    words = CASES[case].split()
    option = case[2]
    if option in BESIDE:  # shown as the command names it: beside -o s.json
        shown = files[BESIDE[option]].name
    else:
        given = "-o" if option == "--output" else option  # the runs say -o for --output
        shown = str(files[words[words.index(given) + 1]])
    before = everything(root)
    result = invoke_extract(*[files.get(word, word) for word in words], cwd=root)
    one_error(
        result,
        2,
        "{}: {} would write over an input of this command: write it elsewhere".format(
            shown, option
        ),
    )
    assert everything(root) == before


def test_every_file_parameter_of_a_writing_command_is_tried():
    from extractor.cli import app

    tried = {(command, parameter) for command, parameter, _option in CASES}
    wanted = set()
    for registered in app.registered_commands:
        hints = typing.get_type_hints(registered.callback)
        name = registered.name or registered.callback.__name__
        if not OUTPUT_PARAMETERS & set(hints):
            continue  # writes no file it is told to (merge: its own index)
        for parameter, hint in hints.items():
            if parameter not in OUTPUT_PARAMETERS and "Path" in str(hint):
                wanted.add((name, parameter))
    assert wanted == tried


def test_a_batch_never_writes_over_its_rules(tmp_path):
    # Valid rules, named as a batch names a summary, where the batch would write one.
    copy_case(EDGE / "multi-ipu", tmp_path / "runs" / "x")
    rules = tmp_path / "out" / "x" / "summary.json"
    rules.parent.mkdir(parents=True)
    shutil.copyfile(str(REPO / "stage_rules.toml"), str(rules))
    before = rules.read_bytes()
    for extra in ([], ["--csv"], ["--blocks"], ["--breakdown"], ["--memory"]):
        result = invoke_extract("runs", "-o", "out", "--rules", rules, *extra, cwd=tmp_path)
        one_error(
            result,
            2,
            "{}: -o would write over an input of this command: write it elsewhere".format(rules),
        )
        assert rules.read_bytes() == before
        assert sorted(p.name for p in (tmp_path / "out").rglob("*")) == ["summary.json", "x"]


def test_rules_read_through_a_symbolic_link_are_the_file_it_points_to(inputs, tmp_path):
    _root, files = inputs
    link = tmp_path / "rules-link.toml"
    link.symlink_to(files["RULES"])
    before = files["RULES"].read_bytes()
    for command in ([], ["blocks"], ["trace"]):
        result = invoke_extract(*command, files["PROFILE"], "-o", files["RULES"], "--rules", link)
        one_error(result, 2, "would write over an input of this command")
        assert files["RULES"].read_bytes() == before


def test_the_installed_rules_are_an_input_too(inputs):
    # Without --rules, the installed stage_rules.toml is read: never written over. It is
    # made immutable for the test (we are root: chattr +i holds even for root), so that a
    # run that did try would fail to write (exit 1), not replace it.
    from extractor.core.rules import default_rules_path

    _root, files = inputs
    installed = default_rules_path()
    before = installed.read_bytes()
    subprocess.run(["chattr", "+i", str(installed)], check=True)
    try:
        for command in ([], ["blocks"], ["trace"], ["diff", files["OTHER"]]):
            result = invoke_extract(*command, files["PROFILE"], "-o", installed)
            one_error(result, 2, "would write over an input of this command")
    finally:
        subprocess.run(["chattr", "-i", str(installed)], check=True)
    assert installed.read_bytes() == before
