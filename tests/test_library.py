"""docs/library.md's Python examples run as pasted, and give what the command line writes.

Every `python` block of the page runs, in order, in one namespace (as a notebook's
cells), in a folder holding a copy of the committed fixtures and stage_rules.toml, with
the pva stand-in importable (the page's `PYTHONPATH=tests/pva_double`). Meanwhile every
call of a ProfileAnalysis method is recorded, with its arguments and its result; after
the page has run, each result is held to the command line's output for the same
profile, rules, pva and options (CHECKS: one per public method), and every file the
examples wrote is held to the file the command writes (by the method that wrote it, or
FILES for the lower-level examples). The JSON results are written here by the standard
library as the format pages define the bytes (two-space indent, non-ASCII escaped, a
final newline), and the step rows as steps.csv's format page does (RFC 4180, CRLF, an
empty field for a null pva fact), not by the code under test.
"""

import csv
import inspect
import io
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Set

import pytest

from support.checks import json_bytes
from support.cli import invoke_extract
from support.docblocks import page_blocks
from support.paths import PVA_DOUBLE, REPO

PAGE = REPO / "docs" / "library.md"
GOLDEN = "fixtures/vit-f8weight/poprt/profile_logs_f8weight/inference/profile.pop"
RECOMPILED = "fixtures/vit-f8weight-recompiled/profile.pop"

# The files the lower-level examples write (by functions, not ProfileAnalysis), and the
# command line that writes the same bytes: its output is its -o.
FILES = {
    "summary.json": [GOLDEN],
    "diff.md": ["diff", GOLDEN, RECOMPILED, "--top", "5"],
}


class Call(NamedTuple):
    analysis: Any  # the ProfileAnalysis
    method: str
    arguments: Dict[str, Any]  # every parameter but self, defaults filled in
    result: Any


def _methods() -> List[str]:
    from extractor import ProfileAnalysis

    return sorted(
        name
        for name, value in vars(ProfileAnalysis).items()
        if callable(value) and not name.startswith("_")
    )


def _csv_bytes(rows: List[dict]) -> bytes:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n")
    writer.writerow(list(rows[0]))
    for row in rows:
        writer.writerow(["" if value is None else value for value in row.values()])
    return text.getvalue().encode("utf-8")


def _options(analysis, pva_flag: bool = True) -> List[str]:
    """The rules the analysis read, and --no-pva where it does without pva."""
    options = ["--rules", analysis.rules.source]
    if pva_flag and not analysis.use_pva:
        options.append("--no-pva")
    return options


def _extract(work: Path, analysis, *args):
    result = invoke_extract(*args, cwd=work, pva=analysis.use_pva)
    assert result.code == 0, (args, result)
    return result


def _warning_lines(warnings: List[str], prefix: str = "") -> str:
    return "".join("extract: warning: {}{}\n".format(prefix, w) for w in warnings)


def _same_files(work: Path, mine: Path, theirs: Path) -> Set[Path]:
    """Every file the command wrote in the folder `theirs` is in `mine`, with its bytes;
    those files of `mine`, relative to `work`."""
    written = sorted(path.name for path in theirs.iterdir())
    assert written, theirs
    for name in written:
        assert (mine / name).read_bytes() == (theirs / name).read_bytes(), name
    return {(mine / name).relative_to(work) for name in written}


# ---- each method's result, held to the command line ------------------------------------


def _summary(call: Call, work: Path, cli: Path) -> Set[Path]:
    a = call.analysis
    _extract(work, a, a.path, "-o", cli / "summary.json", *_options(a))
    summary = call.result.summary if call.method == "extraction" else call.result
    assert json_bytes(summary) == (work / cli / "summary.json").read_bytes()
    if call.method == "extraction":
        result = _extract(work, a, a.path, "-o", cli / "again.json", *_options(a))
        assert result.stderr == _warning_lines(call.result.warnings, str(a.path) + ": ")
    return set()


def _write_summary(call: Call, work: Path, cli: Path) -> Set[Path]:
    a, output = call.analysis, Path(call.arguments["output"])
    flags = [
        "--" + name for name in ("csv", "blocks", "breakdown", "memory") if call.arguments.get(name)
    ]
    result = _extract(work, a, a.path, "-o", cli / output.name, *flags, *_options(a))
    assert result.stderr == _warning_lines(call.result, str(a.path) + ": ")
    return _same_files(work, work / output.parent, work / cli)


def _step_rows(call: Call, work: Path, cli: Path) -> Set[Path]:
    a = call.analysis
    _extract(work, a, a.path, "-o", cli / "summary.json", "--csv", *_options(a))
    assert _csv_bytes(call.result) == (work / cli / "steps.csv").read_bytes()
    return set()


