"""Where things are: the repository, its fixtures and the pva stand-in."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
PVA_DOUBLE = REPO / "tests" / "pva_double"
GOLDEN = FIXTURES / "vit-f8weight"
GOLDEN_PROFILE_ARG = "../poprt/profile_logs_f8weight/inference/profile.pop"
EDGE = FIXTURES / "edge"
# The reference summary's sha256: GOLDEN/expected.json is its byte copy (fixtures/README.md).
REFERENCE_SHA256 = "dadb9fe7bfc280dd6d9534ba39580b04d73d3b14991bc98f1b0bebf35898f5bd"
