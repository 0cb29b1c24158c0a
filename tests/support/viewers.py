"""What the trace viewers make of a trace: the file's own tracks (TraceTracks), and the
Perfetto UI's and speedscope's readings of it, each loaded in headless Chromium from a
LocalSite (tests/support/viewersites.py), with every request that would leave the site
refused.

- Perfetto: the UI, started once, opens each trace from its URL as its `?url=` argument
  does (`window.app`, the UI's debug global, is the UI's own object: openTraceFromUrl),
  then its trace processor answers SQL through the UI's engine (`app.trace.engine`):
  the slices of each thread track, their depths, unfinished slices, the import's error
  and data-loss stats (`slice_drop_overlapping_complete_event`, a parser failure...);
  and the order of the tracks in its workspace, as drawn.
- speedscope: it opens the trace from `#profileURL=`; its import reports on the console
  an end met while another slice is on top of the stack, and a slice still open at the
  end of a profile. Its Export button then gives back its own model of the trace
  (speedscope's file format: one evented profile a thread, open and close events), from
  which each slice's depth, each track's slice count and the tracks' order are read.
"""

import collections
import json
import os
import re
from pathlib import Path
from typing import Dict, List, Tuple

Track = Tuple[int, int]  # (pid, tid)
LOAD_TIMEOUT_MS = 240000  # a 100,000-row trace takes tens of seconds on a busy machine


class TraceTracks:
    """A trace file's tracks: each (pid, tid)'s X events, names, and display order
    (processes by process_sort_index, threads by thread_sort_index)."""

    def __init__(self, path: Path):
        events = json.loads(path.read_bytes())["traceEvents"]
        slices = collections.Counter((e["pid"], e["tid"]) for e in events if e["ph"] == "X")
        self.slices = dict(slices)  # type: Dict[Track, int]
        process_index, thread_index, self.names = {}, {}, {}
        for e in events:
            if e["ph"] != "M":
                continue
            if e["name"] == "process_sort_index":
                process_index[e["pid"]] = e["args"]["sort_index"]
            elif e["name"] == "thread_sort_index":
                thread_index[(e["pid"], e["tid"])] = e["args"]["sort_index"]
            elif e["name"] == "thread_name":
                self.names[(e["pid"], e["tid"])] = e["args"]["name"]
        self.order = sorted(
            self.slices, key=lambda t: (process_index.get(t[0], 0), thread_index.get(t, 0))
        )  # type: List[Track]

    def named(self, tracks) -> List[str]:
        """`pid thread-name` for each (pid, tid), in the order given."""
        return ["{} {}".format(pid, self.names.get((pid, tid), tid)) for pid, tid in tracks]

    def by_process(self, tracks) -> Dict[int, List[str]]:
        """The thread names of each pid, in the order given."""
        found = collections.defaultdict(list)  # type: Dict[int, List[str]]
        for pid, tid in tracks:
            found[pid].append(self.names.get((pid, tid), str(tid)))
        return dict(found)


def screenshots_wanted() -> bool:
    return bool(os.environ.get("TRACE_VIEWER_SCREENSHOTS"))


class OfflineContext:
    """A browser context (its cache shared by the pages opened in it, so that a viewer's
    files are fetched and compiled once) that reaches nothing but `site`: any other
    request is aborted and listed in `refused`."""

    def __init__(self, browser, site):
        self.site = site
        self.context = browser.new_context(
            viewport={"width": 1600, "height": 1000},
            accept_downloads=True,
            service_workers="block",
        )
        self.refused = []  # type: List[str]
        allowed = site.origin + "/"

        def route(route):
            if route.request.url.startswith(allowed):
                route.continue_()
            else:
                self.refused.append(route.request.url)
                route.abort()

        self.context.route("**/*", route)

    def close(self) -> None:
        self.context.close()


class _Page:
    """A new page of an OfflineContext, keeping its console messages."""

    def __init__(self, offline: OfflineContext):
        self.page = offline.context.new_page()
        self.console = []  # type: List[Tuple[str, str]]
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda error: self.console.append(("pageerror", str(error))))

    def screenshot(self, name: str) -> None:
        """Kept only when TRACE_VIEWER_SCREENSHOTS names a folder (to look at by hand)."""
        if screenshots_wanted():
            folder = os.environ["TRACE_VIEWER_SCREENSHOTS"]
            Path(folder).mkdir(parents=True, exist_ok=True)
            self.page.wait_for_timeout(1500)  # drawn
            self.page.screenshot(path=str(Path(folder) / (name + ".png")))

    def close(self) -> None:
        self.page.close()


