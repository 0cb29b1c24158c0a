"""extract diff: why two recordings differ, every cycle accounted for.

bodies.py reads one body of a profile as units (a step's rows summed); accounting.py
aligns two bodies (alignment.py: difflib's opcodes, without its worst case on a common
start and end) and accounts for the change; formats.py writes it out; command.py is the
command's work, as a function (`run_diff`, or `diff_profiles` for the dict alone).
"""
