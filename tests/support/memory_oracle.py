"""A second, deliberately plain reading of docs/formats/memory.md, for tests/test_memory.py.

`oracle_memory(profile, pva_json=None, top=5, bytes_per_tile=None)` reads the three
tables with plain SQL, every `vars_info` row into Python one by one (slow and obvious on
purpose: the code under test lets SQLite group them), and pva's facts straight from the
pva-double.json the stand-in serves (None: as `--no-pva`); the exchanges' stages by the
stage rules file read here as TOML. Means are Fractions turned into floats at the end.
It imports nothing from `extractor`.
"""

import json
import math
import re
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path
from urllib.parse import quote

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

DEFAULT_RULES = Path(__file__).resolve().parents[2] / "stage_rules.toml"


def _stage_of(rules_path):
    rules = tomllib.loads(Path(rules_path).read_text(encoding="utf-8"))
    compiled = [(re.compile(r["pattern"]), r["label"]) for r in rules["rules"]]

    def stage(name):
        for pattern, label in compiled:
            if pattern.search(name):
                return label
        return rules["fallback"]

    return stage


def _positive(value):
    return value if isinstance(value, int) and value > 0 else None


def oracle_memory(profile, pva_json=None, top=5, bytes_per_tile=None, rules=DEFAULT_RULES):
    """memory.json as a dict, for the profile as given (its "profile" is str(profile))."""
    uri = "file:{}?mode=ro".format(quote(str(Path(profile).resolve())))
    db = sqlite3.connect(uri, uri=True)
    try:
        totals = [row[0] for row in db.execute("SELECT total FROM memory_by_tile ORDER BY rowid")]
        mean = db.execute("SELECT avg(total) FROM memory_by_tile").fetchone()[0]
        names = {}
        for key, name in db.execute("SELECT id, name FROM var_categories"):
            if name is not None:
                names[key] = str(name)
        vars_rows = list(db.execute("SELECT tile, category, size_bytes FROM vars_info"))
    finally:
        db.close()
    n = len(totals)
    by_tile = {}  # tile -> {name: bytes}
    stray = 0
    for tile, category, size in vars_rows:
        if tile is None or tile < 0 or tile >= n:
            stray += 1
            continue
        name = names.get(category)
        if name is None:
            name = "category " + ("null" if category is None else str(category))
        by_tile.setdefault(tile, {})
        by_tile[tile][name] = by_tile[tile].get(name, 0) + (0 if size is None else size)

    pva = json.loads(Path(pva_json).read_text(encoding="utf-8")) if pva_json else None
    target = (pva or {}).get("target", {})
    ipus = _positive(target.get("numIPUs")) if pva else None
    per_ipu = _positive(target.get("tilesPerIpu")) if pva else None
    limit = bytes_per_tile
    if limit is None and pva:
        limit = _positive(target.get("bytesPerTile"))

    out = {
        "profile": str(profile),
        "tiles": n,
        "ipus": ipus,
        "tiles_per_ipu": per_ipu,
        "bytes_per_tile": limit,
        "total": None,
        "balance": None,
        "limit": None,
        "histogram": [],
        "categories": [],
        "fullest": [],
        "per_ipu": None,
        "liveness": None,
        "exchanges": None,
        "stray_rows": stray,
    }
    if n:
        biggest = max(totals)
        out["total"] = {
            "sum": sum(totals),
            "min": min(totals),
            "min_tile": min(t for t in range(n) if totals[t] == min(totals)),
            "mean": mean,
            "median": sorted(totals)[(n - 1) // 2],
            "max": biggest,
            "max_tile": min(t for t in range(n) if totals[t] == biggest),
        }
        out["balance"] = None if biggest == 0 else mean / biggest
        if limit is not None:
            out["limit"] = {
                "over": len([t for t in totals if t > limit]),
                "headroom": limit - biggest,
                "used": biggest / limit,
            }
            width = math.ceil(Fraction(limit, 16))
            buckets = [(k * width, (k + 1) * width) for k in range(16)] + [(16 * width, None)]
        else:
            width = max(1, math.ceil(Fraction(biggest + 1, 16)))
            buckets = [(k * width, (k + 1) * width) for k in range(16)]
        out["histogram"] = [
            {
                "from": low,
                "to": high,
                "tiles": len([t for t in totals if low <= t and (high is None or t < high)]),
            }
            for low, high in buckets
        ]
        every_name = sorted({name for cats in by_tile.values() for name in cats})
        categories = []
        for name in every_name:
            holding = [t for t in sorted(by_tile) if name in by_tile[t]]
            values = [by_tile[t][name] for t in holding]
            categories.append(
                {
                    "category": name,
                    "sum": sum(values),
                    "tiles": len(holding),
                    "max": max(values),
                    "max_tile": holding[values.index(max(values))],
                    "mean": float(Fraction(sum(values), len(holding))),
                }
            )
        categories.sort(key=lambda c: (-c["sum"], c["category"]))
        out["categories"] = categories
        order = sorted(range(n), key=lambda t: (-totals[t], t))[:top]
        out["fullest"] = [
            {
                "tile": t,
                "ipu": None if per_ipu is None else t // per_ipu,
                "total": totals[t],
                "headroom": None if limit is None else limit - totals[t],
                "categories": [
                    {"category": name, "bytes": size}
                    for name, size in sorted(
                        by_tile.get(t, {}).items(), key=lambda item: (-item[1], item[0])
                    )
                ],
                "unattributed": totals[t] - sum(by_tile.get(t, {}).values()),
            }
            for t in order
        ]
        if per_ipu is not None:
            out["per_ipu"] = []
            ipu = 0
            while ipu * per_ipu < n:
                tiles = list(range(ipu * per_ipu, min(n, (ipu + 1) * per_ipu)))
                values = [totals[t] for t in tiles]
                out["per_ipu"].append(
                    {
                        "ipu": ipu,
                        "sum": sum(values),
                        "min": min(values),
                        "max": max(values),
                        "max_tile": min(t for t in tiles if totals[t] == max(values)),
                        "mean": float(Fraction(sum(values), len(values))),
                    }
                )
                ipu += 1
    if pva:
        always = sum(tile["alwaysLiveBytes"] for tile in pva.get("tiles", []))
        steps = pva.get("livenessProgramSteps", [])
        peak = max(steps) if steps else 0
        out["liveness"] = {
            "always_live": always,
            "peak_not_always_live": peak,
            "peak_step": steps.index(peak) if steps else None,
            "peak": always + peak,
        }
        stage = _stage_of(rules)
        exchanges = []
        for program in pva["programs"]:
            code = program.get("codeBytesByTile", [])
            if program["type"] == "DoExchange" and code:
                exchanges.append(
                    {
                        "name": program["name"],
                        "stage": stage(program["name"]),
                        "max": max(code),
                        "max_tile": code.index(max(code)),
                        "sum": sum(code),
                    }
                )
        exchanges.sort(key=lambda e: -e["max"])  # stable: pva's order on a tie
        out["exchanges"] = exchanges[:top]
    return out
