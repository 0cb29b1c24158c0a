"""Random edits of a generated profile, for tests/test_diff_property.py: what a second
compilation or a second recording of a model changes, made by fixtures/generate.py's
`edited_spec` (which keeps the SQL, the timings and pva-double.json consistent). Its
`random_edits` is not used: it changes no vertices or exchange code, and inserts and
renames only to new names, where the diff's alignment wants copies of other steps and
names that mask alike.

An edit is a tuple `(what, where, amount)`: `where` and `amount` are any non-negative
ints, taken modulo what the spec offers, so that any list of edits (as hypothesis draws
and shrinks it) applies to any spec. `where` picks a step among those with rows (inside
`focus`, a range of step ids, when given and not empty); `what` is one of EDITS:

- `insert`: a step with another step's kind and name (so the same program and compute
  set where generate.py finds them) put before it, with other cycles;
- `remove`: the step;
- `rename`: the step gets a new name: `amount` chooses one that masks to the same key
  (other compiler ids, if it has any: else the same name, as a recompilation gives), one
  with a new path part, or another step's name;
- `cycles`, `tiles`: the step's rows get other cycles / active tiles;
- `vertices`: the step alone runs a compute set of the same name with other vertex
  types; `code`: the step alone runs an exchange program of the same name with other
  code bytes (both no-ops where the step has no such thing);
- `renumber`: every compiler id moved (program, compute set, `csN_`, `copyN_` and path
  numbers: no key changes), and step ids spread out with gaps, which generate.py's
  Renumber (consecutive ids) does not give.
"""

import random
import re

from support.cases import generator

EDITS = ("insert", "remove", "rename", "cycles", "tiles", "vertices", "code", "renumber")


def _other_ids(name, amount):
    """`name` with every compiler id (cs<n>_, copy<n>_, a path part of digits) changed:
    the same masked name."""
    name = re.sub(
        r"(\A|[{,/])(cs|copy)([0-9]+)_",
        lambda m: "{}{}{}_".format(m.group(1), m.group(2), int(m.group(3)) + 1 + amount % 50),
        name,
    )
    return re.sub(
        r"/([0-9]+)(?=[/,{}]|\Z)", lambda m: "/{}".format(int(m.group(1)) + 7 + amount), name
    )


def _spread_step_ids(spec, seed):
    """Step ids (consecutive, as edited_spec leaves them) spread out with gaps of 1 to 9."""
    rng = random.Random(seed)
    new, step_id = {}, 0
    for step in sorted(spec.steps, key=lambda s: s.id):
        step_id += rng.randint(1, 9)
        new[step.id] = step_id
    for step in spec.steps:
        step.id = new[step.id]
    for row in spec.steps_by_ipu:
        row.step_id = new[row.step_id]


def edit_spec(spec, edits, focus=None):
    """A copy of `spec` with `edits` made (see the module's docstring); `spec` is left as
    it is."""
    g = generator()
    programs = {p.id: p for p in spec.programs}
    sets = {c.id: c for c in spec.compute_sets}
    rows = {}
    for row in spec.steps_by_ipu:
        rows.setdefault(row.step_id, []).append(row)
    steps = sorted((s for s in spec.steps if s.id in rows), key=lambda s: s.id)
    inside = [s for s in steps if focus is None or focus[0] <= s.id < focus[1]] or steps
    if not inside:
        return g.edited_spec(spec, g.Edits())

    def name_of(step):
        cs = sets.get(step.compute_set) if step.compute_set is not None else None
        return cs.name if cs is not None and cs.name else programs[step.program].name

    names = {s.id: name_of(s) for s in steps}  # as renamed so far
    changes, inserts, removals = [], [], []
    renumber, gaps = g.Renumber(), None
    for what, where, amount in edits:
        step = inside[where % len(inside)]
        first = rows[step.id][0]
        if what == "insert":
            template = steps[amount % len(steps)]
            cycles = 1 + (rows[template.id][0].cycles + amount) % 100000
            tiles = rows[template.id][0].active_tiles
            inserts.append(g.Insert(step.id, template.type, name_of(template), cycles, tiles))
        elif what == "remove" and step.id not in removals:
            removals.append(step.id)
        elif what == "rename":
            old = names[step.id]
            choice = amount % 3
            if choice == 0:  # the same masked name (perhaps the very same name)
                name = _other_ids(old, amount)
            elif choice == 1:  # a new path part before the last one
                head, _, tail = old.rpartition("/")
                name = "{}/edited{}/{}".format(head, amount % 5, tail)
            else:
                name = name_of(steps[amount % len(steps)])
            names[step.id] = name or "renamed"
            changes.append(g.Change(step.id, name=names[step.id]))
        elif what == "cycles":
            cycles = max(1, first.cycles + amount % 2001 - 1000)
            changes.append(g.Change(step.id, cycles=cycles))
        elif what == "tiles":
            tiles = (first.active_tiles + 1 + amount % 5) % 1473
            changes.append(g.Change(step.id, active_tiles=tiles))
        elif what == "vertices" and step.compute_set is not None:
            vertices = list(sets[step.compute_set].vertices)
            extra = "poplin::ConvPartial1x1Out<quarter,half,true,false,{},4,false>".format(amount)
            vertices = vertices[1:] + [extra] if amount % 2 else vertices + [extra]
            changes.append(g.Change(step.id, name=names[step.id], vertices=tuple(vertices)))
        elif what == "code" and programs[step.program].type == "DoExchange":
            code = list(programs[step.program].code_bytes or [0])
            code[amount % len(code)] = max(code) + 1 + amount % 300
            changes.append(g.Change(step.id, name=names[step.id], code_bytes=tuple(code)))
        elif what == "renumber":
            renumber = g.Renumber(
                steps_from=1,
                programs=amount % 97,
                compute_sets=amount % 13,
                copies=amount % 51,
                paths=amount % 501,
            )
            gaps = amount
    edited = g.edited_spec(spec, g.Edits(tuple(changes), tuple(inserts), tuple(removals), renumber))
    if gaps is not None:
        _spread_step_ids(edited, gaps)
    return edited
