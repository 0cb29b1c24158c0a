"""`extract compare`: recordings (summary.json files) side by side, against the first.

comparison.py reads the recordings and builds the `Comparison`; formats.py renders it
(a renderer per format: markdown, csv, json, registered in render.COMPARE_FORMATS);
chart.py draws its kernel stages as an SVG chart.
"""
