"""Looking into a profile rather than summarising it: inspection.py (`extract inspect`:
its tables, columns and pva versions) and stagecheck.py (`extract stages`: how stage
rules cut it)."""
