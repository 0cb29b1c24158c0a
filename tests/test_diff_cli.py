"""`extract diff` (docs/formats/diff.md) as a user meets it: the markdown a person reads (its
headline, the differences, the table of stages by kinds, the `--top N` step lines with
what changed in words, the last line's counts, `|` escaped), `-o` written atomically,
bodies that do not exist (usage errors, exit 2) and profiles that cannot be read (one
line, exit 1). The numbers checked come from tests/support/diff_oracle.py, an independent
reading of the spec, never from the command itself.

The markdown's layout is the spec's in words only, so it is checked by what it must hold:
a table is a run of lines starting with `|`; a step line is found by a name token of its
own (`opNNz`); escapes (`\\|`, `&lt;`) are undone before a name is looked for.
"""

import html
import re
import shutil
import sqlite3

import pytest

from support.cases import copy_case, generator
from support.checks import json_bytes, one_error
from support.cli import invoke_extract
from support.diff_oracle import check_accounting
from support.diffcli import diff_args, expect_diff, oracle_for
from support.longbody import CONV, one_inference
from support.paths import EDGE, GOLDEN, REPO

GOLDEN_PROFILE = "fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop"
MULTI_IPU = "fixtures/edge/multi-ipu/profile.pop"
EXCHANGE = "cs7_/m/blocks/blocks.0/mlp/fc2/1234/ExchangePre"


# ---- a hand-made trace ---------------------------------------------------------------


def ladder(folder, ops, tiles=None, vertices=None, code=(324,), names=None):
    """A profile of one inference: copyFromHost (step 1, input delivered), the anchor
    (step 2, 100 cycles), one OnTileExecute step per entry of `ops` (its cycles), named
    `/m/blocks/blocks.0/mlp/opNNz/Add` unless `names` gives another, with `tiles[k]`
    active tiles (default 4) and `vertices[k]` (default CONV), then an exchange with
    `code` bytes per tile (30 cycles), then copyToHost (output begins). Returns the
    profile's path."""
    g = generator()
    spec = one_inference(
        g,
        g.Program(90, EXCHANGE, "DoExchange", list(code)),
        g.Program(91, "copyToHost", "StreamCopyBegin"),
    )
    entries = [(1, "StreamCopyEnd", 1, None, 40), (2, "OnTileExecute", 2, 1, 100)]
    for k, cycles in enumerate(ops):
        name = (names or {}).get(k, "/m/blocks/blocks.0/mlp/op{:02d}z/Add".format(k))
        spec.programs.append(g.Program(10 + k, "OnTileExecute: " + name, "OnTileExecute"))
        spec.compute_sets.append(g.ComputeSet(10 + k, name, [(vertices or {}).get(k, CONV)]))
        entries.append((3 + k, "OnTileExecute", 10 + k, 10 + k, cycles))
    entries.append((3 + len(ops), "DoExchange", 90, None, 30))
    entries.append((4 + len(ops), "StreamCopyBegin", 91, None, 40))
    for step, kind, program, compute_set, cycles in entries:
        spec.steps.append(g.Step(step, kind, program, compute_set))
        active = (tiles or {}).get(step - 3, 4)
        spec.steps_by_ipu.append(g.step_row(step, 100 * step, 100 * step + 90, cycles, active))
    return g.write_case(spec, folder)


# ---- reading the markdown --------------------------------------------------------------


def plain(text):
    """Markdown text with its escapes undone: `\\x` -> `x`, entities, code spans' ticks;
    and thousands separators between digits dropped (`25,300` -> `25300`)."""
    text = html.unescape(re.sub(r"\\(.)", r"\1", text)).replace("`", "")
    return re.sub(r"(?<=\d)[,_'\u202f\u00a0](?=\d{3}(?!\d))", "", text)


def tables(lines):
    """Runs of consecutive lines that start with `|`."""
    found, current = [], []
    for line in lines + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            found.append(current)
            current = []
    return found


def cells(line):
    """A table line's cell count: the `|` not escaped by a backslash, less one."""
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", line)) - 1


def markdown(*args, cwd=REPO):
    result = invoke_extract(*args, cwd=cwd)
    assert result.code == 0, result
    text = result.stdout.decode("utf-8")
    assert text.endswith("\n") and result.stderr == ""
    return text.splitlines()


