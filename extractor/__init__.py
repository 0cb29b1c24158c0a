"""extractor: exact, comparable summaries of Graphcore PopVision profiles.

    from extractor import summarize, summary_bytes
    extraction = summarize("profile.pop")
    open("summary.json", "wb").write(summary_bytes(extraction.summary))
"""

__version__ = "0.1.0"

from .errors import ExtractorError, OutputError, ProfileError, PvaMissingError, RulesError
from .output import write_atomic
from .render import summary_bytes
from .rules import StageRules, default_rules_path, load_rules
from .steps import STEP_FIELDS, StepRow, step_rows
from .summary import Extraction, summarize

__all__ = [
    "Extraction", "ExtractorError", "OutputError", "ProfileError", "PvaMissingError",
    "RulesError", "STEP_FIELDS", "StageRules", "StepRow", "default_rules_path", "load_rules",
    "step_rows", "summarize", "summary_bytes", "write_atomic",
]
