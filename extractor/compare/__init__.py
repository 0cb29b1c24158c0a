"""`extract compare`: recordings (summary.json files) side by side, against the first.

comparison.py reads the recordings, builds the `Comparison` and renders it (markdown,
csv, json); chart.py draws its kernel stages as an SVG chart.
"""
