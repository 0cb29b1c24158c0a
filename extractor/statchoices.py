"""What `extract compare --stat` takes, in a leaf module, so that the CLI declares the
option without importing the compare package, which computes them (compare/blockstats.py).
"""

FIRST = "first"  # the first body's cycles, from summary.json: the comparison as it is
#: FIRST, then the statistics over every block that blocks.json holds (its order).
STATS = (FIRST, "min", "median", "mean", "max")
