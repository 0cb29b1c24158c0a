"""Profiles with one long body, for the diff's limits and speed (tests/test_diff_long.py).

`long_body(folder, steps, ...)` writes (fixtures/generate.py) a profile of one inference:
copyFromHost (step 1, input delivered), the anchor (step 2, 100 cycles), then `steps - 1`
OnTileExecute steps cycling through `period` distinct names (`/m/blocks/blocks.0/mlp/
opNz/Add`, as a layer's steps repeat: what makes difflib slow), step k having
`cycles(k)` cycles, then copyToHost (output begins) unless `to_the_end`, in which case
the body runs to the end of the trace. So the first body has exactly `steps` units,
steps 2 to `steps + 1`. `edits`: {k: (kind, name)} gives step k another key.
"""

from support.cases import generator

ANCHOR = "/m/blocks/blocks.0/attn/qkv/Convolve"
CONV = "poplin::ConvPartial1x1Out<half,half,true,false,16,4,false>"


def op_name(k: int, period: int) -> str:
    return "/m/blocks/blocks.0/mlp/op{}z/Add".format(k % period)


def one_inference(g, *programs):
    """A ProfileSpec of four tiles, its programs copyFromHost (1) and the anchor's (2,
    compute set 1: ANCHOR, of CONV vertices), then `programs`; no steps yet."""
    spec = g.ProfileSpec(tiles=4, var_categories=[(1, "internalExchangeCode")])
    spec.memory_by_tile = [1000, 1000, 1000, 1000]
    spec.programs = [
        g.Program(1, "copyFromHost", "StreamCopyEnd"),
        g.Program(2, "OnTileExecute: qkv", "OnTileExecute", compute_set=1),
    ] + list(programs)
    spec.compute_sets = [g.ComputeSet(1, ANCHOR, [CONV])]
    return spec


def long_body(
    folder, steps, period=300, cycles=lambda k: 100 + k % 7, to_the_end=False, edits=None
):
    g = generator()
    spec = one_inference(g, g.Program(3, "copyToHost", "StreamCopyBegin"))
    names = {}  # (kind, name) -> (program, compute set)
    keys = [(op_name(k, period), "OnTileExecute") for k in range(period)]
    keys += sorted({(name, kind) for kind, name in (edits or {}).values()} - set(keys))
    for number, (name, kind) in enumerate(keys):
        ident = 10 + number
        spec.programs.append(g.Program(ident, kind + ": " + name, kind))
        spec.compute_sets.append(g.ComputeSet(ident, name, [CONV]))
        names[kind, name] = (ident, ident)
    entries = [(1, "StreamCopyEnd", 1, None, 40), (2, "OnTileExecute", 2, 1, 100)]
    for k in range(1, steps):
        kind, name = (edits or {}).get(k, ("OnTileExecute", op_name(k, period)))
        program, compute_set = names[kind, name]
        entries.append((2 + k, kind, program, compute_set, cycles(k)))
    if not to_the_end:
        entries.append((2 + steps, "StreamCopyBegin", 3, None, 40))
    for step, kind, program, compute_set, value in entries:
        spec.steps.append(g.Step(step, kind, program, compute_set))
        spec.steps_by_ipu.append(g.step_row(step, 100 * step, 100 * step + 90, value, 4))
    return g.write_case(spec, folder)
