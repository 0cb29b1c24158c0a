"""The summary as one type: its keys (in the spec's order, written here only), reading and
checking a summary.json, and the numbers its readers take from it.

`summary.py` builds a summary's dict with `summary_dict`; `Summary` wraps such a dict
(read back from a file by `Summary.read`, which checks it) and answers for it: the cycles
per first-body stage, the device spans, the QKV executions, the two min/mean/max memory
objects, the attention exchanges and whether the pva facts are there. compare and the
batch index read summaries only through it.
"""

from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, NoReturn, Optional, Union

from ..errors import StrPath, SummaryFileError
from ..inputs import NotRegular, read_regular
from ..jsonnumbers import NumberLimits, NumberRefused, load_strict_json, short_number

#: The file name of a summary: a batch writes one per profile, and compare, table and
#: report find them by it below a folder.
SUMMARY_NAME = "summary.json"

#: The keys of a summary, in the spec's order (docs/formats/summary.md, "The fields, in order").
SUMMARY_KEYS = (
    "profile",
    "kernels",
    "attention_exchanges",
    "exchange_memory_per_tile",
    "device_spans",
    "qkv_executions",
    "allocated_memory",
)
(
    PROFILE,
    KERNELS,
    ATTENTION_EXCHANGES,
    EXCHANGE_MEMORY,
    DEVICE_SPANS,
    QKV_EXECUTIONS,
    ALLOCATED_MEMORY,
) = SUMMARY_KEYS

#: The fields of the two min/avg/max objects, as (min, mean, max).
EXCHANGE_MEMORY_FIELDS = ("min(b)", "avg(b)", "max(b)")
ALLOCATED_MEMORY_FIELDS = ("min(total)", "avg(total)", "max(total)")
_MEMORY_FIELDS = {
    EXCHANGE_MEMORY: EXCHANGE_MEMORY_FIELDS,
    ALLOCATED_MEMORY: ALLOCATED_MEMORY_FIELDS,
}

Number = Union[int, float]


def summary_dict(**fields: object) -> dict:
    """A summary's dict with its keys in the spec's order; TypeError unless `fields` are
    exactly the summary's keys."""
    if set(fields) != set(SUMMARY_KEYS):
        raise TypeError(
            "a summary has the keys {}, not {}".format(
                ", ".join(SUMMARY_KEYS), ", ".join(sorted(fields))
            )
        )
    return {key: fields[key] for key in SUMMARY_KEYS}


class MinMeanMax(NamedTuple):
    """One of the summary's min/avg/max objects (each None when there were no rows)."""

    min: Optional[Number]
    mean: Optional[Number]
    max: Optional[Number]


class AttentionExchange(NamedTuple):
    """One of `attention_exchanges`: the program's name and its code bytes per tile."""

    name: str
    maximum: Number
    mean: Number


