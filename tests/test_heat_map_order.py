"""The report's heat map puts its stage columns in the order the first body runs them,
not in the rules' order (the default rules list PV before the fused QKV projection, so
that the more specific pattern matches first)."""

from support.cases import copy_case, golden_case_folder
from support.cli import invoke_extract
from support.reportpage import parse


def test_columns_follow_the_first_body(tmp_path):
    copy_case(golden_case_folder(), tmp_path / "runs" / "vit")
    assert invoke_extract("runs", "-o", "out", "--blocks", "-j", "1", cwd=tmp_path).code == 0
    result = invoke_extract("report", "out", "-o", "r.html", cwd=tmp_path)
    assert result.code == 0, result
    page = parse((tmp_path / "r.html").read_bytes())
    heads = [th.text() for th in page.find("details", cls="heat-map").find("thead").find_all("th")]
    # The reference profile's first block runs, in step order (fixtures/vit-f8weight/
    # expected.json's kernels): QKV, QK transpose, PV, output projection, MLP up and down;
    # then "other", which the first body does not run (the model's head, in the last body
    # of each inference), in the rules' order.
    assert heads == [
        "run",
        "block",
        "fused QKV projection",
        "QK transpose",
        "PV",
        "output projection",
        "MLP up",
        "MLP down",
        "other",
        "total",
    ]
