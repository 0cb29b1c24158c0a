"""Step rows: the trace joined to names and stages, one row per step and IPU."""

from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterator,
    NamedTuple,
    Optional,
    Protocol,
    Tuple,
    overload,
)

from .rules import StageRules
from .sqlitefile import SUM_OVERFLOWS

if TYPE_CHECKING:  # for the annotations alone: at run time steps imports neither
    from .profile import Profile, RawStepRow
    from .pvafacts import StepFacts


class BadValue(Exception):
    """A stored value that cannot mean what the spec needs (the caller names the file)."""


def _stored(value: object) -> str:
    from .sqlitefile import storage_class

    return storage_class(value)


#: SQLite's integers, which every reader of extract's files takes (extract's own
#: included: blocks.json's and the summary's readers refuse a number beyond them).
INT64_LOW, INT64_HIGH = -(2**63), 2**63 - 1


def sum64(value: int) -> int:
    """`value`, a sum of a profile's values that a file will hold (a body's cycles per
    stage or in all, a unit's cycles or tiles, a stage slice's cycles, a diff's sums and
    changes), when it is within SQLite's 64-bit integers; else BadValue: "a sum
    overflows 64-bit integers", as SQLite says of its own sums. The one rule of every
    such sum: Python's integers never overflow, so it is checked here."""
    if INT64_LOW <= value <= INT64_HIGH:
        return value
    raise BadValue(SUM_OVERFLOWS)


@overload
def whole(value: int, what: str) -> int: ...
@overload
def whole(value: None, what: str) -> None: ...
@overload
def whole(value: object, what: str) -> Optional[int]: ...


def whole(value: object, what: str) -> Optional[int]:
    """`value` when it is a whole number or NULL (None), else BadValue naming `what`."""
    if value is None or type(value) is int:
        return value
    raise BadValue("{} is {}, not a whole number".format(what, _stored(value)))


#: The fields of a step row as the spec lists them (summary kernels, CSV columns).
STEP_FIELDS = (
    "step",
    "kind",
    "stage",
    "name",
    "cycles",
    "active_tiles",
    "start",
    "end",
    "max_exchange_code_bytes",
    "vertices",
)

INPUT_DELIVERED_KIND = "StreamCopyEnd"
OUTPUT_BEGINS_KIND = "StreamCopyBegin"
DEVICE_KINDS = ("DoExchange", "OnTileExecute")


class NameClass:
    """What the rules say of one step name; made once per distinct name. The stage (up
    to one search per stage rule) is found when first asked: the pass asks it only of
    the first body's kernels, and a model has hundreds of names."""

    __slots__ = (
        "kernel",
        "anchor",
        "input_delivered",
        "output_begins",
        "_name",
        "_rules",
        "_stage",
    )

    def __init__(self, name: str, rules: StageRules):
        kernel = bool(rules.kernel.search(name))
        self.kernel = kernel
        self.anchor = kernel and bool(rules.anchor.search(name))
        self.input_delivered = bool(rules.input_delivered.search(name))
        self.output_begins = bool(rules.output_begins.search(name))
        self._name, self._rules = name, rules
        self._stage: Optional[str] = None

    @property
    def stage(self) -> str:
        if self._stage is None:
            self._stage = self._rules.stage_of(self._name)
        return self._stage


class StepRow(NamedTuple):
    """One step row, without the two pva facts (see `record`)."""

    step: int
    kind: str
    name: str
    cycles: int
    active_tiles: int
    start: int
    end: int
    program: Optional[int]
    compute_set: Optional[int]
    classes: NameClass

    @property
    def stage(self) -> str:
        return self.classes.stage

    def record(self, facts: "StepFacts") -> Dict[str, object]:
        """The row with every spec field, in spec order; `facts` answers the pva ones.
        BadValue if a number of the row is not a whole number (or NULL: null)."""
        where = "step {}: ".format(self.step)
        kind = self.kind
        if isinstance(kind, bytes):  # a blob where the kind belongs: read as text
            kind = kind.decode("utf-8", "replace")
        return {
            "step": self.step,
            "kind": kind,
            "stage": self.classes.stage,
            "name": self.name,
            "cycles": whole(self.cycles, where + "steps_by_ipu.cycles"),
            "active_tiles": whole(self.active_tiles, where + "steps_by_ipu.active_tiles"),
            "start": whole(self.start, where + "its start (cycles_base + active_cycles_from_min)"),
            "end": whole(self.end, where + "its end (cycles_base + active_cycles_to_max)"),
            "max_exchange_code_bytes": facts.max_exchange_code_bytes(self.program),
            "vertices": facts.vertices(self.compute_set),
        }


