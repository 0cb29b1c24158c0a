"""What a whole batch looks like: `extract table` (one line per recording and metric, for
pandas, DuckDB or a spreadsheet) and `extract report` (one self-contained HTML page).

table.py writes the long table; batchinfo.py reads what the batch indexes and the
blocks.json files beside the summaries say; page.py gathers a page's contents and
renders them through the Jinja2 templates in templates/ (autoescaped).
"""
