"""Reading back what extract wrote: the summaries compare, table and report read
(recordings.py), whether they still belong to their batch (provenance.py), and the batch
index read as data (index.py). Nothing here imports a command or the batch that writes."""
