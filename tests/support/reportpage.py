"""Helpers for the report's tests: hand-made batch folders (summaries, an index, a
blocks.json) and a small tree of a page's HTML, parsed by the standard library."""

import hashlib
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

from support.paths import FIXTURES, GOLDEN

A = GOLDEN / "expected.json"  # stages total 173253 (by hand: the six kernels' cycles)
B = FIXTURES / "vit-f8weight-b" / "expected.json"  # stages total 156220 (by hand)

VOID = {
    "meta",
    "br",
    "link",
    "img",
    "input",
    "hr",
    "wbr",
    "area",
    "base",
    "col",
    "embed",
    "source",
    "track",
}


class Node:
    def __init__(self, tag, attrs, parent=None):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    @property
    def classes(self):
        return (self.attrs.get("class") or "").split()

    def find_all(self, tag=None, cls=None, **attrs):
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if (
                    (tag is None or child.tag == tag)
                    and (cls is None or cls in child.classes)
                    and all(child.attrs.get(k) == v for k, v in attrs.items())
                ):
                    found.append(child)
                found.extend(child.find_all(tag, cls, **attrs))
        return found

    def find(self, tag=None, cls=None, **attrs):
        found = self.find_all(tag, cls, **attrs)
        assert len(found) == 1, (tag, cls, attrs, len(found))
        return found[0]

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class _TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, attrs, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        assert node is not self.root, "</{}> closes nothing".format(tag)
        self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(html: bytes) -> Node:
    builder = _TreeBuilder()
    builder.feed(html.decode("utf-8"))
    builder.close()
    assert builder.current is builder.root, "unclosed <{}>".format(builder.current.tag)
    return builder.root


def write_summary(folder: Path, source: Path = A, edit=None) -> Path:
    """folder/summary.json: a copy of `source`, changed by `edit(data)` if given."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "summary.json"
    if edit is None:
        shutil.copy(str(source), str(target))
    else:
        data = json.loads(source.read_text())
        edit(data)
        target.write_text(json.dumps(data, indent=2))
    return target


def write_index(folder: Path, entries) -> None:
    """folder/index.jsonl with these lines; an ok line whose summary is there records its
    SHA-256, as the batch does (unless the line gives one)."""
    with (folder / "index.jsonl").open("w", encoding="utf-8") as handle:
        for given in entries:
            entry = given
            summary = folder / entry.get("summary", "")
            if entry.get("status") == "ok" and "summary_sha256" not in entry and summary.is_file():
                entry = dict(entry, summary_sha256=hashlib.sha256(summary.read_bytes()).hexdigest())
            handle.write(json.dumps(entry) + "\n")


def index_entry(
    summary: str,
    profile: str,
    status="ok",
    warnings=(),
    reason=None,
    finished_at="2026-01-01T00:00:00.000+00:00",
):
    entry = {
        "summary": summary,
        "profile": profile,
        "status": status,
        "warnings": list(warnings),
        "finished_at": finished_at,
    }
    if reason is not None:
        entry["reason"] = reason
    return entry


def record_blocks(folder: Path) -> None:
    """The batch index above `folder` records the blocks.json in it as written with its
    summary (`blocks` true and its SHA-256), as a batch run with --blocks does."""
    index = folder.parent / "index.jsonl"
    if not index.exists():
        return
    key = "{}/summary.json".format(folder.name)
    digest = hashlib.sha256((folder / "blocks.json").read_bytes()).hexdigest()
    lines = [json.loads(line) for line in index.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line.get("summary") == key:
            line.update(blocks=True, blocks_sha256=digest)
    index.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def vouch_for_blocks(out: Path) -> None:
    """out/index.jsonl: a line for every summary.json below `out` with its blocks.json,
    both hashes recorded, as a batch run with --blocks writes them (so the report takes
    hand-made blocks.json files as their summaries')."""
    entries = []
    for summary in sorted(out.rglob("summary.json")):
        key = summary.relative_to(out).as_posix()
        entries.append(index_entry(key, "runs/{}/profile.pop".format(summary.parent.name)))
    write_index(out, entries)
    for summary in sorted(out.rglob("summary.json")):
        if (summary.parent / "blocks.json").exists():
            record_blocks(summary.parent)
