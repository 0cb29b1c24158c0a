"""`extract doctor`'s `repeats` check, through the real CLI: how many compute sets
inference 1 executes twice or more (OnTileExecute rows, per IPU), how many of them took
the same cycles every time, and the warning when all of them did.

The expected numbers come from plain SQL on the profile (`oracle_repeats`), nothing
imported from extractor: inference 1 is the steps from the first `copyFromHost`
StreamCopyEnd step to the first StreamCopyBegin step named `...copyToHost` after it
(the installed stage rules' selectors), a row's name its compute set's, else its
program's.
"""

import json
import sqlite3

from support.cases import copy_case, generator, golden_case_folder, two_ipus
from support.cli import invoke_extract
from support.paths import EDGE, GOLDEN

NAMED_STEPS = """
    SELECT s.id, s.type, coalesce(nullif(c.name, ''), nullif(p.name, ''), '') AS name
    FROM steps AS s
    LEFT JOIN compute_sets AS c ON c.compute_set = s.compute_set
    LEFT JOIN programs AS p ON p.id = s.program
"""
INFERENCE_1 = """
    WITH named AS ({named}),
    delivered AS (
        SELECT min(id) AS id FROM named WHERE type = 'StreamCopyEnd' AND name = 'copyFromHost'
    )
    SELECT (SELECT id FROM delivered),
           (SELECT min(id) FROM named WHERE type = 'StreamCopyBegin'
                AND name LIKE '%copyToHost' AND id > (SELECT id FROM delivered))
""".format(named=NAMED_STEPS)
#: Per (IPU, compute set) with 2+ OnTileExecute rows in steps first..last: min and max cycles.
REPEATED = """
    SELECT b.ipu, s.compute_set, min(b.cycles) AS low, max(b.cycles) AS high
    FROM steps AS s JOIN steps_by_ipu AS b ON b.step_id = s.id
    WHERE s.type = 'OnTileExecute' AND s.compute_set IS NOT NULL AND s.id BETWEEN ? AND ?
    GROUP BY b.ipu, s.compute_set HAVING count(*) >= 2
    ORDER BY b.ipu, s.compute_set
"""


def oracle_repeats(profile):
    """(first step, last step, [(ipu, compute set, low, high)]) of inference 1, by SQL."""
    db = sqlite3.connect("file:{}?mode=ro".format(profile), uri=True)
    try:
        first, last = db.execute(INFERENCE_1).fetchone()
        assert first is not None and last is not None
        return first, last, db.execute(REPEATED, (first, last)).fetchall()
    finally:
        db.close()


def edit(profile, sql, values=()):
    db = sqlite3.connect(str(profile))
    try:
        db.execute(sql, values)
        db.commit()
    finally:
        db.close()


#: Every OnTileExecute row takes 1000 + its compute set's number of cycles.
ONE_DURATION_PER_COMPUTE_SET = (
    "UPDATE steps_by_ipu SET cycles = 1000 + (SELECT compute_set FROM steps WHERE id = step_id) "
    "WHERE step_id IN (SELECT id FROM steps WHERE type = 'OnTileExecute' "
    "AND compute_set IS NOT NULL)"
)


def doctor(profile):
    """(exit code, the --json answer's repeats check, its counts, stderr)."""
    result = invoke_extract("doctor", profile, "--json")
    answer = json.loads(result.stdout.decode("ascii"))
    found = [c for c in answer["checks"] if c["name"] == "repeats"]
    assert len(found) == 1 and answer["checks"][-1] is found[0]
    return result.code, found[0], answer["counts"], result.stderr


def expected_data(first, last, repeated):
    ipus = sorted({row[0] for row in repeated})
    per_ipu = [
        {
            "ipu": ipu,
            "compute_sets": sum(1 for row in repeated if row[0] == ipu),
            "identical": sum(1 for row in repeated if row[0] == ipu and row[2] == row[3]),
        }
        for ipu in ipus
    ]
    return {
        "run": 1,
        "first_step": first,
        "last_step": last,
        "compute_sets": len(repeated),
        "identical": sum(1 for row in repeated if row[2] == row[3]),
        "ipus": per_ipu,
    }


