"""The one pass over the step rows agrees with the spec read literally, on random traces.

summary.py folds device rows into local [min start, max end] and hands them to
DeviceSpans at marker rows, and looks names up per (program, compute set) pair; here a
plain reading of docs/formats/summary.md (sort the rows, then for each inference scan them)
checks kernels, qkv_executions and device_spans on traces of every shape, including
steps with several rows stored out of step order."""

import re
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st

from extractor.core.summary import summarize
from support.cases import generator

REPO = Path(__file__).resolve().parent.parent

NAMES = [
    "copyFromHost",
    "copyToHost",
    "/m/blocks/blocks.0/attn/qkv/Convolve",
    "/m/blocks/blocks.0/mlp/fc1/Convolve",
    "/m/blocks/blocks.0/attn/Softmax/Exp",
    "Sync",
]
KINDS = ["DoExchange", "OnTileExecute", "StreamCopyEnd", "StreamCopyBegin", "Sync"]


row = st.tuples(st.integers(0, 2000), st.integers(0, 300))  # start, length
rows = st.lists(row, min_size=1, max_size=3)  # one per IPU
compute_set = st.sampled_from([None, None, "", "named"])  # none, empty name, a name of its own
step = st.one_of(  # stream copies mostly named to open or close an inference
    st.tuples(st.just("StreamCopyEnd"), st.sampled_from([0, 0, 0, 1, 5]), compute_set, rows),
    st.tuples(st.just("StreamCopyBegin"), st.sampled_from([1, 1, 1, 0, 5]), compute_set, rows),
    st.tuples(st.sampled_from(KINDS), st.integers(0, len(NAMES) - 1), compute_set, rows),
    st.tuples(st.sampled_from(KINDS[:2]), st.integers(2, 4), compute_set, rows),
)
trace = st.tuples(st.lists(step, max_size=40), st.randoms(use_true_random=False))


def _write(steps, rng, folder):
    g = generator()
    spec = g.ProfileSpec(
        tiles=4, var_categories=[(1, "internalExchangeCode")], memory_by_tile=[10, 20, 30, 40]
    )
    rows = []
    for number, (kind, name, compute_set, step_rows) in enumerate(steps, start=1):
        spec.programs.append(g.Program(number, NAMES[name], "Sequence"))
        cs_id = None
        if compute_set is not None:
            cs_id = number
            spec.compute_sets.append(
                g.ComputeSet(cs_id, "" if compute_set == "" else NAMES[(name + 1) % len(NAMES)])
            )
        spec.steps.append(g.Step(number, kind, number, cs_id))
        for ipu, (start, length) in enumerate(step_rows):
            rows.append(g.step_row(number, start, start + length, length, 4, ipu=ipu))
    rng.shuffle(rows)  # stored out of step order
    spec.steps_by_ipu = _keep_ipu_order(rows)
    g.write_case(spec, folder)
    return spec


def _keep_ipu_order(rows):
    """Rows in the shuffled order, except that each step's rows appear in IPU order."""
    by_step = {}
    for r in sorted(rows, key=lambda r: r.ipu):
        by_step.setdefault(r.step_id, []).append(r)
    return [by_step[r.step_id].pop(0) for r in rows]


def _literal(spec):
    """kernel (step, start, end) list, qkv_executions, device_spans, per the spec's text."""
    programs = {p.id: p.name for p in spec.programs}
    cs_names = {c.id: c.name for c in spec.compute_sets}
    kinds = {s.id: (s.type, s.program, s.compute_set) for s in spec.steps}
    rows = []
    for position, r in enumerate(spec.steps_by_ipu):
        kind, program, cs = kinds[r.step_id]
        name = cs_names.get(cs) or programs.get(program) or ""
        rows.append((r.step_id, position, kind, name, r.start, r.end))
    rows.sort()
    kernel, anchor = re.compile(r"/Convolve$"), re.compile(r"/attn/qkv/")
    anchors = sorted({s for s, _, _, n, _, _ in rows if kernel.search(n) and anchor.search(n)})
    first = [
        (s, a, b)
        for s, _, _, n, a, b in rows
        if kernel.search(n)
        and anchors
        and anchors[0] <= s
        and (len(anchors) == 1 or s < anchors[1])
    ]
    spans = []
    inputs = sorted(
        {s for s, _, k, n, _, _ in rows if k == "StreamCopyEnd" and re.search(r"^copyFromHost$", n)}
    )
    for opened in inputs:
        ends = [
            s
            for s, _, k, n, _, _ in rows
            if s > opened and k == "StreamCopyBegin" and re.search(r"copyToHost$", n)
        ]
        if not ends:
            continue
        device = [
            (a, b)
            for s, _, k, _, a, b in rows
            if opened < s < ends[0] and k in ("DoExchange", "OnTileExecute")
        ]
        if device:
            spans.append(max(b for _, b in device) - min(a for a, _ in device))
    return first, len(anchors), spans


@settings(max_examples=150, deadline=None)
@given(trace)
def test_pass_agrees_with_the_spec_read_literally(case):
    steps, rng = case
    with TemporaryDirectory() as folder:
        spec = _write(steps, rng, folder)
        summary = summarize(Path(folder) / "profile.pop", use_pva=False).summary
    kernels, anchors, spans = _literal(spec)
    assert [(k["step"], k["start"], k["end"]) for k in summary["kernels"]] == kernels
    assert summary["qkv_executions"] == anchors
    assert summary["device_spans"] == spans
