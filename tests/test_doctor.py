"""`extract doctor`, and the hardening that came with it, through the real CLI.

- Every committed fixture: no check fails (exit 0), every check ok but one warning
  worked out by hand below.
- Mismatch fixtures (fixtures/generate.py's id-shift knobs: pva's program ids, or its
  compute set indices, one off from SQL's): the check that tests that link fails (exit
  1), and `extract` stops with one line naming the program or compute set instead of
  writing another one's facts.
- Without pva: the SQL checks run, every pva check is skipped with the reason.
- `--json`: the documented shape (extract-doctor/1).
- Hardening, each by a test that fails without it: pva's numbers made Python ints (the
  stand-in's numpy-like numbers), programs and computeSets read once and the report kept
  alive (the stand-in counts accesses and kills a collected report's parts), openReport
  given a str (the stand-in refuses anything else), the vars_info warning.
"""

import json
from pathlib import Path

import pytest

from support.badinput import edit_double
from support.cases import copy_case, generator, golden_case_folder
from support.checks import json_bytes
from support.cli import invoke_extract, pva_double
from support.paths import EDGE, GOLDEN

CHECKS = [
    "pva",
    "report_opens",
    "versions",
    "program_ids_unique",
    "program_counts",
    "step_programs",
    "step_compute_sets",
    "compute_set_names",
    "code_bytes",
    "compute_sets_access",
    "memory_by_tile_rows",
    "memory_totals",
    "vars_info_tiles",
    "steps_by_ipu_rows",
    "vars_info",
    "clock",
    "repeats",
]
PVA_CHECKS = CHECKS[1:13]
FIXTURE_FOLDERS = {"vit-f8weight": golden_case_folder()}
FIXTURE_FOLDERS.update({p.name: p for p in sorted(EDGE.iterdir()) if (p / "profile.pop").exists()})


generate = generator()


def doctor(profile, *args, pva=True):
    """(exit code, the --json answer, stderr)."""
    result = invoke_extract("doctor", profile, "--json", *args, pva=pva)
    answer = json.loads(result.stdout.decode("ascii")) if result.stdout else None
    return result.code, answer, result.stderr


def statuses(answer) -> dict:
    return {check["name"]: check["status"] for check in answer["checks"]}


def check(answer, name) -> dict:
    return next(c for c in answer["checks"] if c["name"] == name)


# ---- every committed fixture ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIXTURE_FOLDERS))
def test_doctor_on_every_committed_fixture(name):
    code, answer, stderr = doctor(FIXTURE_FOLDERS[name] / "profile.pop")
    assert code == 0, stderr
    assert stderr == ""
    expected = {check_name: "ok" for check_name in CHECKS}
    if name == "unicode-names":
        # By hand: its exchange program 30 has 11,776 code-byte entries (as on 8 IPUs of
        # 1,472 tiles) on a 4-tile target: the one array of another length than the tile
        # count, which extract reads as max and mean of what pva gives.
        expected["code_bytes"] = "warn"
        assert check(answer, "code_bytes")["data"]["other_length"] == [{"id": 30, "entries": 11776}]
    if name == "no-aggregate-rows":
        # By hand: its memory_by_tile has no row, its target 4 tiles.
        expected["memory_by_tile_rows"] = "warn"
        assert check(answer, "memory_by_tile_rows")["data"] == {"rows": 0, "target_tiles": 4}
    assert statuses(answer) == expected
    assert answer["ok"] is True


def test_text_output_says_each_check(tmp_path):
    result = invoke_extract("doctor", golden_case_folder() / "profile.pop")
    assert result.code == 0, result
    text = result.stdout.decode("utf-8")
    lines = text.splitlines()
    assert lines[0].endswith("profile.pop: 17 ok, 0 warn, 0 fail, 0 skipped")
    for name in CHECKS:
        assert any(line.split()[:2] == ["ok", name] for line in lines[1:]), name
    assert "as it assumes" in lines[-1]


def test_doctor_and_inspect_say_where_their_output_goes():
    """Not "send us" (to whom?): an issue in the repository extractor came from, with the
    JSON attached; in doctor's last line and in both commands' help."""
    where = "open an issue in the repository you got extractor from"
    result = invoke_extract("doctor", golden_case_folder() / "profile.pop")
    last = result.stdout.decode("utf-8").splitlines()[-1]
    assert last.endswith(
        " To report it: {}, with `extract doctor PROFILE --json` attached "
        "(docs/sdk-contract.md).".format(where)
    ), last
    for command in ("doctor", "inspect"):
        wide = {"COLUMNS": "250", "TERMINAL_WIDTH": "250"}
        text = invoke_extract(command, "--help", env=wide).stdout.decode("utf-8")
        assert "send us" not in text.lower()
        assert where in " ".join(text.replace("│", " ").split()), command


