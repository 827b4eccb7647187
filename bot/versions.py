"""Torch versions as torch spells them, read one way for every stage.

A version comes from a wheel's metadata (``2.14.1``, ``2.1.0+cpu``), a checkout's version.txt (``2.6.0a0``
on main: the release it leads to, not yet out), a tag (``v2.7.0``) or the user (``--torch-version 2.6``).
A pre-release sorts before its own release, as PEP 440 says (the schema history counts the releases a
source comes after so); a table keyed by release (the codegen's rules, the export table, the Python
side's facts, the kernel and CIA rules) picks the row that applies to a version by `row_for`, whose
docstring states its one policy.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from opdrift.errors import OpdriftError

T = TypeVar("T")

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


# --- the release calendar -------------------------------------------------------------------------
#
# A change merged on main ships in the next minor release whose branch is cut after it: the release
# branch is cut from main (viable/strict) on the cut day, and later changes reach it only as
# cherry-picked fixes (RELEASE.md, "Cutting release branches"). The dates are PyTorch's published
# ones, each row with where it was published; a change after the last cut listed ships in a release
# the table does not know yet.


@dataclass(frozen=True)
class ReleaseDates:
    release: str  # "2.16"
    branch_cut: dt.date
    release_date: dt.date
    source: str  # where PyTorch published the two dates


RELEASE_CALENDAR: tuple[ReleaseDates, ...] = (
    # "Update Rough 2026-2027 Release dates": branch cut Feb 16-19, release day March 18, 2026.
    ReleaseDates(
        "2.11", dt.date(2026, 2, 16), dt.date(2026, 3, 18), "https://github.com/pytorch/pytorch/pull/171832"
    ),
    # The same: branch cut April 13-15, release day May 13, 2026.
    ReleaseDates(
        "2.12", dt.date(2026, 4, 13), dt.date(2026, 5, 13), "https://github.com/pytorch/pytorch/pull/171832"
    ),
    # The 2.13.0 release tracker: "M3: Release branch cut (week of 8/6/26)", "M6: Release Day (8/7/26)".
    ReleaseDates(
        "2.13", dt.date(2026, 6, 8), dt.date(2026, 7, 8), "https://github.com/pytorch/pytorch/issues/186934"
    ),
    # The 2.14.0 release tracker: "M3: Release branch cut (week of 10/8/26)", "M6: Release Day (2/9/26)".
    ReleaseDates(
        "2.14", dt.date(2026, 8, 10), dt.date(2026, 9, 2), "https://github.com/pytorch/pytorch/issues/193034"
    ),
    # "Move 2.15 and 2.16 release branch cut dates out one week": 5 Oct 2026, release 28 Oct 2026.
    ReleaseDates(
        "2.15", dt.date(2026, 10, 5), dt.date(2026, 10, 28), "https://github.com/pytorch/pytorch/pull/196028"
    ),
    # The same: 30 Nov 2026, release 22 Dec 2026.
    ReleaseDates(
        "2.16", dt.date(2026, 11, 30), dt.date(2026, 12, 22), "https://github.com/pytorch/pytorch/pull/196028"
    ),
)


def ships_in(change_date: dt.date | str | None) -> ReleaseDates | None:
    """The release a change merged on CHANGE_DATE ships in: the first whose branch cut comes after that
    day (a change merged on the cut day itself misses the branch). A datetime counts by its UTC day; a
    string is ISO 8601 (a commit's or a pull request's date). None: no date, or one outside the
    calendar (before its first cut, or on or after its last)."""
    day = _utc_day(change_date)
    if day is None or day < RELEASE_CALENDAR[0].branch_cut:
        return None  # before the first cut listed: the release before it is not in the table
    for row in RELEASE_CALENDAR:
        if row.branch_cut > day:
            return row
    return None


def ships_in_words(change_date: dt.date | str | None) -> str:
    """``ships in 2.16 (branch cut 2026-11-30)``; on or after the last cut the calendar knows, that the
    release it ships in is not scheduled yet (PyTorch has published no later cut: no guess); "" for no
    date or one before the calendar's first cut."""
    row = ships_in(change_date)
    if row is not None:
        return f"ships in {row.release} (branch cut {row.branch_cut.isoformat()})"
    day = _utc_day(change_date)
    last = RELEASE_CALENDAR[-1]
    if day is not None and day >= last.branch_cut:
        return (
            f"ships after {last.release} (its branch cut was {last.branch_cut.isoformat()}), "
            "in a release not scheduled yet"
        )
    return ""


def _utc_day(value: dt.date | str | None) -> dt.date | None:
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).date() if value.tzinfo is not None else value.date()
    return value
