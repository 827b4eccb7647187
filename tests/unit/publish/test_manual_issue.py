"""A manual run's issue: its own issue, never the week's, over the fake GitHub API.

The manual example once ran the action in mode `issue`, which posts into the week's issue: an arbitrary
ref's drift then replaced the week's report. `opdrift issue --manual REF` (the action's mode
`manual-issue`) opens an issue of its own, found again by its own marker.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from fake_github import FakeGitHub

ROOT = Path(__file__).resolve().parents[3]
SNAPS = ROOT / "snapshots"
TARGET = "downstream/backend"
TOKEN = "ghs_manualissuetoken0000000000000000"
WEEK = "2026-W10"


@pytest.fixture
def fake(github_for_step: Callable[[str, str], FakeGitHub]) -> FakeGitHub:
    return github_for_step(TOKEN, TARGET)


def _issue(opdrift: Opdrift, base: str, head: str, *extra: str) -> None:
    run = opdrift("issue", "--repo", TARGET, str(SNAPS / base), str(SNAPS / head), *extra)
    assert run.code == 0, run.err


@pytest.mark.slow
def test_a_manual_run_opens_its_own_issue_and_leaves_the_weeks_report_alone(
    fake: FakeGitHub, opdrift: Opdrift
) -> None:
    _issue(opdrift, "v2.13.0.json", "v2.14.1.json", "--week", WEEK)
    (week,) = fake.issues(TARGET)
    week_body, week_title = week["body"], week["title"]

    # Another pair, as a manual run for another ref would diff: twice (a re-run edits its own issue).
    for _ in range(2):
        _issue(opdrift, "v2.14.1.json", "v2.15.0.json", "--manual", "release/2.15")
    issues = {i["number"]: i for i in fake.issues(TARGET)}
    assert len(issues) == 2, [i["title"] for i in issues.values()]
    assert (issues[week["number"]]["body"], issues[week["number"]]["title"]) == (week_body, week_title)
    (manual,) = [i for n, i in issues.items() if n != week["number"]]
    assert "manual run at release/2.15" in manual["title"]
    assert "<!-- opdrift:manual run=release-2.15_" in manual["body"]
    assert "opdrift:weekly" not in manual["body"]
    assert "2.15.0" in manual["body"]

    # The next week's issue links the previous week's, never the manual one.
    _issue(opdrift, "v2.14.1.json", "v2.15.0.json", "--week", "2026-W11")
    (next_week,) = [i for i in fake.issues(TARGET) if "window=2026-W11" in i["body"]]
    assert f"Previous drift issue: #{week['number']}" in next_week["body"]


@pytest.mark.slow
def test_the_weekly_path_would_have_replaced_the_report(fake: FakeGitHub, opdrift: Opdrift) -> None:
    """What the manual example did before (mode `issue`): the same pair replaces the week's body, so the
    test above can tell the two apart."""
    _issue(opdrift, "v2.13.0.json", "v2.14.1.json", "--week", WEEK)
    (before,) = fake.issues(TARGET)
    body = before["body"]
    _issue(opdrift, "v2.14.1.json", "v2.15.0.json", "--week", WEEK)
    (after,) = fake.issues(TARGET)
    assert after["body"] != body


def test_manual_takes_no_week_and_needs_a_ref(fake: FakeGitHub, opdrift: Opdrift) -> None:
    base, head = str(SNAPS / "v2.14.1.json"), str(SNAPS / "v2.15.0.json")
    run = opdrift("issue", "--repo", TARGET, base, head, "--manual", "main", "--week", WEEK)
    assert run.code == 2 and "drop --week" in run.err
    run = opdrift("issue", "--repo", TARGET, base, head, "--manual", " ")
    assert run.code == 2 and "--manual needs the ref" in run.err
    assert fake.writes() == []


@pytest.mark.slow
def test_a_create_that_landed_before_a_5xx_is_one_issue_reported_as_opened(
    fake: FakeGitHub, opdrift: Opdrift
) -> None:
    fake.fail("POST", rf"^/repos/{TARGET}/issues$", 502, after_apply=True)
    run = opdrift(
        "issue",
        "--repo",
        TARGET,
        str(SNAPS / "v2.14.1.json"),
        str(SNAPS / "v2.15.0.json"),
        "--manual",
        "main",
    )
    assert run.code == 0, run.err
    (issue,) = fake.issues(TARGET)
    assert f"opdrift: opened issue #{issue['number']}" in run.err


def test_refs_that_read_alike_in_a_marker_get_issues_of_their_own() -> None:
    from opdrift.publish.manual_issue import manual_marker

    assert manual_marker("release/2.16", "a", "b") != manual_marker("release-2.16", "a", "b")
    long = "x" * 200
    assert manual_marker(long + "1", "a", "b") != manual_marker(long + "2", "a", "b")
    assert manual_marker("main", "a", "b") == manual_marker("main", "a", "b")
