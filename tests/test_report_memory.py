"""`extract report` with memory.json beside the summaries: a tile map per recording (one
cell per tile, a block per IPU, the tiles over the limit ringed and counted) and the
fullest tile's categories as a bar. The recordings are made by the real CLI (`extract
PROFILE -o summary.json --memory`) from the committed tile-memory fixture (64 tiles, 2 IPUs
of 32, a limit of 638,976 bytes, tiles 5, 17 and 40 over it: its README); the tiles'
totals expected are read from the profile with the standard library's sqlite3, the bar's
from memory.json with json. The map's totals come from the profile memory.json names:
moved, unreadable or changed, the page says why there is no map in one line, and is still
written. In a browser: test_report_browser.py."""

import json
import re
import shutil
import sqlite3

import pytest

from support.cli import invoke_extract
from support.paths import FIXTURES
from support.reportpage import parse

TILE_MEMORY = FIXTURES / "tile-memory"
PROFILE = TILE_MEMORY / "profile.pop"
LIMIT = 638976  # pva-double.json's target.bytesPerTile
TILES_PER_IPU = 32
LEVELS = 9  # the shades, m0 (empty) to m8 (full)
CELL_TITLE = re.compile(r"^tile (\d+)(?:, IPU (\d+))?: ([\d,]+) bytes")


def sql_totals(profile):
    """memory_by_tile's totals in rowid order, read on their own (read-only)."""
    db = sqlite3.connect("file:{}?mode=ro".format(profile), uri=True)
    try:
        return [row[0] for row in db.execute("SELECT total FROM memory_by_tile ORDER BY rowid")]
    finally:
        db.close()


def extracted(folder, profile, *args, cwd=None, pva=True):
    result = invoke_extract(
        profile, "-o", folder / "summary.json", "--memory", *args, cwd=cwd, pva=pva
    )
    assert result.code == 0, result
    return folder


def report_of(tmp_path, *folders, cwd=None):
    target = tmp_path / "report.html"
    result = invoke_extract("report", *(list(folders) + ["-o", target]), pva=False, cwd=cwd)
    assert result.code == 0, result
    assert "Traceback" not in result.stderr
    return parse(target.read_bytes()), result


def views(page):
    return page.find("section", id="tile-memory").find_all("details", cls="tile-memory")


def maps(node):
    """The tile maps under `node` (not the legend's little key cells)."""
    return [svg for svg in node.find_all("svg", cls="tilemap") if "key-cell" not in svg.classes]


def cells(svg):
    """(tile, IPU or None, total, classes, y, block) of every cell, in the page's order."""
    found = []
    for block in svg.find_all("g", cls="ipu"):
        for rect in block.find_all("rect"):
            match = CELL_TITLE.match(rect.find("title").text())
            assert match, rect.find("title").text()
            tile, ipu, total = match.groups()
            found.append(
                (
                    int(tile),
                    None if ipu is None else int(ipu),
                    int(total.replace(",", "")),
                    rect.classes,
                    float(rect.attrs["y"]),
                    block.attrs.get("data-ipu"),
                )
            )
    return found


