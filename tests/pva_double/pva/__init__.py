"""A stand-in for PopVision's Python API (`pva`), for tests without the Poplar SDK.

It serves the slice of the real API that the extractor uses, from a `pva-double.json`
beside the profile (its format: fixtures/README.md):

    report = pva.openReport("case/profile.pop")        # reads case/pva-double.json
    for program in report.compilation.programs:         # in the JSON's order
        program._id, program.name, program.type.name, program.codeBytesByTile
    program.type == pva.Program.Type.DoExchange
    report.compilation.computeSets[i].vertices[j].type.name   # i = the JSON's "id"

A `"_test_crash": "SIGSEGV"` (any signal name) in pva-double.json makes openReport kill
its own process with that signal, as a crash in pva's C++ core would. A
`"_test_open_error": "text"` makes it raise RuntimeError("text") (pybind11 turns a C++
exception into RuntimeError; the text may span lines).

A program `type` that is not a member of `Program.Type` (a report from a newer SDK) is
served as the real, pybind11-made module serves an enum value it has no name for: a
value equal to no member, whose `.name` is "???".

Like the real module it reads lazily in spirit: `codeBytesByTile` and `vertices` are
properties, and every access is counted in `access_counts` (keys
`("codeBytesByTile", program_id)` and `("vertices", compute_set_id)`), so tests can prove
that each per-tile array and vertex list was fetched at most once.
`reset_access_counts()` clears the counter.

Where the public record shows the real module to be stricter than a plain Python object,
the stand-in is too:

- `openReport(filename)` and `openReport(profileFilename, debugInfoFilename)` take `str`
  arguments, positionally (pybind11: no path objects, bytes or keywords); anything else
  is the TypeError pybind11 raises.
- `compilation.programs` and `compilation.computeSets` build a new list on each access
  (pybind11's default for a bound std::vector), counted as `("programs",)` and
  `("computeSets",)`. `computeSets` is a list indexed by compute set id; an id the JSON
  does not have raises IndexError, as an index past a list's end does.
- A report's parts stay usable only while the Report object itself is referenced (the
  C++ report owns them): once it is garbage collected, reading `programs`,
  `computeSets`, `codeBytesByTile`, `vertices` or `computeset` raises RuntimeError.
- An `OnTileExecute` program carries `computeset` (the ComputeSet object it executes)
  when its JSON entry gives the compute set's id as `"computeset"` (and the JSON has
  that compute set); other programs have no such attribute.
- `"target": {"numTiles": T, "numIPUs": I, "tilesPerIpu": P, "bytesPerTile": B,
  "clockFrequency": Hz}` (any of them) serves `compilation.target` with those attributes
  (a part left out is no attribute: `clockFrequency` missing is a report that cannot say
  its clock); without it the report has no `target`. `report.version` is the format
  version (stand-in: 1.0.0).
- `"tiles": [{"includingGaps": I, "excludingGaps": E, "alwaysLiveBytes": A}, ...]`
  serves `compilation.tiles[i].memory.total.includingGaps`, `.total.excludingGaps` and
  `.alwaysLiveBytes`, in tile order; without it `compilation.tiles` is an empty list.
- `"livenessProgramSteps": [N, ...]` serves
  `compilation.livenessProgramSteps[j].notAlwaysLiveMemory.bytes`; without it the list
  is empty. Both lists are built anew on each access, as bound vectors are.
- `"_test_numbers": "numpy-like"` serves program ids and `codeBytesByTile` entries as
  `NumpyLikeInt`: integral, comparable and hashable like an int, but not an `int` and not
  JSON-serialisable (as numpy's uint64 scalars are), so tests can prove every number pva
  gives is turned into a Python int before it reaches a summary.
"""

import collections
import enum
import json
import os
import signal
import weakref

__version__ = "3.3.0+stand-in"

access_counts = collections.Counter()


def reset_access_counts():
    """Forget every counted access (call before the code under test runs)."""
    access_counts.clear()


class OpenReportError(Exception):
    """Raised by openReport when the report cannot be opened (as the real pva raises)."""