def names_a_body(text, profile, run, block):
    """The text names the profile and the body (`run R, block K`, `R:K` or alike)."""
    spelled = re.search(r"\brun\W{{0,3}}{}\b.{{0,20}}\bblock\W{{0,3}}{}\b".format(run, block), text)
    return str(profile) in text and (spelled is not None or "{}:{}".format(run, block) in text)


def shows_percent(text, base, change):
    """A number followed by `%` that is the change in percent (rounded any way)."""
    percent = 100.0 * change / base
    shown = [float(p) for p in re.findall(r"(\d+(?:\.\d+)?)\s*%", text)]
    return any(abs(p - abs(percent)) <= 0.5 for p in shown)


# ---- the markdown ---------------------------------------------------------------------


def before_the_steps(lines, want):
    """The lines before the first that shows a step entry's name: the headline, the
    differences and the table of stages by kinds."""
    names = [(e["base"] or e["candidate"])["name"] for e in want["steps"]]
    for index, line in enumerate(lines):
        if any(name in plain(line) for name in names):
            return lines[:index]
    return lines


def test_headline_differences_stage_table_and_last_line():
    base, candidate = MULTI_IPU, "fixtures/edge/one-anchor/profile.pop"
    want = oracle_for(base, candidate)
    lines = markdown("diff", base, candidate)
    first_table = next(i for i, line in enumerate(lines) if line.startswith("|"))
    head = plain("\n".join(lines[:first_table]))
    assert names_a_body(head, base, 1, 0) and names_a_body(head, candidate, 1, 0)
    assert "1513" in head and "1023" in head and "490" in head  # by hand: see test_diff_spec
    assert shows_percent(head, 1513, -490)
    # The differences (by hand: 8 tiles against 4, 2 anchors against 1), before the steps.
    early = [plain(line) for line in before_the_steps(lines, want)]
    assert len(want["differences"]) == 2
    for fact in want["differences"]:
        pattern = r"\b{}\D+{}\D+{}\b".format(fact["fact"], fact["base"], fact["candidate"])
        assert any(re.search(pattern, line) for line in early), fact
    # The stage table: a line per stage and kind, with base, candidate and change.
    for stage in want["by_stage"]:
        for kind, sides in stage["kinds"].items():
            numbers = [str(sides["base"]), str(sides["candidate"])]
            numbers.append(str(abs(sides["candidate"] - sides["base"])))
            assert any(
                line.startswith("|")
                and stage["stage"] in line
                and kind in line
                and all(n in line for n in numbers)
                for line in early
            ), (stage["stage"], kind)
    # The last line: the four counts and the sum the entries add up to.
    last = plain([line for line in lines if line.strip()][-1])
    numbers = [int(n) for n in re.findall(r"\d+", last)]
    for status, count in want["counts"].items():
        assert status in last and count in numbers, (status, last)
    assert abs(want["change"]) in numbers
    assert sum(e["change"] for e in want["steps"]) == want["change"]


def test_the_headline_names_two_bodies_of_one_profile():
    options = {"block": (1, 3), "candidate_block": (2, 5)}
    lines = markdown(*diff_args(GOLDEN_PROFILE, GOLDEN_PROFILE, **options))
    want = oracle_for(GOLDEN_PROFILE, GOLDEN_PROFILE, **options)
    head = plain("\n".join(lines[: next(i for i, x in enumerate(lines) if x.startswith("|"))]))
    assert names_a_body(head, GOLDEN_PROFILE, 1, 3) and names_a_body(head, GOLDEN_PROFILE, 2, 5)
    for number in (want["base"]["cycles"], want["candidate"]["cycles"], abs(want["change"])):
        assert str(number) in head
    assert shows_percent(head, want["base"]["cycles"], want["change"])


def step_lines(lines, count):
    """Which `opNNz` tokens the step lines show, in order (one token a line)."""
    shown = []
    for line in lines:
        tokens = re.findall(r"op(\d\d)z", line)
        assert len(set(tokens)) <= 1, line
        if tokens:
            shown.append(int(tokens[0]))
    assert all(k < count for k in shown)
    return shown


