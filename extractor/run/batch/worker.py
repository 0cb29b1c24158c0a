"""The worker side of a batch: a process of its own (`python -c BOOT`, started by
pool.py) that extracts one profile at a time for the parent (item.extract_one).

Its bootstrap is ours, not multiprocessing's: until extract's own modules have been
imported the worker's stderr is /dev/null, and an import that fails (an install upgraded
or edited under a running batch, a broken file) is sent to the parent as one line,
which fails the profile with that reason, instead of a traceback on the user's terminal.
Once imported, the worker takes the parent's stderr back (pva, SQLite or Python may
still have something to say there).
"""

import signal
import sys
from pathlib import Path
from typing import Union

from ...derived import DERIVED_FILES
from ...errors import one_line
from .discover import BatchItem
from .item import FAILED, extract_one, failed_entry

#: The index keys saying which derived files an extraction writes (blocks...).
DERIVED_KEYS = tuple(derived.key for derived in DERIVED_FILES)

# What a worker answers first on receiving a profile: the time limit starts then.
STARTED = "started"

#: What a worker that cannot import extract sends its parent: (CANNOT_START, reason).
CANNOT_START = "cannot start"
#: The worker's exit code when it cannot import extract.
CANNOT_START_CODE = 70

#: The program a worker runs (`python -c BOOT CONN_FD STDERR_FD`). It uses only the
#: standard library until it has sys.path (the parent's, sent first) and extract.
BOOT = """\
import os, sys
from multiprocessing.connection import Connection
conn = Connection(int(sys.argv[1]))
sys.path[:] = conn.recv()
try:
    from extractor.run.batch.worker import serve
except BaseException as exc:
    conn.send(({cannot_start!r}, "cannot import extract's worker: {{}}: {{}}".format(
        type(exc).__name__, " ".join(str(exc).split()))))
    sys.exit({code})
os.dup2(int(sys.argv[2]), 2)
os.close(int(sys.argv[2]))
serve(conn)
""".format(cannot_start=CANNOT_START, code=CANNOT_START_CODE)


def serve(conn) -> None:
    """Take (outdir, rules, options), then profiles, until told to stop (None) or the
    parent is gone; answer STARTED, then the profile's index entry, for each."""
    # The parent handles Ctrl-C and a hang-up (sent to the whole process group); SIGTERM
    # (the parent abandoning us) unwinds through write_atomic's cleanup, so no temporary
    # file is left behind, and ends the process quietly (SystemExit, exit code 143).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        outdir, rules, options = conn.recv()
    except Exception:  # the parent is gone, or sent what cannot be read
        return
    outdir = Path(outdir)
    while True:
        try:
            item = conn.recv()
        except Exception:
            return
        if item is None:
            return
        if not _answer(conn, STARTED, item):
            return
        try:
            entry = extract_one(item, outdir, rules, options)
        except Exception as exc:  # outside extract_one's own net: still one index line
            entry = failed_entry(
                item,
                outdir,
                rules,
                options,
                "unexpected failure: {}: {}".format(type(exc).__name__, one_line(exc)),
            )
        if not _answer(conn, entry, item):
            return


def _answer(conn, entry: Union[dict, str], item: BatchItem) -> bool:
    """Send the parent `entry`; one it cannot take (it would not pickle) becomes a failed
    entry of plain text. False when the parent is gone: nobody is left to tell."""
    try:
        conn.send(entry)
        return True
    except OSError:
        return False
    except Exception as exc:
        reason = "{}: unexpected failure: its index entry could not be sent: {}: {}".format(
            item.profile, type(exc).__name__, one_line(exc)
        )
    fields = entry if isinstance(entry, dict) else {}
    plain = {
        key: fields.get(key)
        for key in (
            "profile",
            "output",
            "rules_sha256",
            "tool_version",
            "pva",
            "csv",
            *DERIVED_KEYS,
            "size",
            "mtime_ns",
            "finished_at",
        )
    }
    plain = {
        key: value if isinstance(value, (str, int, bool, type(None))) else str(value)
        for key, value in plain.items()
    }
    plain.update(status=FAILED, reason=reason)
    try:
        conn.send(plain)
        return True
    except Exception:
        return False
