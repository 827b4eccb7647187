"""pytest configuration. Test helpers live in plain modules (datafiles, ...) beside the tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The helper modules sit beside the tests; make them importable whatever the rootdir.
sys.path.insert(0, str(Path(__file__).parent))


def pytest_addoption(parser: pytest.Parser) -> None:
    # Golden files (tests/golden) are rewritten from the current output instead of compared.
    parser.addoption(
        "--update-golden", action="store_true", help="refresh tests/golden/* (or OPDRIFT_UPDATE_GOLDEN=1)"
    )
