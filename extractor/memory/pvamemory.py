"""pva's side of `extract memory`: the target's limits, liveness and exchange code.

Read once each from one report: `compilation.target` (`numTiles`, `numIPUs`,
`tilesPerIpu`, `bytesPerTile`), each tile's `memory.alwaysLiveBytes`, each liveness
program step's `notAlwaysLiveMemory.bytes` and each `DoExchange` program's
`codeBytesByTile`. pva's numbers may be numpy's: each is made a Python int.
"""

from typing import Any, List, NamedTuple, Optional

from ..core.pvafacts import PvaModule, as_int
from ..errors import ProfileError, StrPath


class ExchangeCode(NamedTuple):
    """One DoExchange program's code bytes per tile, summed up."""

    name: str
    max: int
    max_tile: int  # the lowest tile holding max
    sum: int


class PvaMemory(NamedTuple):
    """What pva says of a profile's memory. A target number the report does not give
    (or gives as no positive whole number) is None."""

    tiles: Optional[int]
    ipus: Optional[int]
    tiles_per_ipu: Optional[int]
    bytes_per_tile: Optional[int]
    always_live: int  # summed over the tiles
    not_always_live: List[int]  # per liveness program step
    exchanges: List[ExchangeCode]  # in pva's order, those with code bytes


def _target_number(target: Any, name: str) -> Optional[int]:  # Any: pva's object
    try:
        number = as_int(getattr(target, name))
    except Exception:  # no such attribute, or not a whole number: the report cannot say
        return None
    return number if number > 0 else None


def read_pva_memory(pva: PvaModule, path: StrPath) -> PvaMemory:
    """pva's memory facts of the profile at `path`; ProfileError when pva cannot open
    the report or read a part of it."""
    try:
        # pybind11 binds openReport(str): never a Path.
        report = pva.openReport(str(path))
        compilation: Any = report.compilation  # Any: read beyond the protocol's slice
        exchange_type = pva.Program.Type.DoExchange
    except Exception as exc:  # pva's C++ core raises its own exception types
        raise ProfileError(path, "PopVision could not open the report: {}".format(exc)) from exc
    target = getattr(compilation, "target", None)
    tiles, ipus, tiles_per_ipu, bytes_per_tile = (
        _target_number(target, name)
        for name in ("numTiles", "numIPUs", "tilesPerIpu", "bytesPerTile")
    )
    try:
        always_live = sum(as_int(tile.memory.alwaysLiveBytes) for tile in compilation.tiles)
    except Exception as exc:
        raise _fail(path, "the tiles' always-live memory", exc) from exc
    try:
        steps = [
            as_int(step.notAlwaysLiveMemory.bytes) for step in compilation.livenessProgramSteps
        ]
    except Exception as exc:
        raise _fail(path, "the liveness program steps", exc) from exc
    exchanges = []
    try:
        for program in compilation.programs:
            if program.type != exchange_type:
                continue
            code = [as_int(value) for value in program.codeBytesByTile]
            if code:
                most = max(code)
                exchanges.append(ExchangeCode(str(program.name), most, code.index(most), sum(code)))
    except Exception as exc:
        raise _fail(path, "the exchange programs' code bytes", exc) from exc
    del report  # kept referenced until here: the report owns what it handed out
    return PvaMemory(tiles, ipus, tiles_per_ipu, bytes_per_tile, always_live, steps, exchanges)


def _fail(path: StrPath, what: str, exc: Exception) -> ProfileError:
    return ProfileError(path, "PopVision could not read {}: {}".format(what, exc))
