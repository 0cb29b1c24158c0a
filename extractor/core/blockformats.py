"""blocks.json's three formats (docs/formats/blocks.md, "Other formats"), a renderer
(extractor.render) each, registered in render.BLOCKS_FORMATS, and blocks.json read back
(`read_blocks_json`) for compare --stat and the report.

The bodies of a long trace are many (65,000 on a 1M-row trace), so JSON and CSV are
stream renderers: written body by body as the walk closes them, by the writer
(`writer(handle)`) a `blocks.BlockBodies` drives (`begin`, `body`, `end`), into a
seekable binary handle; nothing but the statistics is kept. A writer starts its handle
afresh at `begin` (the walk over the rows may be made twice: see walk.py). Markdown is
rendered from the statistics once the walk is over.

- json: the bytes `json.dumps(blocks, indent=2) + "\\n"` would give, as summary.json's
  (two-space indent, non-ASCII escaped, floats as repr), each body formatted directly;
- csv: RFC 4180 as the step tables are written (UTF-8 without a byte-order mark, CRLF),
  one line per body; a stage with no kernel rows in a body, and a null end_step, are
  empty cells; the header's stage labels are text cells (`escaping.csv_text_cell`: one
  a spreadsheet would read as a formula gets a leading `'`);
- markdown: the statistics of the kernel cycles only (its header says so), one line per
  stage with kernel rows, then the total;
  stage labels as `escaping.markdown_cell` writes them; on several IPUs, a note of what
  the cycles are below.
"""

import csv
import io
import json
from pathlib import Path
from typing import IO, TYPE_CHECKING, Optional, Sequence

from ..errors import BlocksFileError, StrPath
from ..escaping import csv_text_cell, markdown_cell
from ..inputs import read_input
from ..jsonnumbers import NumberLimits, NumberRefused, load_strict_json
from ..render import Renderer, StreamRenderer

if TYPE_CHECKING:
    from .blocks import BlockBodies, Body, BodyWriter

BLOCKS_NAME = "blocks.json"  # beside each summary.json
LINE_END = "\r\n"
FLUSH_EVERY = 512  # bodies gathered before a write


class _Writer:
    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self._parts: list = []
        self._count = 0

    def _restart(self) -> None:
        self._handle.seek(0)
        self._handle.truncate()
        self._parts = []
        self._count = 0

    def _put(self, text: str) -> None:
        self._parts.append(text)
        if len(self._parts) >= FLUSH_EVERY:
            self._flush()

    def _flush(self) -> None:
        self._handle.write("".join(self._parts).encode("utf-8"))
        self._parts = []


class JsonWriter(_Writer):
    """blocks.json, byte for byte as json.dumps(indent=2) plus a newline."""

    def begin(self, profile_label: str, stages: Sequence[str]) -> None:
        self._restart()
        self._stages = list(stages)
        self._keys = [json.dumps(label) for label in self._stages]  # ASCII, escaped
        self._templates: dict = {}
        self._put(
            '{{\n  "profile": {},\n  "stages": {},\n  "blocks": '.format(
                json.dumps(profile_label), _indented(json.dumps(self._stages, indent=2))
            )
        )

    def body(self, body: "Body") -> None:
        # One %-format per body, with a template per set of stages present (a model's
        # blocks have a few such sets), made on first use.
        shape = tuple(map(bool, body.rows))
        template = self._templates.get(shape)
        if template is None:
            template = self._templates[shape] = self._template(shape)
        cycles = body.cycles
        end = body.end_step
        parts = self._parts
        parts.append(",\n" if self._count else "[\n")
        parts.append(
            template
            % (
                body.run,
                body.block,
                body.first_step,
                "null" if end is None else end,
                body.kernels,
                *[value for value, present in zip(cycles, shape) if present],
                sum(cycles),
            )
        )
        self._count += 1
        if len(parts) >= FLUSH_EVERY:
            self._flush()

    def _template(self, shape: Sequence[bool]) -> str:
        cycles = ",\n".join(
            "        {}: %d".format(key.replace("%", "%%"))
            for key, present in zip(self._keys, shape)
            if present
        )
        return (
            '    {\n      "run": %d,\n      "block": %d,\n      "first_step": %d,\n'
            '      "end_step": %s,\n      "kernels": %d,\n      "cycles": '
            + ("{\n" + cycles + "\n      }" if cycles else "{}")
            + ',\n      "total": %d\n    }'
        )

    def end(self, statistics: dict) -> None:
        # The rest of the object as json.dumps writes it, without its opening brace.
        tail = json.dumps({"stats": statistics["stats"], "total": statistics["total"]}, indent=2)
        self._put(("\n  ]," if self._count else "[],") + tail[1:] + "\n")
        self._flush()