def copy_profile(folder):
    """A private copy of the tile-memory fixture in `folder`, to move or change."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("profile.pop", "pva-double.json"):
        shutil.copyfile(str(TILE_MEMORY / name), str(folder / name))
    return folder / "profile.pop"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """tm: tile-memory with pva (2 IPUs, a limit); plain: the same without pva."""
    top = tmp_path_factory.mktemp("made")
    return (
        extracted(top / "tm", PROFILE),
        extracted(top / "plain", PROFILE, "--no-pva", pva=False),
    )


def test_one_cell_per_tile_a_block_per_ipu_over_limit_ringed(made, tmp_path):
    page, _ = report_of(tmp_path, made[0])
    (view,) = views(page)
    (svg,) = maps(view)
    totals = sql_totals(PROFILE)
    assert len(totals) == 64
    found = cells(svg)
    # one cell per tile, in tile order, each with its own total
    assert [c[0] for c in found] == list(range(64))
    assert [c[2] for c in found] == totals
    # IPU i's block holds tiles 32i..32i+31, named, and lies under IPU i-1's
    blocks = svg.find_all("g", cls="ipu")
    assert [b.attrs["data-ipu"] for b in blocks] == ["0", "1"]
    assert [b.find("text", cls="name").text() for b in blocks] == ["IPU 0", "IPU 1"]
    for tile, ipu, _total, _classes, _y, block in found:
        assert ipu == tile // TILES_PER_IPU and block == str(ipu)
    assert max(c[4] for c in found if c[1] == 0) < min(c[4] for c in found if c[1] == 1)
    # over the limit: 5, 17 and 40 by the fixture's README; tile 50 is at it, not over
    over = [tile for tile, total in enumerate(totals) if total > LIMIT]
    assert over == [5, 17, 40]
    assert [c[0] for c in found if "over" in c[3]] == over
    for tile, _ipu, total, classes, _y, _block in found:
        if tile in over:
            assert classes == ["over"]  # a ring: no shade class
        else:  # shaded by total / bytes per tile, in 9 steps
            assert classes == ["m{}".format(round((LEVELS - 1) * total / LIMIT))]
    assert [c[3] for c in found if c[0] == 50] == [["m8"]]
    words = view.find("span", cls="over-count").text()
    assert words.startswith("3 tiles of 64 over the limit of 638,976 bytes")
    assert words.endswith("tiles 5, 17, 40.")
    assert "40 (IPU 1): 707,628 of 638,976 bytes (110.7%); 3 tiles over the limit" in (
        view.find("summary").text()
    )
    ids = [node.attrs["id"] for node in page.find_all() if "id" in node.attrs]
    assert len(ids) == len(set(ids))


def test_the_fullest_tile_s_categories_are_memory_json_s(made, tmp_path):
    page, _ = report_of(tmp_path, made[0])
    (view,) = views(page)
    fullest = json.loads((made[0] / "memory.json").read_text())["fullest"][0]
    assert fullest["tile"] == 40 and fullest["unattributed"] > 0
    parts = [(c["category"], c["bytes"]) for c in fullest["categories"]]
    parts.append(("unattributed", fullest["unattributed"]))
    (chart,) = view.find_all("svg", cls="chart")
    (bar,) = chart.find_all("g", cls="bar")
    assert bar.find("text", cls="name").text() == "tile 40"
    # the bar adds up to the tile's total: categories and unattributed
    assert bar.find("text", cls="total").text() == "{:,}".format(fullest["total"])
    assert sum(size for _name, size in parts) == fullest["total"] == 707628
    titles = [rect.find("title").text() for rect in bar.find_all("rect")]
    assert titles == [
        "tile 40: {}: {:,} bytes ({:.1f}%)".format(name, size, 100.0 * size / fullest["total"])
        for name, size in parts
    ]
    legend = [key.text() for key in view.find_all("span", cls="key")]
    assert legend == [name for name, _size in parts]


def test_without_a_limit_one_block_shaded_by_the_fullest(made, tmp_path):
    page, _ = report_of(tmp_path, made[1])
    (view,) = views(page)
    (svg,) = maps(view)
    totals = sql_totals(PROFILE)
    (block,) = svg.find_all("g", cls="ipu")
    assert "data-ipu" not in block.attrs and block.find_all("text") == []
    found = cells(svg)
    assert [(c[0], c[1], c[2]) for c in found] == [(t, None, v) for t, v in enumerate(totals)]
    most = max(totals)
    assert [c[3] for c in found] == [["m{}".format(round(8 * v / most))] for v in totals]
    assert view.find_all("span", cls="over-count") == []
    assert "shaded by each tile's total over the fullest tile's (707,628 bytes)" in view.text()


def why_line(view):
    (line,) = view.find_all("p", cls="why")
    return line.text()


def test_a_profile_moved_away_leaves_one_line_and_the_bar(tmp_path):
    profile = copy_profile(tmp_path / "profiles")
    folder = extracted(tmp_path / "rec", profile)
    moved = tmp_path / "elsewhere.pop"
    profile.rename(moved)
    page, _ = report_of(tmp_path, folder)
    (view,) = views(page)
    assert maps(view) == []
    assert why_line(view) == "no tile map: profile {} is not readable here (no such file)".format(
        profile
    )
    assert len(view.find_all("svg", cls="chart")) == 1  # the bar stays
    assert page.find_all("section", id="untrusted") == []  # memory.json still belongs


def test_a_relative_profile_is_found_from_the_folder_report_runs_in(tmp_path):
    copy_profile(tmp_path / "work" / "p")
    extracted(tmp_path / "work" / "rec", "p/profile.pop", cwd=tmp_path / "work")
    page, _ = report_of(tmp_path, "rec", cwd=tmp_path / "work")
    assert len(maps(views(page)[0])) == 1
    page, _ = report_of(tmp_path, tmp_path / "work" / "rec", cwd=tmp_path)
    assert why_line(views(page)[0]) == (
        "no tile map: profile p/profile.pop is not readable here (no such file)"
    )


def test_a_batch_s_relative_profile_is_found_from_the_folder_the_batch_ran_in(tmp_path):
    profile = copy_profile(tmp_path / "work" / "runs" / "p")
    result = invoke_extract("runs", "-o", "out", "--memory", cwd=tmp_path / "work")
    assert result.code == 0, result
    # The batch was given "runs": the summary's profile is runs/p/profile.pop, from
    # work/, and there is no such path from tmp_path, where the report runs.
    summary = json.loads((tmp_path / "work" / "out" / "p" / "summary.json").read_bytes())
    assert summary["profile"] == "runs/p/profile.pop"
    assert not (tmp_path / "runs").exists()
    page, _ = report_of(tmp_path, tmp_path / "work" / "out", cwd=tmp_path)
    (view,) = views(page)
    (drawn,) = maps(view)
    assert len(cells(drawn)) == len(sql_totals(profile)) == 64
    # The same folder moved whole (the batch's folder with it): found again from there.
    shutil.move(str(tmp_path / "work"), str(tmp_path / "moved"))
    page, _ = report_of(tmp_path, tmp_path / "moved" / "out", cwd=tmp_path)
    assert len(maps(views(page)[0])) == 1
    # Changed since: the line names the file it read.
    change(
        tmp_path / "moved" / "runs" / "p" / "profile.pop",
        "DELETE FROM memory_by_tile WHERE rowid = 64",
    )
    page, _ = report_of(tmp_path, tmp_path / "moved" / "out", cwd=tmp_path)
    assert why_line(views(page)[0]) == (
        "no tile map: profile {} has changed since memory.json was written (it has 63 "
        "tiles, memory.json 64)".format(tmp_path / "moved" / "runs" / "p" / "profile.pop")
    )


def change(profile, statement):
    db = sqlite3.connect(str(profile))
    with db:
        db.execute(statement)
    db.close()


@pytest.mark.parametrize(
    "statement,why",
    [
        # tile 3's total one byte more: the sum differs (min, max, median do not)
        ("UPDATE memory_by_tile SET total = total + 1 WHERE rowid = 4", "its tiles' sum differs"),
        # a tile more, of the median's total: only the count differs
        (
            "INSERT INTO memory_by_tile (tile, ipu, total, gaps) VALUES (64, 2, 440436, 0)",
            "it has more than 64 tiles, memory.json 64",
        ),
        ("DELETE FROM memory_by_tile WHERE rowid = 64", "it has 63 tiles, memory.json 64"),
        # the fullest total (707,628) moves from tile 40 to 41, and tile 40 gets 1,000, below
        # the least (1,024 on tile 62): by hand, tile 41's 410,711 is gone, both it and 1,000
        # below the median (440,436), which stays; the max stays, on another tile
        (
            (
                "UPDATE memory_by_tile SET total = CASE rowid WHEN 41 THEN 1000 ELSE 707628 END "
                "WHERE rowid IN (41, 42)"
            ),
            "its tiles' sum, min, min_tile, max_tile differ",
        ),
    ],
)
def test_a_profile_changed_since_leaves_one_line(tmp_path, statement, why):
    profile = copy_profile(tmp_path / "profiles")
    folder = extracted(tmp_path / "rec", profile)
    change(profile, statement)
    page, _ = report_of(tmp_path, folder)
    (view,) = views(page)
    assert maps(view) == []
    assert why_line(view) == (
        "no tile map: profile {} has changed since memory.json was written ({}{})".format(
            profile, why, " from memory.json's" if why.endswith(("differ", "differs")) else ""
        )
    )
    assert len(view.find_all("svg", cls="chart")) == 1


def test_an_unreadable_profile_leaves_one_line(tmp_path):
    profile = copy_profile(tmp_path / "profiles")
    folder = extracted(tmp_path / "rec", profile)
    profile.write_bytes(b"not a database at all, but long enough to have a header" * 4)
    page, _ = report_of(tmp_path, folder)
    assert why_line(views(page)[0]) == (
        "no tile map: profile {} is not readable here (not an SQLite database)".format(profile)
    )
    profile.unlink()
    profile.mkdir()
    page, _ = report_of(tmp_path, folder)
    assert why_line(views(page)[0]) == (
        "no tile map: profile {} is not readable here (is a directory, not a profile)".format(
            profile
        )
    )


def test_a_memory_json_that_is_not_the_summary_s_is_listed(made, tmp_path):
    folder = tmp_path / "tm"
    shutil.copytree(str(made[0]), str(folder))
    data = json.loads((folder / "memory.json").read_text())
    data["total"]["max"] += 1
    (folder / "memory.json").write_text(json.dumps(data, indent=2) + "\n")
    page, result = report_of(tmp_path, folder)
    assert page.find_all("section", id="tile-memory") == []
    (line,) = page.find("section", id="untrusted").find("tbody").find_all("tr")
    cells_ = [td.text() for td in line.find_all("td")]
    assert cells_[1] == str(folder / "memory.json")
    assert cells_[2].startswith("not drawn: it does not belong to the summary beside it: ")
    assert "{}: not drawn".format(folder / "memory.json") in result.stderr


def test_the_page_is_never_written_over_the_profile(tmp_path):
    profile = copy_profile(tmp_path / "profiles")
    folder = extracted(tmp_path / "rec", profile)
    before = profile.read_bytes()
    result = invoke_extract("report", folder, "-o", profile, pva=False)
    assert result.code == 2, result
    assert "would write over an input" in result.stderr
    assert profile.read_bytes() == before


def test_the_page_draws_at_most_100000_cells(tmp_path):
    """Two recordings of 60,000 tiles, then a small one: the first map is drawn (60,000
    cells), the second would pass 100,000, so it and every one after are listed, not
    drawn, and their profiles are not read (the third's is gone: no line says so)."""
    big = copy_profile(tmp_path / "big")
    change(
        big,
        "INSERT INTO memory_by_tile (tile, ipu, total, gaps) SELECT value, value / 32, "
        "value * 7919 % 500000, 0 FROM (WITH RECURSIVE n(value) AS (SELECT 64 UNION ALL "
        "SELECT value + 1 FROM n WHERE value < 59999) SELECT value FROM n)",
    )
    assert len(sql_totals(big)) == 60000
    first = extracted(tmp_path / "r1", big, "--no-pva", pva=False)
    second = tmp_path / "r2"
    shutil.copytree(str(first), str(second))
    small = copy_profile(tmp_path / "small")
    third = extracted(tmp_path / "r3", small)
    small.unlink()
    page, _ = report_of(tmp_path, first, second, third)
    shown = views(page)
    assert len(shown) == 3
    assert len(cells(maps(shown[0])[0])) == 60000
    assert "open" in shown[0].attrs
    for view in shown[1:]:
        assert maps(view) == [] and view.find_all("svg", cls="chart") == []
        assert view.find_all("p", cls="why") == []
        assert "Not drawn: the page already holds as many tile-map cells" in view.text()
        assert "open" not in view.attrs
    assert (tmp_path / "report.html").stat().st_size < 60000 * 110 + 200000


def edited(made, tmp_path, name, **changes):
    """A copy of tm's recording whose memory.json has `changes`: still its summary's (a
    single run's file belongs by its profile and total min, mean and max)."""
    folder = tmp_path / name
    shutil.copytree(str(made[0]), str(folder))
    data = json.loads((folder / "memory.json").read_text())
    data.update(changes)
    (folder / "memory.json").write_text(json.dumps(data, indent=2) + "\n")
    return folder


def test_no_tile_over_a_higher_limit_and_odd_figures_stay_bounded(made, tmp_path):
    higher = edited(made, tmp_path, "higher", bytes_per_tile=800000)
    huge = edited(made, tmp_path, "huge", tiles_per_ipu=10**9)
    page, _ = report_of(tmp_path, higher, huge)
    first, second = views(page)
    assert [c[3] for c in cells(maps(first)[0])] == [
        ["m{}".format(round(8 * total / 800000))] for total in sql_totals(PROFILE)
    ]
    assert first.find_all("span", cls="over-count") == []
    assert "No tile is over the limit of 800,000 bytes." in first.text()
    # pva's tiles per IPU far beyond the tiles: one block of 64, one row (not a map a
    # billion tiles tall)
    (svg,) = maps(second)
    assert len(svg.find_all("g", cls="ipu")) == 1
    assert int(svg.attrs["height"]) < 40 and int(svg.attrs["width"]) == 64 + 64 * 11
    assert len(cells(svg)) == 64


def test_a_hostile_label_stays_text(made, tmp_path):
    hostile = '<img src=x onerror="window.pwned=1"> & </script>'
    target = tmp_path / "report.html"
    result = invoke_extract("report", made[0], "--label", hostile, "-o", target, pva=False)
    assert result.code == 0, result
    page = parse(target.read_bytes())
    assert page.find_all("img") == []
    (view,) = views(page)
    assert view.find("span", cls="label").text() == hostile
    assert maps(view)[0].find("title", id="tilemap-title-1").text().endswith(": " + hostile)
    assert (
        view.find("svg", cls="chart")
        .find("title", id="memory-chart-1")
        .text()
        .endswith(": " + hostile)
    )


def test_a_bar_of_many_categories_keeps_24_segments(made, tmp_path):
    data = json.loads((made[0] / "memory.json").read_text())
    fullest = data["fullest"]
    fullest[0] = dict(
        fullest[0],
        categories=[{"category": "c{:02}".format(n), "bytes": 1000 - n} for n in range(30)],
        unattributed=0,
    )
    folder = edited(made, tmp_path, "many", fullest=fullest)
    page, _ = report_of(tmp_path, folder)
    (view,) = views(page)
    titles = [r.find("title").text() for r in view.find("svg", cls="chart").find_all("rect")]
    # by hand: c00..c22 (1,000 down to 978 bytes), then c23..c29: 977 + ... + 971 = 6,818
    assert len(titles) == 24
    assert titles[22].startswith("tile 40: c22: 978 bytes")
    assert titles[23].startswith("tile 40: 7 other categories: 6,818 bytes")
    assert "unattributed" not in view.find("svg", cls="chart").text()
