"""`extract trace` (docs/commands/trace.md) through the real CLI, held against
tests/support/trace_oracle.py, an independent reading of the spec with its own SQL, and
against the Trace Event Format's rules (trace_oracle.validate)."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from support.cases import copy_case, generator, two_ipus
from support.cli import invoke_extract
from support.paths import EDGE, GOLDEN
from support.trace_oracle import llround, oracle_trace, strict_load, validate

GOLDEN_PROFILE = GOLDEN / "poprt" / "profile_logs_f8weight" / "inference" / "profile.pop"
EDGE_CASES = sorted(path.name for path in EDGE.iterdir() if (path / "profile.pop").exists())


def trace(tmp_path, *args, pva=True, name="trace.json"):
    out = tmp_path / name
    result = invoke_extract("trace", *args, "-o", out, pva=pva)
    assert result.code == 0, result
    data = strict_load(out.read_bytes())
    validate(data)
    return data, result


def tracks(data, pid):
    return {
        e["tid"]: e["args"]["name"]
        for e in data["traceEvents"]
        if e["ph"] == "M" and e["pid"] == pid and e["name"] == "thread_name"
    }


def process_name(data, pid):
    (name,) = [
        e["args"]["name"]
        for e in data["traceEvents"]
        if e["ph"] == "M" and e["pid"] == pid and e["name"] == "process_name"
    ]
    return name


def got_slices(data, pid):
    """The slices of process `pid`, by kind of track, in the oracle's shapes (whole
    nanoseconds, as Perfetto reads them)."""
    names = tracks(data, pid)
    found = {"steps": [], "stages": [], "blocks": [], "inference_slices": []}
    for e in data["traceEvents"]:
        if e["ph"] != "X" or e["pid"] != pid:
            continue
        track = names[e["tid"]]
        ts, dur = llround(e["ts"] * 1000), llround(e["dur"] * 1000)
        args = e["args"]
        if track.startswith("IPU "):
            assert e["cat"] == args["kind"]
            found["steps"].append(
                (
                    track,
                    e["name"],
                    e["cat"],
                    ts,
                    dur,
                    args["step"],
                    args["cycles"],
                    args["active_tiles"],
                )
            )
        elif track.startswith("stages"):
            assert e["name"] == args["stage"]
            found["stages"].append((track, e["name"], ts, dur, args["rows"], args["cycles"]))
        elif track.startswith("blocks"):
            assert e["name"] == "block {}".format(args["block"])
            found["blocks"].append(
                (
                    track,
                    e["name"],
                    ts,
                    dur,
                    args["run"],
                    args["first_step"],
                    args["end_step"],
                    args["cycles"],
                )
            )
        else:
            assert track.startswith("inferences"), track
            found["inference_slices"].append((track, e["name"], ts, dur, args["device_span"]))
    return found


def check_against_oracle(data, pid, profile, **options):
    want = oracle_trace(profile, **options)
    got = got_slices(data, pid)
    for key in got:
        assert sorted(got[key], key=repr) == sorted(want[key], key=repr), key
    # every step row of the window exactly once
    assert len(got["steps"]) == len(want["window"])
    ordered = tracks(data, pid)
    order = {
        e["tid"]: e["args"]["sort_index"]
        for e in data["traceEvents"]
        if e["ph"] == "M" and e["pid"] == pid and e["name"] == "thread_sort_index"
    }
    names_in_order = [ordered[tid] for tid in sorted(order, key=order.get)]
    kinds = [n.split(" (")[0] if not n.startswith("IPU") else "IPU" for n in names_in_order]
    rank = {"IPU": 0, "stages": 1, "blocks": 2, "inferences": 3}
    assert [rank[k] for k in kinds] == sorted(rank[k] for k in kinds)
    ipu_tracks = [n for n in names_in_order if n.startswith("IPU")]

    def ipu_key(name):
        head, _, more = name.partition(" (")
        return int(head.split()[1]), int(more.rstrip(")") or 1)

    assert ipu_tracks == sorted(ipu_tracks, key=ipu_key)
    return want


# ---- the committed fixtures -----------------------------------------------------------


@pytest.mark.parametrize("case", EDGE_CASES)
@pytest.mark.parametrize("every", [False, True])
def test_edge_fixtures_match_the_oracle(case, every, tmp_path):
    profile = EDGE / case / "profile.pop"
    data, _ = trace(tmp_path, profile, *(["--all"] if every else []))
    check_against_oracle(data, 1, profile, every=every)


@pytest.mark.parametrize("options", [[], ["--all"], ["--run", "2"]])
def test_the_golden_profile_matches_the_oracle(options, tmp_path):
    data, _ = trace(tmp_path, GOLDEN_PROFILE, *options)
    runs = [int(options[1])] if options[:1] == ["--run"] else ()
    want = check_against_oracle(data, 1, GOLDEN_PROFILE, every="--all" in options, runs=runs)
    assert want["window"]
    starts = [e["ts"] for e in data["traceEvents"] if e["ph"] == "X"]
    assert min(starts) == 0


def test_multi_ipu_rows_that_overlap_open_a_second_track(tmp_path):
    data, _ = trace(tmp_path, EDGE / "multi-ipu" / "profile.pop", "--all")
    names = set(tracks(data, 1).values())
    assert {"IPU 0", "IPU 1", "stages", "blocks", "inferences"} <= names
    assert any(name.startswith("IPU 1 (") or name.startswith("IPU 0 (") for name in names)


def test_no_output_begins_runs_to_the_end_with_a_warning(tmp_path):
    profile = EDGE / "no-output-begins" / "profile.pop"
    data, result = trace(tmp_path, profile, "--run", "2")
    assert "inference 2 runs to the end of the trace" in result.stderr
    want = check_against_oracle(data, 1, profile, runs=[2])
    assert want["window"][-1] == oracle_trace(profile, every=True)["window"][-1]
    (inference,) = [e for e in data["traceEvents"] if e.get("cat") == "inference"]
    assert inference["args"]["device_span"] is None


# ---- generated profiles ----------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    generate = generator()
    specs = {
        "several runs": generate.vit_spec(
            blocks=4, runs=3, tiles=8, seed=3, detailed_blocks=(0, 3)
        ),
        "two ipus": two_ipus(generate.vit_spec(blocks=3, runs=2, tiles=8, seed=4)),
    }
    return {
        kind: generate.write_case(spec, tmp_path_factory.mktemp(kind.replace(" ", "-")))
        for kind, spec in specs.items()
    }


@pytest.mark.parametrize("kind", ["several runs", "two ipus"])
@pytest.mark.parametrize(
    "options", [[], ["--all"], ["--run", "2"], ["--run", "1", "--run", "3"], ["--run", "3"]]
)
def test_generated_profiles_match_the_oracle(generated, kind, options, tmp_path):
    profile = generated[kind]
    runs = [int(v) for k, v in zip(options, options[1:]) if k == "--run"]
    if kind == "two ipus" and 3 in runs:
        result = invoke_extract("trace", profile, *options, "-o", tmp_path / "t.json")
        assert result.code == 2, result
        assert "no run 3: the runs there are 1 to 2" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "t.json").exists()
        return
    data, _ = trace(tmp_path, profile, *options)
    want = check_against_oracle(data, 1, profile, every="--all" in options, runs=runs)
    inferences = [e for e in data["traceEvents"] if e.get("cat") == "inference"]
    expected = len(want["inferences"]) if "--all" in options else len(set(runs or [1]))
    assert len(inferences) == expected


def test_two_profiles_are_two_processes_each_from_zero(generated, tmp_path):
    first, second = generated["several runs"], generated["two ipus"]
    data, _ = trace(tmp_path, first, second)
    assert process_name(data, 1).startswith(str(first))
    assert process_name(data, 2).startswith(str(second))
    for pid, profile in ((1, first), (2, second)):
        check_against_oracle(data, pid, profile)
        starts = [e["ts"] for e in data["traceEvents"] if e["ph"] == "X" and e["pid"] == pid]
        assert min(starts) == 0
    sorts = {
        e["pid"]: e["args"]["sort_index"]
        for e in data["traceEvents"]
        if e["name"] == "process_sort_index"
    }
    assert sorts == {1: 1, 2: 2}


# ---- options ---------------------------------------------------------------------------


def test_pva_facts_are_in_the_args_unless_no_pva(tmp_path):
    profile = EDGE / "multi-ipu" / "profile.pop"
    with_pva, _ = trace(tmp_path, profile, name="a.json")
    without, _ = trace(tmp_path, profile, "--no-pva", name="b.json")
    steps = [e for e in with_pva["traceEvents"] if e.get("cat") == "OnTileExecute"]
    assert steps and all("vertices" in e["args"] for e in steps)
    assert any("ConvPartial1x1Out" in e["args"]["vertices"] for e in steps)
    assert all("max_exchange_code_bytes" in e["args"] for e in steps)
    for event in without["traceEvents"]:
        if event["ph"] == "X":
            assert "vertices" not in event["args"]
            assert "max_exchange_code_bytes" not in event["args"]
    check_against_oracle(without, 1, profile)


def test_without_a_clock_a_cycle_is_a_nanosecond(tmp_path):
    profile = EDGE / "one-anchor" / "profile.pop"
    data, _ = trace(tmp_path, profile)
    assert process_name(data, 1) == "{} (1 cycle = 1 ns)".format(profile)
    assert data["otherData"]["clock_mhz"] is None
    assert data["otherData"]["tool"].startswith("extract ")


def test_clock_mhz_sets_the_time_axis(tmp_path):
    profile = EDGE / "one-anchor" / "profile.pop"
    data, _ = trace(tmp_path, profile, "--clock-mhz", "250")
    assert process_name(data, 1) == str(profile)
    assert data["otherData"]["clock_mhz"] == 250
    check_against_oracle(data, 1, profile, clock_mhz=250.0)


def _with_clock(tmp_path, hz):
    profile = copy_case(EDGE / "one-anchor", tmp_path / "clocked")
    double = tmp_path / "clocked" / "pva-double.json"
    data = json.loads(double.read_text(encoding="utf-8"))
    data["target"] = {"clockFrequency": hz}
    double.write_text(json.dumps(data), encoding="utf-8")
    return profile


def test_pva_clock_sets_the_time_axis_unless_clock_mhz_or_no_pva(tmp_path):
    profile = _with_clock(tmp_path, 1.85e9)
    data, _ = trace(tmp_path, profile, name="pva.json")
    assert data["otherData"]["clock_mhz"] == 1850
    assert process_name(data, 1) == str(profile)
    check_against_oracle(data, 1, profile, clock_mhz=1850.0)
    data, _ = trace(tmp_path, profile, "--clock-mhz", "100", name="given.json")
    assert data["otherData"]["clock_mhz"] == 100
    data, _ = trace(tmp_path, profile, "--no-pva", name="none.json")
    assert data["otherData"]["clock_mhz"] is None
    assert process_name(data, 1).endswith("(1 cycle = 1 ns)")


def test_the_pva_double_serves_both_target_forms(tmp_path):
    from support.cli import pva_double

    pva = pva_double()
    profile = _with_clock(tmp_path, 1.33e9)
    target = pva.openReport(str(profile)).compilation.target
    assert target.clockFrequency == 1.33e9
    assert not hasattr(target, "numTiles")
    target = pva.openReport(str(EDGE / "multi-ipu" / "profile.pop")).compilation.target
    assert target.numIPUs == 2 and not hasattr(target, "clockFrequency")


def test_doctor_reports_the_clock(tmp_path):
    profile = _with_clock(tmp_path, 1.85e9)
    result = invoke_extract("doctor", profile, "--json")
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert "1850 MHz" in checks["clock"]["detail"]
    result = invoke_extract("doctor", EDGE / "one-anchor" / "profile.pop", "--json")
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert "gives no clock" in checks["clock"]["detail"]


# ---- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, words",
    [
        ([], "-o FILE"),
        (["-o", "{out}", "--run", "9"], "no run 9: the runs there are 1 to 1"),
        (["-o", "{out}", "--run", "0"], "numbered from 1"),
        (["-o", "{out}", "--run", "1", "--all"], "one or the other"),
        (["-o", "{out}", "--clock-mhz", "0"], "--clock-mhz"),
        (["-o", "{out}", "--clock-mhz", "nan"], "--clock-mhz"),
    ],
)
def test_usage_errors(options, words, tmp_path):
    out = tmp_path / "t.json"
    args = [o.format(out=out) for o in options]
    result = invoke_extract("trace", EDGE / "one-anchor" / "profile.pop", *args)
    assert result.code == 2, result
    assert words in result.stderr
    assert not out.exists()


def test_an_unreadable_profile_is_one_line_exit_1(tmp_path):
    bad = tmp_path / "profile.pop"
    bad.write_bytes(b"not a database" * 100)
    out = tmp_path / "t.json"
    result = invoke_extract("trace", bad, "-o", out, "--no-pva")
    assert result.code == 1, result
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_the_output_never_replaces_a_profile(tmp_path):
    profile = copy_case(EDGE / "one-anchor", tmp_path / "case")
    before = profile.read_bytes()
    result = invoke_extract("trace", profile, "-o", profile)
    assert result.code == 2, result
    assert profile.read_bytes() == before


# ---- hostile names ---------------------------------------------------------------------

HOSTILE = ['say "hi"\\ \x00\x01\x1f\x7f', "ünïcødé ✓ 名前 \U0001f600", "tab\tnew\nline\u2028"]


def test_hostile_names_stay_strict_json(tmp_path):
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    db = sqlite3.connect(str(profile))
    with db:
        ids = [row[0] for row in db.execute("SELECT id FROM programs ORDER BY id")]
        for index, program in enumerate(ids):
            name = HOSTILE[index % len(HOSTILE)]
            db.execute("UPDATE programs SET name = ? WHERE id = ?", (name, program))
        db.execute("UPDATE compute_sets SET name = ?", (HOSTILE[0],))
    db.close()
    data, _ = trace(tmp_path, profile, "--all", "--no-pva")
    raw = (tmp_path / "trace.json").read_bytes()
    raw.decode("ascii")  # every non-ASCII character escaped
    names = {e["name"] for e in data["traceEvents"] if e["ph"] == "X"}
    assert set(HOSTILE) & names
    check_against_oracle(data, 1, profile, every=True)


def test_a_profile_path_with_odd_characters_names_its_process(tmp_path):
    folder = tmp_path / 'odd "name" ✓'
    shutil.copytree(str(EDGE / "one-anchor"), str(folder))
    data, _ = trace(tmp_path, folder / "profile.pop")
    assert process_name(data, 1).startswith(str(folder / "profile.pop"))


def test_the_written_file_is_one_object(tmp_path):
    data, _ = trace(tmp_path, EDGE / "multi-ipu" / "profile.pop")
    assert list(data) == ["traceEvents", "displayTimeUnit", "otherData"]
    assert Path(tmp_path / "trace.json").read_bytes().endswith(b"}\n")


def test_device_spans_are_the_summarys(tmp_path):
    data, _ = trace(tmp_path, GOLDEN_PROFILE, "--all")
    spans = [
        e["args"]["device_span"]
        for e in sorted(data["traceEvents"], key=lambda e: e["name"])
        if e.get("cat") == "inference"
    ]
    expected = json.loads((GOLDEN / "expected.json").read_text(encoding="utf-8"))
    assert spans == expected["device_spans"]


def test_a_device_file_is_written_into(tmp_path):
    result = invoke_extract("trace", EDGE / "multi-ipu" / "profile.pop", "-o", "/dev/null")
    assert result.code == 0, result


def test_a_marker_step_without_rows_begins_no_inference(generated, tmp_path):
    """An input-delivered step with no step row is no inference: not for --run's window
    (found in the steps table, among the steps that have rows) nor for the inferences
    the pass meets as it reads the rows (--all)."""
    profile = copy_case(generated["several runs"].parent, tmp_path / "case")
    (_, first, last), _, _ = oracle_trace(profile, every=True)["inferences"]
    db = sqlite3.connect(str(profile))
    with db:
        program, compute_set = db.execute(
            "SELECT program, compute_set FROM steps WHERE id = ?", (first,)
        ).fetchone()
        inside = first + (last - first) // 2
        db.execute("DELETE FROM steps_by_ipu WHERE step_id = ?", (inside,))
        db.execute(
            "UPDATE steps SET type = 'StreamCopyEnd', program = ?, compute_set = ? WHERE id = ?",
            (program, compute_set, inside),
        )
    db.close()
    data, _ = trace(tmp_path, profile, "--all", "--no-pva", name="all.json")
    check_against_oracle(data, 1, profile, every=True)
    shown = sorted(e["name"] for e in data["traceEvents"] if e.get("cat") == "inference")
    assert shown == ["inference 1", "inference 2", "inference 3"]
    data, _ = trace(tmp_path, profile, "--run", "2", "--no-pva", name="run2.json")
    check_against_oracle(data, 1, profile, runs=[2])


def test_rows_stored_out_of_step_order_give_the_same_trace(tmp_path):
    """The stored-order read meets a row out of order and reads again, sorted: the
    events written before are written again, not twice."""
    profile = copy_case(EDGE / "multi-ipu", tmp_path / "case")
    db = sqlite3.connect(str(profile))
    with db:
        rows = list(db.execute("SELECT * FROM steps_by_ipu ORDER BY rowid"))
        db.execute("DELETE FROM steps_by_ipu")
        marks = ",".join("?" * len(rows[0]))
        for row in rows[len(rows) // 2 :] + rows[: len(rows) // 2]:
            db.execute("INSERT INTO steps_by_ipu VALUES ({})".format(marks), row)
    db.close()
    data, _ = trace(tmp_path, profile, "--all", "--no-pva")
    check_against_oracle(data, 1, profile, every=True)


def test_a_row_that_ends_before_it_starts_is_refused(tmp_path):
    profile = copy_case(EDGE / "one-anchor", tmp_path / "case")
    db = sqlite3.connect(str(profile))
    with db:
        step = db.execute("SELECT min(step_id) FROM steps_by_ipu").fetchone()[0]
        db.execute(
            "UPDATE steps_by_ipu SET active_cycles_to_max = active_cycles_from_min - 5 "
            "WHERE step_id = ?",
            (step + 1,),
        )
    db.close()
    out = tmp_path / "t.json"
    result = invoke_extract("trace", profile, "--all", "-o", out, "--no-pva")
    assert result.code == 1, result
    assert "is before its start" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
