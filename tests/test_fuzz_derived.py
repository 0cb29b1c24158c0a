"""The derived-input fuzz layer: batch output folders (summaries, blocks.json, index
lines, shard indexes, budget files) built from the fixtures and hostile mutations, read
by `extract compare`, `table`, `report` and `merge`, held against the invariants
tests/support/derivedfuzz.py states: strict output or one error line, no hang, nothing read
outside the folders given, nothing changed in them, no summary that is not one accepted.

Reduced for CI: a fixed number of derandomized examples per command (in-process, an
audit hook recording every file opened), and a bounded set run as real subprocesses with
the audit hook installed by a sitecustomize.py; and a corpus, each hostile piece alone in a
benign folder, given to each command it reaches (one test each). A longer run, random
rather than derandomized (EXTRACT_DERIVEDFUZZ_SHRINK=1 also shrinks a failure, which can
take long when the failure is a hang):

    EXTRACT_DERIVEDFUZZ_EXAMPLES=300 EXTRACT_DERIVEDFUZZ_SEED=1 \\
        .venv/bin/python -m pytest -q tests/test_fuzz_derived.py

A failing example prints its batch folder, its command, what extract did and each
broken invariant, lettered as in tests/support/derivedfuzz.py. To tally every failure of many
examples instead of stopping at the first: `python tests/support/derivedfuzz.py survey`.
"""

import os

import pytest
from hypothesis import given, settings

from support import derivedfuzz
from support.fuzzruns import FuzzRuns

RUNS = FuzzRuns("EXTRACT_DERIVEDFUZZ", 12)
EXAMPLES = RUNS.examples
SUBPROCESS_EXAMPLES = max(2, EXAMPLES // 4) if RUNS.long else 2
SETTINGS = RUNS.settings
maybe_seed = RUNS.seeded


def check(example):
    problems, report = derivedfuzz.run_example(example)
    assert not problems, report


@pytest.mark.parametrize("command", derivedfuzz.COMMANDS)
def test_benign_batch_folders_keep_every_invariant(command):
    # The harness itself: valid fixtures, benign names, realistic index lines and a
    # valid budget must pass every check, in this process and through the subprocess's
    # audit hook, and succeed; also with the index one folder above the argument.
    for subprocess_run, nested in ((False, False), (True, False), (False, True)):
        example = derivedfuzz.benign_example(command, subprocess_run, nested)
        problems, report = derivedfuzz.run_example(example)
        assert not problems, report
        assert "run: exit 0" in report or (
            command == "compare-budget" and "run: exit 3" in report
        ), report


def test_the_audit_sees_what_a_command_reads(tmp_path):
    # (d) is only as good as the opens it sees: a benign compare must be seen reading
    # each summary, in this process and in a subprocess; and a read of a planted file
    # outside is named.
    for subprocess_run in (False, True):
        example = derivedfuzz.benign_example("compare-json", subprocess_run)
        built = derivedfuzz.build(example, tmp_path / str(subprocess_run))
        run = (derivedfuzz.run_subprocess if subprocess_run else derivedfuzz.run_inprocess)(built)
        assert run.code == 0, run
        read = {os.path.realpath(path) for path, _, _ in run.opened}
        for summary in built.summaries:
            assert os.path.realpath(str(summary)) in read, (summary, sorted(read))
        assert derivedfuzz.read_violations(built, run) == []
        run.opened.append((str(built.outside / "summary.json"), "/", os.O_RDONLY))
        run.opened.append(("../outside/index.jsonl", str(built.batch), None))
        assert derivedfuzz.read_violations(built, run) == [
            "ROOT/outside/index.jsonl",
            "ROOT/outside/summary.json",
        ]
        # Allowed: an index above the argument, the folders above it, a link inside
        # opened without following it.
        link = built.batch / "fp8" / "elsewhere.json"
        os.symlink(str(built.outside / "summary.json"), str(link))
        run.opened[-2:] = [
            (str(built.root / "index.jsonl"), "/", os.O_RDONLY),
            (str(built.root), "/", os.O_RDONLY),
            (str(link), "/", os.O_RDONLY | os.O_NOFOLLOW),
        ]
        assert derivedfuzz.read_violations(built, run) == []
        run.opened.append((str(link), "/", os.O_RDONLY))
        assert derivedfuzz.read_violations(built, run) == [
            "ROOT/batch/fp8/elsewhere.json (that is ROOT/outside/summary.json)"
        ]


def test_the_checkers_refuse_what_they_must():
    assert derivedfuzz.check_json(b'{"a": NaN}', "x")
    assert derivedfuzz.check_json(b'{"a": 1}', "x") == []
    assert derivedfuzz.check_csv(b"a,b\r\n1,2\r\n", "x") == []
    assert derivedfuzz.check_csv(b"a,b\r\n1,2,3\r\n", "x")
    assert derivedfuzz.check_csv(b"a,b\r\n=2+3,-1.5\r\n", "x")
    assert derivedfuzz.check_csv(b"a,b\r\n-1.5e3,+2%\r\n", "x") == []
    assert derivedfuzz.check_markdown(b"| a | b |\n|---|---|\n| 1 | 2 |\n\nx\n", "x") == []
    assert derivedfuzz.check_markdown(b"| a | b |\n|---|---|\n| 1 \\| x | 2 |\n", "x") == []
    assert derivedfuzz.check_markdown(b"| a | b |\n|---|---|\n| 1 | x | 2 |\n", "x")
    assert derivedfuzz.check_markdown(b"| a | b |\n|---|---|\n| new\nline | 2 |\n", "x")
    assert derivedfuzz.check_markdown(b"| a | b |\n|---|---|\n| cr\rx | 2 |\n", "x")
    assert derivedfuzz.check_xml(b"<svg><text>\x1b</text></svg>", "x")
    assert derivedfuzz.check_jsonl(b'{"a": 1}\n[1]\n', "x")
    assert derivedfuzz.summary_problem({"profile": [1]}) is not None
    assert (
        derivedfuzz.summary_problem(
            __import__("json").loads(derivedfuzz.BASES["vit-f8weight"].read_text())
        )
        is None
    )


def _fuzz(command, subprocess_run=False, count=None):
    @maybe_seed
    @settings(SETTINGS, max_examples=count or EXAMPLES)
    @given(derivedfuzz.examples(command, subprocess_run))
    def run(example):
        check(example)

    run()


@pytest.mark.parametrize("command", derivedfuzz.COMMANDS)
def test_hostile_batch_folders(command):
    _fuzz(command)


@pytest.mark.parametrize("command", derivedfuzz.COMMANDS)
def test_hostile_batch_folders_through_the_audited_command(command):
    _fuzz(command, subprocess_run=True, count=SUBPROCESS_EXAMPLES)


@pytest.mark.parametrize(
    "example", [e for _, e in derivedfuzz.corpus()], ids=[i for i, _ in derivedfuzz.corpus()]
)
def test_one_hostile_piece(example):
    # The corpus: each hostile piece alone in a benign batch folder, given to each
    # command it reaches; a failure here names its cause exactly.
    check(example)


@pytest.mark.parametrize(
    "example",
    [e for _, e in derivedfuzz.corpus(True)],
    ids=[i for i, _ in derivedfuzz.corpus(True)],
)
def test_one_hostile_piece_through_the_audited_command(example):
    check(example)
