"""The three facts only PopVision's Python API (`pva`) knows, each fetched at most once.

- a program's type, and for an exchange program its code bytes per tile;
- a compute set's vertex type names;
- the attention exchanges, in pva's program order.

`pva` reads lazily from the profile, so every per-tile array and vertex list is touched
once and its result kept.

What the public record says of the real module, and what is done about it here:

- `openReport` is bound by pybind11 with `str` parameters: it is given `str(path)`.
- The report owns what it hands out: the Report object is kept referenced for as long as
  its programs and compute sets are used.
- `compilation.programs` and `compilation.computeSets` may build a new list on every
  access (pybind11's default for a bound vector): each is read once.
- The Python type of pva's numbers (`_id`, `codeBytesByTile` entries) is not documented
  and may be numpy's: each is made a Python int (`as_int`) before it is used or kept.
- Nothing public ties pva's program `_id` to `programs.id`, or `computeSets[i]` to
  `compute_sets.compute_set = i`: given the profile's names (`expect_names`), each
  program and compute set the summary asks about must have the same name in pva, or the
  extraction stops with a one-line error rather than report another program's facts.
"""

import operator
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    List,
    Optional,
    Pattern,
    Protocol,
    Sequence,
    Set,
    SupportsIndex,
    Tuple,
    Type,
    Union,
)

from ..errors import ProfileError, PvaMissingError, StrPath
from .model import AttentionExchange

# ---- the seam with pva: the slice of its API used here ---------------------------------
# The real module (the Poplar SDK's) and the stand-in of the tests (tests/pva_double) both
# serve it. Read-only properties: an attribute, a property or a pybind11 getter will do.


class PvaNamed(Protocol):
    @property
    def name(self) -> str: ...


class PvaVertex(Protocol):
    @property
    def type(self) -> PvaNamed: ...


