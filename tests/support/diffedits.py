"""Random edits of a generated profile, for the tests of `extract diff`: what a second
compilation or a second recording of a model changes. They work on fixtures/generate.py's
ProfileSpec objects (a deep copy: the spec given is left as it is), so that the SQL and
pva-double.json stay consistent, and are written with its `write_case`.

An edit is a tuple `(what, where, amount)`: `where` and `amount` are any non-negative
ints, taken modulo what the spec offers when the edit is applied, so that any list of
edits applies to any spec. `what` is one of EDITS:

- `insert`: a copy of another step (same program and compute set: the same name) put
  before the step at `where`, with rows of other cycles;
- `remove`: the step at `where` and its rows;
- `rename`: the step at `where` gets a new name, through a new compute set (with a new
  OnTileExecute program running it) or a new program: `amount` chooses a name that masks
  to the same key (other compiler ids, if it has any: else the same name, as a
  recompilation gives), one with a new path part, or another step's name;
- `cycles`, `tiles`: one row of the step at `where` gets other cycles / active tiles;
- `vertices`: the step's compute set replaced by one of the same name and other vertex
  types; `code`: the step's exchange program replaced by one of the same name and other
  code bytes (both no-ops where the step has no such thing);
- `renumber`: step ids spread out with gaps, program and compute set ids moved (a
  recompilation's ids): no name, and so no key, changes.

Step ids are given afresh after the edits, in trace order (1, 2, ... unless `renumber`).
`focus`, when given, is a range of step ids: positions are then taken inside it.
"""

import copy
import random
import re

from support.cases import generator

EDITS = ("insert", "remove", "rename", "cycles", "tiles", "vertices", "code", "renumber")


def _trace(spec):
    """[(step, [its rows])] in step order."""
    rows = {}
    for row in spec.steps_by_ipu:
        rows.setdefault(row.step_id, []).append(row)
    return [(step, rows.get(step.id, [])) for step in sorted(spec.steps, key=lambda s: s.id)]


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


class _Editor:
    def __init__(self, spec):
        self.g = generator()
        self.spec = copy.deepcopy(spec)
        self.trace = _trace(self.spec)
        self.programs = {p.id: p for p in self.spec.programs}
        self.sets = {c.id: c for c in self.spec.compute_sets}
        self.renumbered = None

    def name_of(self, step):
        cs = self.sets.get(step.compute_set) if step.compute_set is not None else None
        if cs is not None and cs.name:
            return cs.name
        return self.programs[step.program].name

    def new_program(self, like, name, compute_set=None, code_bytes=None):
        number = max(self.programs) + 1
        program = self.g.Program(
            number,
            name,
            like.type,
            code_bytes if code_bytes is not None else like.code_bytes,
            compute_set if like.type == "OnTileExecute" else None,
        )
        self.spec.programs.append(program)
        self.programs[number] = program
        return number

    def new_compute_set(self, name, vertices):
        number = max(self.sets, default=-1) + 1
        self.spec.compute_sets.append(self.g.ComputeSet(number, name, list(vertices)))
        self.sets[number] = self.spec.compute_sets[-1]
        return number

    def give_compute_set(self, step, name, vertices):
        """The step runs a new compute set (and, if an OnTileExecute program runs it, a
        new such program named after it)."""
        program = self.programs[step.program]
        step.compute_set = self.new_compute_set(name, vertices)
        if program.type == "OnTileExecute":
            step.program = self.new_program(
                program, "OnTileExecute: " + name, compute_set=step.compute_set
            )

    def apply(self, what, where, amount, positions):
        if what == "renumber":
            self.renumbered = amount
            return
        if not self.trace or not positions:
            return
        index = positions[where % len(positions)]
        step, rows = self.trace[index]
        if what == "insert":
            template, template_rows = self.trace[amount % len(self.trace)]
            twin = copy.deepcopy(template)
            twin_rows = copy.deepcopy(template_rows)
            for k, row in enumerate(twin_rows):
                row.cycles = (row.cycles + amount * (k + 3)) % 100000
            self.trace.insert(index, (twin, twin_rows))
        elif what == "remove":
            del self.trace[index]
        elif what == "rename":
            old = self.name_of(step)
            choice = amount % 3
            if choice == 0:  # the same masked name (perhaps the very same name)
                name = _other_ids(old, amount)
            elif choice == 2:
                name = self.name_of(self.trace[amount % len(self.trace)][0])
            else:  # a new path part before the last one
                head, _, tail = old.rpartition("/")
                name = "{}/edited{}/{}".format(head, amount % 5, tail)
            cs = self.sets.get(step.compute_set) if step.compute_set is not None else None
            if cs is not None and cs.name:
                self.give_compute_set(step, name, cs.vertices)
            else:
                step.program = self.new_program(self.programs[step.program], name)
        elif what in ("cycles", "tiles") and rows:
            row = rows[amount % len(rows)]
            if what == "cycles":
                row.cycles = max(0, row.cycles + (amount % 2001) - 1000) or 1 + amount
            else:
                row.active_tiles = (row.active_tiles + 1 + amount % 5) % 1473
        elif what == "vertices" and step.compute_set is not None:
            cs = self.sets[step.compute_set]
            vertices = list(cs.vertices)
            extra = "poplin::ConvPartial1x1Out<quarter,half,true,false,{},4,false>".format(amount)
            vertices = vertices[1:] + [extra] if amount % 2 else vertices + [extra]
            self.give_compute_set(step, cs.name, vertices)
        elif what == "code" and self.programs[step.program].type == "DoExchange":
            program = self.programs[step.program]
            code = list(program.code_bytes or [0])
            code[amount % len(code)] = max(code) + 1 + amount % 300
            step.program = self.new_program(program, program.name, code_bytes=code)

    def finish(self):
        rng = random.Random(self.renumbered)
        step_id = 0
        steps, rows = [], []
        for step, step_rows in self.trace:
            step_id += 1 if self.renumbered is None else rng.randint(1, 9)
            step.id = step_id
            steps.append(step)
            for row in step_rows:
                row.step_id = step_id
                rows.append(row)
        self.spec.steps, self.spec.steps_by_ipu = steps, rows
        if self.renumbered is not None:
            self._move_ids(rng)
        return self.spec

    def _move_ids(self, rng):
        programs = {
            p.id: new
            for p, new in zip(
                self.spec.programs,
                rng.sample(range(1, 20 * len(self.spec.programs) + 20), len(self.spec.programs)),
            )
        }
        sets = {
            c.id: new
            for c, new in zip(
                self.spec.compute_sets,
                sorted(rng.sample(range(0, 3 * len(self.spec.compute_sets) + 3), len(self.sets))),
            )
        }
        for p in self.spec.programs:
            p.id = programs[p.id]
            if p.compute_set is not None:
                p.compute_set = sets[p.compute_set]
        for c in self.spec.compute_sets:
            c.id = sets[c.id]
        for s in self.spec.steps:
            s.program = programs[s.program]
            if s.compute_set is not None:
                s.compute_set = sets[s.compute_set]


def edit_spec(spec, edits, focus=None):
    """A copy of `spec` with `edits` applied in order (see the module's docstring)."""
    editor = _Editor(spec)
    for what, where, amount in edits:
        positions = [
            index
            for index, (step, _) in enumerate(editor.trace)
            if focus is None or focus[0] <= step.id < focus[1]
        ]
        if focus is not None and not positions:
            positions = list(range(len(editor.trace)))
        editor.apply(what, where, amount, positions)
    return editor.finish()
