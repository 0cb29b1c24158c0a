"""`extract memory`: where a compiled program's tile memory goes (docs/formats/memory.md).

tiles.py reads the SQL side (each tile's total, its bytes by category), pvamemory.py
pva's side (the target's limits, liveness, exchange code), model.py makes memory.json of
both, formats.py renders it (markdown, JSON, CSV) and command.py is what the command runs.
"""
