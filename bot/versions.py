"""Torch versions as torch spells them, read one way for every stage.

A version comes from a wheel's metadata (``2.14.1``, ``2.1.0+cpu``), a checkout's version.txt (``2.6.0a0``
on main: the release it leads to, not yet out), a tag (``v2.7.0``) or the user (``--torch-version 2.6``).
A pre-release sorts before its own release, as PEP 440 says (the schema history counts the releases a
source comes after so); a table keyed by release (the codegen's rules, the export table, the Python
side's facts, the kernel and CIA rules) picks the row that applies to a version by `row_for`, whose
docstring states its one policy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from opdrift.errors import OpdriftError

T = TypeVar("T")

# Lenient, for versions read from sources: a release, then anything (a pre-release or dev part), then
# maybe a local label after "+".
_LOOSE = re.compile(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?([^+\s]*)")
# Strict, for a version a user typed: a release, maybe a pre-release or dev part, maybe a local label.
_STRICT = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?((?:a|b|rc)\d+)?(\.dev\d+)?(?:\+[A-Za-z0-9.]+)?")
_FINAL = re.compile(r"\d+\.\d+\.\d+")


class TorchVersion(NamedTuple):
    """A version as a tuple that sorts as torch's versions do (``sys.version_info``'s shape)."""

    major: int
    minor: int
    patch: int
    final: bool  # False for a pre-release or dev build, which comes before its release (False < True)

    @property
    def minor_key(self) -> tuple[int, int]:
        return (self.major, self.minor)


def parse_version(text: str | None) -> TorchVersion | None:
    """The version a source records (``2.13.0a0+git1234`` → 2.13.0, pre-release); None for a text that
    does not start like one. Missing parts count as 0."""
    m = None if text is None else _LOOSE.match(text)
    if m is None:
        return None
    return TorchVersion(int(m[1]), int(m[2]), int(m[3] or 0), not m[4])


def minor_of(text: str | None) -> tuple[int, int] | None:
    """(major, minor) of a version, for the tables that change by minor release only."""
    version = parse_version(text)
    return None if version is None else version.minor_key


def parse_user_version(text: str) -> TorchVersion | None:
    """A version as a user or a config file writes it (``2.6``, ``v2.7``, ``2.6.0a0``, ``2.1.0+cpu``);
    None for anything else, so the caller can say which file and line is wrong."""
    m = _STRICT.fullmatch(text.strip())
    if m is None:
        return None
    return TorchVersion(int(m[1]), int(m[2]), int(m[3] or 0), not (m[4] or m[5]))


def is_final_release(text: str | None) -> bool:
    """Whether TEXT is a released version with a tag of its own (``2.14.1``, not ``2.15.0a0``)."""
    return text is not None and _FINAL.fullmatch(text) is not None


# version.txt holds one line (``2.14.0a0``); a longer text is no version, and the snapshot stores the
# version in at most 64 characters.
_MAX_VERSION_CHARS = 64


def version_in_text(text: str | None) -> str | None:
    """The torch version a version.txt (TEXT) names, as written (``2.14.0a0``), or None when TEXT is
    absent or holds no version as torch spells one: the file comes from any revision, a pull request's
    head included, so what is not a version is no version rather than an error."""
    if text is None:
        return None
    value = text.strip()
    if len(value) > _MAX_VERSION_CHARS or not value[:1].isdigit() or parse_user_version(value) is None:
        return None
    return value


# --- which release's row applies (`row_for`, whose docstring states the one policy) ----------------


class NoRowError(OpdriftError):
    """A table keyed by release has no row, or a row whose release is no version (a packaging error,
    not the user's)."""


def _release_key(text: str | None) -> tuple[int, int, int] | None:
    version = parse_version(text)
    return None if version is None else (version.major, version.minor, version.patch)


def row_index(releases: Sequence[str], version: str | None) -> int:
    """The index in RELEASES (a table's rows, by the release each names) of the row that applies to
    torch VERSION, by `row_for`'s policy."""
    keys = []
    for release in releases:
        key = _release_key(release)
        if key is None:
            raise NoRowError(f"a table row names {release!r}, which is no torch version")
        keys.append(key)
    if not keys:
        raise NoRowError("the table has no row")
    wanted = _release_key(version)
    if wanted is None:
        return max(range(len(keys)), key=keys.__getitem__)
    minors = [i for i, key in enumerate(keys) if key[:2] <= wanted[:2]]
    if not minors:
        return min(range(len(keys)), key=keys.__getitem__)
    minor = max(keys[i][:2] for i in minors)
    rows = [i for i in minors if keys[i][:2] == minor]
    if minor < wanted[:2]:
        return max(rows, key=keys.__getitem__)
    # the version's own minor: the newest patch at or before it, else the minor's first row
    at_or_before = [i for i in rows if keys[i][2] <= wanted[2]]
    if at_or_before:
        return max(at_or_before, key=keys.__getitem__)
    return min(rows, key=keys.__getitem__)


def row_for(table: Sequence[T], version: str | None, release: Callable[[T], str]) -> T:
    """The row of TABLE (RELEASE names each row's release) that applies to torch VERSION.

    Every table keyed by release (the Python side's facts, the Core-ATen export table, the codegen's
    rules, the SymInt kernel rule, export's CIA rule) picks its row this one way:

    - a release a row names takes that row; a version between two rows takes the older one (the
      nearest release at or before it: what a row says holds until the next row says otherwise);
    - a row stands for its whole minor release: 2.14.0 takes a 2.14.1 row rather than 2.13's
      (PyTorch's patch releases carry fixes, not operator changes), and within a minor the newest
      patch at or before the version wins; a table that changes by minor release names rows ``2.6``;
    - a pre-release or dev build (``2.13.0a0+git…``, a main checkout) takes the row of the release it
      leads to, as its own release would: main already has what that release will ship;
    - a version newer than the newest row takes the newest row, one older than the oldest the oldest;
    - no version, or a text that is no version, takes the newest row: an unknown source is judged as
      a recent one, by every table alike.

    The model tables are apart (`opdrift.usage.models.usage_for`): they answer with the *nearest* release
    that has one, newer or older, and say so in the report. NoRowError for a table without rows or
    with a row that names no version.
    """
    return table[row_index([release(row) for row in table], version)]


def since(release: str, version: str | None) -> bool:
    """Whether a rule that holds from RELEASE on holds at torch VERSION: a table of two rows (before,
    from RELEASE) read by `row_for`, so no version or an unknown one gets the newer rule."""
    return row_index(("0.0", release), version) == 1
