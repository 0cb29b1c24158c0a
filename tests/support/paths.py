"""Where things are: the repository, its fixtures and the pva stand-in."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
PVA_DOUBLE = REPO / "tests" / "pva_double"
GOLDEN = FIXTURES / "vit-f8weight"
GOLDEN_PROFILE_ARG = "../poprt/profile_logs_f8weight/inference/profile.pop"
EDGE = FIXTURES / "edge"
