"""Benchmark: every command that reads the step rows, this tree against a baseline commit.

    python bench/commands.py --baseline REV   # full size (long-trace), 5 rounds
    python bench/commands.py --smoke          # small profile, one round, against HEAD

The real CLI in a subprocess (`python -m extractor ...`, run from each tree, so `-m`
finds that tree's package first; the baseline is exported from git into bench/cache/ by
bench/size.py's `baseline_tree`), on bench/size.py's `long-trace` (1,001,880 step rows;
smoke: its small version), warm page cache. Each round runs every command in this tree
and in the baseline, one after the other, so that a busy moment hits both. The commands:
extract with the pva stand-in (tests/pva_double), extract --no-pva, extract --no-pva
--csv --blocks (the summary's walk with every consumer), extract blocks, extract trace
--all --no-pva, extract diff of the profile against itself --no-pva.

For each: the medians of wall and CPU time (the CPU time of the process, which a busy
machine disturbs less), their ratio this tree / baseline, and whether both trees wrote
the same bytes (they must: a refactoring changes no output). Target: no command slower
than the baseline by more than 5% (CPU ratio <= 1.05); smoke sets no target.
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = REPO / "bench" / "cache"
TARGET = 1.05

sys.path.insert(0, str(HERE))
from blocks import load  # noqa: E402

#: name: (arguments after `extract`, with {profile} and {out}; whether pva is on the path)
COMMANDS = {
    "extract": (["{profile}", "-o", "{out}/summary.json"], True),
    "extract --no-pva": (["{profile}", "-o", "{out}/summary.json", "--no-pva"], False),
    "extract --csv --blocks": (
        ["{profile}", "-o", "{out}/all/summary.json", "--no-pva", "--csv", "--blocks"],
        False,
    ),
    "blocks": (["blocks", "{profile}", "-o", "{out}/blocks.json"], False),
    "trace --all": (["trace", "{profile}", "-o", "{out}/trace.json", "--all", "--no-pva"], False),
    "diff": (["diff", "{profile}", "{profile}", "-o", "{out}/diff.json", "--no-pva"], False),
}


def _run(size, tree: Path, name: str, profile: Path, out: Path):
    """(wall s, CPU s, peak RSS MB) of one command run from `tree`, writing into `out`."""
    arguments, pva = COMMANDS[name]
    (out / "all").mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "extractor"] + [
        part.format(profile=profile, out=out) for part in arguments
    ]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pva:
        env["PYTHONPATH"] = str(size.PVA_DOUBLE)
    return size.timed(command + ["--quiet"], env, "{} from {}".format(name, tree), tree)


def _outputs(out: Path) -> dict:
    return {
        str(path.relative_to(out)): path.read_bytes()
        for path in sorted(out.rglob("*"))
        if path.is_file()
    }


def measure(smoke: bool, rounds: int, baseline: str, only=()) -> dict:
    size = load("size")
    profile = size.profile_path("long-trace", smoke)
    size.compile_package()
    commit, based = size.baseline_tree(baseline)
    trees = {"this": REPO, "baseline": based}
    outs = {which: CACHE / "commands-out" / which for which in trees}
    names = [name for name in COMMANDS if not only or name in only]
    times = {(which, name): [] for which in trees for name in names}
    for _ in range(rounds):
        for name in names:
            for which, tree in trees.items():
                times[which, name].append(_run(size, tree, name, profile, outs[which]))
    same = _outputs(outs["this"]) == _outputs(outs["baseline"])
    results = {"baseline": commit, "step_rows": size.step_row_count(profile), "same": same}
    for name in names:
        row = {}
        for which in trees:
            row[which + "_s"] = statistics.median(wall for wall, _, _ in times[which, name])
            row[which + "_cpu_s"] = statistics.median(cpu for _, cpu, _ in times[which, name])
        row["ratio"] = row["this_s"] / row["baseline_s"]
        row["cpu_ratio"] = row["this_cpu_s"] / row["baseline_cpu_s"]
        results[name] = row
    return results


def main(smoke: bool = False, rounds: int = 0, baseline: str = "", only=()) -> int:
    rounds = rounds or (1 if smoke else 5)
    baseline = baseline or "HEAD"
    print(
        "bench/commands.py: {} size, {} round(s), against {}, {} CPUs, Python {}".format(
            "smoke" if smoke else "full",
            rounds,
            baseline,
            os.cpu_count(),
            sys.version.split()[0],
        ),
        flush=True,
    )
    results = measure(smoke, rounds, baseline, only)
    print(
        "{} step rows; baseline {}; outputs {}".format(
            results["step_rows"],
            results["baseline"][:12],
            "byte-identical" if results["same"] else "DIFFERENT",
        )
    )
    print("| command | this tree | baseline | wall ratio | CPU ratio |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for name in COMMANDS:
        if name not in results:
            continue
        row = results[name]
        worst = max(worst, row["cpu_ratio"])
        print(
            "| {} | {:.2f} s ({:.2f} s CPU) | {:.2f} s ({:.2f} s CPU) | {:.3f}x | {:.3f}x |".format(
                name,
                row["this_s"],
                row["this_cpu_s"],
                row["baseline_s"],
                row["baseline_cpu_s"],
                row["ratio"],
                row["cpu_ratio"],
            )
        )
    if smoke:
        print("smoke: no target")
    else:
        print(
            "slowest against the baseline: {:.3f}x CPU (target <= {}x): {}".format(
                worst, TARGET, "met" if worst <= TARGET else "MISSED"
            )
        )
    return 0 if results["same"] else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small and quick: that it works")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 5; smoke 1)")
    parser.add_argument("--baseline", metavar="REV", default="", help="the commit (default HEAD)")
    parser.add_argument(
        "--only", action="append", choices=list(COMMANDS), help="this command only (repeat)"
    )
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds, arguments.baseline, arguments.only or ()))