def _blocks(call: Call, work: Path, cli: Path) -> Set[Path]:
    a = call.analysis
    result = _extract(work, a, "blocks", a.path, "--format", "json", *_options(a, False))
    assert json_bytes(call.result) == result.stdout
    return set()


def _memory(call: Call, work: Path, cli: Path) -> Set[Path]:
    a, options = call.analysis, ["--top", str(call.arguments["top"])]
    if call.arguments["bytes_per_tile"] is not None:
        options += ["--bytes-per-tile", str(call.arguments["bytes_per_tile"])]
    result = _extract(work, a, "memory", a.path, "--format", "json", *options, *_options(a))
    assert json_bytes(call.result) == result.stdout
    return set()


def _diff(call: Call, work: Path, cli: Path) -> Set[Path]:
    a, candidate = call.analysis, call.arguments["candidate"]
    candidate = getattr(candidate, "path", candidate)
    bodies = []
    for option in ("block", "candidate_block"):
        if call.arguments[option] is not None:
            bodies += ["--" + option.replace("_", "-"), "{}:{}".format(*call.arguments[option])]
    args = ["diff", a.path, candidate, "--format", "json", *bodies, *_options(a)]
    assert json_bytes(call.result) == _extract(work, a, *args).stdout
    return set()


def _breakdown(call: Call, work: Path, cli: Path) -> Set[Path]:
    a, candidate = call.analysis, call.arguments["candidate"]
    others = [] if candidate is None else [getattr(candidate, "path", candidate)]
    options = ["--run={}".format(run) for run in call.arguments["runs"]]
    options += ["--all"] * call.arguments["every_row"]
    options += ["--depth", str(call.arguments["depth"])]
    args = ["breakdown", a.path, *others, "--format", "json", "-q", *options, *_options(a)]
    assert json_bytes(call.result) == _extract(work, a, *args).stdout
    return set()


def _trace(call: Call, work: Path, cli: Path) -> Set[Path]:
    a, output = call.analysis, Path(call.arguments["output"])
    options = ["--run={}".format(run) for run in call.arguments["runs"]]
    options += ["--all"] * call.arguments["every_row"]
    if call.arguments["clock_mhz"] is not None:
        options += ["--clock-mhz", str(call.arguments["clock_mhz"])]
    result = _extract(work, a, "trace", a.path, "-o", cli / output.name, *options, *_options(a))
    assert result.stderr == _warning_lines(call.result)
    assert (work / output).read_bytes() == (work / cli / output.name).read_bytes()
    return {output}


def _stages(call: Call, work: Path, cli: Path) -> Set[Path]:
    a = call.analysis
    args = ["stages", a.path, "--json", "--top", call.arguments["top"], *_options(a, False)]
    assert json_bytes(call.result) == _extract(work, a, *args).stdout
    return set()


def _inspect(call: Call, work: Path, cli: Path) -> Set[Path]:
    a = call.analysis
    args = ["inspect", a.path, "--json"] + ["--exact"] * call.arguments["exact"]
    args += [] if a.use_pva else ["--no-pva"]
    assert json_bytes(call.result) == _extract(work, a, *args).stdout
    return set()


CHECKS = {
    "blocks": _blocks,
    "breakdown": _breakdown,
    "diff": _diff,
    "extraction": _summary,
    "inspect": _inspect,
    "memory": _memory,
    "stages": _stages,
    "step_rows": _step_rows,
    "summary": _summary,
    "trace": _trace,
    "write_summary": _write_summary,
}


# ---- running the page -----------------------------------------------------------------


