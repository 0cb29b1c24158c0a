"""The file-system fuzz layer: random kinds of file -- folders, FIFOs, devices, links to
each, dangling links, unreadable files, names that are not UTF-8 -- at the paths extract
reads and writes, run alone and in a batch, held against docs/errors.md's promises
(tests/support/fsfuzz.py lists them and draws the layouts).

Reduced for CI (a fixed set of examples, well under a minute). A longer run:

    EXTRACT_FSFUZZ_EXAMPLES=2000 EXTRACT_FSFUZZ_SEED=1 \\
        .venv/bin/python -m pytest -q tests/test_fuzz_fs.py

(docs/fuzzing.md records the last long run). A failing example prints its layout and
the command that rebuilds and reruns it alone: `python tests/support/fsfuzz.py MODE N --seed S`.
"""

import os
from collections import Counter

import pytest

from support import fsfuzz

EXAMPLES = int(os.environ.get("EXTRACT_FSFUZZ_EXAMPLES", "64"))
BATCH_EXAMPLES = max(13, EXAMPLES // 4)
SEED = os.environ.get("EXTRACT_FSFUZZ_SEED", "0")


@pytest.fixture
def case_root(tmp_path_factory):
    return tmp_path_factory.mktemp("fsfuzz") / "case"


@pytest.mark.parametrize("number", range(EXAMPLES), ids="single-{}".format)
def test_a_single_run_among_hostile_files(number, case_root):
    problems, report = fsfuzz.run_example("single", SEED, number, case_root)
    assert not problems, report


@pytest.mark.parametrize("number", range(BATCH_EXAMPLES), ids="batch-{}".format)
def test_a_batch_among_hostile_files(number, case_root):
    problems, report = fsfuzz.run_example("batch", SEED, number, case_root)
    assert not problems, report


def test_the_examples_reach_every_kind_at_every_path(tmp_path):
    # Drawn, not made nor run: the reduced CI set must still put every kind this machine
    # can make at the profile's path, at -o's and a step table's, at -o's folder and at
    # OUTDIR, and names that are not UTF-8 in single runs and in batches.
    seen, odd = Counter(), Counter()
    for mode, count in (("single", EXAMPLES), ("batch", BATCH_EXAMPLES)):
        for number in range(count):
            example = fsfuzz.Example(mode, SEED, number, tmp_path)
            for slot in example.slots:
                where = (
                    "step table"
                    if slot.path.name in fsfuzz.CSV_NAMES
                    else "OUTDIR"
                    if mode == "batch" and slot is example.outdir
                    else slot.role
                )
                seen[where, slot.kind] += 1
                odd[mode] += fsfuzz.NOT_UTF8 in str(slot.path)
    for where, role in (
        ("profile", "profile"),
        ("output", "output"),
        ("step table", "output"),
        ("folder", "folder"),
        ("OUTDIR", "folder"),
    ):
        missing = [k for k, _ in fsfuzz.available(fsfuzz.ROLES[role]) if not seen[where, k]]
        assert not missing, "never at a {} path: {}".format(where, missing)
    assert odd["single"] and odd["batch"], odd
