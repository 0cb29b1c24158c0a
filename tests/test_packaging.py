"""What the wheel carries besides the code: the PEP 561 marker that tells type checkers
the package's annotations are to be used (extractor/py.typed), and the default rules."""

import zipfile

from support.paths import REPO


def test_the_wheel_carries_the_type_marker_and_the_default_rules(wheel):
    with zipfile.ZipFile(str(wheel)) as archive:
        names = set(archive.namelist())
        assert "extractor/py.typed" in names
        assert "extractor/stage_rules.toml" in names
        assert archive.read("extractor/py.typed") == (REPO / "extractor" / "py.typed").read_bytes()
        assert (
            archive.read("extractor/stage_rules.toml") == (REPO / "stage_rules.toml").read_bytes()
        )
