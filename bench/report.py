"""Benchmark: `extract report` (and `extract table`) over 400 recordings.

    python bench/report.py            # 400 recordings, median of 3 runs
    python bench/report.py --smoke    # 40 recordings, one run: that it works

The recordings are synthetic summaries: the reference summary
(fixtures/vit-f8weight/expected.json) with every kernel's cycles, the device spans and
the memory numbers scaled by a random factor each (seeded, so the same every run), in a
batch-like folder with an index.jsonl (5 % failed, 10 % warned) and, beside every
summary, a blocks.json of 2 runs x 12 blocks (docs/formats/blocks.md's format): the largest page
such a batch makes. Made afresh in a temporary folder each run.

Targets: the page made in at most 5 s (wall time of the command, start-up
included), at most 8 MB, and Chromium renders it: headless /usr/bin/chromium loads it
through Playwright and finds one row per recording; sorting by a column is timed too.
"""

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from support.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (the tests' launch)

REFERENCE = REPO / "fixtures" / "vit-f8weight" / "expected.json"
TARGET_SECONDS, TARGET_BYTES = 5.0, 8 * 1024 * 1024
BLOCKS, RUNS = 12, 2


def _scaled(value, factor):
    return None if value is None else type(value)(value * factor)


def make_batch(folder: Path, count: int, seed: int = 13) -> Path:
    """`count` synthetic recordings under folder/out, with an index and blocks files."""
    rng = random.Random(seed)
    reference = json.loads(REFERENCE.read_text())
    out = folder / "out"
    entries = []
    for number in range(count):
        name = "sweep/precision-{}/batch-{}/run-{:03d}".format(
            ("fp8", "fp16", "fp32")[number % 3], 2 ** (number % 5), number
        )
        data = json.loads(json.dumps(reference))
        for kernel in data["kernels"]:
            kernel["cycles"] = int(kernel["cycles"] * rng.uniform(0.7, 1.4))
        data["device_spans"] = [int(s * rng.uniform(0.8, 1.25)) for s in data["device_spans"]]
        for key in ("exchange_memory_per_tile", "allocated_memory"):
            factor = rng.uniform(0.9, 1.1)
            data[key] = {k: _scaled(v, factor) for k, v in data[key].items()}
        data["profile"] = "runs/{}/profile.pop".format(name)
        target = out / name
        target.mkdir(parents=True)
        summary_text = json.dumps(data, indent=2).encode()
        (target / "summary.json").write_bytes(summary_text)
        stages = [k["stage"] for k in data["kernels"]]
        bodies = []
        for run in range(1, RUNS + 1):
            for block in range(BLOCKS):
                cycles = {
                    k["stage"]: int(k["cycles"] * rng.uniform(0.9, 1.1)) for k in data["kernels"]
                }
                bodies.append(
                    {
                        "run": run,
                        "block": block,
                        "first_step": 100 * block,
                        "end_step": 100 * block + 99,
                        "kernels": len(cycles),
                        "cycles": cycles,
                        "total": sum(cycles.values()),
                    }
                )
        blocks_text = json.dumps(
            {
                "profile": data["profile"],
                "stages": stages + ["other"],
                "blocks": bodies,
                "stats": {},
                "total": None,
            },
            indent=2,
        ).encode()
        (target / "blocks.json").write_bytes(blocks_text)
        # The hashes a batch run with --blocks records: without them the report would
        # not take the blocks.json files as their summaries' (and draw no heat map).
        entry = {
            "summary": name + "/summary.json",
            "profile": data["profile"],
            "status": "ok",
            "warnings": [],
            "finished_at": "2026-01-01T00:00:00+00:00",
            "summary_sha256": hashlib.sha256(summary_text).hexdigest(),
            "blocks": True,
            "blocks_sha256": hashlib.sha256(blocks_text).hexdigest(),
        }
        if number % 10 == 3:
            entry["warnings"] = ["an inference without an end (synthetic warning)"]
        entries.append(entry)
    for number in range(count // 20):  # 5 % more profiles that failed
        entries.append(
            {
                "summary": "failed/{}/summary.json".format(number),
                "profile": "runs/failed/{}/profile.pop".format(number),
                "status": "failed",
                "reason": "not a profile (synthetic)",
                "warnings": [],
                "finished_at": "2026-01-01T00:00:00+00:00",
            }
        )
    with (out / "index.jsonl").open("w") as handle:
        for entry in entries:
            handle.write(json.dumps(entry) + "\n")
    return out


def run_extract(*args):
    """(wall seconds, CPU seconds: user + system) of one `extract ARGS` process."""
    command = [sys.executable, "-m", "extractor"] + [str(a) for a in args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit("extract {} failed: {}".format(args[0], done.stderr.decode()[-2000:]))
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def render_in_chromium(page: Path, count: int) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        view = browser.new_page(viewport={"width": 1500, "height": 900})
        errors = []
        view.on("pageerror", lambda error: errors.append(str(error)))
        start = time.perf_counter()
        view.goto(page.as_uri(), wait_until="load")
        loaded = time.perf_counter() - start
        rows = view.locator("#recordings tbody tr").count()
        bars = view.locator("svg.chart g.bar").count()
        start = time.perf_counter()
        view.locator("#recordings thead th", has_text="stages total").locator("button").click()
        first = view.eval_on_selector("#recordings tbody tr", "r => r.cells[7].dataset.v")
        sorted_in = time.perf_counter() - start
        browser.close()
    return {
        "rows": rows,
        "bars": bars,
        "load_s": loaded,
        "sort_s": sorted_in,
        "first_total_after_sort": first,
        "errors": errors,
        "expected_rows": count,
    }


def main(smoke: bool = False) -> int:
    count = 40 if smoke else 400
    repeats = 1 if smoke else 3
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        out = make_batch(folder, count)
        page = folder / "report.html"
        times = [run_extract("report", out, "-o", page) for _ in range(repeats)]
        table_times = [
            run_extract("table", out, "-o", folder / "table.csv") for _ in range(repeats)
        ]
        size = page.stat().st_size
        table_lines = (folder / "table.csv").read_bytes().count(b"\r\n") - 1
        browser = render_in_chromium(page, count)
    made = statistics.median(wall for wall, _ in times)
    print(
        "recordings: {} (each with a blocks.json of {} bodies), index: {} failed".format(
            count, BLOCKS * RUNS, count // 20
        )
    )
    print(
        "load average (1 min) at the end: {:.2f} on {} CPUs".format(
            os.getloadavg()[0], os.cpu_count()
        )
    )
    print(
        "extract report: wall median {:.2f} s of {} ({}); CPU median {:.2f} s; page "
        "{:.2f} MB ({} bytes)".format(
            made,
            repeats,
            ", ".join("{:.2f}".format(t) for t, _ in times),
            statistics.median(cpu for _, cpu in times),
            size / 1048576.0,
            size,
        )
    )
    print(
        "extract table: wall median {:.2f} s, CPU {:.2f} s; {} lines".format(
            statistics.median(w for w, _ in table_times),
            statistics.median(c for _, c in table_times),
            table_lines,
        )
    )
    print(
        "chromium: load {:.2f} s, {} rows, {} bars, sort by stages total {:.2f} s, "
        "page errors {}".format(
            browser["load_s"],
            browser["rows"],
            browser["bars"],
            browser["sort_s"],
            len(browser["errors"]),
        )
    )
    rendered = browser["rows"] == count and browser["bars"] == count and not browser["errors"]
    if smoke:
        return 0 if rendered else 1
    within = made <= TARGET_SECONDS and size <= TARGET_BYTES and rendered
    print(
        "targets (<= {:.0f} s, <= 8 MB, rendered): {}".format(
            TARGET_SECONDS, "met" if within else "NOT met"
        )
    )
    return 0 if within else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="40 recordings, one run")
    sys.exit(main(parser.parse_args().smoke))
