"""Golden files: rendered output kept in tests/golden/, refreshed with ``pytest --update-golden`` (or
OPDRIFT_UPDATE_GOLDEN=1). The one place that compares and refreshes them."""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
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


def check_golden_entry(name: str, key: str, text: str, update: bool) -> None:
    """One entry of a golden file that gathers short outputs of many tests (the error lines of the
    CLI): each test compares its entry, `## KEY` and the text under it; refreshing rewrites only that
    entry, so a refresh of one module leaves the others' entries alone."""
    assert text.endswith("\n") and "\n## " not in text, "an entry is whole lines, none starting with ## "
    text = text.replace(f"opdrift {__version__}", "opdrift VERSION")
    path = GOLDEN / name
    if update:
        # Two workers (-n 2) may refresh entries of one file at once: each reads, changes its entry
        # and writes under an exclusive lock, so that neither loses the other's entry.
        with open(Path(tempfile.gettempdir()) / f"opdrift-golden-{name}.lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = _entries(path.read_text(encoding="utf-8")) if path.exists() else {}
            entries[key] = text
            path.write_text("".join(f"## {k}\n{v}" for k, v in sorted(entries.items())), encoding="utf-8")
        return
    entries = _entries(path.read_text(encoding="utf-8")) if path.exists() else {}
    assert key in entries, f"{name} has no entry {key!r}: run pytest --update-golden"
    assert text == entries[key], f"{name}'s entry {key!r} differs: run pytest --update-golden and review"


def _entries(text: str) -> dict[str, str]:
    entries: dict[str, str] = {}
    for block in ("\n" + text).split("\n## ")[1:]:
        key, _, body = block.partition("\n")
        entries[key] = body + "\n" if body and not body.endswith("\n") else body
    return entries


# A user-caused error: one line, at FILE:LINE when a file is to blame, exit 2, no traceback.
ERROR_LINE = re.compile(r"opdrift: error: (?:(?P<file>\S+?):(?P<line>\d+): )?(?P<message>[^\n]+)\n")


def check_error_line(
    key: str, err: str, update: bool, *, file: str | None = None, line: int | None = None
) -> str:
    """err is one error line and nothing else (no traceback), at file:line when given; its wording is the
    entry KEY of golden/errors.lines.txt, the file written FILE. Gives the message."""
    match = ERROR_LINE.fullmatch(err)
    assert match, f"not one error line: {err!r}"
    if file is not None:
        assert (match["file"], match["line"]) == (file, str(line)), err
        err = err.replace(file, "FILE")
    check_golden_entry("errors.lines.txt", key, err, update)
    return match["message"]
