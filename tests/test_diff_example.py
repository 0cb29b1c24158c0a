"""`extract diff` on the two committed profiles: the golden one and
fixtures/vit-f8weight-recompiled, whose README lists every change by hand (worked out
from the edits and the golden profile's rows, not by running extract). The numbers
asserted here are that README's; the committed example (examples/diff-recompiled.md)
must be what the command prints today. (The README shows an excerpt of it, as the tool
prints it: tests/test_doc_commands.py runs the README's command and checks that.)
"""

import json

from support.cli import invoke_extract
from support.paths import REPO

GOLDEN = "fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop"
RECOMPILED = "fixtures/vit-f8weight-recompiled/profile.pop"
EXAMPLE = REPO / "examples" / "diff-recompiled.md"


def _diff(*args, pva=True):
    result = invoke_extract("diff", GOLDEN, RECOMPILED, *args, cwd=REPO, pva=pva)
    assert result.code == 0, result
    return result


def test_the_recompilation_is_accounted_for_as_its_readme_says():
    diff = json.loads(_diff("--format", "json").stdout)
    # fixtures/vit-f8weight-recompiled/README.md: anchors 101/252 -> 1101/1253, 151 ->
    # 152 steps, 861887 -> 846709 cycles; 6 changed, 2 added, 1 removed, 144 same.
    assert [
        diff[side][key]
        for side in ("base", "candidate")
        for key in ("first_step", "end_step", "units", "cycles")
    ] == [101, 252, 151, 861887, 1101, 1253, 152, 846709]
    assert diff["change"] == -15178
    assert diff["counts"] == {"same": 144, "changed": 6, "added": 2, "removed": 1}
    assert diff["differences"] == []  # same tiles, inferences, bodies; pva on both
    shown = [
        (
            entry["status"],
            entry["base"]["step"] if entry["base"] else None,
            entry["candidate"]["step"] if entry["candidate"] else None,
            entry["change"],
            entry["fields"],
        )
        for entry in diff["steps"]
    ]
    assert shown == [
        ("changed", 211, 1212, 41012 - 48248, ["cycles"]),  # MLP up
        ("changed", 240, 1241, 46968 - 52187, ["cycles"]),  # MLP down
        ("changed", 101, 1101, 33541 - 37277, ["cycles", "vertices"]),  # QKV
        ("added", None, 1103, 2954, []),  # the cast
        ("changed", 157, 1158, 12021 - 14153, ["cycles"]),  # output projection
        ("added", None, 1102, 1187, []),  # the cast's exchange
        ("removed", 107, None, -996, []),  # the exchange fused away
        # equal changes (0): alignment order
        ("changed", 120, 1121, 0, ["max_exchange_code_bytes"]),
        ("changed", 146, 1147, 0, ["active_tiles"]),
    ]


def test_without_pva_the_exchange_code_is_not_compared():
    diff = json.loads(_diff("--format", "json", "--no-pva", pva=False).stdout)
    assert diff["counts"] == {"same": 145, "changed": 5, "added": 2, "removed": 1}
    qkv = [
        entry
        for entry in diff["steps"]
        if entry["candidate"] and entry["candidate"]["step"] == 1101
    ]
    assert qkv[0]["fields"] == ["cycles"]
    assert qkv[0]["candidate"]["vertices"] is None


def test_the_markdown_says_what_changed_in_words():
    text = _diff().stdout.decode()
    lines = text.splitlines()
    # A body's cycles are all cycles (every step row's), as the headline says.
    assert lines[0] == "# extract diff: 861887 -> 846709 all cycles, -15178 (-1.76%)"
    assert lines[2].endswith("(151 steps, from 101 to before 252): 861887 all cycles")
    assert lines[3].endswith("(152 steps, from 1101 to before 1253): 846709 all cycles")
    assert lines[5] == "## Where the time went: all cycles, stages by kinds"
    assert (
        "vertices: `poplin::ConvPartial1x1Out<half,half,true,false,16,4,false>` -> "
        "`poplin::ConvPartial1x1Out<quarter,half,true,false,16,4,false>`"
    ) in text
    assert "| tiles: 1440 -> 1472 |" in text
    assert "| exchange code: 248 -> 400 bytes |" in text
    assert lines[-1] == (
        "9 steps differ (6 changed, 2 added, 1 removed; 144 same): their changes add up to "
        "-15178 cycles, the whole change."
    )


def test_the_committed_example_is_what_the_command_prints():
    assert EXAMPLE.read_text(encoding="utf-8") == _diff().stdout.decode()


def test_the_library_gives_what_the_command_writes():
    """docs/library.md's diff_profiles and to_json: the CLI's bytes, from Python."""
    from extractor import load_rules
    from extractor.diff.command import diff_profiles
    from extractor.diff.formats import to_json

    diff = diff_profiles(REPO / GOLDEN, REPO / RECOMPILED, load_rules(), pva=None)
    mine = json.loads(to_json(diff))
    cli = json.loads(_diff("--format", "json", "--no-pva", pva=False).stdout)
    for side, path in (("base", GOLDEN), ("candidate", RECOMPILED)):
        assert mine[side].pop("profile") == str(REPO / path)  # the path as given
        assert cli[side].pop("profile") == path
    assert mine == cli