def _examples():
    return [block for block in page_blocks(PAGE) if block.kind == "python"]


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A folder like the repository root for the examples (the fixtures and the default
    rules), the working folder, with the pva stand-in importable; pva forgotten after."""
    folder = tmp_path / "work"
    shutil.copytree(str(REPO / "fixtures"), str(folder / "fixtures"))
    shutil.copy(str(REPO / "stage_rules.toml"), str(folder))
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(PVA_DOUBLE))
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if name == "pva" or name.startswith("pva."):
            del sys.modules[name]


@pytest.fixture
def calls(monkeypatch) -> List[Call]:
    """Every call of a public ProfileAnalysis method from now on, as it returns."""
    from extractor import ProfileAnalysis

    recorded: List[Call] = []

    def recording(name):
        original = getattr(ProfileAnalysis, name)
        signature = inspect.signature(original)

        def method(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            del arguments["self"]
            recorded.append(Call(self, name, arguments, result))
            return result

        return method

    for name in _methods():
        monkeypatch.setattr(ProfileAnalysis, name, recording(name))
    return recorded


def _files(folder: Path) -> Set[Path]:
    return {path.relative_to(folder) for path in folder.rglob("*") if path.is_file()}


def test_every_example_runs_and_gives_what_the_command_line_writes(work, calls):
    given = _files(work)
    namespace = {"__name__": "library_md"}
    for block in _examples():
        exec(compile(block.text, "{}:{}".format(PAGE.name, block.line), "exec"), namespace)
    written = _files(work) - given
    # Every method is shown by an example, and has its check here.
    assert sorted({call.method for call in calls}) == _methods() == sorted(CHECKS)
    held: Set[Path] = set()
    for number, call in enumerate(calls):
        held |= CHECKS[call.method](call, work, Path("cli") / str(number))
    for name, args in FILES.items():
        if Path(name) in written - held:
            _extract(work, calls[0].analysis, *args, "-o", Path("cli") / name)
            assert (work / name).read_bytes() == (work / "cli" / name).read_bytes(), name
            held.add(Path(name))
    assert written - held == set(), "files the examples wrote that nothing checked"
    assert held <= written


def test_the_page_shows_every_method_in_its_table():
    text = PAGE.read_text(encoding="utf-8")
    for name in _methods():
        assert "| `{}(".format(name) in text, name
    assert len(_examples()) >= 4


# ---- what the examples cannot show -----------------------------------------------------


def test_a_trace_leaves_the_callers_signal_handlers_as_they_were(work):
    from extractor import ProfileAnalysis

    def mine(signum, frame):  # pragma: no cover - never called
        pass

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        for signum in before:
            signal.signal(signum, mine)
        ProfileAnalysis(GOLDEN, use_pva=False).trace("trace.json")
        assert {s: signal.getsignal(s) for s in before} == {s: mine for s in before}
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    assert (work / "trace.json").stat().st_size > 0


def test_every_method_runs_from_a_thread_other_than_the_main_one(work):
    """A notebook's background thread, or a thread pool: no signal handler can be set
    there, and none is; the outputs are the main thread's, byte for byte."""
    import threading

    from extractor import ProfileAnalysis

    def calls(analysis, where):
        (work / where).mkdir()
        analysis.trace(where + "/trace.json", every_row=True)
        analysis.write_summary(where + "/summary.json", csv=True, blocks=True)
        return analysis.summary(), analysis.blocks(), analysis.diff(RECOMPILED)

    analysis = ProfileAnalysis(GOLDEN, use_pva=False)
    in_main = calls(analysis, "main")
    results: Dict[str, Any] = {}

    def in_thread():
        try:
            results["got"] = calls(analysis, "thread")
        except BaseException as exc:  # shown by the assertion below
            results["error"] = exc

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(120)
    assert "error" not in results, results.get("error")
    assert results["got"] == in_main
    names = ["blocks.json", "first-body.csv", "steps.csv", "summary.json", "trace.json"]
    assert sorted(path.name for path in (work / "thread").iterdir()) == names
    for name in names:
        assert (work / "thread" / name).read_bytes() == (work / "main" / name).read_bytes()


def test_an_output_that_is_an_input_is_refused_and_nothing_is_written(work):
    from extractor import ProfileAnalysis
    from extractor.errors import UsageError

    analysis = ProfileAnalysis(GOLDEN, use_pva=False)
    before = (work / GOLDEN).read_bytes()
    with pytest.raises(UsageError) as raised:
        analysis.write_summary(GOLDEN)
    assert str(raised.value) == (
        GOLDEN + ": -o would write over an input of this command: write it elsewhere"
    )
    assert (work / GOLDEN).read_bytes() == before


def test_making_one_imports_no_pipeline_module():
    """`from extractor import ProfileAnalysis` reads the rules and nothing of the pass,
    the diff, the trace or the diagnostics: each method imports what it calls."""
    code = (
        "import sys\n"
        "from extractor import ProfileAnalysis\n"
        "ProfileAnalysis({!r}, use_pva=False)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('extractor.'))))\n"
    ).format(str(REPO / GOLDEN))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    imported = set(done.stdout.decode().split())
    assert "extractor.analysis" in imported  # the list is the real one
    for module in (
        "extractor.core.summary",
        "extractor.core.blocks",
        "extractor.core.profile",
        "extractor.diff.command",
        "extractor.timeline.command",
        "extractor.breakdown.command",
        "extractor.diagnose.stagecheck",
    ):
        assert module not in imported
