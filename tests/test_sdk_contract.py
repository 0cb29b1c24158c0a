"""Contract tests against the REAL PopVision Python API (`pva`) and real profiles.

Everything else in this suite runs against a stand-in for `pva` (tests/pva_double) and
synthetic profiles. These tests check, where the Poplar SDK exists, that what the
extractor assumes of both holds for the real thing. They run only when

- `import pva` finds the real module (not the project's stand-in), and
- EXTRACTOR_REAL_PROFILES names real profile.pop files (separated by os.pathsep, ":" on
  Linux; a folder stands for every profile.pop under it),

and are reported as skipped otherwise. How to run them and what to send us:
docs/sdk-contract.md.
"""

import importlib
import importlib.util
import json
import os
import sqlite3
from pathlib import Path

import pytest

from conftest import PVA_DOUBLE, run_extract

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
        if place and (stand_in == Path(place).resolve() or
                      stand_in in Path(place).resolve().parents):
            return "the pva found is the project's stand-in ({}), not the real one".format(
                place)
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
_REASONS = [r for r in (pva_problem(), None if PROFILES else
                        "{} names no profiles".format(PROFILES_VARIABLE)) if r]
SKIP_REASON = "; ".join(_REASONS)

pytestmark = [pytest.mark.sdk, pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON)]


def run_here(*args):
    """`extract ARGS...` in this environment, the user's PYTHONPATH (where the SDK puts
    pva) kept as it is."""
    return run_extract(*args, pva=False, env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
                       timeout=3600)


def summary_text(summary: dict) -> bytes:
    return (json.dumps(summary, indent=2) + "\n").encode("ascii")


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
def report(pva, profile):
    return pva.openReport(str(profile))


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
    assert list(summary) == ["profile", "kernels", "attention_exchanges",
                             "exchange_memory_per_tile", "device_spans", "qkv_executions",
                             "allocated_memory"]
    assert data == summary_text(summary)  # the bytes rule
    for warning in result.stderr.splitlines():  # worth sending us, not a failure
        print(warning)


def test_every_exchange_step_has_an_exchange_program(pva, report, profile):
    ids = [row[0] for row in sql(profile, "SELECT DISTINCT program FROM steps WHERE type = "
                                          "'DoExchange' ORDER BY program")]
    programs = {program._id: program for program in report.compilation.programs}
    missing = [i for i in ids if i not in programs]
    assert not missing, "DoExchange steps whose program pva does not have: {}".format(
        missing[:20])
    wrong = [(i, programs[i].type.name) for i in ids
             if programs[i].type != pva.Program.Type.DoExchange]
    assert not wrong, "DoExchange steps whose pva program is of another type: {}".format(
        wrong[:20])


def test_compute_set_ids_index_pva_compute_sets_of_the_same_name(report, profile):
    rows = sql(profile, "SELECT compute_set, name FROM compute_sets ORDER BY compute_set")
    compute_sets = report.compilation.computeSets
    wrong = []
    for index, name in rows:
        try:
            found = compute_sets[index].name
        except (IndexError, KeyError) as exc:
            found = "<{}: {}>".format(type(exc).__name__, exc)
        if found != name:
            wrong.append((index, name, found))
    assert not wrong, "(id, SQL name, pva name) that differ, of {}: {}".format(
        len(rows), wrong[:20])


def test_code_bytes_by_tile_has_one_entry_per_tile(pva, report, profile):
    tiles = report.compilation.target.numTiles
    exchange = pva.Program.Type.DoExchange
    used = {row[0] for row in sql(profile, "SELECT DISTINCT program FROM steps WHERE type = "
                                           "'DoExchange'")}
    programs = [p for p in report.compilation.programs if p.type == exchange
                and (p._id in used or not used)]  # a compile-only profile: all of them
    wrong = []
    for program in programs:
        count = len(program.codeBytesByTile)
        if count != tiles:
            wrong.append((program._id, program.name, count))
    assert not wrong, "{} tiles, but these exchange programs (id, name, entries) of {} " \
                      "differ: {}".format(tiles, len(programs), wrong[:20])


def test_memory_by_tile_has_one_row_per_tile(report, profile):
    rows = sql(profile, "SELECT count(*) FROM memory_by_tile")[0][0]
    assert rows == report.compilation.target.numTiles


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
    assert out.read_bytes() == summary_text(expected)
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
