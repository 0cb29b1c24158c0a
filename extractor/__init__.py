"""extractor: exact, comparable summaries of Graphcore PopVision profiles."""

__version__ = "0.1.0"
