"""The masked exchange name against the budget spec's own words ("Metrics"):

    a `cs<digits>_` or `copy<digits>_` prefix at the start of the name or after `{`, `,`
    or `/` becomes `cs#_` or `copy#_`, and a path part made only of digits (between `/`
    and one of `/ , { }` or the end) becomes `#`.

Each expected value below is worked out by hand from that sentence; the last test runs a
hostile name through `extract compare` and `extract table`, where the masked name is the
metric's name.
"""

import csv
import io
import json

import pytest

from extractor.core.metrics import mask_ids
from support.cli import invoke_extract
from support.paths import GOLDEN


@pytest.mark.parametrize(
    "name, masked",
    [
        # A prefix at the start of the name, or right after `{`, `,` or `/`.
        ("cs5_/b", "cs#_/b"),
        ("copy12_x", "copy#_x"),
        ("x{cs5_", "x{cs#_"),
        ("x,copy12_", "x,copy#_"),
        ("a/cs5_b", "a/cs#_b"),
        ("{copy1_,cs22_}", "{copy#_,cs#_}"),
        # After anything else it is part of another word: kept.
        ("a-cs5_/b", "a-cs5_/b"),
        ("a.cs5_/b", "a.cs5_/b"),
        ("a cs5_/b", "a cs5_/b"),
        ("a_cs5_/b", "a_cs5_/b"),
        ("}cs5_", "}cs5_"),
        ("(cs5_)", "(cs5_)"),
        ("a:copy3_", "a:copy3_"),
        # A prefix needs its digits and its underscore.
        ("cs_/a", "cs_/a"),
        ("cs5/a", "cs5/a"),
        ("CS5_/a", "CS5_/a"),
        # A path part of digits only: after `/`, up to `/`, `,`, `{`, `}` or the end.
        ("/123/", "/#/"),
        ("/123}", "/#}"),
        ("/123{", "/#{"),
        ("/123,", "/#,"),
        ("a/123", "a/#"),
        ("/1/22/333/", "/#/#/#/"),
        # Not only digits, not after `/`, or not ending where a part ends: kept.
        ("/12a/", "/12a/"),
        ("/a12/", "/a12/"),
        ("{123}", "{123}"),
        (",123,", ",123,"),
        ("/123-", "/123-"),
        ("/123 ", "/123 "),
        ("/123_", "/123_"),
        # The end is the end of the name: not before a final newline.
        ("/123\n", "/123\n"),
        ("/123\n/4", "/123\n/#"),
    ],
)
def test_mask_ids_as_the_spec_words_it(name, masked):
    assert mask_ids(name) == masked


def _summary_with_exchange(tmp_path, folder, name):
    summary = json.loads((GOLDEN / "expected.json").read_text())
    summary["attention_exchanges"][0]["name"] = name
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / "summary.json"
    path.write_text(json.dumps(summary))
    return path


def test_a_prefix_after_a_dash_is_not_masked_in_compare_and_table(tmp_path):
    # Two compilations: the ids after `/` are masked and match; the `cs5_` after `-` is
    # part of the name, so `a-cs5_` and `a-cs6_` are two different exchanges.
    a = _summary_with_exchange(tmp_path, "a", "cs1_/m/a-cs5_/7/ExchangePre")
    b = _summary_with_exchange(tmp_path, "b", "cs2_/m/a-cs6_/8/ExchangePre")
    result = invoke_extract("compare", a, b, "-f", "csv")
    assert result.code == 0, result
    rows = list(csv.reader(io.StringIO(result.stdout.decode("utf-8"), newline="")))
    exchanges = {
        row[1]: row[-2]
        for row in rows
        if row[0] == "attention exchanges" and row[2].endswith("max")
    }
    assert exchanges["cs#_/m/a-cs5_/#/ExchangePre"] == "unmatched"
    assert exchanges["cs#_/m/a-cs6_/#/ExchangePre"] == "unmatched"
    table = invoke_extract("table", a)
    assert table.code == 0, table
    metrics = [row[2] for row in csv.reader(io.StringIO(table.stdout.decode("utf-8")))]
    assert "attention_exchange:cs#_/m/a-cs5_/#/ExchangePre" in metrics
