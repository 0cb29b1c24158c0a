"""The tests' stand-in for pva (tests/pva_double) against the protocol of the pva API
that extractor.core.pvafacts reads (PvaModule and the protocols under it), checked by mypy:
a part the stand-in lacks, or one renamed in the protocol, fails here rather than in a
run on the real SDK. extractor/ itself checks its own implementations (StepTables,
PvaFacts, NoPvaFacts) when mypy runs on it, in CI."""

import os
import subprocess
import sys

import pytest

from support.paths import PVA_DOUBLE, REPO

pytest.importorskip("mypy", reason="mypy runs on Python 3.10 and newer only")

CHECK = """
import pva

from extractor.core.pvafacts import (PvaCompilation, PvaComputeSet, PvaModule, PvaProgram,
                                PvaReport, PvaVertex)

module: PvaModule = pva
owner = pva._Owner()
program: PvaProgram = pva.Program(1, "p", pva.Program.Type.DoExchange, [1], owner)
compute_set: PvaComputeSet = pva.ComputeSet(0, "cs", ["V"], owner)
vertex: PvaVertex = pva.Vertex("V")
compilation: PvaCompilation = pva.Compilation([program], {0: compute_set}, owner)
report: PvaReport = pva.Report(compilation, owner)
"""


def _mypy(tmp_path, source):
    (tmp_path / "check.py").write_text(source)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    env = dict(os.environ, MYPYPATH=os.pathsep.join([str(PVA_DOUBLE), str(REPO)]))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(tmp_path / "mypy.ini"),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(tmp_path / "check.py"),
        ],
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )


def test_the_pva_stand_in_serves_the_protocol_pvafacts_reads(tmp_path):
    done = _mypy(tmp_path, CHECK)
    assert done.returncode == 0, done.stdout


def test_a_part_missing_from_it_would_be_found(tmp_path):
    # The check is not vacuous: a compute set is no program (no codeBytesByTile, no type).
    done = _mypy(tmp_path, CHECK + "wrong: PvaProgram = pva.ComputeSet(0, 'cs', [], owner)\n")
    assert done.returncode == 1, done.stdout
    assert "codeBytesByTile" in done.stdout, done.stdout
