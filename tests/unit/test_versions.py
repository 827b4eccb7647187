"""opdrift.versions: the one reader of torch versions, on the spellings the sources really carry."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from opdrift.versions import (
    NoRowError,
    is_final_release,
    minor_of,
    parse_user_version,
    parse_version,
    row_for,
    row_index,
    since,
    version_in_text,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.14.1", (2, 14, 1, True)),  # a wheel's metadata
        ("2.1.0+cpu", (2, 1, 0, True)),  # a CPU wheel's local label is still the release
        ("2.6.0a0", (2, 6, 0, False)),  # version.txt on main: the release it leads to, not out yet
        ("2.13.0a0+git1234abc", (2, 13, 0, False)),  # a source build
        ("v2.7.0", (2, 7, 0, True)),  # a tag
        ("1.13", (1, 13, 0, True)),
        (" 2.5.0\n", (2, 5, 0, True)),  # version.txt with its newline
    ],
)
def test_the_spellings_sources_carry(text: str, expected: tuple[int, int, int, bool]) -> None:
    version = parse_version(text)
    assert version is not None
    assert (version.major, version.minor, version.patch, version.final) == expected


def test_a_pre_release_sorts_before_its_release_and_after_the_one_before() -> None:
    ordered = [parse_version(v) for v in ("2.5.1", "2.6.0a0", "2.6.0rc1", "2.6.0", "2.6.1")]
    assert ordered[1] is not None and ordered[3] is not None
    assert ordered[0] < ordered[1] < ordered[3] < ordered[4]  # type: ignore[operator]
    assert minor_of("2.6.0a0") == minor_of("2.6.1") == (2, 6)


def test_no_version_is_none_not_a_guess() -> None:
    assert parse_version("main") is None
    assert parse_version(None) is None
    assert minor_of("unknown") is None


def test_what_a_user_types_is_read_strictly() -> None:
    assert parse_user_version("2.6") is not None
    assert parse_user_version("2.6.0.dev20240101") is not None
    assert parse_user_version("2.6junk") is None  # the lenient reader would take 2.6 from it
    assert parse_version("2.6junk") is not None


def test_only_a_final_release_has_a_tag() -> None:
    assert is_final_release("2.14.1")
    assert not is_final_release("2.15.0a0")
    assert not is_final_release("2.1.0+cpu")
    assert not is_final_release(None)


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("2.14.0a0\n", "2.14.0a0"),  # main's version.txt
        ("2.6.0a0+git1234abc\n", "2.6.0a0+git1234abc"),
        ("1.12.0", "1.12.0"),
        ("v2.14.0", None),  # a tag's spelling, never version.txt's (and no snapshot would store it)
        ("2.14.0a0\n2.15.0a0\n", None),
        ("<b>2.14</b>", None),  # a pull request may write anything there
        ("9" * 70 + ".1", None),
        ("", None),
        (None, None),
    ],
)
def test_a_version_txt_names_a_version_or_none(text: str | None, version: str | None) -> None:
    assert version_in_text(text) == version


# --- the release calendar: which release a change ships in --------------------------------------


def test_a_change_ships_in_the_first_release_cut_after_its_day() -> None:
    from opdrift.release_calendar import ships_in

    # 2.16's branch is cut on 2026-11-30 (pytorch#196028), 2.15's on 2026-10-05.
    assert ships_in(dt.date(2026, 10, 5)).release == "2.16"  # type: ignore[union-attr]  # the cut day misses 2.15
    assert ships_in(dt.date(2026, 10, 4)).release == "2.15"  # type: ignore[union-attr]
    assert ships_in(dt.date(2026, 11, 29)).release == "2.16"  # type: ignore[union-attr]
    assert ships_in(dt.date(2026, 11, 30)) is None  # after the last cut the calendar knows: 2.17 has no date
    # A commit's date counts by its UTC day: 23:30 at UTC-2 on the 29th is the cut day in UTC.
    assert ships_in("2026-11-29T23:30:00-02:00") is None
    assert ships_in("2026-11-29T23:30:00Z").release == "2.16"  # type: ignore[union-attr]
    assert ships_in("2026-06-07").release == "2.13"  # type: ignore[union-attr]
    # Before the first cut listed (2.11's), the release is not in the table: no guess.
    assert ships_in(dt.date(2025, 1, 1)) is None and ships_in(dt.date(2026, 2, 15)) is None
    assert ships_in(dt.date(2026, 2, 16)).release == "2.12"  # type: ignore[union-attr]
    assert ships_in(None) is None and ships_in("") is None and ships_in("not a date") is None


def test_the_calendar_is_ordered_and_sourced() -> None:
    from opdrift.release_calendar import RELEASE_CALENDAR, ships_in_words

    cuts = [r.branch_cut for r in RELEASE_CALENDAR]
    assert cuts == sorted(cuts) and len(set(cuts)) == len(cuts)
    minors = [tuple(int(p) for p in r.release.split(".")) for r in RELEASE_CALENDAR]
    assert minors == sorted(minors) and all(b[1] == a[1] + 1 for a, b in itertools.pairwise(minors))
    for row in RELEASE_CALENDAR:
        assert row.branch_cut < row.release_date
        assert row.source.startswith(
            ("https://github.com/pytorch/pytorch/pull/", "https://github.com/pytorch/pytorch/issues/")
        )
    assert ships_in_words("2026-11-02T10:00:00Z") == "ships in 2.16 (branch cut 2026-11-30)"
    # past the last cut the calendar knows, no release is named: PyTorch has not scheduled it yet
    late = ships_in_words("2026-12-07T09:00:00Z")
    assert "after 2.16" in late and "2026-11-30" in late and "ships in" not in late
    assert ships_in_words("2026-11-30") == ships_in_words("2027-01-04") == ships_in_words("2026-12-07")
    assert ships_in_words("2026-11-29T23:30:00Z") == "ships in 2.16 (branch cut 2026-11-30)"
    # before the calendar's first cut, or without a date, it says nothing
    assert ships_in_words("2025-06-01") == "" and ships_in_words(None) == "" and ships_in_words("nope") == ""


# --- which release's row applies (`row_for`) -----------------------------------------------------------

_ROWS = ("1.12.0", "2.0.0", "2.6", "2.14.1")
_PATCHES = ("2.13.0", "2.14.1", "2.14.3")


@pytest.mark.parametrize(
    ("version", "row"),
    [
        ("2.0.0", "2.0.0"),  # a release a row names
        ("2.6.0", "2.6"),  # a row named by its minor is its .0
        ("2.6.3", "2.6"),  # between two rows: the older
        ("2.13.0", "2.6"),
        ("2.14.0", "2.14.1"),  # a row stands for its whole minor release
        ("2.14.1", "2.14.1"),
        ("2.14.5", "2.14.1"),
        ("2.6.0a0+git1234abc", "2.6"),  # a pre-release: the row of the release it leads to
        ("2.14.1a0", "2.14.1"),
        ("3.0.0", "2.14.1"),  # newer than the newest
        ("1.11.0", "1.12.0"),  # older than the oldest
        (None, "2.14.1"),  # no version: the newest
        ("main", "2.14.1"),  # no version at all: the newest
        ("", "2.14.1"),
    ],
)
def test_one_policy_picks_a_release_row(version: str | None, row: str) -> None:
    assert row_for(_ROWS, version, lambda r: r) == row
    assert row_for(tuple(reversed(_ROWS)), version, lambda r: r) == row  # the order of the rows is no matter
    assert since("2.6", version) == (row in ("2.6", "2.14.1"))


@pytest.mark.parametrize(
    ("version", "row"),
    [("2.14.0", "2.14.1"), ("2.14.2", "2.14.1"), ("2.14.3", "2.14.3"), ("2.15.0", "2.14.3")],
)
def test_within_a_minor_the_newest_patch_at_or_before_the_version(version: str, row: str) -> None:
    assert row_for(_PATCHES, version, lambda r: r) == row


def test_a_table_without_rows_or_with_a_row_that_is_no_release_is_refused() -> None:
    with pytest.raises(NoRowError, match="no row"):
        row_index((), "2.6.0")
    with pytest.raises(NoRowError, match="'two'"):
        row_index(("1.12.0", "two"), "2.6.0")


@pytest.mark.parametrize(
    "version", [None, "main", "1.11.0", "1.12.0", "1.13.1", "2.5.9", "2.6.0a0", "2.10.0", "2.14.1", "9.0"]
)
def test_every_release_table_answers_by_the_one_policy(version: str | None) -> None:
    """The tables keyed by release (the Python side's facts, the Core-ATen export table, the codegen's
    rules, the SymInt kernel rule, export's CIA rule) agree on which release applies. Before, an
    unparseable version took 1.12.0's Python-side facts but the newest codegen, export table and
    kernel rule."""
    from opdrift.operators.codegen import RULES, rules_for_version
    from opdrift.operators.export_table import core_aten_release, shipped_releases
    from opdrift.operators.exported import KEEPS_CIA_FROM, keeps_cia
    from opdrift.schema.kernel import PLAIN_KERNELS_FOR_SYMINT_SINCE, judged_form
    from opdrift.signals.table import pick_release, releases

    signals = [r.version for r in releases()]
    assert signals[pick_release(version) or 0] == row_for(signals, version, lambda r: r)
    export = [r.version for r in shipped_releases()]
    assert core_aten_release(version).version == row_for(export, version, lambda r: r)
    assert rules_for_version(version) == row_for(RULES, version, lambda r: r.since)
    assert (judged_form("int64_t", version) == "int64_t") == since(PLAIN_KERNELS_FOR_SYMINT_SINCE, version)
    assert keeps_cia(version) == since(KEEPS_CIA_FROM, version)
    if parse_version(version) is None:
        # no version: every table answers with its newest row
        assert pick_release(version) == len(signals) - 1
        assert core_aten_release(version).version == export[-1]
        assert rules_for_version(version) == RULES[-1]
        assert judged_form("int64_t", version) == "int64_t"
        assert keeps_cia(version)
