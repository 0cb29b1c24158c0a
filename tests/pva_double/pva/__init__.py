"""A stand-in for PopVision's Python API (`pva`), for tests without the Poplar SDK.

It serves the slice of the real API that the extractor uses, from a `pva-double.json`
beside the profile (format: /work/shared/docs/fixtures.md, mirrored in fixtures/README.md):

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
"""

import collections
import enum
import json
import os
import signal

__version__ = "3.3.0+stand-in"

access_counts = collections.Counter()


def reset_access_counts():
    """Forget every counted access (call before the code under test runs)."""
    access_counts.clear()


class OpenReportError(Exception):
    """Raised by openReport when the report cannot be opened (as the real pva raises)."""


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

    def __init__(self, id_, name, type_, code_bytes):
        self._id = id_
        self.name = name
        self.type = type_
        self._code_bytes = tuple(code_bytes)

    @property
    def codeBytesByTile(self):
        access_counts[("codeBytesByTile", self._id)] += 1
        return list(self._code_bytes)

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
    def __init__(self, id_, name, vertex_names):
        self._id = id_
        self.name = name
        self._vertex_names = tuple(vertex_names)

    @property
    def vertices(self):
        access_counts[("vertices", self._id)] += 1
        return [Vertex(name) for name in self._vertex_names]

    def __repr__(self):
        return "<pva.ComputeSet {} {!r}>".format(self._id, self.name)


class ComputeSets:
    """Indexable by compute set id. Ids may be sparse: indexing an id the report does not
    have raises IndexError, as an out-of-range index of a sequence does. len() is the
    largest id + 1; iteration yields the compute sets that exist, in id order."""

    def __init__(self, by_id):
        self._by_id = dict(by_id)
        self._length = max(self._by_id) + 1 if self._by_id else 0

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError("compute set indices must be integers, not {}".format(
                type(index).__name__))
        if index < 0:
            index += self._length
        try:
            return self._by_id[index]
        except KeyError:
            raise IndexError("compute set index {} out of range (the report has no compute "
                             "set with that id)".format(index))

    def __iter__(self):
        for index in sorted(self._by_id):
            yield self._by_id[index]


class Compilation:
    def __init__(self, programs, compute_sets):
        self.programs = programs
        self.computeSets = compute_sets


class PoplarVersion:
    string = "3.3.0 (stand-in)"
    major = 3
    minor = 3
    point = 0


class Report:
    def __init__(self, compilation):
        self.compilation = compilation
        self.poplarVersion = PoplarVersion()


def _load(path):
    """Parse pva-double.json beside `path`; raise ValueError/KeyError/TypeError if bad."""
    double = os.path.join(os.path.dirname(os.path.abspath(path)), "pva-double.json")
    if not os.path.isfile(double):
        raise FileNotFoundError("no pva-double.json beside it ({})".format(double))
    with open(double, "r", encoding="utf-8") as handle:
        data = json.load(handle)
    crash = data.get("_test_crash")
    if crash:  # a test of crash isolation: die as a segfault in pva's C++ core would
        os.kill(os.getpid(), getattr(signal, crash))
    if data.get("_test_open_error"):  # a C++ exception, as pybind11 hands it to Python
        raise RuntimeError(data["_test_open_error"])
    programs = []
    for entry in data["programs"]:
        type_name = entry["type"]
        if type_name in Program.Type.__members__:
            type_ = Program.Type[type_name]
        else:
            type_ = Program.UnknownType(str(type_name))
        code_bytes = entry.get("codeBytesByTile", [])
        if not all(isinstance(value, int) for value in code_bytes):
            raise ValueError("codeBytesByTile of program {} is not a list of ints".format(
                entry["id"]))
        programs.append(Program(int(entry["id"]), str(entry["name"]), type_, code_bytes))
    compute_sets = {}
    for entry in data["computeSets"]:
        index = int(entry["id"])
        if index < 0 or index in compute_sets:
            raise ValueError("bad or repeated compute set id {}".format(index))
        compute_sets[index] = ComputeSet(index, str(entry["name"]),
                                         [str(name) for name in entry["vertices"]])
    return Report(Compilation(tuple(programs), ComputeSets(compute_sets)))


def openReport(profile, debug_cbor=None):
    """Open the report at `profile` (a path); `debug_cbor` is accepted and ignored."""
    path = os.fspath(profile)
    try:
        if not os.path.isfile(path):
            raise FileNotFoundError("no such file")
        return _load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OpenReportError("Could not open report {}: {}".format(path, exc)) from exc
