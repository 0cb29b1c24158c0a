"""Whether a summary is what its batch last wrote, and whether a file derived from it
(blocks.json, breakdown.json, memory.json: derived.py) beside it belongs to it: the one
rule compare, `--stat`, table and report apply.

A summary.json found by compare, table or report is placed in its **batch folder**: the
nearest folder, from the summary's own up through its parents (as git looks for .git),
that holds a batch index (`index.jsonl` or a shard's `index-shard-K-of-N.jsonl`). Its key
there is its path relative to that folder, and the index's latest line for that key says
what the batch did last:

- `current`: the line succeeded and recorded this file's SHA-256 (`summary_sha256`);
- `failed`: the batch's last extraction of it failed, so the file is an earlier
  extraction's (the batch keeps it rather than lose it);
- `changed`: the file is not the one the line recorded (edited, copied over, or written
  by a run that was killed before its line);
- `unrecorded`: the batch folder's index has no line for it;
- `standalone`: no batch folder (a summary written by `extract PROFILE -o FILE`).

A derived file beside a summary belongs to it when:
- the summary is `current` and its line says the same extraction wrote the file (its
  key, `blocks`, true) with this file's SHA-256 (`blocks_sha256`); or
- there is no line to go by (`unrecorded`, `standalone`) and the two files agree wherever
  both speak (the entry's `disagreement`). For blocks.json: the same `profile`, one body
  per QKV execution, and the first body's kernel rows (the summary's `kernels` before
  blocks.json's first `end_step`) giving the same count, cycles per stage and total;
  for breakdown.json: the same `profile`, its first window's steps bracketing every
  kernel of the summary; for memory.json: the same `profile` and the summary's
  `allocated_memory` (its tiles' total min, mean and max). A file made from another
  extraction that agrees there cannot be told apart: a batch folder's index is the
  record that can.

Paths are never taken from an index line here: the key is the summary's own path.
"""

import hashlib
import os
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Callable,
    Dict,
    Iterable,
    List,
    NamedTuple,
    Optional,
    Protocol,
    Tuple,
)

from ..batchnames import INDEX_NAME, is_index_name
from ..core.model import Summary
from ..errors import ExtractorError, StrPath, shown_path
from ..inputs import read_regular
from .index import known_entries

if TYPE_CHECKING:
    from ..derived import DerivedFile

CURRENT, FAILED, CHANGED, UNRECORDED, STANDALONE = (
    "current",
    "failed",
    "changed",
    "unrecorded",
    "standalone",
)

#: The index's statuses of a line whose summary was written (or found up to date).
_WRITTEN = ("ok", "up to date")


class Origin(NamedTuple):
    """Where a summary stands against its batch's index."""

    state: str  # CURRENT, FAILED, CHANGED, UNRECORDED or STANDALONE
    batch: Optional[Path] = None  # the batch folder, when there is one
    entry: Optional[dict] = None  # the index's latest line for the summary
    summary_sha256: Optional[str] = None  # of the file as read now


class Placed(Protocol):
    """What is asked of a recording here (recordings.Recording, which imports this
    module): its summary, where it is, and its Origin when looked up."""

    @property
    def path(self) -> Path: ...
    @property
    def summary(self) -> Summary: ...
    @property
    def origin(self) -> Optional[Origin]: ...


class NotBelonging(ExtractorError):
    """A derived file (blocks.json...) beside a summary is not that summary's."""


def _index_files(folder: str) -> bool:
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(is_index_name(name) for name in names)


def batch_folder(summary_path: StrPath) -> Optional[Tuple[Path, str]]:
    """(the batch folder, the summary's key in it) of the nearest folder at or above
    the summary's that holds an index; None when none does. The folder is named as the
    summary's path names it while that reaches it (`out` for `out/b/summary.json`), so
    that messages show paths as the user gave them."""
    typed = os.path.normpath(str(summary_path))
    path = os.path.abspath(typed)
    folder, shown = os.path.dirname(path), os.path.dirname(typed)
    while True:
        if _index_files(folder):
            key = os.path.relpath(path, folder).replace(os.sep, "/")
            return Path(shown or os.curdir), key
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
        # Up through the path as typed, then absolute once it is used up.
        shown = (
            os.path.dirname(shown)
            if shown not in ("", os.curdir, os.pardir) and not shown.endswith(os.sep + os.pardir)
            else folder
        )


def _sha256(path: StrPath) -> Optional[str]:
    try:
        return hashlib.sha256(read_regular(path)).hexdigest()
    except OSError:
        return None


class Origins:
    """Each summary's Origin; one batch folder's index is read once however many of its
    summaries are asked about."""

    def __init__(self) -> None:
        self._entries: Dict[Path, dict] = {}

    def of(self, summary_path: StrPath) -> Origin:
        found = batch_folder(summary_path)
        digest = _sha256(summary_path)
        if found is None:
            return Origin(STANDALONE, summary_sha256=digest)
        folder, key = found
        if folder not in self._entries:
            self._entries[folder] = known_entries(folder)
        entry = self._entries[folder].get(key)
        if entry is None:
            return Origin(UNRECORDED, folder, None, digest)
        if entry.get("status") not in _WRITTEN:
            return Origin(FAILED, folder, entry, digest)
        if digest is None or entry.get("summary_sha256") != digest:
            return Origin(CHANGED, folder, entry, digest)
        return Origin(CURRENT, folder, entry, digest)


def _index_name(origin: Origin) -> str:
    return shown_path(os.path.join(str(origin.batch), INDEX_NAME))


def _reason(entry: Optional[dict]) -> str:
    reason = (entry or {}).get("reason")
    return reason if isinstance(reason, str) and reason else "no reason given"


