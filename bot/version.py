"""This opdrift's version and the commit it was built from, as setuptools-scm recorded them.

setuptools-scm writes ``bot/_version.py`` (not tracked) when opdrift is built or installed: the version
from the git tag (``vX.Y.Z`` gives ``X.Y.Z``, later commits a ``.devN`` version) and the commit. A source
tree run without an install has no such file, and says so rather than guess (another installed
opdrift's metadata would describe another checkout).
"""

from __future__ import annotations

import re

UNKNOWN = "0+unknown"
_SHA = re.compile(r"[0-9a-f]{40}")
_RELEASE = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?")


def version() -> str:
    """``X.Y.Z`` for a release, ``X.Y.Z.devN`` between releases, ``0+unknown`` in an uninstalled tree."""
    try:
        from opdrift._version import VERSION  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return UNKNOWN
    return str(VERSION)


def commit() -> str | None:
    """The full sha of the commit opdrift was built from, or None when the build did not know it.

    A wheel built from a git checkout (the release workflow's) knows it; one built from an sdist, or a
    copy without git history or archive metadata, does not.
    """
    try:
        from opdrift._version import NODE  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    node = str(NODE or "").removeprefix("g")
    return node if _SHA.fullmatch(node) else None


def is_release(text: str | None = None) -> bool:
    """Whether the version (this one by default) is a tagged release: X.Y.Z or a pre-release X.Y.ZrcN,
    not a dev version (commits after a tag) nor the unknown one."""
    return _RELEASE.fullmatch(version() if text is None else text) is not None


def describe() -> str:
    """What `opdrift --version` prints after the name: the version, and a dev build's commit."""
    sha = commit()
    if is_release() or sha is None:
        return version()
    return f"{version()} (commit {sha[:12]})"
