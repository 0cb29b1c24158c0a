"""One profile to its files is one function (pipeline.extract_profile), whether a single
run or a batch's worker asks: the same bytes either way, step tables included."""

import pytest

from support.cases import copy_case, golden_case_folder
from support.cli import invoke_extract
from support.paths import EDGE

OUTPUTS = ("summary.json", "steps.csv", "first-body.csv")


@pytest.mark.parametrize("pva", [True, False], ids=["pva", "no-pva"])
def test_a_batch_writes_what_a_single_run_writes(tmp_path, pva):
    cases = {
        "vit": golden_case_folder(),
        "one-anchor": EDGE / "one-anchor",
        "unicode-names": EDGE / "unicode-names",
    }
    for name, source in cases.items():
        copy_case(source, tmp_path / "runs" / name)
    options = ["--csv"] + ([] if pva else ["--no-pva"])
    batch = invoke_extract("runs", "-o", "out", "-j", "2", *options, cwd=tmp_path)
    assert batch.code == 0, batch
    for name in cases:
        single = invoke_extract(
            "runs/{}/profile.pop".format(name),
            "-o",
            "single/{}/summary.json".format(name),
            *options,
            cwd=tmp_path,
        )
        assert single.code == 0, single
        for output in OUTPUTS:
            written = (tmp_path / "single" / name / output).read_bytes()
            assert written, (name, output)
            assert (tmp_path / "out" / name / output).read_bytes() == written, (name, output)


def test_the_wheel_carries_every_subpackage(tmp_path, wheel):
    # Run from an unpacked wheel, away from the checkout: a batch (extractor.run.batch), a
    # comparison with its chart (extractor.compare) and inspect (extractor.diagnose).
    import os
    import subprocess
    import sys
    import zipfile

    from support.paths import PVA_DOUBLE

    with zipfile.ZipFile(str(wheel)) as archive:
        archive.extractall(str(tmp_path / "site"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), str(PVA_DOUBLE)]))
    work = tmp_path / "elsewhere"
    copy_case(golden_case_folder(), work / "runs" / "a")
    copy_case(golden_case_folder(), work / "runs" / "b")

    def extract(*args):
        done = subprocess.run(
            [sys.executable, "-m", "extractor"] + list(args),
            cwd=str(work),
            env=env,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout

    extract("runs", "-o", "out", "-j", "2", "-q")
    table = extract("compare", "out/a", "out/b", "--chart", "chart.svg", "-f", "csv")
    assert table.startswith(b"section,metric,unit,a,b,") and (work / "chart.svg").exists()
    assert b"steps" in extract("inspect", "runs/a/profile.pop", "--no-pva")
    # ...and it was the wheel's copy that ran, not the checkout's.
    where = (
        subprocess.run(
            [sys.executable, "-c", ("import extractor.run.batch.run as m; print(m.__file__)")],
            cwd=str(work),
            env=env,
            stdout=subprocess.PIPE,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    assert where.startswith(str(tmp_path / "site")), where
