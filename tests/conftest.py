"""Shared helpers: run the real `extract` console script, find fixtures, hash files."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
PVA_DOUBLE = REPO / "tests" / "pva_double"
GOLDEN = FIXTURES / "vit-f8weight"
GOLDEN_PROFILE_ARG = "../poprt/profile_logs_f8weight/inference/profile.pop"
EDGE = FIXTURES / "edge"


def extract_command():
    """The installed console script beside this Python, else `python -m extractor`."""
    script = Path(sys.executable).with_name("extract")
    return [str(script)] if script.exists() else [sys.executable, "-m", "extractor"]


class Result:
    def __init__(self, completed):
        self.code = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr.decode("utf-8", "replace")

    def __repr__(self):
        return "<exit {} stderr={!r}>".format(self.code, self.stderr[-2000:])


def pva_double():
    """The pva stand-in (tests/pva_double), imported in this process, for library tests;
    sys.path is left as it was."""
    sys.path.insert(0, str(PVA_DOUBLE))
    try:
        import pva
    finally:
        sys.path.remove(str(PVA_DOUBLE))
    return pva


def run_extract(*args, cwd=None, pva=True, env=None, timeout=120):
    """Run `extract ARGS...` as a user would; `pva` puts the stand-in on PYTHONPATH."""
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)
    if pva:
        environment["PYTHONPATH"] = str(PVA_DOUBLE)
    environment.update(env or {})
    completed = subprocess.run(extract_command() + [str(a) for a in args], cwd=cwd,
                               env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=timeout)
    return Result(completed)


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def copy_case(source: Path, target: Path) -> Path:
    """Copy a fixture folder (profile.pop + pva-double.json) and return the profile path."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("profile.pop", "pva-double.json"):
        shutil.copy2(str(source / name), str(target / name))
    return target / "profile.pop"


def golden_case_folder() -> Path:
    return GOLDEN / "poprt" / "profile_logs_f8weight" / "inference"


@pytest.fixture
def golden_profile(tmp_path):
    """A private copy of the golden fixture, laid out as in the reference's path."""
    return copy_case(golden_case_folder(), tmp_path / "poprt" / "profile_logs_f8weight" / "inference")