def stale_problem(origin: Origin) -> Optional[str]:
    """Why a summary is not the batch's latest good extraction, in words; None when
    nothing says so."""
    if origin.state == FAILED:
        return (
            "the batch's last extraction of it failed ({}), so these are an earlier "
            "extraction's numbers (see {})".format(_reason(origin.entry), _index_name(origin))
        )
    if origin.state == CHANGED:
        return (
            "not the file the batch wrote: it has changed since {} recorded it "
            "(re-run the batch)".format(_index_name(origin))
        )
    return None


def record_note(origin: Origin) -> Optional[str]:
    """A note for a summary the batch's index does not know (None otherwise)."""
    if origin.state == UNRECORDED:
        return "not in its batch's index ({}): nothing vouches for it".format(_index_name(origin))
    return None


# ---- derived files: blocks.json, breakdown.json, memory.json -----------------------


def derived_problem(
    derived: "DerivedFile", origin: Origin, summary: Summary, path: Path, data: dict
) -> Optional[str]:
    """Why the derived file `derived` at `path` (its JSON: `data`, read only when no
    index vouches for it) does not belong to the summary (`summary`: a model.Summary;
    `origin`: its Origin), in words; None when it does (the module's rule: the index's
    line, else the entry's own `disagreement`)."""
    if origin.state in (FAILED, CHANGED):
        return "its summary is not what the batch last wrote: {}".format(stale_problem(origin))
    if origin.state == CURRENT:
        entry = origin.entry or {}
        if not entry.get(derived.key):
            return "the batch's last extraction of its summary was made without {} (see {})".format(
                derived.option, _index_name(origin)
            )
        if entry.get(derived.sha256_key) != _sha256(path):
            return "it has changed since {} recorded it".format(_index_name(origin))
        return None
    return derived.function("disagreement")(summary, data)


def _stage_sums(kernels: Iterable[dict]) -> Tuple[int, Dict[str, int], int]:
    count, sums, total = 0, {}, 0  # type: int, Dict[str, int], int
    for kernel in kernels:
        count += 1
        sums[kernel["stage"]] = sums.get(kernel["stage"], 0) + kernel["cycles"]
        total += kernel["cycles"]
    return count, sums, total


def disagreement(summary: Summary, data: dict) -> Optional[str]:
    """Where a blocks.json (its JSON) and a summary say different things of what both
    describe, in words; None when they agree."""
    if data.get("profile") != summary.profile:
        return "it describes another profile ({!r}, the summary {!r})".format(
            data.get("profile"), summary.profile
        )
    bodies = data.get("blocks")
    if not isinstance(bodies, list) or len(bodies) != summary.qkv_executions:
        return "it has {} bodies where the summary counts {} QKV executions".format(
            len(bodies) if isinstance(bodies, list) else "no list of", summary.qkv_executions
        )
    if not bodies or not summary.kernels:
        return None
    first = bodies[0] if isinstance(bodies[0], dict) else {}
    if first.get("first_step") != summary.kernels[0].get("step"):
        return "its first body begins at step {!r}, the summary's at step {!r}".format(
            first.get("first_step"), summary.kernels[0].get("step")
        )
    end = first.get("end_step")
    kernels: List[dict] = [
        k for k in summary.kernels if end is None or (isinstance(end, int) and k["step"] < end)
    ]
    count, sums, total = _stage_sums(kernels)
    cycles = first.get("cycles")
    if (
        first.get("kernels") != count
        or not isinstance(cycles, dict)
        or dict(cycles) != sums
        or first.get("total") != total
    ):
        return "its first body's kernels (count, cycles per stage, total) are not the summary's"
    return None


def belonging(recording: Placed, derived: "DerivedFile") -> Optional[str]:
    """Why the derived file `derived` (blocks.json...) beside a recording (compare's
    Recording) does not belong to its summary, in words; None when it does. Call it
    once the file has been read as one (its entry's error otherwise)."""
    path = derived.path(recording.path)
    origin = recording.origin or Origins().of(recording.path)
    data = {} if origin.state == CURRENT else derived.function("read")(path)
    return derived_problem(derived, origin, recording.summary, path, data)


def require_belonging(recording: Placed, data: dict, derived: "DerivedFile") -> None:
    """NotBelonging naming the derived file `derived` beside a recording (compare's
    Recording; `data`: the file's JSON) unless it belongs to the recording's summary."""
    path = derived.path(recording.path)
    origin = recording.origin or Origins().of(recording.path)
    problem = derived_problem(derived, origin, recording.summary, path, data)
    if problem is not None:
        raise NotBelonging(
            path,
            "does not belong to {} beside it: {}; extract it again with {}".format(
                shown_path(recording.path), problem, derived.option
            ),
        )


class StaleSummary(ExtractorError):
    """A summary its batch's index says is not the batch's latest good extraction, where
    that matters (a budget gate). Exit code 1, as a summary that cannot be read."""


def tell_origins(
    recordings: Iterable[Placed], warn: Callable[[str], None], gate: bool = False
) -> None:
    """Say what the batch index says against each recording: `warn(text)` for each
    (a warning line), or, with `gate`, StaleSummary for the first that is not what its
    batch last wrote (a gate never passes on an earlier extraction's numbers)."""
    for recording in recordings:
        origin = recording.origin
        if origin is None:
            continue
        problem = stale_problem(origin)
        if problem is not None and gate:
            raise StaleSummary(recording.path, problem + "; the budget gate does not pass on it")
        note = problem or record_note(origin)
        if note is not None:
            warn("{}: {}".format(shown_path(recording.path), note))