def test_top_limits_the_step_lines(tmp_path):
    """25 steps, step k 10 * (k + 1) cycles slower: the largest changes are the last."""
    base = ladder(tmp_path / "a", [1000] * 25)
    candidate = ladder(tmp_path / "b", [1000 + 10 * (k + 1) for k in range(25)])
    want = expect_diff(base, candidate)
    assert [e["change"] for e in want["steps"]] == [10 * (k + 1) for k in reversed(range(25))]
    assert step_lines(markdown("diff", base, candidate), 25) == list(range(24, 4, -1))
    assert step_lines(markdown("diff", base, candidate, "--top", "3"), 25) == [24, 23, 22]
    assert step_lines(markdown("diff", base, candidate, "--top", "30"), 25) == list(
        range(24, -1, -1)
    )
    last = plain(markdown("diff", base, candidate, "--top", "3")[-1])
    assert str(want["change"]) in last  # all 25 entries' sum, not the 3 shown


def test_what_changed_in_words(tmp_path):
    base = ladder(tmp_path / "a", [500, 600, 700], tiles={0: 1440}, code=(324, 0))
    other = "poplin::ConvPartial1x1Out<quarter,half,true,false,16,4,false>"
    candidate = ladder(
        tmp_path / "b", [500, 650, 700], tiles={0: 1472}, vertices={2: other}, code=(0, 400)
    )
    want = expect_diff(base, candidate)
    assert sorted(tuple(e["fields"]) for e in want["steps"]) == [
        ("active_tiles",),
        ("cycles",),
        ("max_exchange_code_bytes",),
        ("vertices",),
    ]
    text = plain("\n".join(markdown("diff", base, candidate)))
    assert "tiles: 1440 -> 1472" in text
    assert "exchange code: 324 -> 400 bytes" in text
    assert "vertices: {} -> {}".format(CONV, other) in text
    for e in want["steps"]:
        line = next(x for x in text.splitlines() if (e["base"] or e["candidate"])["name"] in x)
        assert e["status"] in line and e["stage"] in line and e["kind"] in line


def test_pipes_in_names_and_vertex_types_keep_the_tables(tmp_path):
    names = {0: "/m/blocks/blocks.0/mlp/op00z|x|/Add", 1: "/m/blocks/blocks.0/mlp/op01z/a|b"}
    base = ladder(tmp_path / "a", [10, 20], names=names, vertices={0: "v|<half>"})
    candidate = ladder(tmp_path / "b", [15, 20], names=names, vertices={0: "v|<quarter>"})
    want = expect_diff(base, candidate)
    assert want["steps"][0]["fields"] == ["cycles", "vertices"]
    lines = markdown("diff", base, candidate)
    found = tables(lines)
    assert len(found) >= 2  # stages by kinds, then the steps
    for table in found:
        assert len({cells(line) for line in table}) == 1, table
    shown = [plain(line) for line in found[-1] if "op00z" in line]
    assert len(shown) == 1 and names[0] in shown[0]
    assert "vertices: v|<half> -> v|<quarter>" in shown[0]


# ---- -o ---------------------------------------------------------------------------------


def test_o_writes_the_file_and_nothing_on_stdout(tmp_path):
    out = tmp_path / "out" / "diff.json"
    out.parent.mkdir()
    args = diff_args(MULTI_IPU, "fixtures/edge/one-anchor/profile.pop", fmt="json")
    result = invoke_extract(*args, "-o", out, cwd=REPO)
    assert result.code == 0 and result.stdout == b"" and result.stderr == "", result
    want = oracle_for(MULTI_IPU, "fixtures/edge/one-anchor/profile.pop")
    check_accounting(want)
    assert out.read_bytes() == json_bytes(want)
    assert sorted(p.name for p in out.parent.iterdir()) == ["diff.json"]


