"""tests/data/backends/real/SOURCES.md names, for each vendored list, the commit that last changed it."""

from __future__ import annotations

import hashlib
import lzma
import re

from datafiles import DATA

REAL = DATA / "backends" / "real"


def _git_blob_id(data: bytes) -> str:
    """What `git hash-object` prints for DATA."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _row(file: str) -> list[str]:
    for line in (REAL / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == f"`{file}`":
            return cells
    raise LookupError(file)


def test_the_xla_row_names_the_commit_that_last_changed_the_yaml() -> None:
    """pytorch/xla's `git log -1 --full-history -- codegen/xla_native_functions.yaml` is cba9ff9
    ("Lower `isneginf()`", 2025-04-01); later commits, the repository head among them, leave the
    file alone, and its blob there is 0f51097, the vendored file's."""
    _, repo, path, commit = _row("pytorch-xla.xla_native_functions.yaml.xz")
    assert (repo, path) == ("pytorch/xla", "`codegen/xla_native_functions.yaml`")
    m = re.fullmatch(r"`([0-9a-f]{40})` \((\d{4}-\d\d-\d\d)\)", commit)
    assert m is not None
    assert m.groups() == ("cba9ff9f09d232e3442be618fa0e32aeb407c36a", "2025-04-01")
    data = lzma.decompress((REAL / "pytorch-xla.xla_native_functions.yaml.xz").read_bytes())
    assert _git_blob_id(data) == "0f510975d982cb9b7241d40af4ddb1abee9b6ef9"