def test_doctor_counts_the_fixtures_own_numbers():
    # multi-ipu, by hand from generate.py: 13 programs with ids 20..40; the 11 steps run
    # 11 distinct programs; 4 OnTileExecute (program, compute set) pairs (31/1, 32/2,
    # 34/3, 36/5); every step has 2 rows on a 2-IPU target; 12 vars_info rows on 8 tiles,
    # 6 of them internalExchangeCode (category 5).
    code, answer, _ = doctor(EDGE / "multi-ipu" / "profile.pop")
    assert code == 0
    assert check(answer, "program_counts")["data"] == {
        "sql": {"programs": 13, "smallest_id": 20, "largest_id": 40},
        "pva": {"programs": 13, "smallest_id": 20, "largest_id": 40},
    }
    assert check(answer, "step_programs")["data"]["programs"] == 11
    assert check(answer, "step_compute_sets")["data"]["pairs"] == 4
    assert check(answer, "steps_by_ipu_rows")["data"] == {"rows_per_step": {"2": 11}, "ipus": 2}
    assert check(answer, "vars_info")["data"] == {
        "rows": 12,
        "tiles_with_rows": 8,
        "internal_exchange_code_rows": 6,
        "target_tiles": 8,
    }


# ---- mismatch fixtures -----------------------------------------------------------------------


def mismatch_case(folder: Path, program_shift=0, compute_set_shift=0) -> Path:
    spec, _ = generate.edge_cases()["one-anchor"]
    spec.pva_program_id_shift = program_shift
    spec.pva_compute_set_shift = compute_set_shift
    return generate.write_case(spec, folder)


def test_shifted_program_ids_fail_the_program_check(tmp_path):
    profile = mismatch_case(tmp_path / "programs", program_shift=1)
    code, answer, stderr = doctor(profile)
    assert code == 1, stderr
    assert answer["ok"] is False
    found = statuses(answer)
    assert found["step_programs"] == "fail"
    assert found["program_counts"] == "warn"  # the same count, ids one higher
    assert "ids shifted by 1" in check(answer, "program_counts")["detail"]
    assert found["compute_set_names"] == "ok"  # compute sets are not shifted
    # By hand: SQL's program 31 is "OnTileExecute_cs1"; pva's id 31 is SQL's 30.
    renamed = check(answer, "step_programs")["data"]["renamed"]
    assert {
        "id": 31,
        "sql": "OnTileExecute_cs1",
        "pva": "cs1_/m/blocks/blocks.0/attn/qkv/Convolve/ExchangePre",
    } in renamed
    text = invoke_extract("doctor", profile)
    assert text.code == 1 and "FAIL  step_programs" in text.stdout.decode()

    # extract stops at the first kernel (step 4, program 31) instead of reading
    # program 30's facts for it.
    result = invoke_extract(profile, "-o", tmp_path / "summary.json")
    assert result.code == 1
    assert result.stderr == (
        "extract: error: {}: program 31 is 'OnTileExecute_cs1' in the profile's tables but "
        "'cs1_/m/blocks/blocks.0/attn/qkv/Convolve/ExchangePre' in PopVision's report: "
        "pva's program ids do not match the profile's, so its facts would be another "
        "program's (extract doctor PROFILE checks them all)\n".format(profile)
    )
    assert not (tmp_path / "summary.json").exists()
    # Without pva the SQL facts are still right.
    assert invoke_extract(profile, "--no-pva", pva=False).code == 0


def test_shifted_compute_set_indices_fail_the_compute_set_checks(tmp_path):
    profile = mismatch_case(tmp_path / "sets", compute_set_shift=-1)
    code, answer, stderr = doctor(profile)
    assert code == 1, stderr
    found = statuses(answer)
    assert found["step_compute_sets"] == "fail"
    assert found["compute_set_names"] == "fail"
    assert found["step_programs"] == "ok" and found["program_counts"] == "ok"
    # By hand: SQL's compute set 1 is the QKV projection; pva's index 1 is SQL's 2.
    wrong = check(answer, "compute_set_names")["data"]["wrong"]
    assert {
        "id": 1,
        "sql": "/m/blocks/blocks.0/attn/qkv/Convolve",
        "pva": "/m/blocks/blocks.0/attn/Softmax/Exp",
    } in wrong
    assert len(wrong) == 5  # 1, 2, 3, 5, 6 all name their neighbours (or nothing)

    result = invoke_extract(profile, "-o", tmp_path / "summary.json")
    assert result.code == 1
    assert result.stderr == (
        "extract: error: {}: compute set 1 is '/m/blocks/blocks.0/attn/qkv/Convolve' in the "
        "profile's tables but '/m/blocks/blocks.0/attn/Softmax/Exp' in PopVision's report: "
        "pva's compute set indices do not match the profile's, so its facts would be "
        "another compute set's (extract doctor PROFILE checks them all)\n".format(profile)
    )
    assert not (tmp_path / "summary.json").exists()