def test_the_committed_fixtures_repeats_against_sql():
    profile = golden_case_folder() / "profile.pop"
    first, last, repeated = oracle_repeats(profile)
    # By hand from fixtures/generate.py: the golden trace's first inference, one IPU,
    # where every repeated compute set's executions differ (the generator's cycles vary).
    assert (first, last, len(repeated)) == (3, 550, 12)
    assert all(row[2] != row[3] for row in repeated)
    code, found, counts, stderr = doctor(profile)
    assert (code, stderr) == (0, "")
    assert found["status"] == "ok"
    assert found["data"] == expected_data(first, last, repeated)
    assert found["detail"] == (
        "inference 1 (steps 3 to 550): 0 of the 12 compute sets executed twice or more "
        "on IPU 0 took the same cycles every time"
    )
    assert counts["warn"] == 0


def test_one_duration_per_compute_set_warns_in_one_line(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "one-duration")
    edit(profile, ONE_DURATION_PER_COMPUTE_SET)
    first, last, repeated = oracle_repeats(profile)
    assert len(repeated) == 12 and all(row[2] == row[3] for row in repeated)
    detail = (
        "inference 1 (steps {} to {}): all {} compute sets executed twice or more on IPU 0 "
        "took the same cycles every time".format(first, last, len(repeated))
    )
    means = (
        "the profile may record one duration per compute set, not one per execution: "
        "statistics over blocks or runs that reuse compute sets (extract blocks' statistics, "
        "extract compare --stat) show no variance by construction"
    )
    warning = "extract: warning: {}: {}: {}\n".format(profile, detail, means)

    code, found, counts, stderr = doctor(profile)
    assert code == 0  # a warning, as every doctor warning: the exit code stays 0
    assert stderr == warning
    assert found["status"] == "warn"
    assert (found["detail"], found["means"]) == (detail, means)
    assert found["data"] == expected_data(first, last, repeated)
    assert counts == {"ok": 16, "warn": 1, "fail": 0, "skipped": 0}

    text = invoke_extract("doctor", profile)
    assert (text.code, text.stderr) == (0, warning)
    lines = text.stdout.decode("utf-8").splitlines()
    assert lines[0] == "{}: 16 ok, 1 warn, 0 fail, 0 skipped".format(profile)
    at = lines.index("  WARN  repeats              " + detail)
    assert lines[at + 1] == "                             means: " + means
    assert lines[-1].startswith("extract reads this profile, with the warnings above. ")


def test_one_compute_set_that_differs_is_no_warning(tmp_path):
    profile = copy_case(golden_case_folder(), tmp_path / "one-differs")
    edit(profile, ONE_DURATION_PER_COMPUTE_SET)
    first, last, repeated = oracle_repeats(profile)
    compute_set = repeated[0][1]
    # One execution of one repeated compute set, inside inference 1, a cycle longer.
    edit(
        profile,
        "UPDATE steps_by_ipu SET cycles = cycles + 1 WHERE step_id = (SELECT max(id) "
        "FROM steps WHERE type = 'OnTileExecute' AND compute_set = ? AND id <= ?)",
        (compute_set, last),
    )
    first, last, repeated = oracle_repeats(profile)
    assert [row[2] == row[3] for row in repeated].count(False) == 1
    code, found, counts, stderr = doctor(profile)
    assert (code, stderr) == (0, "")
    assert found["status"] == "ok"
    assert found["data"] == expected_data(first, last, repeated)
    assert found["data"]["identical"] == 11
    assert found["detail"] == (
        "inference 1 (steps {} to {}): 11 of the 12 compute sets executed twice or more "
        "on IPU 0 took the same cycles every time".format(first, last)
    )
    assert counts["warn"] == 0


