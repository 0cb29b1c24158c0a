"""Renderers: the one contract of every command that writes its result in several formats
(`extract compare`, `diff`, `table`, `blocks`, `memory`, `breakdown`), and each
command's registry of them.

A renderer is a class, one per format: its `name` (the `--format` value), the `suffix`
and `media_type` of a file in its format, and `render(result)`, the whole output, in
bytes, of the command's result (a comparison, a diff, the recordings, the blocks). Its
options (diff's `top`) are given to its constructor.

A format written as the data comes, before the result is whole, is a `StreamRenderer`:
`writer(handle)` gives the object the command's pass drives (for `extract blocks`, a
`core.blocks.BodyWriter`: `begin`, then `body` once per body as the pass closes it,
then `end`), which writes into the binary `handle` as it goes and keeps nothing but
what its last bytes need. Its `render(result)` gives the same bytes from a result kept
whole. A command that streams tells one from the other by `isinstance`.

A `Registry` holds one command's formats, in the order `--format` lists them (the first
is the default), each by where its class is (`"module:Class"`): the CLI makes its
`--format` choices from the names without importing any renderer (`extract`'s start-up
pays only for the command it runs); `registry[name]` imports the class.
"""

from enum import Enum
from importlib import import_module
from typing import (
    IO,
    Any,
    Generic,
    Iterator,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    cast,
)

Result = TypeVar("Result")


class Renderer(Generic[Result]):
    """One output format of a command's result. A subclass sets `name`, `suffix` and
    `media_type`, and defines `render`."""

    name = ""  # the --format value
    suffix = ""  # a file in this format ends so
    media_type = ""  # its content type

    def render(self, result: Result) -> bytes:
        """The whole output for `result`."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return "<{} renderer {!r}>".format(type(self).__name__, self.name)


class StreamRenderer(Renderer[Result]):
    """A format written as the data comes: `writer(handle)` is what the command's pass
    drives, writing into the binary `handle` (seekable: a pass that starts again starts
    the handle again); `render(result)` gives the same bytes from a whole result."""

    def writer(self, handle: IO[bytes]) -> Any:  # Any: each command's own sink protocol
        raise NotImplementedError


class Registry:
    """One command's formats: name -> renderer class, in `--format`'s order (the first
    the default), each imported only when asked for."""

    def __init__(self, command: str, places: Sequence[Tuple[str, str]]) -> None:
        self.command = command
        self._places = dict(places)  # name -> "module:Class"

    def __iter__(self) -> Iterator[str]:
        return iter(self._places)

    def __contains__(self, name: object) -> bool:
        return name in self._places

    @property
    def default(self) -> str:
        return next(iter(self._places))

    def __getitem__(self, name: str) -> Type[Renderer]:
        """The renderer class of `name` (KeyError for a name not registered)."""
        if name not in self._places:
            raise KeyError(
                "{} has no format {!r}: one of {}".format(
                    self.command, name, ", ".join(self._places)
                )
            )
        module, _, attribute = self._places[name].partition(":")
        found: Type[Renderer] = getattr(import_module(module), attribute)
        return found

    def choices(self, enum_name: str) -> Type[Enum]:
        """The names as a str Enum, in order: the choices of a typer `--format` option."""
        return cast(Type[Enum], Enum(enum_name, [(name, name) for name in self._places], type=str))


# ---- each command's formats ------------------------------------------------------------

COMPARE_FORMATS = Registry(
    "compare",
    [
        ("markdown", "extractor.compare.formats:CompareMarkdown"),
        ("csv", "extractor.compare.formats:CompareCsv"),
        ("json", "extractor.compare.formats:CompareJson"),
    ],
)
DIFF_FORMATS = Registry(
    "diff",
    [
        ("markdown", "extractor.diff.formats:DiffMarkdown"),
        ("json", "extractor.diff.formats:DiffJson"),
        ("csv", "extractor.diff.formats:DiffCsv"),
    ],
)
TABLE_FORMATS = Registry(
    "table",
    [("csv", "extractor.report.table:TableCsv"), ("jsonl", "extractor.report.table:TableJsonl")],
)
BLOCKS_FORMATS = Registry(
    "blocks",
    [
        ("json", "extractor.core.blockformats:BlocksJson"),
        ("csv", "extractor.core.blockformats:BlocksCsv"),
        ("markdown", "extractor.core.blockformats:BlocksMarkdown"),
    ],
)
MEMORY_FORMATS = Registry(
    "memory",
    [
        ("markdown", "extractor.memory.formats:MemoryMarkdown"),
        ("json", "extractor.memory.formats:MemoryJson"),
        ("csv", "extractor.memory.formats:MemoryCsv"),
    ],
)

BREAKDOWN_FORMATS = Registry(
    "breakdown",
    [
        ("markdown", "extractor.breakdown.formats:BreakdownMarkdown"),
        ("json", "extractor.breakdown.formats:BreakdownJson"),
        ("csv", "extractor.breakdown.formats:BreakdownCsv"),
        ("folded", "extractor.breakdown.formats:BreakdownFolded"),
    ],
)
