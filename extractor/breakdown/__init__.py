"""`extract breakdown`: every cycle of an inference, by kind, stage, op and layer.

keys.py: a row's op and layer (names masked and folded); sums.py: the consumer of the
walk that keeps the sums; tables.py: the sums as the breakdown's tables, and two
breakdowns compared; formats.py: the renderers; command.py: the library function the
command runs.
"""
