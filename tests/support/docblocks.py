"""The fenced blocks of the repository's markdown pages, as tests/test_doc_commands.py
runs them: each page's `sh` blocks are commands a reader pastes, an `output` block right
after one is what the page says they print, and `sh notrun` marks the few that cannot run
on a clone (a Poplar SDK host, SLURM, the test suite itself).

An `output` block is a pattern for everything the block's commands print (standard output
and standard error, as a terminal shows them): a line that is `...` alone stands for any
number of lines, `...` inside a line for any text on that line; everything else is
literal, and the whole output must match. A CSV's CRLF line ends are read as line ends.
"""

import re
from pathlib import Path
from typing import List, NamedTuple, Optional, Tuple

# Every fenced block says what it is: a command block, one not run here, what the one
# before it prints, or a file's or a format's text.
RUN, NOT_RUN, OUTPUT = "sh", "sh notrun", "output"
KINDS = (RUN, NOT_RUN, OUTPUT, "text", "json", "toml", "python", "yaml", "markdown", "csv")

_FENCE = re.compile(r"^( *)(`{3,}|~{3,})(.*)$")
_ELISION = "..."


class Block(NamedTuple):
    page: Path
    line: int  # of the opening fence, 1-based
    kind: str  # the fence's info string
    text: str  # its lines, the list item's indentation removed, each ending in "\n"
    output: Optional["Block"]  # the `output` block shown after a command block


class PageError(ValueError):
    """A page whose blocks the test cannot read: a bare fence, an unknown info string,
    an `output` block after no command block, a fence left open."""


def page_blocks(page: Path) -> List[Block]:
    """The page's fenced blocks in order, each `output` block joined to the command block
    before it (and not listed on its own)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks: List[Block] = []
    number = 0
    while number < len(lines):
        opening = _FENCE.match(lines[number])
        number += 1
        if not opening:
            continue
        block, number = _read_block(page, lines, number, opening)
        if block.kind != OUTPUT:
            blocks.append(block)
        elif blocks and blocks[-1].kind == RUN and blocks[-1].output is None:
            blocks[-1] = blocks[-1]._replace(output=block)
        else:
            raise PageError(
                "{}:{}: an output block must follow a command (sh) block".format(page, block.line)
            )
    return blocks


def _read_block(page: Path, lines: List[str], number: int, opening) -> Tuple[Block, int]:
    """The block whose opening fence is line `number` (1-based), and the number of the
    line after its closing fence."""
    first = number
    indent, fence, kind = len(opening.group(1)), opening.group(2), opening.group(3).strip()
    if kind not in KINDS:
        raise PageError(
            "{}:{}: a fence whose info string is {!r}: say what the block is, one of {}".format(
                page, first, kind, ", ".join(KINDS)
            )
        )
    closing = re.compile(r"^ *{}{}* *$".format(re.escape(fence), re.escape(fence[0])))
    body = []
    while number < len(lines) and not closing.match(lines[number]):
        line = lines[number]
        body.append(line[indent:] if line[:indent].isspace() else line)
        number += 1
    if number == len(lines):
        raise PageError("{}:{}: the block is never closed".format(page, first))
    text = "".join(line + "\n" for line in body)
    return Block(page, first, kind, text, None), number + 1


def output_pattern(shown: str) -> "re.Pattern":
    """The regular expression an `output` block stands for (see the module's text)."""
    parts = []
    for line in shown.rstrip("\n").split("\n"):
        if line == _ELISION:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            literal = r"[^\n]*?".join(re.escape(piece) for piece in line.split(_ELISION))
            parts.append(literal + r"\n")
    return re.compile("".join(parts))


def shows(shown: str, printed: str) -> bool:
    """Whether `printed` is what the `output` block `shown` says (a missing last newline
    on either side aside)."""
    text = printed.replace("\r\n", "\n")
    text = text if text.endswith("\n") else text + "\n"
    return output_pattern(shown).fullmatch(text) is not None