def _indented(text: str) -> str:
    """A value json.dumps(indent=2) wrote at the top, moved one level in."""
    return text.replace("\n", "\n  ")


class CsvWriter(_Writer):
    """One line per body: run, block, first_step, end_step, kernels, each stage, total."""

    def begin(self, profile_label: str, stages: Sequence[str]) -> None:
        self._restart()
        self._width = len(stages)
        out = io.StringIO()
        csv.writer(out, lineterminator=LINE_END).writerow(
            ["run", "block", "first_step", "end_step", "kernels"]
            + [csv_text_cell(label) for label in stages]
            + ["total"]
        )
        self._put(out.getvalue())

    def body(self, body: "Body") -> None:
        cells = [
            str(body.cycles[index]) if body.rows[index] else "" for index in range(self._width)
        ]
        self._put(
            "{},{},{},{},{},{},{}{}".format(
                body.run,
                body.block,
                body.first_step,
                "" if body.end_step is None else body.end_step,
                body.kernels,
                ",".join(cells),
                body.total,
                LINE_END,
            )
        )

    def end(self, statistics: dict) -> None:
        self._flush()


class _BlocksStream(StreamRenderer["BlockBodies"]):
    """A format written body by body; `render` replays bodies kept whole (`keep`)."""

    def writer(self, handle: IO[bytes]) -> "BodyWriter":
        raise NotImplementedError

    def render(self, result: "BlockBodies") -> bytes:
        if len(result.bodies) != result.count:
            raise ValueError("the bodies were not kept (BlockBodies(keep=True))")
        out = io.BytesIO()
        writer = self.writer(out)
        writer.begin(result.profile, result.stages)
        for body in result.bodies:
            writer.body(body)
        writer.end(result.statistics())
        return out.getvalue()


class BlocksJson(_BlocksStream):
    name, suffix, media_type = "json", ".json", "application/json"

    def writer(self, handle: IO[bytes]) -> "BodyWriter":
        return JsonWriter(handle)


class BlocksCsv(_BlocksStream):
    name, suffix, media_type = "csv", ".csv", "text/csv"

    def writer(self, handle: IO[bytes]) -> "BodyWriter":
        return CsvWriter(handle)


class BlocksMarkdown(Renderer["BlockBodies"]):
    """The statistics only (block_statistics_markdown), with the IPUs of an anchor."""

    name, suffix, media_type = "markdown", ".md", "text/markdown"

    def render(self, result: "BlockBodies") -> bytes:
        return block_statistics_markdown(result.statistics(), result.anchor_ipus)


# The numbers are kernel cycles (the sums of kernel rows' cycles, docs/glossary.md): the
# header says so, as every table of a block's cycles does.
MARKDOWN_HEADER = (
    "| stage (kernel cycles) | blocks | min | median | mean | max | stdev | min at | max at |"
)


def _number(value: float) -> str:
    return "{:.1f}".format(value) if isinstance(value, float) else str(value)


def _at(where: Sequence[int]) -> str:
    return "run {}, block {}".format(*where)


def _line(cell: str, stats: dict) -> str:
    """A table line; `cell`: the first cell, as markdown."""
    cells = (
        [cell, str(stats["blocks"])]
        + [_number(stats[key]) for key in ("min", "median", "mean", "max", "stdev")]
        + [_at(stats["min_at"]), _at(stats["max_at"])]
    )
    return "| " + " | ".join(cells) + " |"


def block_statistics_markdown(statistics: dict, ipus: int = 1) -> bytes:
    """A GitHub-flavoured markdown table of cycles over the blocks (`statistics`: the
    "stats" and "total" of blocks.json): one line per stage that has kernel rows, then
    `total` (none without blocks); means and standard deviations to 0.1 cycle. `ipus`:
    the most IPUs an anchor step ran on; on several, a note below says what the cycles
    are (metrics.SUMMED_OVER_IPUS)."""
    from .metrics import SUMMED_OVER_IPUS

    lines = [MARKDOWN_HEADER, "|---|" + "---:|" * 6 + "---|---|"]
    for label, stats in statistics["stats"].items():
        lines.append(_line(markdown_cell(label), stats))
    if statistics["total"] is not None:
        lines.append(_line("**total**", statistics["total"]))
    if ipus > 1:
        lines += ["", "Several IPUs ({}): these are {}.".format(ipus, SUMMED_OVER_IPUS)]
    # A lone surrogate in a label (a name not UTF-8) is shown as \udXXX.
    return ("\n".join(lines) + "\n").encode("utf-8", "backslashreplace")


