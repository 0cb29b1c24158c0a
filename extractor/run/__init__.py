"""Running extract on profiles: one profile (single.py) or a folder of them (batch/),
the two ways of `extract run`."""