class Summary:
    """A summary (its dict, `data`, in the spec's key order) and what its readers need.

    `Summary(data)` trusts `data` (a summary just made); `Summary.read(path)` and
    `Summary.from_json(data, source)` check it first (SummaryFileError if it is not a
    summary)."""

    __slots__ = ("data",)

    def __init__(self, data: dict):
        self.data = data

    def __repr__(self) -> str:
        return "Summary({!r})".format(self.data.get(PROFILE))

    @classmethod
    def from_json(cls, data: Any, source: StrPath) -> "Summary":
        """`data` (parsed JSON) as a Summary; SummaryFileError naming `source` if it is
        not a summary. (Any: parsed JSON is any of its types until checked.)"""
        _check(data, source)
        return cls(data)

    @classmethod
    def read(cls, path: StrPath) -> "Summary":
        """A summary.json's contents, checked; SummaryFileError if it is not a summary."""
        path = Path(path)
        return cls.from_json(_load(path), path)

    # ---- the keys ------------------------------------------------------------------

    @property
    def profile(self) -> str:
        return self.data[PROFILE]

    @property
    def kernels(self) -> List[dict]:
        """The first body's kernel rows, each a dict of steps.STEP_FIELDS."""
        return self.data[KERNELS]

    @property
    def device_spans(self) -> List[int]:
        return self.data[DEVICE_SPANS]

    @property
    def qkv_executions(self) -> int:
        return self.data[QKV_EXECUTIONS]

    @property
    def has_pva(self) -> bool:
        """Whether the pva facts are there (made without pva, attention_exchanges is null)."""
        return self.data[ATTENTION_EXCHANGES] is not None

    @property
    def attention_exchanges(self) -> Optional[List[AttentionExchange]]:
        """In pva order; None without the pva facts."""
        exchanges = self.data[ATTENTION_EXCHANGES]
        if exchanges is None:
            return None
        return [AttentionExchange(e["name"], e["maximum"], e["mean"]) for e in exchanges]

    @property
    def exchange_memory(self) -> MinMeanMax:
        """`exchange_memory_per_tile`: min(b), avg(b), max(b)."""
        return self._min_mean_max(EXCHANGE_MEMORY)

    @property
    def allocated_memory(self) -> MinMeanMax:
        """`allocated_memory`: min(total), avg(total), max(total)."""
        return self._min_mean_max(ALLOCATED_MEMORY)

    def _min_mean_max(self, key: str) -> MinMeanMax:
        value = self.data[key]
        return MinMeanMax(*(value[field] for field in _MEMORY_FIELDS[key]))

    # ---- derived numbers ---------------------------------------------------------------

    def stage_cycles(self) -> Dict[str, Optional[int]]:
        """The cycles of the first body's kernels summed per stage, stages in the order
        they first appear; None for a stage one of whose kernels has null cycles (a NULL
        in the profile: unknown, so is the sum)."""
        cycles: Dict[str, Optional[int]] = {}
        for kernel in self.data[KERNELS]:
            stage, value = kernel["stage"], kernel["cycles"]
            so_far = cycles.get(stage, 0)
            cycles[stage] = None if so_far is None or value is None else so_far + value
        return cycles

    @property
    def stages_total(self) -> Optional[int]:
        """The cycles of all the first body's kernels; None when there are none, or when
        one of them is unknown."""
        cycles = list(self.stage_cycles().values())
        if not cycles or any(value is None for value in cycles):
            return None
        return sum(value for value in cycles if value is not None)

    def headline(self) -> dict:
        """The numbers a batch index line carries: spans, QKV count, cycles per stage."""
        return {
            DEVICE_SPANS: self.device_spans,
            QKV_EXECUTIONS: self.qkv_executions,
            "stage_cycles": self.stage_cycles(),
        }


# ---- checking --------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return _is_int(value) or isinstance(value, float)


# A kernel's fields (steps.STEP_FIELDS) other than its stage: what each holds when it is
# there. null is a NULL in the profile, which extract writes as it is.
_KERNEL_TEXTS = ("kind", "name", "vertices")
_KERNEL_WHOLES = ("cycles", "active_tiles", "start", "end", "max_exchange_code_bytes")
# Cycles are SQLite's 64-bit integers (a negative count is used as it is, as extract
# writes it): never beyond them.
_CYCLES_LIMIT = 2**63


def _json_type(value: object) -> str:
    for kind, name in (
        (bool, "a boolean"),
        (int, "a number"),
        (float, "a number"),
        (str, "a string"),
        (list, "a list"),
        (dict, "an object"),
    ):
        if isinstance(value, kind):
            return name
    return "null"


def _check_kernel(kernel: dict, number: int, fail: Callable[[str], NoReturn]) -> None:
    """The fields of kernels[number] beyond its stage and cycles' type (checked first)."""
    where = "{!r}[{}]".format(KERNELS, number)
    if "step" in kernel and not _is_int(kernel["step"]):
        fail("{} 'step' is not a whole number, but {}".format(where, _json_type(kernel["step"])))
    for field in _KERNEL_TEXTS:
        if field in kernel and not (kernel[field] is None or isinstance(kernel[field], str)):
            fail(
                "{} {!r} is neither a string nor null, but {}".format(
                    where, field, _json_type(kernel[field])
                )
            )
    for field in _KERNEL_WHOLES:
        if field in kernel and not (kernel[field] is None or _is_int(kernel[field])):
            fail(
                "{} {!r} is neither a whole number nor null, but {}".format(
                    where, field, _json_type(kernel[field])
                )
            )
    cycles = kernel["cycles"]
    if cycles is not None and not -_CYCLES_LIMIT <= cycles < _CYCLES_LIMIT:
        fail(
            "{} 'cycles' is {}: beyond the 64-bit integers a profile's cycles are".format(
                where, short_number(str(cycles))
            )
        )


