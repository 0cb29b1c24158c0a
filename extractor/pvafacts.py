"""The three facts only PopVision's Python API (`pva`) knows, each fetched at most once.

- a program's type, and for an exchange program its code bytes per tile;
- a compute set's vertex type names;
- the attention exchanges, in pva's program order.

`pva` reads lazily from the profile, so every per-tile array and vertex list is touched
once and its result kept.
"""

from .errors import ProfileError, PvaMissingError
from .model import AttentionExchange

ENABLE_HINT = ("PopVision's Python API was not found: it comes only with the Poplar SDK; "
               "enable it with 'source <poplar_sdk>/enable.sh' and run extract with the "
               "SDK's Python, or add --no-pva for a summary without the pva facts")


def import_pva():
    """The `pva` module, or PvaMissingError saying how to enable it."""
    try:
        import pva
    except ImportError as exc:
        raise PvaMissingError("pva", "{} ({})".format(ENABLE_HINT, exc)) from exc
    return pva


class PvaFacts:
    """Cached answers from one report opened with `pva.openReport`."""

    def __init__(self, pva, path):
        self.path = path
        try:
            report = pva.openReport(str(path))
            self._compilation = report.compilation
            self._exchange_type = pva.Program.Type.DoExchange
        except Exception as exc:  # pva's C++ core raises its own exception types
            raise ProfileError(path, "PopVision could not open the report: {}".format(exc)) from exc
        self._programs = None  # [(id, is an exchange, program)], in pva's order
        self._by_id: dict = {}  # program id -> (is an exchange, program), by programs()
        self._code_bytes = {}  # program id: (max, mean) of its codeBytesByTile
        self._vertices = {}  # compute set id: "; "-joined vertex type names

    def _fail(self, what, exc):
        return ProfileError(self.path, "PopVision could not read {}: {}".format(what, exc))

    def programs(self) -> list:
        """pva's programs in report order as (id, is an exchange, program); listed once,
        reading each program's id and type once."""
        if self._programs is None:
            try:
                self._programs = [(program._id, program.type == self._exchange_type, program)
                                  for program in self._compilation.programs]
            except Exception as exc:
                raise self._fail("the programs", exc) from exc
            self._by_id = {entry[0]: entry[1:] for entry in self._programs}
        return self._programs

    def code_bytes(self, program_id, program):
        """(max, mean) of the program's codeBytesByTile, (0, 0.0) when empty; read once."""
        cached = self._code_bytes.get(program_id)
        if cached is None:
            try:
                per_tile = list(program.codeBytesByTile)
            except Exception as exc:
                raise self._fail("the code bytes of program {}".format(program_id), exc) from exc
            try:
                cached = ((max(per_tile), sum(per_tile) / len(per_tile)) if per_tile
                          else (0, 0.0))
            except (TypeError, ValueError, OverflowError) as exc:
                raise self._fail("the code bytes of program {}".format(program_id), exc) from exc
            self._code_bytes[program_id] = cached
        return cached

    def max_exchange_code_bytes(self, program_id) -> int:
        """max(codeBytesByTile) when the step's program is an exchange, else 0."""
        if program_id is None:
            return 0
        self.programs()
        known = self._by_id.get(program_id)
        if known is None:
            raise ProfileError(self.path, "program {!r} of the trace is not in PopVision's "
                               "report".format(program_id))
        is_exchange, program = known
        return self.code_bytes(program_id, program)[0] if is_exchange else 0

    def vertices(self, compute_set) -> str:
        """The compute set's vertex type names in pva order, joined by "; "."""
        if compute_set is None:
            return ""
        names = self._vertices.get(compute_set)
        if names is None:
            if type(compute_set) is not int or compute_set < 0:
                # pva's list would take -1 as the last compute set: never a real id.
                raise ProfileError(self.path, "compute set {!r} of the trace is not in "
                                   "PopVision's report".format(compute_set))
            try:
                vertices = self._compilation.computeSets[compute_set].vertices
                names = "; ".join(vertex.type.name for vertex in vertices)
            except (IndexError, KeyError, TypeError):
                raise ProfileError(self.path, "compute set {!r} of the trace is not in "
                                   "PopVision's report".format(compute_set)) from None
            except Exception as exc:
                raise self._fail("the vertices of compute set {}".format(compute_set), exc) from exc
            self._vertices[compute_set] = names
        return names

    def attention_exchanges(self, selector) -> list:
        """Each exchange program whose name the selector finds, in pva's order."""
        found = []
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

    def max_exchange_code_bytes(self, program_id):
        return None

    def vertices(self, compute_set):
        return None

    def attention_exchanges(self, selector):
        return None
