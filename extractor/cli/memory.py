"""The command that shows where tile memory goes: `memory` (the work is
memory.command.run_memory's)."""

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ..render import MEMORY_FORMATS
from .app import (
    DEBUG,
    OUTPUT_OR_STDOUT,
    PROFILE_CHECKED,
    RULES,
    app,
    no_pva_option,
    timeout_option,
)
from .exits import report_errors, say

# --format's choices, from memory's registry of renderers (imported only when used); mypy,
# which takes no class made at run time as a type, sees an Enum.
if TYPE_CHECKING:
    MemoryFormat = Enum
else:
    MemoryFormat = MEMORY_FORMATS.choices("MemoryFormat")


@app.command(
    "memory",
    help=(
        "Tile memory: which tiles are full, with what, and how close the rest are.\n\n"
        "Prints markdown that answers the out-of-memory question first, or memory.json "
        "(docs/formats/memory.md), or a CSV line per tile and category."
    ),
)
def memory_command(
    profile: Path = PROFILE_CHECKED,
    output: Optional[str] = OUTPUT_OR_STDOUT,
    output_format: MemoryFormat = typer.Option(
        MEMORY_FORMATS.default,
        "--format",
        "-f",
        case_sensitive=False,
        help="markdown (for a person), json (memory.json) or csv (a line per tile and "
        "category, then a line per tile).",
    ),
    top: int = typer.Option(
        5, "--top", min=0, metavar="K", help="List the K fullest tiles and largest exchanges."
    ),
    bytes_per_tile: Optional[int] = typer.Option(
        None,
        "--bytes-per-tile",
        min=1,
        metavar="N",
        help="The tile memory limit in bytes (default: pva's target.bytesPerTile).",
    ),
    rules_file: Optional[Path] = RULES,
    no_pva: bool = no_pva_option(
        "Without PopVision's Python API: no IPUs, limit (unless --bytes-per-tile), "
        "liveness nor exchanges."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors."),
    timeout: float = timeout_option("End the command if it takes longer, as failed; 0: no limit."),
    debug: bool = DEBUG,
):
    def show():
        from ..core.rules import load_rules
        from ..memory.command import run_memory
        from ..timelimit import check_timeout

        check_timeout(timeout)
        run_memory(
            profile,
            output,
            output_format.value,
            load_rules(rules_file),
            say,
            top=top,
            bytes_per_tile=bytes_per_tile,
            use_pva=not no_pva,
            quiet=quiet,
            timeout=timeout,
        )

    report_errors(show, debug)