def test_the_knobs_leave_sql_as_it_was(tmp_path):
    # The mismatch is pva's side only: the profile.pop files are the same tables.
    import sqlite3

    plain = mismatch_case(tmp_path / "plain")
    shifted = mismatch_case(tmp_path / "shifted", program_shift=1, compute_set_shift=-1)

    def dump(path):
        db = sqlite3.connect("file:{}?mode=ro".format(path), uri=True)
        try:
            return [
                db.execute("SELECT * FROM {} ORDER BY rowid".format(t)).fetchall()
                for t in ("programs", "compute_sets", "steps", "steps_by_ipu")
            ]
        finally:
            db.close()

    assert dump(plain) == dump(shifted)
    assert doctor(plain)[0] == 0


# ---- without pva, bad input, the JSON -------------------------------------------------------


def test_without_pva_the_sql_checks_run_and_the_rest_are_skipped():
    code, answer, stderr = doctor(golden_case_folder() / "profile.pop", pva=False)
    assert code == 0, stderr
    found = statuses(answer)
    assert found["pva"] == "warn"
    assert check(answer, "pva")["detail"].startswith("pva is not importable (")
    for name in PVA_CHECKS:
        assert found[name] == "skipped", name
        assert check(answer, name)["detail"] == "pva is not importable"
    assert found["steps_by_ipu_rows"] == "ok" and found["vars_info"] == "ok"
    assert (
        "IPU count is unknown (pva is not available)"
        in check(answer, "steps_by_ipu_rows")["detail"]
    )
    assert found["repeats"] == "ok"  # SQL only: extract breakdown's counts, without pva
    assert answer["counts"] == {"ok": 4, "warn": 1, "fail": 0, "skipped": 12}


@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda p: p.write_bytes(b"step,cycles\n1,40\n" * 20), "not an SQLite database"),
        (lambda p: p.unlink(), "no such file"),
    ],
)
def test_a_bad_profile_is_one_line(tmp_path, damage, problem):
    profile = copy_case(EDGE / "one-anchor", tmp_path / "bad")
    damage(profile)
    for args in ([], ["--json"]):
        result = invoke_extract("doctor", profile, *args)
        assert result.code == 1
        assert result.stdout == b""
        assert result.stderr == "extract: error: {}: {}\n".format(profile, problem)


def test_json_shape():
    result = invoke_extract("doctor", EDGE / "one-anchor" / "profile.pop", "--json")
    assert result.code == 0
    text = result.stdout.decode("ascii")
    answer = json.loads(text)
    assert text == json.dumps(answer, indent=2) + "\n"
    assert list(answer) == ["format", "profile", "tool_version", "ok", "counts", "checks"]
    assert answer["format"] == "extract-doctor/1"
    assert answer["profile"] == str(EDGE / "one-anchor" / "profile.pop")
    from extractor import __version__

    assert answer["tool_version"] == __version__
    assert list(answer["counts"]) == ["ok", "warn", "fail", "skipped"]
    assert [c["name"] for c in answer["checks"]] == CHECKS
    for entry in answer["checks"]:
        assert list(entry) == ["name", "status", "detail", "means", "data"]
        assert entry["status"] in ("ok", "warn", "fail", "skipped")
        assert entry["detail"] and "\n" not in entry["detail"]
        assert entry["means"] and "\n" not in entry["means"]
        assert isinstance(entry["data"], dict)


# ---- hardening -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["unicode-names", "multi-ipu"])
def test_numpy_like_numbers_from_pva_give_the_same_summary(tmp_path, name):
    # pva's ids and code bytes as numpy-like scalars (not int, not JSON-serialisable):
    # extract must give the hand-checked bytes all the same.
    folder = tmp_path / name
    profile = copy_case(EDGE / name, folder)
    edit_double(lambda d: d.update(_test_numbers="numpy-like"))(folder)
    result = invoke_extract(profile, "-o", folder / "summary.json")
    assert result.code == 0, result
    expected = json.loads((EDGE / name / "expected.json").read_text(encoding="ascii"))
    expected["profile"] = str(profile)
    assert (folder / "summary.json").read_bytes() == json_bytes(expected)
    code, answer, stderr = doctor(profile)
    assert code == 0, stderr
    entry = check(answer, "code_bytes")
    assert entry["status"] == "warn" and entry["data"]["entry_types"] == ["pva.NumpyLikeInt"]


