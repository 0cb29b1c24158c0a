"""`extract compare`: recordings (summary.json files) side by side, against the first.

comparison.py reads the recordings and builds the `Comparison`; formats.py renders it
(`FORMATS`: markdown, csv, json); chart.py draws its kernel stages as an SVG chart.
"""
