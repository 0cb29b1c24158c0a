"""`extract memory PROFILE`: the library functions the command runs."""

from pathlib import Path
from typing import Callable, List, Optional

from ..core.pvafacts import PvaModule, import_pva
from ..core.rules import StageRules
from ..errors import StrPath, shown_path
from .model import DEFAULT_TOP, TileMemory, tile_memory
from .pvamemory import read_pva_memory
from .tiles import read_tiles

Say = Callable[[str, str], None]


def memory_of(
    path: StrPath,
    rules: StageRules,
    pva: Optional[PvaModule] = None,
    top: int = DEFAULT_TOP,
    bytes_per_tile: Optional[int] = None,
    profile_label: Optional[str] = None,
) -> TileMemory:
    """The tile memory of the profile at `path` (memory.json's `report`, and every tile's
    total and bytes by category). `pva`: the module to ask (None: no pva facts, as
    `--no-pva`); `bytes_per_tile`: the limit, over pva's; `profile_label`: memory.json's
    "profile" (default: `path` as given)."""
    rows = read_tiles(path)
    facts = read_pva_memory(pva, path) if pva is not None else None
    label = str(path) if profile_label is None else profile_label
    return tile_memory(label, rows, facts, rules, top, bytes_per_tile)


def memory_warnings(result: TileMemory) -> List[str]:
    """What a person should know that the output shows only in passing."""
    report = result.report
    warnings = []
    if not report["tiles"]:
        warnings.append("memory_by_tile has no rows: no tile memory to show")
    elif report["stray_rows"]:
        warnings.append(
            "{} vars_info rows name no tile of memory_by_tile (NULL, negative or past "
            "tile {}): left out, counted in stray_rows".format(
                report["stray_rows"], report["tiles"] - 1
            )
        )
    return warnings


def run_memory(
    profile: Path,
    output: Optional[str],
    output_format: str,
    rules: StageRules,
    say: Say,
    *,
    top: int = DEFAULT_TOP,
    bytes_per_tile: Optional[int] = None,
    use_pva: bool = True,
    pva: Optional[PvaModule] = None,
    quiet: bool = False,
    timeout: float = 0,
) -> None:
    """`extract memory`: the tile memory of `profile` to `output` ("-" or None: standard
    output) as markdown, memory.json ("json") or CSV ("csv"), within `timeout` seconds.
    Without pva (and `use_pva`), PvaMissingError before anything is written."""
    from ..output import STDOUT, write_output
    from ..outputchecks import check_outputs
    from ..render import MEMORY_FORMATS
    from ..run.single import bounded, check_profile, file_outputs, in_compiled_code

    target = output or STDOUT
    renderer = MEMORY_FORMATS[output_format]()
    check_profile(profile)
    outputs = [("-o", target)]
    check_outputs(outputs, [profile], rules=rules)
    with bounded([profile], file_outputs(outputs), say, timeout, in_compiled_code(use_pva, pva)):
        if use_pva and pva is None:
            pva = import_pva()
        result = memory_of(profile, rules, pva if use_pva else None, top, bytes_per_tile)
        if not quiet:
            for warning in memory_warnings(result):
                say("warning", "{}: {}".format(shown_path(profile), warning))
        write_output(target, renderer.render(result))