def blocks_path(summary_path: StrPath) -> Path:
    """Where the blocks.json of a summary.json is: beside it."""
    return Path(summary_path).parent / BLOCKS_NAME


# A blocks.json's whole numbers are cycles, steps and counts of a profile: SQLite's
# 64-bit integers; a fraction (a mean, a standard deviation of such cycles) is at most
# 2**64 either way: the differences compare works out between two of them would overflow
# to infinity.
BLOCKS_NUMBERS = NumberLimits(
    whole_low=-(2**63),
    whole_high=2**63 - 1,
    fraction_limit=float(2**64),
    whole_beyond="the whole number {counted} is beyond 64 bits",
    not_held="the number {counted} is beyond what a float holds",
    fraction_beyond="the number {counted} is beyond 2**64, more than any cycle count",
    not_a_number="{name}, which is not a JSON number (its numbers are finite)",
)


def read_blocks_json(path: StrPath) -> dict:
    """The JSON object in the blocks.json at `path`; BlocksFileError naming it when it
    cannot be read or is not a JSON object, or holds a number that is not finite or a
    whole number beyond 64 bits. What is inside is for its readers to check, and to
    refuse with `not_blocks`."""
    raw = read_input(path, BlocksFileError)
    try:
        data = load_strict_json(raw.decode("utf-8"), BLOCKS_NUMBERS)
    except UnicodeDecodeError:
        raise not_blocks(path, "not UTF-8 text") from None
    except NumberRefused as exc:
        raise not_blocks(path, str(exc)) from None
    except ValueError as exc:
        raise not_blocks(path, "not JSON ({})".format(exc)) from None
    except RecursionError:
        raise not_blocks(path, "nested too deeply") from None
    if not isinstance(data, dict):
        raise not_blocks(path, "a JSON {} where it is an object".format(type(data).__name__))
    return data


def not_blocks(path: StrPath, problem: str) -> BlocksFileError:
    """The error for the blocks.json at `path` that is not as docs/formats/blocks.md says."""
    return BlocksFileError(path, "not a blocks file: " + problem)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number_value(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_STAT_NUMBERS = ("min", "median", "mean", "max", "stdev")


def _stats_problem(stats: object) -> Optional[str]:
    """What is wrong with one label's statistics (or the total's), None when nothing."""
    if not isinstance(stats, dict):
        return "are not an object"
    if not _whole(stats.get("blocks")):
        return "have no whole number 'blocks'"
    for key in _STAT_NUMBERS:
        if key in stats and not _number_value(stats[key]):
            return "have a {!r} that is not a number".format(key)
    for key in ("min_at", "max_at"):
        where = stats.get(key)
        if key in stats and not (
            isinstance(where, list) and len(where) == 2 and all(_whole(n) for n in where)
        ):
            return "have a {!r} that is not [run, block]".format(key)
    return None


def check_blocks(path: StrPath, data: dict) -> dict:
    """`data` (read_blocks_json's) if it is a blocks.json as its format says, key by key
    (the stages and the bodies first, then the rest); else not_blocks naming `path` and
    the first key that is not. The one check of the whole file, for every reader."""
    stages = data.get("stages")
    if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
        raise not_blocks(path, "'stages' is not a list of labels")
    bodies = data.get("blocks")
    if not isinstance(bodies, list):
        raise not_blocks(path, "'blocks' is not a list")
    for number, body in enumerate(bodies):
        cycles = body.get("cycles") if isinstance(body, dict) else None
        if not (
            isinstance(body, dict)
            and all(_whole(body.get(k)) for k in ("run", "block", "first_step", "kernels"))
            and (body.get("end_step") is None or _whole(body.get("end_step")))
            and isinstance(cycles, dict)
            and all(isinstance(k, str) and _whole(v) for k, v in cycles.items())
            and (body.get("total") is None or _whole(body.get("total")))
        ):
            raise not_blocks(
                path,
                "blocks[{}] is not an object with whole numbers run, "
                "block, first_step, end_step (or null), kernels, cycles per "
                "label and total".format(number),
            )
    if not isinstance(data.get("profile"), str):
        raise not_blocks(path, "'profile' is not a string")
    stats = data.get("stats")
    if not isinstance(stats, dict):
        raise not_blocks(path, "'stats' is not an object of statistics per label")
    for label, each in stats.items():
        problem = _stats_problem(each)
        if problem is not None:
            raise not_blocks(path, "the stats of {!r} {}".format(label, problem))
    total = data.get("total")
    if total is not None:
        problem = _stats_problem(total)
        if problem is not None:
            raise not_blocks(path, "the total's stats {}".format(problem))
    return data
