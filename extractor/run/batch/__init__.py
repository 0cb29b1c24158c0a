"""A batch: many profiles to a folder of summaries (`extract DIR... -o OUTDIR`).

discover.py finds the profiles and where each summary goes; shards.py takes a shard's
share of them; run.py extracts them in a pool of worker processes (each profile through
`pipeline.extract_profile`, as a single run), skipping those up to date; index.py
records each in OUTDIR/index.jsonl (and merges shards' indexes); progress.py reports.

Nothing is imported here: a module is loaded when used (`extract PROFILE` loads none).
"""
