"""Benchmark: what `extract` costs to start, against importing typer, measured side by side.

    python bench/startup.py              # 15 rounds, targets checked
    python bench/startup.py --smoke      # 3 rounds, no targets: that it works
    python bench/startup.py --baseline REV   # also extract as committed at REV

Three commands, each the real thing in a new process (bench/size.py's launcher: wall
time including interpreter start, CPU seconds, peak RSS), interleaved round by round (the
order turning each round) so that a busy moment hits all of them; figures are medians:

- the baseline, `python -c "import typer"`: the interpreter and the CLI's framework, a
  cost extract cannot go below;
- `extract --help` (`python -m extractor --help`): the CLI's declarations and typer's
  help, no command run; target: at most the baseline + 0.15 s;
- `extract` on the committed 53 kB fixture (bench/size.py's SMALL), with the pva
  stand-in (`PYTHONPATH=tests/pva_double`), `-o` into a temporary folder: one command's
  whole run, typer's parsing (with typer 0.29, pydantic) included; target: at most the
  baseline + 0.25 s.

Shown beside them, no target: a typer app of a few lines running one command
(`typer_command`), what typer itself costs to parse a command line (with typer 0.29, its
option adapters and pydantic) before any of extract's work, so that the run's difference
to the baseline can be read as typer's part and extract's. The differences to the
baseline and the ratios are printed with whether each target is met. The targets are
differences in seconds: on a machine whose CPUs other work takes, wall times grow with
its load and the differences with them, so the load average is printed at the start and
at the end, and CPU seconds beside each figure.

`--baseline REV`: extract as committed at REV (exported from git into bench/cache/, as
bench/size.py does) is timed in the same rounds, both commands, and its summary must be
the same bytes as this tree's: what a change to start-up gained, in one run.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = REPO / "bench" / "cache"

# The helpers that time a process and export a revision, bench/size.py's, beside this file.
sys.path.insert(0, str(HERE))
from blocks import load  # noqa: E402

TARGET_HELP_S = 0.15  # extract --help, beyond the baseline
TARGET_RUN_S = 0.25  # extract on the 53 kB fixture, beyond the baseline

# A typer app running one command of a path and two options, nothing else.
TYPER_COMMAND = """
import typer
app = typer.Typer()
@app.command()
def main(path: str, out: str = typer.Option("-", "-o"), quiet: bool = False):
    pass
app(["p", "-o", "s.json", "--quiet"], standalone_mode=False)
"""


def commands(out: Path, tree: Path = REPO, tag: str = "") -> dict:
    """{name: (command, environment, working folder)} of extract in `tree` (`-m` finds
    the package in the working folder first)."""
    size = load("size")
    plain = dict(os.environ)
    plain.pop("PYTHONPATH", None)
    with_pva = dict(plain, PYTHONPATH=str(size.PVA_DOUBLE))
    extract = [sys.executable, "-m", "extractor"]
    summary = out / "summary{}.json".format(tag)
    return {
        "help" + tag: (extract + ["--help"], plain, tree),
        "run" + tag: (extract + [str(size.SMALL), "-o", str(summary)], with_pva, tree),
    }


def measure(rounds: int, baseline=None) -> dict:
    """Median wall and CPU seconds of each command over `rounds` interleaved rounds.
    `baseline`: None, or (commit, tree) of bench/size.py's baseline_tree."""
    size = load("size")
    out = Path(tempfile.mkdtemp(prefix="extract-startup-"))
    try:
        plain = dict(os.environ)
        plain.pop("PYTHONPATH", None)
        runs = {
            "typer": ([sys.executable, "-c", "import typer"], plain, REPO),
            "typer_command": ([sys.executable, "-c", TYPER_COMMAND], plain, REPO),
        }
        runs.update(commands(out))
        if baseline is not None:
            runs.update(commands(out, baseline[1], "_baseline"))
        names = list(runs)
        times = {name: [] for name in names}
        for number in range(rounds):
            turn = number % len(names)
            for name in names[turn:] + names[:turn]:
                command, env, cwd = runs[name]
                times[name].append(size.timed(command, env, name, cwd))
        if baseline is not None:
            ours = (out / "summary.json").read_bytes()
            if (out / "summary_baseline.json").read_bytes() != ours:
                raise SystemExit(
                    "the baseline {} wrote other bytes than this tree".format(baseline[0][:12])
                )
    finally:
        shutil.rmtree(str(out), ignore_errors=True)
    result = {"rounds": rounds}
    for name, values in times.items():
        result[name + "_s"] = statistics.median(wall for wall, _, _ in values)
        result[name + "_cpu_s"] = statistics.median(cpu for _, cpu, _ in values)
        result[name + "_rss_mb"] = max(rss for _, _, rss in values)
    if baseline is not None:
        result["baseline"] = baseline[0]
    return result


