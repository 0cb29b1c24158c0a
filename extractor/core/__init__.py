"""The core path: one profile.pop to the summary's bytes, in the order the data flows.

1. profile.py      opens the SQLite file read-only (sqlitefile.py's checks of the file
                   first) and runs the spec's queries
2. pvafacts.py     the three facts only pva knows (exchange code bytes, vertices)
3. steps.py        the step rows: names, kinds, cycles, each matched to its stage
4. rules.py        the stage rules and selectors (stage_rules.toml)
5. walk.py         the one walk over the step rows, in step order, feeding consumers
6. summary.py      the summary's consumers of the walk (blocks.py's rides along with --blocks)
7. model.py        the summary as one type, read back and checked
8. summary_json.py the summary's exact bytes
9. pipeline.py     one profile to its files, written atomically

Beside the path: steptables.py (steps.csv, first-body.csv from the same pass),
blocks.py and blockformats.py (blocks.json and its formats), metrics.py (the names of a
summary's numbers, shared by compare, budgets, table and report).
Nothing here imports from outside core/ but the package's errors, inputs, output and
escaping modules.
"""