class NumpyLikeInt:
    """An integral value that is not an int: what numpy's uint64 scalar is to Python."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = int(value)

    def __index__(self):
        return self._value

    def __int__(self):
        return self._value

    def __float__(self):
        return float(self._value)

    def __hash__(self):
        return hash(self._value)

    def __eq__(self, other):
        return self._value == _plain(other)

    def __ne__(self, other):
        return self._value != _plain(other)

    def __lt__(self, other):
        return self._value < _plain(other)

    def __le__(self, other):
        return self._value <= _plain(other)

    def __gt__(self, other):
        return self._value > _plain(other)

    def __ge__(self, other):
        return self._value >= _plain(other)

    def __add__(self, other):
        return NumpyLikeInt(self._value + _plain(other))

    __radd__ = __add__

    def __truediv__(self, other):
        return self._value / _plain(other)

    def __repr__(self):
        return "numpy_like({})".format(self._value)


def _plain(value):
    return value._value if isinstance(value, NumpyLikeInt) else value


class _Owner:
    """What a report's parts keep of it: a weak reference, as a view into C++ memory that
    the report owns (pybind11 without keep_alive)."""

    def __init__(self):
        self.report = None

    def check(self, what):
        if self.report is None or self.report() is None:
            raise RuntimeError(
                "{}: the report this came from has been destroyed (keep the "
                "Report object referenced while its parts are used)".format(what)
            )


class Program:
    """One program of the compiled graph."""

    class Type(enum.Enum):
        OnTileExecute = 0
        DoExchange = 1
        GlobalExchange = 2
        StreamCopyBegin = 3
        StreamCopyMid = 4
        StreamCopyEnd = 5
        Sync = 6
        SyncAns = 7
        Sans = 8
        OnEveryTileSwitch = 9
        Repeat = 10
        Sequence = 11

    class UnknownType:
        """An enum value of a newer SDK: equal to no member; pybind11 names it "???"."""

        name = "???"

        def __init__(self, stored_name):
            self._stored_name = stored_name

        def __repr__(self):
            return "<Type.???: {!r}>".format(self._stored_name)

    def __init__(self, id_, name, type_, code_bytes, owner=None, compute_set=None):
        self._id = id_
        self.name = name
        self.type = type_
        self._code_bytes = tuple(code_bytes)
        self._owner = owner if owner is not None else _Owner()
        self._compute_set = compute_set

    @property
    def codeBytesByTile(self):
        self._owner.check("codeBytesByTile")
        access_counts[("codeBytesByTile", int(self._id))] += 1
        return list(self._code_bytes)

    def __getattr__(self, name):
        # Only an OnTileExecute program whose JSON names its compute set has `computeset`.
        if name == "computeset" and self.__dict__.get("_compute_set") is not None:
            self._owner.check("computeset")
            return self._compute_set
        raise AttributeError("'pva.Program' object has no attribute {!r}".format(name))

    def __repr__(self):
        return "<pva.Program {} {} {!r}>".format(self._id, self.type.name, self.name)


class VertexType:
    def __init__(self, name):
        self.name = name
        self.size = 0

    def __repr__(self):
        return "<pva.VertexType {!r}>".format(self.name)


class Vertex:
    def __init__(self, type_name):
        self.type = VertexType(type_name)


class ComputeSet:
    def __init__(self, id_, name, vertex_names, owner=None):
        self._id = id_
        self.name = name
        self._vertex_names = tuple(vertex_names)
        self._owner = owner if owner is not None else _Owner()

    @property
    def vertices(self):
        self._owner.check("vertices")
        access_counts[("vertices", self._id)] += 1
        return [Vertex(name) for name in self._vertex_names]

    def __repr__(self):
        return "<pva.ComputeSet {} {!r}>".format(self._id, self.name)


class ComputeSets(list):
    """The list `compilation.computeSets` gives: index i is the compute set with id i.
    Ids may be sparse in the JSON: indexing an id it does not have raises IndexError, as
    an index past a list's end does (negative indices count from the end, as in any
    list); iteration yields the compute sets that exist, in id order."""

    def __init__(self, by_id):
        length = max(by_id) + 1 if by_id else 0
        super().__init__(by_id.get(index) for index in range(length))

    def __getitem__(self, index):
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(
                "list indices must be integers or slices, not {}".format(type(index).__name__)
            )
        found = super().__getitem__(index)
        if found is None:
            raise IndexError(
                "compute set index {} out of range (the report has no compute "
                "set with that id)".format(index)
            )
        return found

    def __iter__(self):
        return (entry for entry in super().__iter__() if entry is not None)


class Target:
    """The parts of `compilation.target` the JSON gives: a part it leaves out is no
    attribute (as a report that cannot say)."""

    NUMBERS = ("numTiles", "numIPUs", "tilesPerIpu", "bytesPerTile")

    def __init__(self, numbers, clock=None):
        for name, value in numbers.items():
            setattr(self, name, value)
        if clock is not None:
            self.clockFrequency = clock


class _Parts:
    """An object whose attributes are the given values (a part of a tile's memory)."""

    def __init__(self, **values):
        self.__dict__.update(values)


class TileMemory:
    """`compilation.tiles[i].memory`: `total.includingGaps`, `total.excludingGaps`,
    `alwaysLiveBytes`."""

    def __init__(self, including, excluding, always_live):
        self.total = _Parts(includingGaps=including, excludingGaps=excluding)
        self.alwaysLiveBytes = always_live


class Tile:
    def __init__(self, memory):
        self.memory = memory


class LivenessStep:
    """`compilation.livenessProgramSteps[j]`: its `notAlwaysLiveMemory.bytes`."""

    def __init__(self, not_always_live):
        self.notAlwaysLiveMemory = _Parts(bytes=not_always_live)


class Compilation:
    def __init__(self, programs, compute_sets, owner, target=None, tiles=(), liveness=()):
        self._programs = tuple(programs)
        self._compute_sets = dict(compute_sets)
        self._owner = owner
        self._tiles = tuple(tiles)
        self._liveness = tuple(liveness)
        if target is not None:
            self.target = target

    @property
    def tiles(self):
        """A new list on every access, as pybind11 returns a bound vector."""
        self._owner.check("tiles")
        access_counts[("tiles",)] += 1
        return [Tile(memory) for memory in self._tiles]

    @property
    def livenessProgramSteps(self):
        """A new list on every access, as pybind11 returns a bound vector."""
        self._owner.check("livenessProgramSteps")
        access_counts[("livenessProgramSteps",)] += 1
        return [LivenessStep(value) for value in self._liveness]

    @property
    def programs(self):
        """A new list on every access, as pybind11 returns a bound vector."""
        self._owner.check("programs")
        access_counts[("programs",)] += 1
        return list(self._programs)

    @property
    def computeSets(self):
        """A new list on every access, as pybind11 returns a bound vector."""
        self._owner.check("computeSets")
        access_counts[("computeSets",)] += 1
        return ComputeSets(self._compute_sets)


class PoplarVersion:
    string = "3.3.0 (stand-in)"
    major = 3
    minor = 3
    point = 0


class ProfileReportVersion:
    major = 1
    minor = 0
    point = 0
    isUnstableFormat = False


class Report:
    def __init__(self, compilation, owner):
        self.compilation = compilation
        self.poplarVersion = PoplarVersion()
        self.version = ProfileReportVersion()
        owner.report = weakref.ref(self)


def _load(path):
    """Parse pva-double.json beside `path`; raise ValueError/KeyError/TypeError if bad."""
    double = os.path.join(os.path.dirname(os.path.abspath(path)), "pva-double.json")
    if not os.path.isfile(double):
        raise FileNotFoundError("no pva-double.json beside it ({})".format(double))
    with open(double, encoding="utf-8") as handle:
        data = json.load(handle)
    crash = data.get("_test_crash")
    if crash:  # a test of crash isolation: die as a segfault in pva's C++ core would
        os.kill(os.getpid(), getattr(signal, crash))
    if data.get("_test_open_error"):  # a C++ exception, as pybind11 hands it to Python
        raise RuntimeError(data["_test_open_error"])
    owner = _Owner()
    number = NumpyLikeInt if data.get("_test_numbers") == "numpy-like" else int
    compute_sets = {}
    for entry in data["computeSets"]:
        index = int(entry["id"])
        if index < 0 or index in compute_sets:
            raise ValueError("bad or repeated compute set id {}".format(index))
        compute_sets[index] = ComputeSet(
            index, str(entry["name"]), [str(name) for name in entry["vertices"]], owner
        )
    programs = []
    for entry in data["programs"]:
        type_name = entry["type"]
        if type_name in Program.Type.__members__:
            type_ = Program.Type[type_name]
        else:
            type_ = Program.UnknownType(str(type_name))
        code_bytes = entry.get("codeBytesByTile", [])
        if not all(isinstance(value, int) for value in code_bytes):
            raise ValueError(
                "codeBytesByTile of program {} is not a list of ints".format(entry["id"])
            )
        compute_set = None
        if "computeset" in entry and type_ is Program.Type.OnTileExecute:
            # A compute set the JSON lacks (a test removed it): no computeset either.
            compute_set = compute_sets.get(int(entry["computeset"]))
        programs.append(
            Program(
                number(entry["id"]),
                str(entry["name"]),
                type_,
                [number(value) for value in code_bytes],
                owner,
                compute_set,
            )
        )
    target = data.get("target")
    if target is not None:
        target = Target(
            {key: int(target[key]) for key in Target.NUMBERS if key in target},
            clock=float(target["clockFrequency"]) if "clockFrequency" in target else None,
        )
    tiles = [
        TileMemory(
            _whole(entry["includingGaps"]),
            _whole(entry["excludingGaps"]),
            _whole(entry["alwaysLiveBytes"]),
        )
        for entry in data.get("tiles", [])
    ]
    liveness = [_whole(value) for value in data.get("livenessProgramSteps", [])]
    return Report(Compilation(programs, compute_sets, owner, target, tiles, liveness), owner)


def _whole(value):
    """A whole number of pva-double.json, else ValueError (a test double kept honest)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("{!r} is not a whole number".format(value))
    return value


_SIGNATURES = (
    "openReport(): incompatible function arguments. The following argument "
    "types are supported:\n    1. (filename: str) -> pva::Report\n    2. "
    "(profileFilename: str, debugInfoFilename: str) -> pva::Report\n\n"
    "Invoked with: "
)


def openReport(*args, **kwargs):
    """Open the report at `args[0]`; a second argument (the debug information file) is
    accepted and ignored. Only positional `str` arguments, as pybind11 binds them."""
    if kwargs or not 1 <= len(args) <= 2 or not all(type(a) is str for a in args):
        raise TypeError(
            _SIGNATURES
            + ", ".join(
                [repr(a) for a in args] + ["{}={!r}".format(k, v) for k, v in kwargs.items()]
            )
        )
    path = args[0]
    try:
        if not os.path.isfile(path):
            raise FileNotFoundError("no such file")
        return _load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OpenReportError("Could not open report {}: {}".format(path, exc)) from exc
