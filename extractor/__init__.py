"""extractor: exact, comparable summaries of Graphcore PopVision profiles.

from extractor import summarize, summary_bytes
extraction = summarize("profile.pop")
open("summary.json", "wb").write(summary_bytes(extraction.summary))
"""

__version__ = "0.1.0"

# The library is imported on first use (PEP 562), so that `extract`, which imports this
# package first, pays at start-up only for the modules its command needs (`extract
# --help`, for none of them).
_LAZY = {
    "ExtractorError": "errors",
    "OutputError": "errors",
    "ProfileError": "errors",
    "PvaMissingError": "errors",
    "RulesError": "errors",
    "write_atomic": "output",
    "ProfileAnalysis": "analysis",
    "summary_bytes": "core.summary_json",
    "StageRules": "core.rules",
    "default_rules_path": "core.rules",
    "load_rules": "core.rules",
    "STEP_FIELDS": "core.steps",
    "StepRow": "core.steps",
    "step_rows": "core.steps",
    "Extraction": "core.summary",
    "summarize": "core.summary",
}

__all__ = [
    "Extraction",
    "ExtractorError",
    "OutputError",
    "ProfileError",
    "ProfileAnalysis",
    "PvaMissingError",
    "RulesError",
    "STEP_FIELDS",
    "StageRules",
    "StepRow",
    "default_rules_path",
    "load_rules",
    "step_rows",
    "summarize",
    "summary_bytes",
    "write_atomic",
]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))


def __dir__():
    return sorted(set(globals()) | set(__all__))
