"""Text from a profile that becomes a JSON key: the diff's `by_stage[].kinds` is keyed by
a step's kind (`steps.type`, any text or even a blob). JSON writes it as json.dumps
would (core/summary_json.py, for every writer of that layout): `--format json` of a
kind beyond ASCII used to end in "unexpected failure: TypeError: summary keys must be
ASCII strings", while markdown, CSV, `extract` and `extract blocks` took the profile."""

import json
import sqlite3

import pytest
from test_diff_cli import ladder

from support.cli import invoke_extract
from support.diffcli import expect_diff


def with_exchange_kind(profile, kind):
    """The profile with its exchange step's kind (steps.type) set to `kind`."""
    db = sqlite3.connect(str(profile))
    db.execute("UPDATE steps SET type = ? WHERE type = 'DoExchange'", (kind,))
    db.commit()
    db.close()
    return profile


@pytest.mark.parametrize(
    "kind",
    [
        "DoExchang\u00e9",
        "Do\U0001f600Exchange",
        "Do\x1b[2JExchange\x7f",
        "DoExchang\u00e9".encode("utf-8"),  # a blob of UTF-8 text
    ],
)
def test_a_kind_beyond_ascii_keys_the_json(tmp_path, kind):
    base = with_exchange_kind(ladder(tmp_path / "a", [10, 20]), kind)
    candidate = with_exchange_kind(ladder(tmp_path / "b", [10, 25]), kind)
    want = expect_diff(base, candidate)  # the oracle's bytes, CSV too
    text = kind.decode("utf-8") if isinstance(kind, bytes) else kind
    stage = [s for s in want["by_stage"] if text in s["kinds"]]
    assert len(stage) == 1 and stage[0]["kinds"][text] == {"base": 30, "candidate": 30}


def test_a_kind_that_is_not_utf8_keys_the_json(tmp_path):
    """A blob that is not UTF-8: its bad bytes read as U+FFFD, as in markdown and CSV."""
    base = with_exchange_kind(ladder(tmp_path / "a", [10, 20]), b"Do\xffExchange")
    result = invoke_extract("diff", base, base, "--format", "json")
    assert result.code == 0 and "extract: error" not in result.stderr, result
    assert b'"Do\\ufffdExchange": {' in result.stdout
    kinds = [k["kind"] for k in json.loads(result.stdout.decode("ascii"))["by_kind"]]
    assert kinds == ["OnTileExecute", "Do\ufffdExchange"]  # the body: the anchor to the output
