"""Every benchmark from one command (BENCHMARKS.md has the figures of a full run).

    python bench/run.py            # full size
    python bench/run.py --smoke    # reduced size, a couple of minutes: that they work (CI)
    python bench/run.py --baseline REV   # bench/size.py, commands.py, startup.py against REV
    python bench/run.py --only blocks    # one of them (size, batch, report, blocks, memory,
                                         # trace, diff, breakdown, commands, startup)

Runs bench/size.py (extract on big profiles against the SQL floor) and, when they are
there, bench/batch.py (a batch with --jobs 2 against --jobs 1), bench/report.py
(extract report over 400 recordings, and Chromium rendering it) and bench/blocks.py
(`extract blocks` against `extract --no-pva` on long-trace, a batch with --blocks against
one without), bench/memory.py (`extract memory --no-pva`, and what `--memory` adds to a
batch, against its two queries in the sqlite3 shell on the large profile), bench/trace.py
(`extract trace --all` against `extract --no-pva` on long-trace), bench/diff.py
(`extract diff` of two long traces against `extract blocks` on each), bench/breakdown.py
(`extract breakdown`, inference 1 and --all, against `extract --no-pva` on long-trace;
two profiles against the two single runs; what `--breakdown` adds to a batch against
the command on each of its profiles), bench/commands.py (every command that reads the
step rows, this tree against the baseline REV, default HEAD) and bench/startup.py
(`extract --help` and `extract` on the 53 kB fixture against `python -c "import
typer"`). Every benchmark runs, even after one has missed a target; exit 1 when any
missed one (full size: --smoke checks none), else 0.
"""

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


BENCHMARKS = (
    "size",
    "batch",
    "report",
    "blocks",
    "memory",
    "trace",
    "diff",
    "breakdown",
    "commands",
    "startup",
)


def load(name: str):
    """bench/<name>.py as a module, or None when the file is not there."""
    path = HERE / "{}.py".format(name)
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("bench_{}".format(name), str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--smoke", action="store_true", help="reduced size, no targets: that the benchmarks work"
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="bench/size.py, commands.py and startup.py time extract as committed at REV too",
    )
    parser.add_argument(
        "--only",
        choices=BENCHMARKS,
        action="append",
        help="run only this benchmark (repeat for several)",
    )
    arguments = parser.parse_args(argv)
    smoke = arguments.smoke
    status = 0
    for name in arguments.only or BENCHMARKS:
        module = load(name)
        if module is None:
            print("bench/{}.py: not there, skipped".format(name))
            continue
        start = time.perf_counter()
        print("== bench/{}.py{}".format(name, " --smoke" if smoke else ""), flush=True)
        if name in ("size", "commands", "startup") and arguments.baseline:
            code = module.main(smoke, baseline=arguments.baseline)
        else:
            code = module.main(smoke)
        status = status or code  # the first missed target's code; the others still run
        print(
            "== bench/{}.py done in {:.0f} s".format(name, time.perf_counter() - start), flush=True
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
