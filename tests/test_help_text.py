"""What `--help` shows: no `<bool>` type beside a flag (a flag takes no value)."""

import pytest

from support.cli import invoke_extract

COMMANDS = [
    "run",
    "merge",
    "compare",
    "breakdown",
    "blocks",
    "table",
    "report",
    "inspect",
    "stages",
    "doctor",
]


@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_no_bool_beside_a_flag(command):
    args = ["--help"] if command is None else [command, "--help"]
    result = invoke_extract(*args, env={"COLUMNS": "200"})
    assert result.code == 0, result
    text = result.stdout.decode()
    assert "--help" in text
    assert "<bool>" not in text, text
    if command == "run":  # the flags are still listed, with their help
        assert "--no-pva" in text and "--force" in text and "Print only errors" in text
