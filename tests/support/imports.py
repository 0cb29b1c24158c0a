"""What a process imports: Python's import-time report (`-X importtime`, or
PYTHONPROFILEIMPORTTIME in the environment: IMPORT_TIME) read back as a set of module
names, and what typer imports by itself to do what `extract` does (typer_imports), which
extract may import too: typer is the CLI's framework, with no upper bound on its version.

The report goes to stderr, a forked child's too (the single run's watcher forks), so the
set holds every module the command imported in any of its processes."""

import subprocess
import sys

IMPORT_TIME = {"PYTHONPROFILEIMPORTTIME": "1"}

# A command-line app of typer's, run: what typer itself imports to parse a command line
# (with typer 0.29, pydantic).
TYPER_RUN = """
import typer
app = typer.Typer()
@app.command()
def main(path: str, out: str = typer.Option("-", "-o"), quiet: bool = False):
    pass
app(["p", "-o", "s.json", "--quiet"], standalone_mode=False)
"""

# The same asked for its help, as extract is: a group with an eager --version and two
# commands, its help, a command's help and --version (a command's help makes typer read
# the group's options: with typer 0.29, pydantic).
TYPER_HELP = """
import typer
app = typer.Typer()
def show(value: bool):
    if value:
        print("1.0")
        raise typer.Exit()
@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=show, is_eager=True)):
    pass
@app.command()
def one(path: str, out: str = typer.Option("-", "-o", help="Out."), quiet: bool = False):
    \"\"\"One.\"\"\"
@app.command()
def two(path: str):
    \"\"\"Two.\"\"\"
for args in (["--help"], ["one", "--help"], ["--version"]):
    app(args, prog_name="extract", standalone_mode=False)
"""


def imported_modules(stderr: str) -> set:
    """The modules an import-time report on `stderr` names."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def typer_imports(script: str) -> set:
    """The modules a Python running `script` (TYPER_RUN, TYPER_HELP) imports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    imported = imported_modules(done.stderr.decode())
    assert "typer" in imported  # the list is the real one
    return imported
