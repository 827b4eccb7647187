"""The release calendar: which PyTorch release a change merged on main ships in.

A module of its own, beside `opdrift.versions` (which compares versions): only the reports that say
when a change ships read it, and its dates and `datetime` are no cost to the commands that do not.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

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