# Open a trace in the UI as its `?url=` argument does, in the page that has the UI
# already: the UI is started once for all the traces (its start costs seconds). The
# errors the page meets from then on are kept (the UI's crash dialog shows only the
# first of several within seconds).
PERFETTO_OPEN = """(url) => {
  if (window.viewerErrors === undefined) {
    const keep = (what) => window.viewerErrors.push(String(what));
    window.addEventListener('error', (e) => keep(e.error || e.message));
    window.addEventListener('unhandledrejection', (e) => keep(e.reason));
  }
  window.viewerErrors = [];
  window.previousTrace = window.app.trace;
  window.sawLoading = false;
  window.app.openTraceFromUrl(url);
}"""

# Done when the new trace is there, or when the UI was loading and stopped without one.
PERFETTO_OPENED = """() => {
  const app = window.app;
  window.sawLoading = window.sawLoading || app.isLoadingTrace;
  if (app.isLoadingTrace) return false;
  return (app.trace !== undefined && app.trace !== window.previousTrace)
    || (window.sawLoading && app.trace === undefined);
}"""

PERFETTO_READ = """async () => {
  const trace = window.app.trace;
  const rows = async (sql) => {
    const result = await trace.engine.query(sql);
    const columns = result.columns();
    const found = [];
    for (const it = result.iter({}); it.valid(); it.next()) {
      found.push(columns.map((c) => {
        const value = it.get(c);
        return typeof value === 'bigint' ? Number(value) : value;
      }));
    }
    return found;
  };
  const uris = [];
  const walk = (node) => {
    for (const child of node.children) { uris.push(child.uri || ''); walk(child); }
  };
  walk(trace.workspace.tracks);
  const onThreads = `from slice join thread_track on slice.track_id = thread_track.id
    join thread using (utid) left join process using (upid)`;
  return {
    errors: window.viewerErrors,
    uris,
    threads: await rows('select utid, tid, pid from thread left join process using (upid)'),
    processes: await rows('select upid, pid from process'),
    all_slices: (await rows('select count(*) from slice'))[0][0],
    per_track: await rows(`select pid, tid, count(*) ${onThreads} group by pid, tid`),
    nested: await rows(`select pid, tid, slice.name, slice.ts, slice.depth ${onThreads}
      where slice.depth > 0 order by slice.ts limit 5`),
    nested_count: (await rows('select count(*) from slice where depth > 0'))[0][0],
    unfinished: (await rows('select count(*) from slice where dur < 0'))[0][0],
    problems: await rows(`select name, idx, value from stats
      where value > 0 and severity in ('error', 'data_loss') order by name`),
  };
}"""


class PerfettoReading:
    """What the Perfetto UI's trace processor holds after the import, and its track order."""

    def __init__(self, found: dict):
        self.errors = found["errors"]
        self.all_slices = found["all_slices"]
        self.per_track = {(pid, tid): n for pid, tid, n in found["per_track"]}
        self.nested = found["nested"]
        self.nested_count = found["nested_count"]
        self.unfinished = found["unfinished"]
        self.problems = [
            "{}{} = {}".format(n, "" if i is None else [i], v) for n, i, v in found["problems"]
        ]
        threads = {utid: (pid, tid) for utid, tid, pid in found["threads"]}
        self.order = []  # type: List[Track]
        for uri in found["uris"]:
            thread = re.match(r"/thread_(\d+)$", uri)
            if thread:
                self.order.append(threads[int(thread.group(1))])


class PerfettoUI:
    """The Perfetto UI in one page of `offline`, started once, opening trace after trace
    (started again after a trace it could not open)."""

    def __init__(self, offline: OfflineContext):
        self.offline = offline
        self.opened = self._started()

    def _started(self) -> _Page:
        opened = _Page(self.offline)
        # A page of the UI's own (#!/viewer): at its home page this build asks the
        # server for a trace of vizviewer's, which is not there.
        opened.page.goto(self.offline.site.origin + "/#!/viewer")
        opened.page.wait_for_function("() => window.app !== undefined")
        return opened

    def read(self, name: str) -> PerfettoReading:
        """Open the trace /traces/NAME and read it."""
        page = self.opened.page
        page.evaluate(PERFETTO_OPEN, self.offline.site.trace_url(name))
        page.wait_for_function(PERFETTO_OPENED, timeout=LOAD_TIMEOUT_MS)
        if not page.evaluate("() => window.app.trace !== undefined"):
            errors = page.evaluate("window.viewerErrors")
            console = self.opened.console[-3:]
            self.close()
            self.opened = self._started()
            raise AssertionError(
                "the Perfetto UI could not open {}: {}; console: {}".format(name, errors, console)
            )
        found = page.evaluate(PERFETTO_READ)
        if screenshots_wanted():  # each process's tracks shown, not only its summary
            page.evaluate(
                "() => window.app.trace.workspace.tracks.children.forEach(n => n.expand())"
            )
            self.opened.screenshot("perfetto-" + Path(name).stem)
        return PerfettoReading(found)

    def close(self) -> None:
        self.opened.close()