def test_programs_and_compute_sets_are_read_once_from_a_live_report(tmp_path):
    # The stand-in builds a new list on each access of programs and computeSets (counted)
    # and kills a report's parts once the report is collected.
    pva = pva_double()
    from extractor import summarize

    profile = copy_case(golden_case_folder(), tmp_path / "golden")
    pva.reset_access_counts()
    summary = summarize(profile, pva=pva, profile_label="x").summary
    assert pva.access_counts[("programs",)] == 1
    assert pva.access_counts[("computeSets",)] == 1
    expected = json.loads((GOLDEN / "expected.json").read_text(encoding="ascii"))
    expected["profile"] = "x"
    assert summary == expected


def test_the_stand_in_is_as_strict_as_pybind11(tmp_path):
    pva = pva_double()
    profile = EDGE / "one-anchor" / "profile.pop"
    for args, kwargs in [
        ((profile,), {}),
        ((str(profile).encode(),), {}),
        ((str(profile),), {"debug_cbor": "debug.cbor"}),
        ((), {}),
        ((str(profile), "a", "b"), {}),
    ]:
        with pytest.raises(TypeError, match=r"^openReport\(\): incompatible function "):
            pva.openReport(*args, **kwargs)
    report = pva.openReport(str(profile), "debug.cbor")
    assert report.compilation.computeSets is not report.compilation.computeSets
    assert isinstance(report.compilation.computeSets, list)
    program = next(p for p in report.compilation.programs if p._id == 31)
    assert program.computeset.name == "/m/blocks/blocks.0/attn/qkv/Convolve"
    sets = report.compilation
    del report, program
    with pytest.raises(RuntimeError, match="has been destroyed"):
        _ = sets.computeSets  # the access is what raises


def test_empty_vars_info_is_a_one_line_warning(tmp_path):
    spec, _expected = generate.edge_cases()["multi-ipu"]
    spec.vars_info = []
    profile = generate.write_case(spec, tmp_path / "no-vars")
    result = invoke_extract(profile, "-o", tmp_path / "summary.json")
    assert result.code == 0, result
    assert result.stderr == (
        "extract: warning: {}: vars_info is empty: the profile was probably made without "
        "autoReport.outputLoweredVars (set it to true with autoReport.all), so "
        "exchange_memory_per_tile's min, avg and max are null\n".format(profile)
    )
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="ascii"))
    assert summary["exchange_memory_per_tile"] == {"min(b)": None, "avg(b)": None, "max(b)": None}
    code, answer, _ = doctor(profile)
    assert code == 0
    entry = check(answer, "vars_info")
    assert entry["status"] == "warn" and "autoReport.outputLoweredVars" in entry["means"]


def test_missing_vars_info_names_outputloweredvars(tmp_path):
    import sqlite3

    profile = copy_case(EDGE / "one-anchor", tmp_path / "no-vars-table")
    db = sqlite3.connect(str(profile))
    db.execute("DROP TABLE vars_info")
    db.commit()
    db.close()
    line = (
        "extract: error: {}: no table 'vars_info': not a PopVision profile, or an unknown "
        "version (or one made without autoReport.outputLoweredVars, which writes the "
        "per-tile variables: profile again with it set to true)\n".format(profile)
    )
    for args in (["doctor", profile], [profile, "-o", tmp_path / "summary.json"]):
        result = invoke_extract(*args)
        assert (result.code, result.stderr) == (1, line)


def test_programs_without_computeset_are_checked_by_index_only(tmp_path):
    # An older fixture (or a pva without the attribute): a warning, not a failure.
    folder = tmp_path / "old"
    profile = copy_case(EDGE / "one-anchor", folder)
    edit_double(lambda d: [p.pop("computeset", None) for p in d["programs"]])(folder)
    code, answer, _ = doctor(profile)
    assert code == 0
    entry = check(answer, "step_compute_sets")
    assert entry["status"] == "warn"
    assert entry["data"]["without_computeset"] == 5  # programs 31, 32, 34, 36, 37


def test_a_report_pva_cannot_open_fails_and_skips_the_rest(tmp_path):
    folder = tmp_path / "closed"
    profile = copy_case(EDGE / "one-anchor", folder)
    edit_double(lambda d: d.update(_test_open_error="bad magic\nin 'programs'"))(folder)
    code, answer, _ = doctor(profile)
    assert code == 1
    found = statuses(answer)
    assert found["pva"] == "ok" and found["report_opens"] == "fail"
    assert check(answer, "report_opens")["detail"] == (
        "pva could not open the report: bad magic in 'programs'"
    )
    assert all(found[name] == "skipped" for name in PVA_CHECKS[1:])
    assert found["steps_by_ipu_rows"] == "ok" and found["vars_info"] == "ok"
