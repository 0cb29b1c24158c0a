"""Step tables: `steps.csv` (every step row) and `first-body.csv` (the first body's rows).

Both are written while `summarize` makes its one pass over the step rows (`StepTables`
is its `step_sink`), so no row is kept: memory does not grow with the trace. The three
files of a summary change together, each only when complete, or none does
(`output.atomic_files`).

Format: RFC 4180. UTF-8 without a byte-order mark; a header line with the spec's fields
(`STEP_FIELDS`) in order; records end with CRLF (`\\r\\n`), as RFC 4180 says; a field is
quoted when it holds a comma, a double quote or a line break, and double quotes inside
are doubled (the csv module's `QUOTE_MINIMAL`). A pva fact extracted with --no-pva is an
empty field. Text fields (kind, stage, name, vertices) are written by
`escaping.csv_cell`: a name a spreadsheet would read as a formula (starting with `=`,
`+`, `-`, `@`, a tab or a carriage return) gets a leading `'`; numbers are never
touched.
"""

import contextlib
import csv
import io
from pathlib import Path
from typing import IO, TYPE_CHECKING, Dict, Iterator, Optional, Tuple, Type

from ..errors import StrPath
from ..escaping import csv_cell
from ..output import atomic_files
from .pvafacts import StepFacts
from .steps import STEP_FIELDS, Pair, StepRow, StepSink

STEPS_CSV = "steps.csv"
FIRST_BODY_CSV = "first-body.csv"
CSV_NAMES = (STEPS_CSV, FIRST_BODY_CSV)
LINE_END = "\r\n"


def csv_paths(folder: StrPath) -> Tuple[Path, ...]:
    """Where the step tables of a summary written in `folder` go."""
    folder = Path(folder)
    return tuple(folder / name for name in CSV_NAMES)


class StepTables:
    """A step sink writing each row to steps.csv, and first-body rows to first-body.csv.

    The pva facts of a row depend only on its program and compute set, so they are
    asked once per pair, not once per row.
    """

    def __init__(self, steps_handle: IO[bytes], first_body_handle: IO[bytes]) -> None:
        self._texts = [
            io.TextIOWrapper(handle, encoding="utf-8", newline="")
            for handle in (steps_handle, first_body_handle)
        ]
        self._steps, self._first_body = (
            csv.writer(text, lineterminator=LINE_END) for text in self._texts
        )
        self._facts_of: Dict[Pair, Tuple[Optional[int], Optional[str]]] = {}
        for writer in (self._steps, self._first_body):
            writer.writerow(STEP_FIELDS)

    def __call__(self, row: StepRow, facts: StepFacts, in_first_body: bool) -> None:
        key = (row.program, row.compute_set)
        pva = self._facts_of.get(key)
        if pva is None:
            # Vertex type names are text from the profile too.
            pva = self._facts_of[key] = (
                csv_cell(facts.max_exchange_code_bytes(row.program)),
                csv_cell(facts.vertices(row.compute_set)),
            )
        # The text fields as text cells; a number field holds text only when the
        # profile stored text there (then it is text to a spreadsheet too).
        fields = (
            row.step,
            csv_cell(row.kind),
            csv_cell(row.classes.stage),
            csv_cell(row.name),
            csv_cell(row.cycles),
            csv_cell(row.active_tiles),
            csv_cell(row.start),
            csv_cell(row.end),
            pva[0],
            pva[1],
        )
        self._steps.writerow(fields)
        if in_first_body:
            self._first_body.writerow(fields)

    def detach(self) -> None:
        """Flush the text layers and leave the binary handles to their owner."""
        for text in self._texts:
            text.flush()
            text.detach()
        self._texts = []

    def abandon(self) -> None:
        """Let go of the handles after a failure, without letting a flush error hide it."""
        for text in self._texts:
            try:
                text.detach()
            except Exception:
                pass
        self._texts = []


@contextlib.contextmanager
def step_tables(folder: StrPath, strict: bool = False) -> Iterator[StepTables]:
    """StepTables writing into `folder`; both files appear when the block completes
    without error, and neither does otherwise (earlier ones are left as they were)."""
    with atomic_files(csv_paths(folder), strict) as (steps, first_body):
        with step_tables_on(steps, first_body) as tables:
            yield tables


@contextlib.contextmanager
def step_tables_with_summary(
    summary_path: StrPath, strict: bool = False
) -> Iterator[Tuple[StepTables, IO[bytes]]]:
    """(StepTables writing beside `summary_path`, a binary handle for the summary): the
    three files change together when the block completes, or none does (`atomic_files`:
    every target is checked before the block runs; the tables are renamed first, the
    summary last). `strict`: in a batch's OUTDIR (see `output.replaceable`)."""
    summary_path = Path(summary_path)
    paths = csv_paths(summary_path.parent) + (summary_path,)
    with atomic_files(paths, strict) as (steps, first_body, summary):
        with step_tables_on(steps, first_body) as tables:
            yield tables, summary


@contextlib.contextmanager
def step_tables_on(steps: IO[bytes], first_body: IO[bytes]) -> Iterator[StepTables]:
    """StepTables on two binary handles (of `atomic_files`, say) the caller owns."""
    tables = StepTables(steps, first_body)
    try:
        yield tables
    except BaseException:
        tables.abandon()
        raise
    tables.detach()


if TYPE_CHECKING:  # mypy checks that StepTables is a step sink; nothing runs
    _implements: Type[StepSink] = StepTables