def test_no_repeated_compute_set_is_no_warning(tmp_path):
    # one-anchor: each compute set of its inference 1 is executed once (the SQL says so).
    profile = copy_case(EDGE / "one-anchor", tmp_path / "once")
    edit(profile, ONE_DURATION_PER_COMPUTE_SET)  # identical, but nothing repeats
    first, last, repeated = oracle_repeats(profile)
    assert repeated == []
    code, found, counts, stderr = doctor(profile)
    assert (code, stderr) == (0, "")
    assert found["status"] == "ok"
    assert found["data"] == {
        "run": 1,
        "first_step": first,
        "last_step": last,
        "compute_sets": 0,
        "identical": 0,
        "ipus": [{"ipu": 0, "compute_sets": 0, "identical": 0}],
    }
    assert found["detail"] == (
        "inference 1 (steps {} to {}): no compute set is executed twice or more on an IPU".format(
            first, last
        )
    )
    assert counts == {"ok": 17, "warn": 0, "fail": 0, "skipped": 0}


def test_on_two_ipus_every_ipus_repeats_must_be_identical_to_warn(tmp_path):
    # A compute set executed on both IPUs counts once on each; the warning needs all.
    # The golden profile, generated again with a second IPU (other cycles on it).
    target = json.loads((GOLDEN / "expected.json").read_text(encoding="ascii"))
    spec = two_ipus(generator().golden_spec(target))
    profile = generator().write_case(spec, tmp_path / "two-ipus")
    ipu_1_only = ONE_DURATION_PER_COMPUTE_SET + " AND ipu = 1"
    edit(profile, ipu_1_only)
    first, last, repeated = oracle_repeats(profile)
    on_1 = [row for row in repeated if row[0] == 1]
    assert len(on_1) == len(repeated) - len(on_1) > 0
    assert all(row[2] == row[3] for row in on_1)
    assert not any(row[2] == row[3] for row in repeated if row[0] == 0)
    code, found, counts, stderr = doctor(profile)
    assert (code, stderr, found["status"], counts["warn"]) == (0, "", "ok", 0)
    assert found["data"] == expected_data(first, last, repeated)
    assert found["detail"] == (
        "inference 1 (steps {} to {}): {} of the {} compute sets executed twice or more on "
        "an IPU took the same cycles every time (counted per IPU: IPU 0: 0 of {}; IPU 1: {} "
        "of {})".format(first, last, len(on_1), len(repeated), *[len(on_1)] * 3)
    )

    edit(profile, ONE_DURATION_PER_COMPUTE_SET)
    first, last, repeated = oracle_repeats(profile)
    code, found, _counts, stderr = doctor(profile)
    assert (code, found["status"]) == (0, "warn")
    assert found["data"] == expected_data(first, last, repeated)
    assert stderr == (
        "extract: warning: {}: inference 1 (steps {} to {}): all {} compute sets executed "
        "twice or more on an IPU took the same cycles every time (counted per IPU: IPU 0: {} "
        "of {}; IPU 1: {} of {}): the profile may record one duration per compute set, not "
        "one per execution: statistics over blocks or runs that reuse compute sets (extract "
        "blocks' statistics, extract compare --stat) show no variance by construction\n".format(
            profile, first, last, len(repeated), *[len(on_1)] * 4
        )
    )


def test_a_failing_check_still_exits_1_beside_the_warning(tmp_path):
    # Doctor's exit codes are as before: 1 when a check fails, the repeats warning or not.
    profile = copy_case(golden_case_folder(), tmp_path / "fails")
    edit(profile, ONE_DURATION_PER_COMPUTE_SET)
    double = profile.parent / "pva-double.json"
    facts = json.loads(double.read_text(encoding="utf-8"))
    for program in facts["programs"]:
        program["id"] += 1  # pva's ids one off from the profile's: step_programs fails
    double.write_text(json.dumps(facts), encoding="utf-8")
    result = invoke_extract("doctor", profile, "--json")
    assert result.code == 1
    assert result.stderr.startswith("extract: warning: {}: inference 1 ".format(profile))
    answer = json.loads(result.stdout.decode("ascii"))
    statuses = {c["name"]: c["status"] for c in answer["checks"]}
    assert statuses["step_programs"] == "fail" and statuses["repeats"] == "warn"
    assert answer["ok"] is False