class PvaComputeSet(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def vertices(self) -> Iterable[PvaVertex]: ...


class PvaProgram(Protocol):
    @property
    def _id(self) -> SupportsIndex: ...  # a Python int, or numpy's (`as_int`)

    @property
    def name(self) -> str: ...

    @property
    def type(self) -> object: ...  # compared with `Program.Type.DoExchange`

    @property
    def codeBytesByTile(self) -> Iterable[SupportsIndex]: ...


class PvaCompilation(Protocol):
    @property
    def programs(self) -> Sequence[PvaProgram]: ...

    @property
    def computeSets(self) -> Sequence[PvaComputeSet]: ...  # indexed by compute set id


class PvaReport(Protocol):
    @property
    def compilation(self) -> PvaCompilation: ...


class PvaModule(Protocol):
    """The `pva` module: `openReport(str)` and `Program.Type.DoExchange`."""

    def openReport(self, filename: str, /) -> PvaReport: ...

    # Any: only `Program.Type.DoExchange` is read, a pybind11 enum value compared with
    # `PvaProgram.type`. A protocol for it is no use: mypy matches no class object that
    # has a __getattr__ (the stand-in's Program) to a protocol.
    @property
    def Program(self) -> Any: ...


# ---- the seam with the summary: what its pass asks ---------------------------------------


class StepFacts(Protocol):
    """The two pva facts of a step row (`StepRow.record`, a step sink); None: not known
    (extracted without pva)."""

    def max_exchange_code_bytes(self, program_id: Optional[int]) -> Optional[int]: ...

    def vertices(self, compute_set: Optional[int]) -> Optional[str]: ...


class SummaryFacts(StepFacts, Protocol):
    """Every pva fact a summary holds: PvaFacts, or NoPvaFacts (all null)."""

    def expect_names(self, program_names: dict, compute_set_names: dict) -> None: ...

    def attention_exchanges(self, selector: Pattern[str]) -> Optional[List[Dict[str, object]]]: ...


def as_int(value: SupportsIndex) -> int:
    """A number pva gave, as a Python int: numpy's integer scalars and other integral
    types are converted; anything that is not integral (a float, text) is a TypeError."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise TypeError("a bool where a whole number belongs")
    return int(operator.index(value))


def shown_name(name: object, limit: int = 120) -> str:
    """A name for an error line: repr()'d, long ones cut in the middle."""
    text = repr(name)
    if len(text) > limit:
        text = text[: limit // 2] + "..." + text[-limit // 2 :]
    return text


def import_pva() -> PvaModule:
    """The `pva` module, or PvaMissingError saying how to enable it (or pass
    use_pva=False)."""
    try:
        import pva
    except ImportError as exc:
        raise PvaMissingError(str(exc)) from exc
    return pva


class PvaFacts:
    """Cached answers from one report opened with `pva.openReport`."""

    def __init__(self, pva: PvaModule, path: StrPath):
        self.path = path
        try:
            # pybind11 binds openReport(str) and openReport(str, str): never a Path.
            report = pva.openReport(str(path))
            self._compilation = report.compilation
            self._exchange_type = pva.Program.Type.DoExchange
        except Exception as exc:  # pva's C++ core raises its own exception types
            raise ProfileError(path, "PopVision could not open the report: {}".format(exc)) from exc
        # The report owns its programs and compute sets: keep it while they are used.
        self._report = report
        # [(id, is an exchange, program)], in pva's order
        self._programs: Optional[List[Tuple[int, bool, PvaProgram]]] = None
        # program id -> (is an exchange, program), by programs()
        self._by_id: Dict[int, Tuple[bool, PvaProgram]] = {}
        self._compute_sets: Optional[Sequence[PvaComputeSet]] = None  # read once
        self._code_bytes: Dict[int, Tuple[int, float]] = {}  # program id: (max, mean)
        self._vertices: Dict[int, str] = {}  # compute set id: "; "-joined vertex types
        self._sql_programs: dict = {}  # program id -> its name in the profile's SQL
        self._sql_compute_sets: dict = {}  # compute set id -> its name in SQL
        self._checked_programs: Set[int] = set()

    def expect_names(self, program_names: dict, compute_set_names: dict) -> None:
        """The profile's own names ({id: name} of `programs` and `compute_sets`): a
        program or compute set looked up here must have the same name in pva. An id with
        no name in SQL (no row, NULL) is not checked."""
        self._sql_programs = program_names
        self._sql_compute_sets = compute_set_names

    def clock_hz(self) -> Optional[float]:
        """The IPU clock the report gives (`compilation.target.clockFrequency`, Hz), or
        None when it gives none (no target, no clock, not a positive finite number)."""
        try:
            hz = float(getattr(self._compilation, "target").clockFrequency)  # noqa: B009
        except Exception:  # no target or clock: a report that cannot say
            return None
        return hz if 0 < hz < float("inf") else None

    def tiles_per_ipu(self) -> Optional[int]:
        """The tiles of one IPU the report gives (`compilation.target.tilesPerIpu`), or
        None when it gives none (no target, no such number, not a positive whole one)."""
        try:
            tiles = as_int(getattr(self._compilation, "target").tilesPerIpu)  # noqa: B009
        except Exception:  # no target or no tiles: a report that cannot say
            return None
        return tiles if tiles > 0 else None

    def _fail(self, what: str, exc: Exception) -> ProfileError:
        return ProfileError(self.path, "PopVision could not read {}: {}".format(what, exc))

    def programs(self) -> List[Tuple[int, bool, PvaProgram]]:
        """pva's programs in report order as (id, is an exchange, program); listed once,
        reading each program's id and type once."""
        if self._programs is None:
            try:
                # One access: a new list may be built on each.
                self._programs = [
                    (as_int(program._id), program.type == self._exchange_type, program)
                    for program in self._compilation.programs
                ]
            except Exception as exc:
                raise self._fail("the programs", exc) from exc
            self._by_id = {entry[0]: entry[1:] for entry in self._programs}
        return self._programs

    def code_bytes(self, program_id: int, program: PvaProgram) -> Tuple[int, float]:
        """(max, mean) of the program's codeBytesByTile, (0, 0.0) when empty; read once."""
        cached = self._code_bytes.get(program_id)
        if cached is None:
            try:
                per_tile = [as_int(value) for value in program.codeBytesByTile]
            except Exception as exc:
                raise self._fail("the code bytes of program {}".format(program_id), exc) from exc
            try:
                cached = (max(per_tile), sum(per_tile) / len(per_tile)) if per_tile else (0, 0.0)
            except (TypeError, ValueError, OverflowError) as exc:
                raise self._fail("the code bytes of program {}".format(program_id), exc) from exc
            self._code_bytes[program_id] = cached
        return cached

    def max_exchange_code_bytes(self, program_id: Optional[int]) -> int:
        """max(codeBytesByTile) when the step's program is an exchange, else 0."""
        if program_id is None:
            return 0
        self.programs()
        known = self._by_id.get(program_id)
        if known is None:
            raise ProfileError(
                self.path,
                "program {!r} of the trace is not in PopVision's report".format(program_id),
            )
        is_exchange, program = known
        if program_id not in self._checked_programs:
            self._same_name("program", program_id, self._sql_programs, program, "program ids")
            self._checked_programs.add(program_id)
        return self.code_bytes(program_id, program)[0] if is_exchange else 0

    def _same_name(
        self,
        what: str,
        key: int,
        sql_names: dict,
        found: Union[PvaProgram, PvaComputeSet],
        ids: str,
    ) -> None:
        """ProfileError unless pva's object `found` has the name SQL gives `key`."""
        expected = sql_names.get(key)
        if expected is None:
            return
        try:
            name = found.name
        except Exception as exc:
            raise self._fail("the name of {} {}".format(what, key), exc) from exc
        if name != expected:
            raise ProfileError(
                self.path,
                "{} {} is {} in the profile's tables but {} in "
                "PopVision's report: pva's {} do not match the profile's, "
                "so its facts would be another {}'s (extract doctor PROFILE "
                "checks them all)".format(
                    what, key, shown_name(expected), shown_name(name), ids, what
                ),
            )

    def compute_sets(self) -> Sequence[PvaComputeSet]:
        """compilation.computeSets, read once (a new list may be built on each access)."""
        if self._compute_sets is None:
            try:
                self._compute_sets = self._compilation.computeSets
            except Exception as exc:
                raise self._fail("the compute sets", exc) from exc
        return self._compute_sets

    def vertices(self, compute_set: Optional[int]) -> str:
        """The compute set's vertex type names in pva order, joined by "; "."""
        if compute_set is None:
            return ""
        names = self._vertices.get(compute_set)
        if names is None:
            if type(compute_set) is not int or compute_set < 0:
                # pva's list would take -1 as the last compute set: never a real id.
                raise ProfileError(
                    self.path,
                    "compute set {!r} of the trace is not in PopVision's report".format(
                        compute_set
                    ),
                )
            compute_sets = self.compute_sets()
            try:
                found = compute_sets[compute_set]
            except (IndexError, KeyError, TypeError):
                raise ProfileError(
                    self.path,
                    "compute set {!r} of the trace is not in PopVision's report".format(
                        compute_set
                    ),
                ) from None
            except Exception as exc:
                raise self._fail("compute set {}".format(compute_set), exc) from exc
            self._same_name(
                "compute set", compute_set, self._sql_compute_sets, found, "compute set indices"
            )
            try:
                names = "; ".join(vertex.type.name for vertex in found.vertices)
            except Exception as exc:
                raise self._fail("the vertices of compute set {}".format(compute_set), exc) from exc
            self._vertices[compute_set] = names
        return names

    def attention_exchanges(self, selector: Pattern[str]) -> List[Dict[str, object]]:
        """Each exchange program whose name the selector finds, in pva's order."""
        found: List[Dict[str, object]] = []
        for program_id, is_exchange, program in self.programs():
            if not is_exchange:
                continue
            try:
                name = program.name
            except Exception as exc:
                raise self._fail("the name of program {}".format(program_id), exc) from exc
            if selector.search(name):
                maximum, mean = self.code_bytes(program_id, program)
                found.append(AttentionExchange(name, maximum, mean)._asdict())
        return found


class NoPvaFacts:
    """Extraction without pva (--no-pva): the pva facts are null, never guessed."""

    def expect_names(self, program_names: dict, compute_set_names: dict) -> None:
        pass

    def max_exchange_code_bytes(self, program_id: Optional[int]) -> None:
        return None

    def vertices(self, compute_set: Optional[int]) -> None:
        return None

    def attention_exchanges(self, selector: Pattern[str]) -> None:
        return None


if TYPE_CHECKING:  # mypy checks that both implement the protocol; nothing runs
    _implements: Tuple[Type[SummaryFacts], ...] = (PvaFacts, NoPvaFacts)
