"""The files a summary.json may come with (`extract PROFILE -o summary.json --blocks`,
`--breakdown`, `--memory`, and a batch with them): one entry each, and every part of the
tool that writes, records, sweeps, checks or trusts such a file goes through this table.

An entry says what the file is called beside summary.json, its option (`--` + its key),
its index keys (its key, `true` on a line whose extraction wrote it, and `<key>_sha256`),
how it is made, how it is read back, and when a single run's file (no index to go by)
belongs to the summary beside it. Adding a fourth file is one more entry.

The functions are named by where they are (`"module:function"`), imported only when
used: the CLI and a run without these options import none of them.
"""

import importlib
from pathlib import Path
from typing import Any, Callable, Iterable, List, NamedTuple, Optional, Tuple

from .errors import StrPath


class DerivedFile(NamedTuple):
    """One file derived from the profile of a summary, written beside it."""

    key: str  # the option's word, the index keys' stem, the name in RunOptions.derived
    name: str  # its file name, beside summary.json
    # "module:function"(profile, rules, pva, label) -> (bytes, warnings): made once the
    # summary is; None: written by the summary's own pass as it goes (blocks.json).
    make: Optional[str]
    # "module:function"(path) -> dict: its JSON object, or the file's own error.
    read: str
    # "module:function"(summary, data) -> Optional[str]: where a file that no index
    # vouches for says something else than the summary beside it (None: they agree).
    disagreement: str
    # "module:function"(data) -> {metric name: number}: what compare, table, report and
    # budgets see of a file that belongs (core/metrics.py names them); None: nothing.
    metrics: Optional[str] = None

    @property
    def option(self) -> str:
        return "--" + self.key

    @property
    def sha256_key(self) -> str:
        """The index key of the file's SHA-256."""
        return self.key + "_sha256"

    def path(self, summary_path: StrPath) -> Path:
        """Where the file of the summary at `summary_path` is: beside it."""
        return Path(summary_path).parent / self.name

    def function(self, role: str) -> Callable[..., Any]:
        """The function of `role` ("make", "read", "disagreement", "metrics")."""
        module, name = getattr(self, role).split(":")
        return getattr(importlib.import_module(module), name)


#: Every derived file, in the order they are written (before the summary, written last).
DERIVED_FILES: Tuple[DerivedFile, ...] = (
    DerivedFile(
        "blocks",
        "blocks.json",
        None,
        "extractor.core.blockformats:read_blocks_json",
        "extractor.readback.provenance:disagreement",
    ),
    DerivedFile(
        "breakdown",
        "breakdown.json",
        "extractor.breakdown.derived:breakdown_file",
        "extractor.breakdown.derived:read_breakdown_json",
        "extractor.breakdown.derived:breakdown_disagreement",
        "extractor.core.metrics:breakdown_metrics",
    ),
    DerivedFile(
        "memory",
        "memory.json",
        "extractor.memory.derived:memory_file",
        "extractor.memory.derived:read_memory_json",
        "extractor.memory.derived:memory_disagreement",
        "extractor.core.metrics:memory_metrics",
    ),
)

#: The names of every derived file (a batch's own files include them).
DERIVED_NAMES = tuple(derived.name for derived in DERIVED_FILES)


def derived_file(key: str) -> DerivedFile:
    """The entry whose key is `key`; KeyError for none."""
    for derived in DERIVED_FILES:
        if derived.key == key:
            return derived
    raise KeyError(key)


def chosen(keys: Iterable[str]) -> List[DerivedFile]:
    """The entries of `keys`, in the table's order (the order they are written)."""
    wanted = set(keys)
    return [derived for derived in DERIVED_FILES if derived.key in wanted]


def read_derived_json(path: StrPath, name: str) -> dict:
    """The JSON object in the derived file `name` (breakdown.json, memory.json) at
    `path`; DerivedFileError naming it when it cannot be read, is not a JSON object, or
    holds a number that is not finite or a whole number beyond 64 bits (the numbers
    blocks.json may hold: cycles, bytes, steps and counts of a profile)."""
    from .core.blockformats import BLOCKS_NUMBERS
    from .errors import DerivedFileError
    from .inputs import read_input
    from .jsonnumbers import NumberRefused, load_strict_json

    def refused(problem: str) -> DerivedFileError:
        return DerivedFileError(path, "not a {} file: {}".format(name, problem))

    raw = read_input(path, DerivedFileError)
    try:
        data = load_strict_json(raw.decode("utf-8"), BLOCKS_NUMBERS)
    except UnicodeDecodeError:
        raise refused("not UTF-8 text") from None
    except NumberRefused as exc:
        raise refused(str(exc)) from None
    except ValueError as exc:
        raise refused("not JSON ({})".format(exc)) from None
    except RecursionError:
        raise refused("nested too deeply") from None
    if not isinstance(data, dict):
        raise refused("a JSON {} where it is an object".format(type(data).__name__))
    return data
