"""The files derived from a summary (breakdown.json, memory.json) that the page draws:
each read beside its recording's summary and shown only while it belongs to it
(readback/provenance.py's rule); the others listed with why."""

import os
from typing import Any, List, Sequence, Tuple

from ..derived import derived_file
from ..errors import DerivedFileError
from ..readback.provenance import belonging
from ..readback.recordings import beside


def belonging_files(
    recordings: Sequence[Any], key: str
) -> Tuple[List[Tuple[Any, str, dict]], List[Tuple[str, str, str]]]:
    """Of each recording (readback.recordings.Recording) with the derived file `key`
    beside its summary, in the recordings' order: (recording, path, its JSON object) when
    it belongs to the summary; else (label, path, why) among the files passed over, one
    that cannot be read as one included."""
    entry = derived_file(key)
    found: List[Tuple[Any, str, dict]] = []
    passed: List[Tuple[str, str, str]] = []
    for recording in recordings:
        path = beside(recording, entry.name, DerivedFileError)
        if not os.path.lexists(str(path)):
            continue
        try:
            data = entry.function("read")(path)
            problem = belonging(recording, entry)
        except DerivedFileError as exc:
            passed.append((recording.label, str(path), "not drawn: " + exc.problem))
            continue
        if problem is not None:
            why = "not drawn: it does not belong to the summary beside it: " + problem
            passed.append((recording.label, str(path), why))
            continue
        found.append((recording, str(path), data))
    return found, passed