def report(result: dict, smoke: bool) -> list:
    """Print the figures and the targets; return the targets missed (not in smoke runs)."""
    typer_s = result["typer_s"]
    rows = [
        ("python -c 'import typer' (the baseline)", "typer"),
        ("a typer app running one command", "typer_command"),
    ]
    rows += [("extract --help", "help"), ("extract on the 53 kB fixture", "run")]
    if "baseline" in result:
        at = result["baseline"][:12]
        rows += [
            ("extract --help at {}".format(at), "help_baseline"),
            ("extract on the fixture at {}".format(at), "run_baseline"),
        ]
    print(
        "{:<44} {:>8} {:>8} {:>10} {:>7} {:>7}".format(
            "median of {} rounds".format(result["rounds"]),
            "wall s",
            "CPU s",
            "- typer s",
            "ratio",
            "RSS MB",
        )
    )
    for text, key in rows:
        print(
            "{:<44} {:8.3f} {:8.3f} {:+10.3f} {:6.2f}x {:7.1f}".format(
                text,
                result[key + "_s"],
                result[key + "_cpu_s"],
                result[key + "_s"] - typer_s,
                result[key + "_s"] / typer_s,
                result[key + "_rss_mb"],
            )
        )
    if "baseline" in result:
        for name in ("help", "run"):
            print(
                "{}: {:.3f} s here, {:.3f} s at {} ({:.2f}x; CPU {:.3f} s here, {:.3f} s "
                "there)".format(
                    name,
                    result[name + "_s"],
                    result[name + "_baseline_s"],
                    result["baseline"][:12],
                    result[name + "_s"] / result[name + "_baseline_s"],
                    result[name + "_cpu_s"],
                    result[name + "_baseline_cpu_s"],
                )
            )
    typer_cpu_s = result["typer_cpu_s"]
    checks = [
        (
            "extract --help <= the baseline + {:.2f} s ({:+.3f} s; CPU {:+.3f} s)".format(
                TARGET_HELP_S, result["help_s"] - typer_s, result["help_cpu_s"] - typer_cpu_s
            ),
            result["help_s"] - typer_s <= TARGET_HELP_S,
        ),
        (
            "extract on the fixture <= the baseline + {:.2f} s ({:+.3f} s; CPU {:+.3f} s)".format(
                TARGET_RUN_S, result["run_s"] - typer_s, result["run_cpu_s"] - typer_cpu_s
            ),
            result["run_s"] - typer_s <= TARGET_RUN_S,
        ),
    ]
    missed = []
    for text, met in checks:
        print(
            "  {:<80} {}".format(
                text, "(smoke: no target)" if smoke else "met" if met else "MISSED"
            )
        )
        if not met:
            missed.append(text)
    return [] if smoke else missed


def main(smoke: bool = False, rounds: int = 0, baseline: Optional[str] = None) -> int:
    rounds = rounds or (3 if smoke else 15)
    print(
        "bench/startup.py: {} round(s), {} CPUs, Python {}, typer {}, load average {:.1f}".format(
            rounds, os.cpu_count(), sys.version.split()[0], typer_version(), os.getloadavg()[0]
        ),
        flush=True,
    )
    size = load("size")
    size.compile_package()
    based = size.baseline_tree(baseline) if baseline else None
    result = measure(rounds, based)
    result["load_average"] = os.getloadavg()[0]
    report(result, smoke)
    print("load average at the end: {:.1f}".format(result["load_average"]))
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / "startup-results{}.json".format("-smoke" if smoke else "")).write_text(
        json.dumps(result, indent=1) + "\n"
    )
    return 0


def typer_version() -> str:
    from importlib.metadata import version

    return version("typer")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="3 rounds, no targets: that it works")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 15; smoke 3)")
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also time extract as committed at REV, in the same rounds",
    )
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds, arguments.baseline))
