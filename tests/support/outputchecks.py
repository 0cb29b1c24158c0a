"""Checks of what `extract diff`, `extract trace`, `extract` and `extract blocks` write,
each returning the problems it finds as sentences (an empty list: none), for the fuzz of
diff and trace (tests/support/difftracefuzz.py):

- `strict_json`: the bytes parse as JSON with Python's `json` refusing NaN and Infinity
  *and* with orjson (which also refuses lone surrogates and numbers beyond 64 bits), and
  every whole number in them is a 64-bit integer (-2**63 to 2**63 - 1: what extract's own
  readers accept);
- `numbers_beyond_64_bits`: the same for the whole numbers of a CSV or markdown table;
- `trace_problems`: the checks that hold for every trace (docs/formats/trace.md) on a parsed trace:
  on every track the slices sorted by `ts` and never overlapping, neither with `ts + dur`
  added in doubles nor once `ts` and `dur` are each rounded to whole nanoseconds; `tid`s
  unique in their process, never its `pid`, ascending as `thread_sort_index` orders
  them; every slice's track named and sorted; each process named after its profile;
- `terminal_problems`: what a terminal is sent holds no control character but the line
  ends of the format itself.
"""

import json
import re

import orjson

from support.derivedfuzz import check_json, short

INT_LOW, INT_HIGH = -(2**63), 2**63 - 1

# C0 controls but the line feed, DEL and the C1 controls (U+009B alone is a CSI).
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_WHOLE = re.compile(r"^[-+]?[0-9]+$")


def _ints(value):
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _ints(item)
    elif isinstance(value, list):
        for item in value:
            yield from _ints(item)


def strict_json(data: bytes, what: str):
    """(the parsed document or None, problems)."""
    problems = check_json(data, what)
    if problems:
        return None, problems
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return None, ["{} is not JSON orjson reads: {}".format(what, short(str(exc), 200))]
    document = json.loads(data.decode("utf-8"))
    beyond = [n for n in _ints(document) if not INT_LOW <= n <= INT_HIGH]
    if beyond:
        problems.append(
            "{} holds {} whole number(s) beyond 64 bits, such as {}".format(
                what, len(beyond), short(str(beyond[0]), 60)
            )
        )
    return document, problems


def numbers_beyond_64_bits(cells, what: str) -> list:
    """The problem, if any, with the whole numbers among `cells` (text)."""
    beyond = [c for c in cells if _WHOLE.match(c.strip()) and not INT_LOW <= int(c) <= INT_HIGH]
    if beyond:
        return ["{} holds a whole number beyond 64 bits: {}".format(what, short(beyond[0], 60))]
    return []


def markdown_cells(text: str):
    """Every cell of every table row of a markdown text (split at unescaped pipes)."""
    for line in re.split(r"\r\n|\r|\n", text):
        if line.startswith("|") and line.endswith("|"):
            for cell in re.split(r"(?<!\\)\|", line[1:-1]):
                yield cell.strip()


def terminal_problems(data: bytes, what: str) -> list:
    """What was sent to a terminal: UTF-8, and no control character in it but the line
    feed and the carriage return right before one (CSV's CRLF)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ["{} sent the terminal bytes that are not UTF-8: {}".format(what, exc)]
    found = _CONTROL.search(text.replace("\r\n", "\n"))
    if found:
        at = found.start()
        return [
            "{} sent the terminal the control character {!r} (in {!r})".format(
                what, found.group(), text[max(0, at - 30) : at + 30]
            )
        ]
    return []


def _ns(value) -> int:
    """Microseconds as a viewer that counts whole nanoseconds reads them (Perfetto)."""
    return round(value * 1000)


def trace_problems(document, process_names) -> list:
    """The trace format's checks on a parsed trace; `process_names[pid]`: the name its process
    must have (the profile as given, shown as extract shows paths), a clock note after it
    allowed."""
    problems = []
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        return ["the trace is not an object with a traceEvents list"]
    tracks, sort_index, thread_names, names = {}, {}, {}, {}
    for event in document["traceEvents"]:
        pid, tid, phase = event.get("pid"), event.get("tid"), event.get("ph")
        if phase == "X":
            tracks.setdefault((pid, tid), []).append(event)
        elif event.get("name") == "thread_sort_index":
            sort_index.setdefault(pid, []).append((event["args"]["sort_index"], tid))
        elif event.get("name") == "thread_name":
            thread_names.setdefault(pid, []).append(tid)
        elif event.get("name") == "process_name":
            names[pid] = event["args"]["name"]
    for pid, wanted in process_names.items():
        name = names.get(pid)
        if name is None or (name != wanted and name != wanted + " (1 cycle = 1 ns)"):
            problems.append(
                "process {} is named {!r}, not after its profile {!r}".format(pid, name, wanted)
            )
    for (pid, tid), events in sorted(tracks.items(), key=lambda item: str(item[0])):
        if tid not in thread_names.get(pid, []):
            problems.append("track {} of process {} has no thread_name".format(tid, pid))
        for before, after in zip(events, events[1:]):
            where = "track {} of process {}: {!r} then {!r}".format(
                tid, pid, short(before, 150), short(after, 150)
            )
            if after["ts"] < before["ts"]:
                problems.append("slices not sorted by ts on " + where)
            elif before["ts"] + before["dur"] > after["ts"]:
                problems.append("slices overlap as ts + dur adds in doubles on " + where)
            elif _ns(before["ts"]) + _ns(before["dur"]) > _ns(after["ts"]):
                problems.append("slices overlap once rounded to whole ns on " + where)
    for pid, tids in thread_names.items():
        if len(set(tids)) != len(tids):
            problems.append("process {}: a tid names two tracks".format(pid))
        if pid in tids:
            problems.append("process {}: a track's tid is the pid".format(pid))
        order = [tid for _, tid in sorted(sort_index.get(pid, []), key=lambda p: p[0])]
        if sorted(order) != order or set(order) != set(tids):
            problems.append(
                "process {}: tids do not ascend in thread_sort_index order: {}".format(
                    pid, short(order, 100)
                )
            )
    return problems