class StepSink(Protocol):
    """What `summarize(step_sink=...)` hands every step row of its one pass to (the step
    tables of --csv: `steptables.StepTables`): called once per row, in step order, with
    the pva facts to ask for the row's two (`facts`) and whether the row is one of the
    first body's. No row is kept by the pass: a sink keeps what it needs."""

    def __call__(self, row: StepRow, facts: "StepFacts", in_first_body: bool) -> None: ...


class NameClassifier:
    """Matches names against the rules once per distinct name (names repeat every run)."""

    def __init__(self, rules: StageRules):
        self.rules = rules
        self._seen: Dict[str, NameClass] = {}

    def __call__(self, name: str) -> NameClass:
        classes = self._seen.get(name)
        if classes is None:
            classes = self._seen[name] = NameClass(name, self.rules)
        return classes


class NamedStep(NamedTuple):
    """The name of a (program, compute set) pair and what the rules say of it."""

    name: str
    classes: NameClass
    notable: bool  # a kernel, or a candidate to open or close an inference


#: A value of a step row as SQLite gives it: a column may hold any storage class (Any: the
#: pass compares and adds what it uses, and checks it where the spec says, BadValue).
SqlValue = Any

#: (program id, compute set id) of a step row, as SQLite gives them (NULL: None).
Pair = Tuple[Optional[int], Optional[int]]

if TYPE_CHECKING:  # a dict, typed for mypy alone (a subscripted base would add Generic)
    _StepNamesBase = Dict[Pair, NamedStep]
else:
    _StepNamesBase = dict


class StepNames(_StepNamesBase):
    """(program id, compute set id) -> NamedStep, made on first use of the pair.

    A step row's name is its compute set's when that is not empty, else its program's,
    else "" (the spec). Pairs are few (a trace replays its programs every run), so each
    is named and classified once.

    `notable` says, for each pair, what `self[program, compute_set].notable` says (True
    for every pair with `all_notable`); `counted`, what still matters once the first
    body is over: anchors (counted as QKV executions) and marker candidates, no longer
    any other kernel row. Both are PairTables, for the pass that asks it of every row."""

    def __init__(
        self,
        program_names: dict,
        compute_set_names: dict,
        rules: StageRules,
        all_notable: bool = False,
    ) -> None:
        super().__init__()
        self._programs = program_names
        self._compute_sets = compute_set_names
        self._classify = NameClassifier(rules)
        self.notable = PairTable(self, all_notable, lambda named: named.notable)
        self.counted = PairTable(
            self,
            all_notable,
            lambda named: (
                named.classes.anchor or named.classes.input_delivered or named.classes.output_begins
            ),
        )

    def __missing__(self, key: Pair) -> NamedStep:
        program, compute_set = key
        name = self._compute_sets.get(compute_set) or self._programs.get(program) or ""
        classes = self._classify(name)
        notable = classes.kernel or classes.input_delivered or classes.output_begins
        named = self[key] = NamedStep(name, classes, notable)
        return named


class PairTable:
    """`rows[compute_set][program]`: `test(NamedStep of the pair)` (or True for every
    pair, with `all_true`); a pair not there yet is added by `fill`.

    Plain dicts, looked up with two ints, as the pass does for each of millions of rows:
    a tuple key costs more to make and hash, and a dict subclass (__missing__) is
    subscripted through a slower generic slot (BENCHMARKS.md has the figures)."""

    def __init__(self, names: StepNames, all_true: bool, test: Callable[[NamedStep], bool]) -> None:
        self.rows: Dict[Optional[int], Dict[Optional[int], bool]] = {}
        self._names = names
        self._all = all_true
        self._test = test

    def fill(self, compute_set: Optional[int], program: Optional[int]) -> bool:
        value = bool(self._all or self._test(self._names[program, compute_set]))
        self.rows.setdefault(compute_set, {})[program] = value
        return value


def make_step_row(raw: "RawStepRow", named: NamedStep) -> StepRow:
    """A StepRow from a raw row of Profile.step_rows and its NamedStep."""
    step, kind, cycles, program, compute_set, tiles, start, end = raw
    return StepRow(
        step, kind, named.name, cycles, tiles, start, end, program, compute_set, named.classes
    )


def step_rows(profile: "Profile", rules: StageRules) -> Iterator[StepRow]:
    """Every step row of the profile, in step order, with its stage; streamed."""
    programs, compute_sets = profile.names()
    names = StepNames(programs, compute_sets, rules)
    for raw in profile.step_rows():
        yield make_step_row(raw, names[raw[3], raw[4]])
