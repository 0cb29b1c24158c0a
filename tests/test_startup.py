"""Start-up pays for the command only: what `extract` imports, held without timing it.

The CLI's declarations (extractor/cli/, commandline.py, exits.py, the package itself)
import no library module: `extract --help` loads them and typer, nothing of the pipeline,
the single run, doctor, the report... A command imports its own modules when it runs:
`extract PROFILE` loads none of the other commands' packages. Each run is a real
`extract` process with Python's import-time report (support/imports.py); what typer
imports by itself to do the same is allowed. bench/startup.py times the same commands
(BENCHMARKS.md).
"""

import pytest

from extractor.cli.commandline import DefaultCommandGroup
from support.cli import run_extract
from support.imports import IMPORT_TIME, TYPER_HELP, TYPER_RUN, imported_modules, typer_imports
from support.paths import GOLDEN, GOLDEN_PROFILE_ARG

# What declaring the commands needs: the package (and its __main__, run as `python -m
# extractor`), the CLI's modules, how the command line is read (commandline.py), how an
# outcome is reported (exits.py), --timeout's default (timelimit.py, a leaf), the
# formats' names (render.py's registries, which import no renderer until one is asked)
# and --stat's (statchoices.py, a leaf).
DECLARATIONS = {
    "extractor",
    "extractor.__main__",
    "extractor.cli",
    "extractor.cli.commandline",
    "extractor.cli.exits",
    "extractor.timelimit",
    "extractor.render",
    "extractor.statchoices",
}

# Modules of the commands' work, none of which declaring them needs. For extractor's own
# modules DECLARATIONS above says it already: they are named so that a failure says
# which came back. The others are the third-party and standard modules of the work.
WORK = {
    "extractor.core.summary",
    "extractor.core.pipeline",
    "extractor.core.profile",
    "extractor.core.rules",
    "extractor.run.single",
    "extractor.output",
    "extractor.errors",
    "extractor.diagnose",
    "extractor.report",
    "extractor.compare",
    "extractor.timeline",
    "extractor.diff",
    "extractor.run.batch",
    "sqlite3",
    "jinja2",
    "multiprocessing",
    "orjson",
    "json",
    "tomllib",
    "tomli",
    "csv",
    "pva",
}

# The packages (and the modules of core/ that only they or an option not given use) of
# every command but `run`: a single run imports none of them.
OTHER_COMMANDS = {
    "extractor.run.batch",  # a batch, merge
    "extractor.compare",  # compare
    "extractor.report",  # table, report
    "extractor.diagnose",  # inspect, stages, doctor
    "extractor.timeline",  # trace
    "extractor.diff",  # diff
    "extractor.core.blocks",  # blocks, --blocks
    "extractor.core.blockformats",  # blocks
    "extractor.core.steptables",  # --csv
    "jinja2",  # report
    "multiprocessing",  # a batch
}


@pytest.fixture(scope="module")
def typer_help_imports():
    return typer_imports(TYPER_HELP)


def _declaration(module: str) -> bool:
    return module in DECLARATIONS or module.startswith("extractor.cli.")


@pytest.mark.parametrize(
    "args",
    [["--help"], ["--version"]] + [[name, "--help"] for name in DefaultCommandGroup.order],
    ids=" ".join,
)
def test_the_declarations_import_no_command(args, typer_help_imports):
    result = run_extract(*args, pva=False, env=IMPORT_TIME)
    assert result.code == 0, result
    imported = imported_modules(result.stderr)
    assert {"typer", "extractor.cli.app", "extractor.cli.diagnose"} <= imported  # the real list
    ours = sorted(m for m in imported if m.split(".")[0] == "extractor" and not _declaration(m))
    assert ours == []
    assert sorted((imported - typer_help_imports) & WORK) == []


def test_a_single_run_imports_no_other_command(golden_profile, tmp_path):
    typer_run = typer_imports(TYPER_RUN)
    work = tmp_path / "work"
    work.mkdir()
    result = run_extract(GOLDEN_PROFILE_ARG, "-o", "out/summary.json", cwd=work, env=IMPORT_TIME)
    assert result.code == 0, result
    assert (work / "out" / "summary.json").read_bytes() == (GOLDEN / "expected.json").read_bytes()
    imported = imported_modules(result.stderr)
    assert {"extractor.run.single", "extractor.core.summary", "pva"} <= imported  # the real list
    # A package's module is imported after its package: naming the packages is enough.
    assert sorted((imported - typer_run) & OTHER_COMMANDS) == []
