"""pytest fixtures shared by the tests; the helpers they use live in tests/support/
(see its __init__.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.cases import copy_case, golden_case_folder
from support.cli import invoke_extract
from support.paths import REPO


@pytest.fixture
def golden_profile(tmp_path):
    """A private copy of the golden fixture, laid out as in the reference's path."""
    return copy_case(
        golden_case_folder(), tmp_path / "poprt" / "profile_logs_f8weight" / "inference"
    )


@pytest.fixture
def two_recordings(tmp_path):
    """(a, b): the folders of two recordings, each a summary.json with its blocks.json
    (extract --blocks --no-pva), a of fixtures/edge/multi-ipu, b of no-output-begins
    (their bodies worked out by hand in tests/test_blocks.py's docstring)."""
    for name, case in (("a", "multi-ipu"), ("b", "no-output-begins")):
        result = invoke_extract(
            "fixtures/edge/{}/profile.pop".format(case),
            "-o",
            tmp_path / name / "summary.json",
            "--blocks",
            "--no-pva",
            cwd=REPO,
            pva=False,
        )
        assert result.code == 0, result.stderr
    return tmp_path / "a", tmp_path / "b"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel (pip wheel), built once for the tests that unpack it: once in
    all, when pytest-xdist's workers share a base folder (the first to take the lock
    builds it, the others wait and find it)."""
    import fcntl

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the workers' folders sit side by side in it
    dist = shared / "wheel-dist"
    with open(str(shared / "wheel.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not list(dist.glob("popvision_extractor-*.whl")):
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "--no-deps",
                    "-q",
                    "-w",
                    str(dist),
                    str(REPO),
                ],
                capture_output=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr.decode()[-2000:]
    return next(dist.glob("popvision_extractor-*.whl"))
