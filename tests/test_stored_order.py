"""Step rows are read as stored when that is the spec's order, else sorted by SQLite.

summary.py first reads steps_by_ipu in storage order (no sort) and checks, row by row,
that step ids never go down; on the first that does, it reads again, sorted. Either way
the summary is the one the spec defines."""

from extractor.core.profile import Profile
from extractor.core.summary import summarize
from support.cases import copy_case, golden_case_folder, stored_backwards
from support.cli import run_extract


def _reads(monkeypatch):
    """The `stored_order` argument of every read of the step rows, in order."""
    reads = []
    original = Profile.step_row_batches

    def recorded(self, *args, **kwargs):
        reads.append(kwargs.get("stored_order", False))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Profile, "step_row_batches", recorded)
    return reads


def test_a_profile_in_step_order_is_read_once_unsorted(tmp_path, monkeypatch):
    profile = copy_case(golden_case_folder(), tmp_path / "in-order")
    reads = _reads(monkeypatch)
    summarize(profile, use_pva=False)
    assert reads == [True]


def test_a_profile_out_of_order_is_read_again_sorted(tmp_path, monkeypatch):
    profile = copy_case(golden_case_folder(), tmp_path / "backwards")
    stored_backwards(profile)
    reads = _reads(monkeypatch)
    summarize(profile, use_pva=False)
    assert reads == [True, False]


def test_step_tables_are_fed_sorted_rows_from_the_start(tmp_path, monkeypatch):
    profile = copy_case(golden_case_folder(), tmp_path / "csv")
    reads = _reads(monkeypatch)
    summarize(profile, use_pva=False, step_sink=lambda row, facts, in_body: None)
    assert reads == [False]


def test_the_summary_does_not_depend_on_the_storage_order(tmp_path):
    outputs = []
    for name, backwards in (("in-order", False), ("backwards", True)):
        folder = tmp_path / name
        profile = copy_case(golden_case_folder(), folder)
        if backwards:
            stored_backwards(profile)
        result = run_extract("profile.pop", "-o", "summary.json", cwd=folder)
        assert result.code == 0, result
        outputs.append((folder / "summary.json").read_bytes())
    assert outputs[0] == outputs[1]
    assert b'"qkv_executions": 0' not in outputs[0]  # a real summary, with kernels
