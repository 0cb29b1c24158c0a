"""`extract trace`: the execution of one or more profiles as a Chrome/Perfetto trace (the
Trace Event Format, JSON), to open in ui.perfetto.dev or chrome://tracing.

1. window.py   which step rows a trace shows (for --run, the inferences from the `steps`
               table alone; --all, every row), and where its time starts (the shift)
2. events.py   one pass over the step rows, writing each row's slice as it is read, and
               meeting the inferences as it goes
3. slices.py   the stages, blocks and inferences slices as they close, each on the
               first track of its kind that is free (no overlap on a track), and the
               names and order of the tracks; tracks.py the tracks and their tids, the
               file as it is written; firstfit.py the first free track among many
4. times.py    a slice's ts and dur: whole nanoseconds, written so that no viewer's
               arithmetic makes two slices of a track overlap
5. command.py  `run_trace`: the checks of the command line, the clock, and the file,
               written atomically

The format of the file: docs/formats/trace.md; the command: docs/commands/trace.md.
"""
