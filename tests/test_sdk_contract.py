"""Contract tests against the REAL PopVision Python API (`pva`) and real profiles.

Everything else in this suite runs against a stand-in for `pva` (tests/pva_double) and
synthetic profiles. These tests check, where the Poplar SDK exists, that what the
extractor assumes of both holds for the real thing. They run only when

- `import pva` finds the real module (not the project's stand-in), and
- EXTRACTOR_REAL_PROFILES names real profile.pop files (separated by os.pathsep, ":" on
  Linux; a folder stands for every profile.pop under it),

and are reported as skipped otherwise. How to run them and what to attach to an issue:
docs/sdk-contract.md.

The cross-checks of SQL against pva are `extract doctor`'s own check functions
(extractor/diagnose/doctor.py): a developer running these tests and a user running
`extract doctor` on an installed wheel prove the same things.
"""

import importlib
import importlib.util
import json
import os
import sqlite3
from pathlib import Path

import pytest

from extractor.diagnose import doctor
from support.checks import json_bytes
from support.cli import run_extract
from support.paths import PVA_DOUBLE

PROFILES_VARIABLE = "EXTRACTOR_REAL_PROFILES"
PVA_FIELDS = ("max_exchange_code_bytes", "vertices")


def pva_problem():
    """Why the real pva cannot be used here, or None. Finds the module without importing it."""
    try:
        spec = importlib.util.find_spec("pva")
    except (ImportError, ValueError) as exc:
        return "pva cannot be found ({})".format(exc)
    if spec is None:
        return "pva is not importable (the Poplar SDK's enable.sh provides it)"
    places = [spec.origin] if spec.origin else []
    places += list(spec.submodule_search_locations or [])
    stand_in = PVA_DOUBLE.resolve()
    for place in places:
        if place and (
            stand_in == Path(place).resolve() or stand_in in Path(place).resolve().parents
        ):
            return "the pva found is the project's stand-in ({}), not the real one".format(place)
    return None


def real_profiles():
    """The profiles EXTRACTOR_REAL_PROFILES names, folders expanded, in the given order."""
    found = []
    for entry in os.environ.get(PROFILES_VARIABLE, "").split(os.pathsep):
        if not entry.strip():
            continue
        path = Path(entry).expanduser()
        if path.is_dir():
            found.extend(sorted(path.rglob("profile.pop")))
        else:
            found.append(path)  # a missing file fails its tests, loudly
    return found


PROFILES = real_profiles()
_REASONS = [
    r
    for r in (pva_problem(), None if PROFILES else "{} names no profiles".format(PROFILES_VARIABLE))
    if r
]
SKIP_REASON = "; ".join(_REASONS)

pytestmark = [pytest.mark.sdk, pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON)]


def run_here(*args):
    """`extract ARGS...` in this environment, the user's PYTHONPATH (where the SDK puts
    pva) kept as it is."""
    return run_extract(
        *args, pva=False, env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")}, timeout=3600
    )


def _profile_id(path):
    return str(path)


@pytest.fixture(scope="module", params=PROFILES or [None], ids=_profile_id)
def profile(request):
    path = request.param
    assert path is not None and path.is_file(), "{}: no such profile".format(path)
    return path


@pytest.fixture(scope="module")
def pva():
    return importlib.import_module("pva")


@pytest.fixture(scope="module")
def sql_side(profile):
    return doctor.read_sql(profile)


@pytest.fixture(scope="module")
def pva_side(pva, profile):
    """The report opened as doctor opens it (kept referenced for the module)."""
    return doctor.PvaSide(pva, profile)


def assert_check(check, allowed=(doctor.OK,)):
    print(json.dumps(check.as_json(), indent=2))
    assert check.status in allowed, "{}: {}".format(check.detail, json.dumps(check.data)[:4000])


@pytest.fixture(scope="module")
def full_run(profile, tmp_path_factory):
    out = tmp_path_factory.mktemp("sdk") / "summary.json"
    result = run_here(profile, "-o", out)
    return result, (out.read_bytes() if out.exists() else None)


def sql(profile, query):
    db = sqlite3.connect("file:{}?mode=ro".format(profile.resolve()), uri=True)
    try:
        return db.execute(query).fetchall()
    finally:
        db.close()


def test_extraction_succeeds(full_run):
    result, data = full_run
    assert result.code == 0, result.stderr
    assert data is not None
    summary = json.loads(data.decode("ascii"))
    assert list(summary) == [
        "profile",
        "kernels",
        "attention_exchanges",
        "exchange_memory_per_tile",
        "device_spans",
        "qkv_executions",
        "allocated_memory",
    ]
    assert data == json_bytes(summary)  # the bytes rule
    for warning in result.stderr.splitlines():  # worth sending us, not a failure
        print(warning)


def test_every_step_program_is_in_pva_with_its_name(sql_side, pva_side):
    # Every distinct steps.program is a pva _id, with programs.name; a DoExchange step's
    # program is of type pva.Program.Type.DoExchange.
    assert_check(doctor.check_step_programs(sql_side, pva_side))


def test_program_ids_are_unique(pva_side):
    assert_check(doctor.check_program_ids_unique(pva_side))


def test_on_tile_steps_reach_their_compute_set(sql_side, pva_side):
    # For every OnTileExecute step: program.computeset is SQL's compute set, with the
    # vertex types of computeSets[steps.compute_set].
    assert_check(doctor.check_step_compute_sets(sql_side, pva_side))


def test_compute_set_ids_index_pva_compute_sets_of_the_same_name(sql_side, pva_side):
    assert_check(doctor.check_compute_set_names(sql_side, pva_side))


def test_code_bytes_by_tile_has_one_entry_per_tile(sql_side, pva_side):
    # Integral entries (numpy's are converted: warn), one per tile of the target where
    # the array is not empty.
    check = doctor.check_code_bytes(sql_side, pva_side)
    assert_check(check, allowed=(doctor.OK, doctor.WARN))
    assert not check.data["other_length"], check.detail


def test_memory_by_tile_has_one_row_per_tile(pva_side, profile):
    rows = sql(profile, "SELECT count(*) FROM memory_by_tile")[0][0]
    assert rows == pva_side.compilation.target.numTiles


def test_doctor_finds_no_failure(profile):
    result = run_here("doctor", profile, "--json")
    print(result.stdout.decode("ascii", "replace"))
    assert result.code == 0, result.stderr


def test_no_pva_gives_the_same_bytes_but_the_pva_fields(full_run, profile, tmp_path):
    result, data = full_run
    assert result.code == 0 and data is not None, result.stderr
    out = tmp_path / "no-pva.json"
    bare = run_here(profile, "--no-pva", "-o", out)
    assert bare.code == 0, bare.stderr
    expected = json.loads(data.decode("ascii"))
    expected["attention_exchanges"] = None
    for kernel in expected["kernels"]:
        for field in PVA_FIELDS:
            kernel[field] = None
    assert out.read_bytes() == json_bytes(expected)
    assert bare.stderr == result.stderr


def test_inspect_reads_the_versions(profile):
    result = run_here("inspect", profile, "--json")
    assert result.code == 0, result.stderr
    answer = json.loads(result.stdout)
    print(json.dumps({k: answer[k] for k in ("pva", "report", "required")}, indent=2))
    assert answer["required"]["ok"], answer["required"]["problems"]
    assert answer["pva"]["importable"], answer["pva"]["error"]
    report = answer["report"]
    assert report["opened"], report["errors"]
    assert report["poplar_version"] and report["format_version"], report["errors"]
