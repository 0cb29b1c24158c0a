"""An output written to standard output when it is a terminal goes through the one
terminal rule (escaping.terminal_output: each line through terminal_text): a name's
ESC sequences (clear the screen, set the window's title), C1 controls and bidirectional
overrides reach the screen as visible escapes. `diff -f csv` used to pass them as they
are, while markdown showed them escaped. Into a pipe or a file, the bytes are exact."""

import os
import pty
import subprocess
import tty

from test_diff_cli import ladder

from support.cli import extract_command, read_terminal, run_extract
from support.diff_oracle import diff_csv
from support.diffcli import oracle_for
from support.paths import PVA_DOUBLE

HOSTILE = "/m/blocks/blocks.0/mlp/op00z\x1b]0;pwned\x07\x1b[2J\x9b31m\u202egnp.exe/Add"
# How terminal_text shows it, written out by hand (escaping.py's spelling).
SHOWN = "/m/blocks/blocks.0/mlp/op00z\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202egnp.exe/Add"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def on_a_terminal(*args, cwd):
    """`extract ARGS` with its standard output a terminal (raw mode: the terminal adds
    no carriage returns), and what it wrote there."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE))
    process = subprocess.Popen(
        extract_command() + [str(a) for a in args],
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    written = read_terminal(master)
    stderr = process.communicate(timeout=60)[1]
    assert process.returncode == 0, stderr
    return written


def test_diff_csv_on_a_terminal_shows_controls_escaped(tmp_path):
    base = ladder(tmp_path / "a", [10, 20], names={0: HOSTILE})
    candidate = ladder(tmp_path / "b", [15, 20], names={0: HOSTILE})
    screen = on_a_terminal("diff", base, candidate, "-f", "csv", cwd=tmp_path).decode("utf-8")
    assert not any(char in screen for char in RAW), repr(screen)
    lines = screen.split("\r\n")  # the CSV's own line ends, kept
    assert lines[0].startswith("status,stage,kind,key,") and lines[-1] == ""
    assert any(SHOWN in line for line in lines), screen
    # Into a pipe, the exact bytes: the oracle's CSV, the name as it is.
    piped = run_extract("diff", base, candidate, "-f", "csv", cwd=tmp_path)
    assert piped.code == 0, piped
    assert piped.stdout.decode("utf-8") == diff_csv(oracle_for(base, candidate, cwd=tmp_path))
    assert "\x1b]0;pwned\x07" in piped.stdout.decode("utf-8")
    # Into a file (-o), the exact bytes too.
    run_extract("diff", base, candidate, "-f", "csv", "-o", tmp_path / "d.csv", cwd=tmp_path)
    assert (tmp_path / "d.csv").read_bytes() == piped.stdout


def test_markdown_and_json_on_a_terminal_are_their_bytes(tmp_path):
    """Formats that escape for themselves are written to a terminal unchanged."""
    base = ladder(tmp_path / "a", [10, 20], names={0: HOSTILE})
    for fmt in ("markdown", "json"):
        piped = run_extract("diff", base, base, "-f", fmt, cwd=tmp_path).stdout
        assert on_a_terminal("diff", base, base, "-f", fmt, cwd=tmp_path) == piped
        assert not any(char.encode("utf-8") in piped for char in RAW)
