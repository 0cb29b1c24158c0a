"""Checks that many test files make on a run and on what it left behind: one error line
on stderr, a batch's index.jsonl read back, no `.partial` file left, a budget file; and
the bytes of a JSON output as its format page defines them (json_bytes)."""

import json
from pathlib import Path

ERROR = "extract: error: "


def json_bytes(value) -> bytes:
    """The bytes every JSON output of extract is defined to have (summary.json,
    blocks.json, the diff's --format json, --json answers): json.dumps with a two-space
    indent, non-ASCII escaped, and a final newline; by the standard library, not the
    code under test."""
    return (json.dumps(value, indent=2) + "\n").encode("ascii")


def one_error(result, code=1, *words) -> str:
    """The run exited with `code`, printed nothing on stdout, and its stderr is one line,
    `extract: error: ...`, holding each of `words`, with no traceback and no "unexpected
    failure". Returns the line (without its newline)."""
    assert result.code == code, result
    assert result.stdout == b"", result
    assert "Traceback" not in result.stderr, result
    assert "unexpected" not in result.stderr, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and result.stderr.count("\n") == 1, result
    assert lines[0].startswith(ERROR), result
    for word in words:
        assert word in lines[0], result
    return lines[0]


def the_error_line(result, *words) -> str:
    """Among the run's stderr lines (notes, warnings, a batch's progress), exactly one is
    an `extract: error: ` line, holding each of `words`, and there is no traceback.
    Returns it."""
    errors = [line for line in result.stderr.splitlines() if line.startswith(ERROR)]
    assert len(errors) == 1, result
    for word in words:
        assert word in errors[0], result
    assert "Traceback" not in result.stderr, result
    return errors[0]


def index_lines(outdir: Path, name="index.jsonl") -> list:
    """A batch's index, one dict a line, in the file's order (read as bytes: only "\\n"
    ends a line)."""
    return [json.loads(line) for line in (Path(outdir) / name).read_bytes().splitlines()]


def index_by(outdir: Path, key: str, name="index.jsonl") -> dict:
    """A batch's index keyed by one field of each line ("profile" or "summary")."""
    return {entry[key]: entry for entry in index_lines(outdir, name)}


def partial_files(folder: Path) -> list:
    """The temporary files (named `.NAME.HOST.PID.RANDOM.partial`) under `folder`, at any
    depth, and anything else with "partial" in its name: a finished or stopped run leaves
    none."""
    return sorted(str(p) for p in Path(folder).rglob("*") if "partial" in p.name)


def no_partial_files(folder: Path) -> None:
    assert partial_files(folder) == []


def budget_file(folder: Path, text, name="budget.toml") -> Path:
    """A budget file in `folder`: `text` after a `[budgets]` line; text starting with "!"
    is written as it is (less the "!"); bytes are written as they are."""
    path = Path(folder) / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text("[budgets]\n" + text if not text.startswith("!") else text[1:])
    return path
