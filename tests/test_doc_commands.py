"""Every command the pages show runs as written, and prints what the page says it prints.

The convention of the pages (README.md's install step sets it up): commands run from the
repository root with the venv activated (`. .venv/bin/activate`: `extract` and `python`
are the venv's), and a command that reads a committed profile without the Poplar SDK
says `PYTHONPATH=tests/pva_double` (the pva stand-in).

Each page's `sh` blocks run in turn, top to bottom, each in its own `bash -e -o pipefail`,
in a fresh copy of the repository (so nothing in the clone changes, and a page may use
what its earlier blocks wrote), with this venv's bin folder first on PATH as activation
puts it, PYTHONPATH unset. An `output` block after a command block is checked against
what the block printed (tests/support/docblocks.py says how `...` elides). Blocks marked
`sh notrun` are not run: NOT_RUN below counts them page by page, so a new one fails here
until it is listed with its reason. Every fenced block has an info string, so no command
hides in an unmarked block.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.docblocks import NOT_RUN as NOT_RUN_KIND
from support.docblocks import RUN, PageError, output_pattern, page_blocks, shows
from support.paths import REPO

# What a copy of the repository leaves out: what a clone does not have.
_NOT_COPIED = (".git", ".venv*", "__pycache__", "*.egg-info", ".*_cache", ".hypothesis")

# The blocks that cannot run on a clone, page by page, and why.
NOT_RUN = {
    # the install step (the suite runs in the venv it made) and the test command (the
    # suite itself)
    "README.md": 2,
    "CONTRIBUTING.md": 2,  # the install step, and CI's commands (the suite itself)
    "BENCHMARKS.md": 1,  # the full benchmarks: minutes
    "docs/fuzzing.md": 6,  # long fuzz runs: minutes each
    "docs/commands/doctor.md": 1,  # on a Poplar SDK host, with real profiles
    "docs/sdk-contract.md": 2,  # on a Poplar SDK host, with real profiles
    # a SLURM array job (sbatch), and installing on a Poplar SDK host
    "docs/commands/run.md": 2,
}


def pages():
    found = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "BENCHMARKS.md"]
    for folder in ("docs", "fixtures", "examples"):
        found.extend(sorted((REPO / folder).rglob("*.md")))
    return found


def _shown(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


def _environment() -> dict:
    """As after `. .venv/bin/activate` in this suite's venv, with no PYTHONPATH."""
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)
    bin_folder = str(Path(sys.executable).parent)
    environment["PATH"] = bin_folder + os.pathsep + environment.get("PATH", "")
    environment["VIRTUAL_ENV"] = str(Path(sys.executable).parent.parent)
    return environment


def _copy_of_the_repository(into: Path) -> Path:
    copy = into / "repository"
    shutil.copytree(str(REPO), str(copy), ignore=shutil.ignore_patterns(*_NOT_COPIED))
    return copy


def _run(block, cwd: Path) -> str:
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.text],
        cwd=str(cwd),
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=60,
        check=False,
    )
    printed = done.stdout.decode("utf-8", "replace")
    where = "{}:{}".format(_shown(block.page), block.line)
    assert done.returncode == 0, "{}: exit {}:\n{}\n{}".format(
        where, done.returncode, block.text, printed[-3000:]
    )
    return printed


def _has_commands(page: Path) -> bool:
    try:
        return any(b.kind == RUN for b in page_blocks(page))
    except PageError:
        return True  # run, to fail there with the page's error


PAGES_WITH_COMMANDS = [p for p in pages() if _has_commands(p)]


@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS, ids=_shown)
def test_every_command_block_of_the_page_runs_and_prints_what_it_shows(page, tmp_path):
    copy = _copy_of_the_repository(tmp_path)
    for block in page_blocks(page):
        if block.kind != RUN:
            continue
        printed = _run(block, copy)
        if block.output is not None:
            assert shows(block.output.text, printed), (
                "{}:{}: the page shows\n{}\nbut the commands print\n{}".format(
                    _shown(page), block.output.line, block.output.text, printed
                )
            )


def test_the_blocks_not_run_are_the_listed_ones():
    counted = {}
    for page in pages():
        number = sum(1 for b in page_blocks(page) if b.kind == NOT_RUN_KIND)
        if number:
            counted[_shown(page)] = number
    assert counted == NOT_RUN


def test_the_readmes_install_and_test_commands_are_what_the_pages_and_ci_use():
    """The two README blocks not run here: the install step (the venv these pages
    assume, activated, without the test extra) and the test command, which CI runs
    exactly (.ci/run)."""
    readme = page_blocks(REPO / "README.md")
    install, test = [b.text.strip() for b in readme if b.kind == NOT_RUN_KIND]
    assert install == "python3 -m venv .venv && . .venv/bin/activate && pip install -q -e ."
    assert test.startswith(install.replace("-e .", "-e '.[test]'") + " && python -m pytest")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert 'bash -c "{}"'.format(test) in ci


@pytest.mark.parametrize("page", pages(), ids=_shown)
def test_every_fenced_block_says_what_it_is(page):
    page_blocks(page)  # raises PageError on a bare fence or an unknown info string


def test_the_pages_show_commands():
    """The test above runs something: the pages hold command blocks, and outputs."""
    blocks = [b for p in PAGES_WITH_COMMANDS for b in page_blocks(p) if b.kind == RUN]
    assert len(blocks) >= 20
    assert sum(1 for b in blocks if b.output is not None) >= 5


# ---- the reader of blocks and outputs ------------------------------------------------


def test_a_page_is_read_into_command_blocks_and_their_outputs(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "Text.\n\n```sh\nextract --version\n```\n\nprints\n\n```output\nextract ...\n```\n\n"
        "- a list item:\n\n  ```sh notrun\n  sbatch job.sh\n  ```\n\n```json\n{}\n```\n",
        encoding="utf-8",
    )
    blocks = page_blocks(page)
    assert [(b.kind, b.line, b.text) for b in blocks] == [
        ("sh", 3, "extract --version\n"),
        ("sh notrun", 15, "sbatch job.sh\n"),
        ("json", 19, "{}\n"),
    ]
    assert blocks[0].output.text == "extract ...\n"


@pytest.mark.parametrize(
    "text",
    [
        "```\nextract --version\n```\n",  # bare: is it a command?
        "```console\n$ extract --version\n```\n",
        "```output\nextract 0.1.0\n```\n",  # after no command
        "```sh\nextract --version\n",  # never closed
    ],
)
def test_a_block_that_does_not_say_what_it_is_is_refused(tmp_path, text):
    page = tmp_path / "p.md"
    page.write_text(text, encoding="utf-8")
    with pytest.raises(PageError):
        page_blocks(page)


def test_an_output_block_is_literal_but_for_its_elisions():
    shown = "first\n...\nlast: ... cycles\n"
    assert shows(shown, "first\nlast: 5 cycles\n")
    assert shows(shown, "first\na\nb\nlast: 5 cycles")  # lines elided; no last newline
    assert not shows(shown, "first\nlast: 5 cycles\nmore\n")  # the whole output
    assert not shows(shown, "First\nlast: 5 cycles\n")
    assert not shows(shown, "first\nlast: 5 bytes\n")
    assert not shows("a.b\n", "axb\n")  # no other pattern syntax
    assert output_pattern("x ... y\n").fullmatch("x 1\n2 y\n") is None  # one line only


def test_the_environment_is_an_activated_venv():
    environment = _environment()
    first = environment["PATH"].split(os.pathsep)[0]
    assert (Path(first) / "extract").exists(), "the suite's venv has no extract script"
    assert "PYTHONPATH" not in environment