# speedscope says with alert() that it knows no format for a file (or that the profile
# is empty): kept here instead of shown.
SPEEDSCOPE_ALERTS = "window.alert = (message) => window.viewerAlerts.push(String(message));"
SPEEDSCOPE_ALERTS = "window.viewerAlerts = []; " + SPEEDSCOPE_ALERTS

# Done when the profile is shown (the Export button), or when the import failed.
SPEEDSCOPE_SETTLED = """() => {
  const text = document.body ? document.body.innerText : '';
  return text.includes('Export') || text.includes('Something went wrong')
    || window.viewerAlerts.length > 0;
}"""

# What speedscope's import of the Trace Event Format says on the console when a slice's
# end does not match the slice on top of its stack, or a slice is left open.
SPEEDSCOPE_IMPORT_WARNING = re.compile(r"Tried to end|was still open at end of profile")


class SpeedscopeReading:
    """speedscope's model of the trace, from its export: per track (pid, tid) the
    slices it opened and those it opened inside another; the tracks' order; and its
    import's warnings."""

    def __init__(self, exported: dict, console: List[Tuple[str, str]], refused: List[str]):
        self.refused = refused
        self.warnings = [text for _, text in console if SPEEDSCOPE_IMPORT_WARNING.search(text)]
        self.errors = [text for kind, text in console if kind in ("error", "pageerror")]
        frames = exported["shared"]["frames"]
        self.order = []  # type: List[Track]
        self.per_track = {}  # type: Dict[Track, int]
        self.nested = []  # type: List[Tuple[Track, str, int]]
        self.unclosed = []  # type: List[Tuple[Track, str]]
        for profile in exported["profiles"]:
            track = _speedscope_track(profile["name"])
            self.order.append(track)
            stack = []  # type: List[int]
            opened = 0
            for event in profile["events"]:
                if event["type"] == "O":
                    opened += 1
                    if stack:
                        self.nested.append((track, frames[event["frame"]]["name"], len(stack)))
                    stack.append(event["frame"])
                else:
                    stack.pop()
            self.per_track[track] = opened
            self.unclosed += [(track, frames[frame]["name"]) for frame in stack]


def _speedscope_track(name: str) -> Track:
    """(pid, tid) from the name speedscope gives a thread's profile:
    `<process> (pid P), <thread> (tid T)`, or `<process> (pid P, tid T)` for a thread
    with no name."""
    pid = re.findall(r"\(pid (\d+)[,)]", name)
    tid = re.search(r"[ (]tid (\d+)\)$", name)
    assert pid and tid, "speedscope named a profile {!r}: no pid and tid in it".format(name)
    return int(pid[-1]), int(tid.group(1))


def read_in_speedscope(offline: OfflineContext, name: str) -> SpeedscopeReading:
    """Open the trace /traces/NAME in the speedscope that `offline` reaches, export its
    model."""
    return SpeedscopeReading(*speedscope_export(offline, name))


def speedscope_export(offline: OfflineContext, name: str) -> Tuple[dict, list, List[str]]:
    """Open the file /traces/NAME (any format speedscope reads) in the speedscope that
    `offline` reaches; its export (speedscope's file format, as a dict), the page's
    console and the requests refused meanwhile."""
    site = offline.site
    opened = _Page(offline)
    refused = len(offline.refused)
    try:
        page = opened.page
        page.add_init_script(SPEEDSCOPE_ALERTS)
        page.goto("{}/index.html#profileURL={}".format(site.origin, site.trace_url(name)))
        page.wait_for_function(SPEEDSCOPE_SETTLED, timeout=LOAD_TIMEOUT_MS)
        export = page.get_by_text("Export", exact=False)
        assert export.count() > 0, "speedscope could not import {}: {} {!r}; console: {}".format(
            name,
            page.evaluate("window.viewerAlerts"),
            page.inner_text("body")[:200],
            opened.console[-3:],
        )
        opened.screenshot("speedscope-" + Path(name).stem)
        with page.expect_download(timeout=LOAD_TIMEOUT_MS) as download:
            export.first.click()
        exported = json.loads(Path(download.value.path()).read_bytes())
        return exported, list(opened.console), offline.refused[refused:]
    finally:
        opened.close()
