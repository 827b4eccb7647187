"""Golden files: rendered output kept in tests/golden/, refreshed with ``pytest --update-golden`` (or
OPDRIFT_UPDATE_GOLDEN=1). The one place that compares and refreshes them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from opdrift import __version__

GOLDEN = Path(__file__).parent / "golden"


def updating(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden")) or os.environ.get("OPDRIFT_UPDATE_GOLDEN") == "1"


def check_golden(name: str, text: str, update: bool) -> None:
    # The footer's version comes from the git tag (bot/version.py): a golden file holds a placeholder.
    text = text.replace(f"opdrift {__version__}", "opdrift VERSION")
    path = GOLDEN / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path.name} missing: run pytest --update-golden"
    assert text == path.read_text(encoding="utf-8"), (
        f"{path.name} differs: run pytest --update-golden and review"
    )
