"""The contract tests (test_sdk_contract.py) skip cleanly without the SDK, never take the
stand-in for the real pva, and, given a pva that behaves like the real one, pass or fail
on what they check.

Each case runs pytest on that file in a child process with its own environment."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

from support.cases import copy_case, generator
from support.paths import EDGE, PVA_DOUBLE, REPO

CONTRACT = REPO / "tests" / "test_sdk_contract.py"

# A pva that is not the stand-in's folder: the stand-in, loaded from its file, with what
# the contract tests need beyond it (the target's tile count, read from the synthetic
# profile's own `meta` table, and the format version).
WRAPPED_STAND_IN = """
import importlib.util
import sqlite3

_spec = importlib.util.spec_from_file_location("_pva_stand_in", {stand_in!r})
_stand_in = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stand_in)
Program = _stand_in.Program
__version__ = "0.0+wrapped"


class _Target:
    def __init__(self, tiles):
        self.numTiles = tiles


class _Version:
    major, minor, point, isUnstableFormat = 1, 2, 3, False


def openReport(path, *args):
    report = _stand_in.openReport(path, *args)
    db = sqlite3.connect("file:{{}}?mode=ro".format(path), uri=True)
    tiles = int(db.execute("SELECT value FROM meta WHERE key = 'tiles'").fetchone()[0])
    db.close()
    report.compilation.target = _Target(tiles)
    report.version = _Version()
    return report
"""


def run_contract(tmp_path, pythonpath=None, profiles=None):
    """{test id: outcome} and the skip reasons of one pytest run of the contract file."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("EXTRACTOR_REAL_PROFILES", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    if profiles is not None:
        env["EXTRACTOR_REAL_PROFILES"] = profiles
    report = tmp_path / "junit.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rs",
            "--junitxml",
            str(report),
            str(CONTRACT),
        ],
        cwd=str(REPO),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    output = done.stdout.decode("utf-8", "replace")
    outcomes, reasons = {}, set()
    for case in ElementTree.parse(str(report)).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                if child.tag == "skipped":
                    reasons.add(child.get("message", ""))
        outcomes[case.get("name")] = outcome
    return done.returncode, outcomes, reasons, output


def test_skipped_without_pva(tmp_path):
    code, outcomes, reasons, output = run_contract(tmp_path, profiles=str(tmp_path))
    assert code == 0, output
    assert outcomes and set(outcomes.values()) == {"skipped"}, output
    assert any("pva is not importable" in r for r in reasons), reasons


def test_the_stand_in_is_not_taken_for_the_real_pva(tmp_path):
    profile = copy_case(EDGE / "one-anchor", tmp_path / "one")
    code, outcomes, reasons, output = run_contract(
        tmp_path, pythonpath=PVA_DOUBLE, profiles=str(profile)
    )
    assert code == 0, output
    assert set(outcomes.values()) == {"skipped"}, output
    assert any("the pva found is the project's stand-in" in r for r in reasons), reasons


def test_with_a_real_like_pva(tmp_path):
    sdk = tmp_path / "sdk" / "pva"
    sdk.mkdir(parents=True)
    (sdk / "__init__.py").write_text(
        WRAPPED_STAND_IN.format(stand_in=str(PVA_DOUBLE / "pva" / "__init__.py")), encoding="utf-8"
    )

    # Without profiles: skipped, and saying why.
    code, outcomes, reasons, output = run_contract(tmp_path, pythonpath=sdk.parent)
    assert set(outcomes.values()) == {"skipped"}, output
    assert any("EXTRACTOR_REAL_PROFILES names no profiles" in r for r in reasons), reasons

    # A folder (searched for profile.pop) and a file, separated by os.pathsep. The "bad"
    # profile's pva ids are one off from SQL's (the generator's mismatch knob).
    good = copy_case(EDGE / "one-anchor", tmp_path / "folder" / "one")
    bad = shifted_program_ids(tmp_path / "bad")
    code, outcomes, reasons, output = run_contract(
        tmp_path,
        pythonpath=sdk.parent,
        profiles=os.pathsep.join([str(tmp_path / "folder"), "", str(bad)]),
    )
    assert code == 1, output
    tests = [
        "test_extraction_succeeds",
        "test_every_step_program_is_in_pva_with_its_name",
        "test_program_ids_are_unique",
        "test_on_tile_steps_reach_their_compute_set",
        "test_compute_set_ids_index_pva_compute_sets_of_the_same_name",
        "test_code_bytes_by_tile_has_one_entry_per_tile",
        "test_memory_by_tile_has_one_row_per_tile",
        "test_doctor_finds_no_failure",
        "test_no_pva_gives_the_same_bytes_but_the_pva_fields",
        "test_inspect_reads_the_versions",
    ]
    # By hand, for the shifted profile: extract (and so the --no-pva comparison, which
    # needs the full run) stops at program 31; doctor fails step_programs; SQL's program
    # 32 is pva's 31 "OnTileExecute_cs1", whose computeset is compute set 1, where SQL's
    # step runs compute set 2. Compute sets, ids' uniqueness, code bytes (SQL's exchange
    # programs are no longer exchanges in pva, or not there), tiles and versions hold.
    failing = {
        "test_extraction_succeeds",
        "test_every_step_program_is_in_pva_with_its_name",
        "test_on_tile_steps_reach_their_compute_set",
        "test_doctor_finds_no_failure",
        "test_no_pva_gives_the_same_bytes_but_the_pva_fields",
    }
    expected = {}
    for name in tests:
        expected["{}[{}]".format(name, good)] = "passed"
        expected["{}[{}]".format(name, bad)] = "failed" if name in failing else "passed"
    assert outcomes == expected, output
    assert "program 31 is 'OnTileExecute_cs1' in the profile's tables" in output


def shifted_program_ids(folder):
    """one-anchor, with pva's program ids one higher than SQL's."""
    module = generator()
    spec, _ = module.edge_cases()["one-anchor"]
    spec.pva_program_id_shift = 1
    return module.write_case(spec, folder)