def _check(data: Any, source: StrPath) -> None:
    def fail(problem: str) -> NoReturn:
        raise SummaryFileError(source, "not a summary: {}".format(problem))

    if not isinstance(data, dict):
        fail("a JSON {} where a summary is an object".format(type(data).__name__))
    missing = [key for key in SUMMARY_KEYS if key not in data]
    if missing:
        fail(
            "no {} key{}".format(
                ", ".join(repr(k) for k in missing), "s" if len(missing) > 1 else ""
            )
        )
    if not isinstance(data[PROFILE], str):
        fail(
            "{!r} is not a string (the profile's path), but {}".format(
                PROFILE, _json_type(data[PROFILE])
            )
        )
    kernels = data[KERNELS]
    if not isinstance(kernels, list) or not all(
        isinstance(k, dict)
        and isinstance(k.get("stage"), str)
        and (_is_int(k.get("cycles")) or ("cycles" in k and k["cycles"] is None))
        for k in kernels
    ):
        # null cycles: a NULL in the profile, which extract writes as it is
        fail("{!r} is not a list of kernels with a stage and cycles".format(KERNELS))
    for number, kernel in enumerate(kernels):
        _check_kernel(kernel, number, fail)
    exchanges = data[ATTENTION_EXCHANGES]
    if exchanges is not None and (
        not isinstance(exchanges, list)
        or not all(
            isinstance(e, dict)
            and isinstance(e.get("name"), str)
            and _is_number(e.get("maximum"))
            and _is_number(e.get("mean"))
            for e in exchanges
        )
    ):
        fail(
            "{!r} is neither null nor a list of {{name, maximum, mean}}".format(ATTENTION_EXCHANGES)
        )
    spans = data[DEVICE_SPANS]
    if not isinstance(spans, list) or not all(_is_int(s) for s in spans):
        fail("{!r} is not a list of whole numbers".format(DEVICE_SPANS))
    if not _is_int(data[QKV_EXECUTIONS]):
        fail("{!r} is not a whole number".format(QKV_EXECUTIONS))
    for key, fields in _MEMORY_FIELDS.items():
        value = data[key]
        if not isinstance(value, dict) or not all(
            field in value and (value[field] is None or _is_number(value[field]))
            for field in fields
        ):
            fail("{!r} is not an object with {}".format(key, ", ".join(fields)))


# ---- reading ---------------------------------------------------------------------------

# A summary's whole numbers are SQLite's 64-bit integers, or (a device span) the
# difference of two: never 2**64 or more either way; its fractions are means of them.
_WHOLE_LIMIT = 2**64
SUMMARY_NUMBERS = NumberLimits(
    whole_low=-(_WHOLE_LIMIT - 1),
    whole_high=_WHOLE_LIMIT - 1,
    fraction_limit=float(_WHOLE_LIMIT),
    whole_beyond="the whole number {short} ({digits} digits) is beyond the 64 bits of a "
    "summary's numbers",
    not_held="the number {short} is beyond what a float holds",
    fraction_beyond="the number {short} is beyond the 64 bits of a summary's numbers",
    not_a_number="{name}, which is not a JSON number (a summary's numbers are finite)",
)


def _load(path: Path) -> Any:
    """A summary file's JSON, strict about its numbers; SummaryFileError if it has none.
    (Any: whatever JSON the file holds, for _check to check.)"""
    try:
        raw = read_regular(path)  # a FIFO or a device would never end
    except IsADirectoryError:
        raise SummaryFileError(path, "is a folder with no summary.json below it") from None
    except NotRegular as exc:
        raise SummaryFileError(path, str(exc)) from None
    except OSError as exc:
        raise SummaryFileError(path, "cannot read: {}".format(exc.strerror or exc)) from exc
    try:
        return load_strict_json(raw.decode("utf-8"), SUMMARY_NUMBERS)
    except UnicodeDecodeError:
        raise SummaryFileError(path, "not a summary: not UTF-8 text") from None
    except NumberRefused as exc:
        raise SummaryFileError(path, "not a summary: {}".format(exc)) from exc
    except ValueError as exc:
        raise SummaryFileError(path, "not a summary: not JSON ({})".format(exc)) from exc
    except RecursionError:
        raise SummaryFileError(path, "not a summary: JSON nested too deeply") from None
