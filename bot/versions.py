"""Torch versions as torch spells them, read one way for every stage.

A version comes from a wheel's metadata (``2.14.1``, ``2.1.0+cpu``), a checkout's version.txt (``2.6.0a0``
on main: the release it leads to, not yet out), a tag (``v2.7.0``) or the user (``--torch-version 2.6``).
Tables keyed by release (the codegen's rules, the export table, the Python side's facts, the schema
history) compare by (major, minor) or by the whole release, and a pre-release sorts before its own
release, as PEP 440 says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Lenient, for versions read from sources: a release, then anything (a pre-release or dev part), then
# maybe a local label after "+".
_LOOSE = re.compile(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?([^+\s]*)")
# Strict, for a version a user typed: a release, maybe a pre-release or dev part, maybe a local label.
_STRICT = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?((?:a|b|rc)\d+)?(\.dev\d+)?(?:\+[A-Za-z0-9.]+)?")
_FINAL = re.compile(r"\d+\.\d+\.\d+")


@dataclass(frozen=True, order=True)
class TorchVersion:
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