@pytest.mark.parametrize("failure", ["unreadable", "no such body"])
def test_o_is_untouched_when_the_command_fails(tmp_path, failure):
    junk = tmp_path / "junk.pop"
    junk.write_bytes(b"not a profile" * 100)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    kept, fresh = out_dir / "kept.md", out_dir / "fresh.md"
    kept.write_bytes(b"an earlier diff\n")
    if failure == "unreadable":
        args, code = ["diff", str(REPO / MULTI_IPU), str(junk)], 1
    else:
        args, code = ["diff", str(REPO / MULTI_IPU), str(REPO / MULTI_IPU), "--block", "1:7"], 2
    for target in (kept, fresh):
        one_error(invoke_extract(*args, "-o", target), code)
    assert kept.read_bytes() == b"an earlier diff\n"
    assert sorted(p.name for p in out_dir.iterdir()) == ["kept.md"]


# ---- bodies that do not exist: usage errors -------------------------------------------


def test_no_such_run_or_block_is_a_usage_error(tmp_path):
    candidate = copy_case(GOLDEN / "poprt" / "profile_logs_f8weight" / "inference", tmp_path)
    golden = str(REPO / GOLDEN_PROFILE)
    line = one_error(invoke_extract("diff", golden, golden, "--block", "3:0"), 2, "no run 3")
    assert re.search(r"runs 1\s*-\s*2\b", line), line
    line = one_error(invoke_extract("diff", golden, golden, "--block", "1:27"), 2, "run 1")
    assert re.search(r"blocks 0\s*-\s*26\b", line), line
    line = one_error(
        invoke_extract("diff", golden, candidate, "--candidate-block", "2:40"), 2, "run 2"
    )
    assert str(candidate) in line and re.search(r"blocks 0\s*-\s*26\b", line), line
    line = one_error(
        invoke_extract("diff", MULTI_IPU, candidate, "--candidate-block", "0:0", cwd=REPO), 2
    )
    assert "no run 0" in line and str(candidate) in line
    line = one_error(invoke_extract("diff", MULTI_IPU, MULTI_IPU, "--block", "2:0", cwd=REPO), 2)
    assert "no run 2" in line and re.search(r"\bruns? 1\b", line), line


@pytest.mark.parametrize("case", ["no-anchors", "compile-only"])
@pytest.mark.parametrize("side", ["base", "candidate"])
def test_a_profile_without_bodies_is_a_usage_error(case, side):
    empty = "fixtures/edge/{}/profile.pop".format(case)
    pair = (empty, MULTI_IPU) if side == "base" else (MULTI_IPU, empty)
    line = one_error(invoke_extract("diff", *pair, cwd=REPO), 2, empty)
    assert re.search(r"\bno (bodies|blocks)\b", line), line


@pytest.mark.parametrize(
    "args",
    [["--block", "1"], ["--block", "a:b"], ["--candidate-block", "1:"], ["--format", "yaml"]],
)
def test_malformed_options_are_usage_errors(args):
    result = invoke_extract("diff", MULTI_IPU, MULTI_IPU, *args, cwd=REPO)
    assert result.code == 2 and result.stdout == b"", result
    assert "Traceback" not in result.stderr


# ---- profiles that cannot be read: one line, exit 1 -----------------------------------


def _unreadable(tmp_path, kind):
    if kind == "missing":
        return tmp_path / "nope" / "profile.pop"
    if kind == "junk":
        junk = tmp_path / "junk.pop"
        junk.write_bytes(b"x" * 4096)
        return junk
    profile = tmp_path / "profile.pop"
    shutil.copyfile(str(EDGE / "multi-ipu" / "profile.pop"), str(profile))
    shutil.copyfile(str(EDGE / "multi-ipu" / "pva-double.json"), str(tmp_path / "pva-double.json"))
    db = sqlite3.connect(str(profile))
    db.execute("DROP TABLE steps_by_ipu")
    db.commit()
    db.close()
    return profile


@pytest.mark.parametrize("kind", ["missing", "junk", "no steps_by_ipu"])
@pytest.mark.parametrize("side", ["base", "candidate"])
def test_an_unreadable_profile_is_one_line(tmp_path, kind, side):
    bad = _unreadable(tmp_path, kind)
    good = str(REPO / MULTI_IPU)
    pair = (bad, good) if side == "base" else (good, bad)
    for fmt in ("markdown", "json"):
        one_error(invoke_extract("diff", *pair, "--format", fmt), 1, str(bad))
