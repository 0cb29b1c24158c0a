"""What the ruff and mypy fixes change that a user can see.

ruff and mypy themselves run in CI (.ci/run), on extractor/, as pyproject.toml configures
them. These tests pin down the behaviour behind some of their findings, through the CLI.
"""

from support.cli import invoke_extract

DURING_HANDLING = "During handling of the above exception, another exception occurred"
DIRECT_CAUSE = "The above exception was the direct cause of the following exception"


def _deep_toml(path):
    path.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    return path


def test_debug_traceback_of_a_deeply_nested_rules_file_is_ours_alone(tmp_path, golden_profile):
    """--debug shows where extract refused the file, not the TOML parser's recursion
    beneath it, nor a second failure "during handling" of it (B904: from None)."""
    rules = _deep_toml(tmp_path / "deep.toml")
    result = invoke_extract(
        "run", "--debug", "--rules", rules, golden_profile, "-o", tmp_path / "summary.json"
    )
    assert result.code == 2, result
    assert result.stderr.splitlines()[-1] == (
        "extract: error: {}: not valid TOML: arrays or tables nested too deeply".format(rules)
    )
    assert "Traceback" in result.stderr
    assert "RecursionError" not in result.stderr
    assert DURING_HANDLING not in result.stderr
    assert not (tmp_path / "summary.json").exists()


def test_debug_traceback_names_the_cause_of_a_one_line_error(tmp_path):
    """A summary that is not JSON: --debug shows the JSON error as the cause of ours (B904:
    from exc), not as if reporting it had failed."""
    broken = tmp_path / "a.json"
    broken.write_text("{not json")
    other = tmp_path / "b.json"
    other.write_text("{}")
    result = invoke_extract("compare", "--debug", broken, other)
    assert result.code == 1, result
    assert result.stderr.splitlines()[-1].startswith(
        "extract: error: {}: not a summary: not JSON (".format(broken)
    )
    assert DIRECT_CAUSE in result.stderr
    assert DURING_HANDLING not in result.stderr
