"""One profile to its files is one function (pipeline.extract_profile), whether a single
run or a batch's worker asks: the same bytes either way, step tables included."""

import pytest

from conftest import EDGE, copy_case, golden_case_folder, run_extract

OUTPUTS = ("summary.json", "steps.csv", "first-body.csv")


@pytest.mark.parametrize("pva", [True, False], ids=["pva", "no-pva"])
def test_a_batch_writes_what_a_single_run_writes(tmp_path, pva):
    cases = {"vit": golden_case_folder(), "one-anchor": EDGE / "one-anchor",
             "unicode-names": EDGE / "unicode-names"}
    for name, source in cases.items():
        copy_case(source, tmp_path / "runs" / name)
    options = ["--csv"] + ([] if pva else ["--no-pva"])
    batch = run_extract("runs", "-o", "out", "-j", "2", *options, cwd=tmp_path)
    assert batch.code == 0, batch
    for name in cases:
        single = run_extract("runs/{}/profile.pop".format(name), "-o",
                             "single/{}/summary.json".format(name), *options, cwd=tmp_path)
        assert single.code == 0, single
        for output in OUTPUTS:
            written = (tmp_path / "single" / name / output).read_bytes()
            assert written, (name, output)
            assert (tmp_path / "out" / name / output).read_bytes() == written, (name, output)
