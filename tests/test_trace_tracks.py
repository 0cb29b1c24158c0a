"""`extract trace`'s tracks through the real CLI: tids that ascend in the order the
tracks are shown however late a track opens, and never equal their pid; work per row
that does not grow with the rows of one step."""

import sqlite3
import time

from test_trace import check_against_oracle, trace, tracks

from extractor.timeline.tracks import MAX_IPUS
from support.cases import copy_case, generator
from support.cli import invoke_extract
from support.paths import EDGE


def _ipu0_track_after_stages(folder):
    """multi-ipu, with its last two steps' first rows made to begin with the trace: each
    overlaps every track of IPU 0 before it, so `IPU 0 (3)` opens last, after
    `stages`, `blocks` and `inferences` exist."""
    profile = copy_case(EDGE / "multi-ipu", folder)
    db = sqlite3.connect(str(profile))
    with db:
        (low,) = db.execute("SELECT min(cycles_base) FROM steps_by_ipu").fetchone()
        for (step,) in db.execute(
            "SELECT DISTINCT step_id FROM steps_by_ipu ORDER BY step_id DESC LIMIT 2"
        ).fetchall():
            db.execute(
                "UPDATE steps_by_ipu SET cycles_base = ?, active_cycles_from_min = 0 "
                "WHERE rowid = (SELECT min(rowid) FROM steps_by_ipu WHERE step_id = ?)",
                (low, step),
            )
    db.close()
    return profile


def test_tids_ascend_in_display_order_and_are_never_the_pid(tmp_path):
    """Two profiles (pid 1 and 2), the second's `IPU 0 (3)` opening after its other
    kinds of track: tids in sort-index order ascend (trace_oracle.validate), none is its
    pid, and the order is IPU 0, IPU 0 (2), IPU 0 (3), IPU 1..., stages, blocks,
    inferences."""
    late = _ipu0_track_after_stages(tmp_path / "late")
    data, _ = trace(tmp_path, EDGE / "multi-ipu" / "profile.pop", late, "--all", "--no-pva")
    for pid, profile in ((1, EDGE / "multi-ipu" / "profile.pop"), (2, late)):
        check_against_oracle(data, pid, profile, every=True)
        names = tracks(data, pid)
        assert pid not in names
        by_tid = [names[tid] for tid in sorted(names)]
        assert by_tid[:3] == ["IPU 0", "IPU 0 (2)", "IPU 0 (3)"] or pid == 1
        kinds = [name.split(" (")[0] for name in by_tid]
        firsts = [kind for n, kind in enumerate(kinds) if kind not in kinds[:n]]
        assert firsts[-3:] == ["stages", "blocks", "inferences"]
        assert all(kind.startswith("IPU ") for kind in firsts[:-3])
        assert [int(kind.split()[1]) for kind in firsts[:-3]] == list(range(len(firsts) - 3))
    assert "IPU 0 (3)" in tracks(data, 2).values()


def _one_step_of(rows, folder):
    """one-anchor with a step of `rows` rows (one per IPU) inside its first inference."""
    profile = copy_case(EDGE / "one-anchor", folder)
    db = sqlite3.connect(str(profile))
    with db:
        (step,) = db.execute(
            "SELECT step_id FROM steps_by_ipu ORDER BY rowid LIMIT 1 OFFSET 3"
        ).fetchone()
        row = db.execute(
            "SELECT * FROM steps_by_ipu WHERE step_id = ? ORDER BY rowid LIMIT 1", (step,)
        ).fetchone()
        marks = ",".join("?" * len(row))
        db.executemany("INSERT INTO steps_by_ipu VALUES ({})".format(marks), [row] * (rows - 1))
    db.close()
    return profile


def _timed(*args):
    began = time.perf_counter()
    result = invoke_extract(*args, pva=False)
    assert result.code == 0, result
    return time.perf_counter() - began


def test_the_rows_of_one_step_cost_the_same_each(tmp_path):
    """16,000 rows of one step (16,000 IPUs) once took trace 11 times extract's time (a
    list of every IPU's first track rebuilt for each IPU met: quadratic); now each row
    costs what any row does (about extract's time). Bound: 3x `extract --no-pva` on the
    same profile, measured here."""
    profile = _one_step_of(16000, tmp_path / "wide")
    out = tmp_path / "out"
    out.mkdir()
    plain = min(_timed(profile, "--no-pva", "-o", out / "s.json") for _ in range(2))
    traced = min(
        _timed("trace", profile, "--all", "--no-pva", "-o", out / "t.json") for _ in range(2)
    )
    assert traced < 3 * plain, (traced, plain)
    data, _ = trace(tmp_path, profile, "--all", "--no-pva", name="check.json")
    assert "IPU 15999" in tracks(data, 1).values()


def test_rows_that_overlap_by_the_dozen_take_the_first_free_track(tmp_path):
    """Rows at scattered times, most overlapping many others: dozens of tracks on one
    IPU, each row on the first free one (past the first 16, found in a tree of the
    tracks' ends, tracks.FirstFit), exactly as the oracle's plain scan puts it."""
    generate = generator()
    spec = generate.vit_spec(blocks=4, runs=3, tiles=8, seed=7)
    profile = generate.write_case(spec, tmp_path / "case")
    db = sqlite3.connect(str(profile))
    with db:
        db.execute(
            "UPDATE steps_by_ipu SET cycles_base = (rowid * 7919) % 50000, "
            "active_cycles_from_min = 0, active_cycles_to_max = (rowid * 31) % 20000"
        )
    db.close()
    data, _ = trace(tmp_path, profile, "--all", "--no-pva")
    check_against_oracle(data, 1, profile, every=True)
    assert len([n for n in tracks(data, 1).values() if n.startswith("IPU 0")]) > 50


def test_a_step_of_more_rows_than_tids_can_order_is_one_error(tmp_path):
    profile = _one_step_of(MAX_IPUS + 1, tmp_path / "wide")
    out = tmp_path / "t.json"
    result = invoke_extract("trace", profile, "--all", "--no-pva", "-o", out, pva=False)
    assert result.code == 1, result
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("extract: error: {}: ".format(profile)), line
    assert "a step has more than {} rows (one per IPU)".format(MAX_IPUS) in line
    assert not out.exists()
