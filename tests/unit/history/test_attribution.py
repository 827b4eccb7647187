"""Attribution: each change of a report → the upstream commit that introduced it (bot/history/attribution.py)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from driftcases import realistic_pair
from goldens import check_golden_entry, updating
from pytorch_history import History, build_history

from opdrift import pipeline
from opdrift.drift.changes import Change, compute_drift
from opdrift.history.attribution import (
    Attribution,
    AttributionError,
    attribute,
    history_range,
    split_subject,
    touched,
    walk_range,
)
from opdrift.history.timeline import Point, PointDrift
from opdrift.model import SourceMeta
from opdrift.render.context import ReportContext
from opdrift.render.report import render
from opdrift.text import ZWJ


@pytest.fixture(scope="module")
def fine(tmp_path_factory: pytest.TempPathFactory) -> History:
    return build_history(
        tmp_path_factory.mktemp("attr") / "pytorch", first="2.12.0", last="2.13.0", fine=True, cap=30
    )


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Add foo (#70012)", ("Add foo", 70012)),
        ("[inductor] fix (#1) (#161234)", ("[inductor] fix (#1)", 161234)),
        ("Add foo (#70012) ", ("Add foo", 70012)),
        ("Revert 'Add foo (#70012)' because it broke", ("Revert 'Add foo (#70012)' because it broke", None)),
        ("Add foo (#0)", ("Add foo (#0)", None)),
        ("Add foo", ("Add foo", None)),
    ],
)
def test_split_subject(subject: str, expected: tuple[str, int | None]) -> None:
    assert split_subject(subject) == expected


def _made(change: Change, d: PointDrift) -> bool:
    """Whether commit drift `d` made a change of `change`'s kind to its operator."""
    if change.kind == "removed":
        return change.name in d.removed or any(old == change.name for old, _ in d.renamed)
    if change.kind == "added":
        return change.name in d.added or any(new == change.name for _, new in d.renamed)
    if change.kind == "changed":
        return change.name in d.changed
    return True


@pytest.mark.slow
def test_every_change_goes_to_the_commit_that_made_it(fine: History) -> None:
    """On a real fine-grained history: each commit changes one entry, so each change of the range's
    net drift must be attributed to the first commit whose subject names that entry."""
    commits = [c for c in fine.commits if c.tag is None]
    start, end = fine.tag_sha("2.12.0"), commits[-1].sha
    walked = walk_range(str(fine.path), start, end)
    assert [p.sha for p in walked.points] == [c.sha for c in commits]
    drift = compute_drift(
        pipeline.load_snapshot(f"{fine.path}@{start}"), pipeline.load_snapshot(f"{fine.path}@{end}")
    )
    assert drift.changes
    found = attribute(drift.changes, walked.points, upstream="pytorch/pytorch")
    # An entry's edit can change operators autogen derives from it too; map names to entries by the walk.
    by_entry = {c.sha: c for c in commits}
    for change in drift.changes:
        a = found[change.fingerprint]
        names = {change.name, change.old_name} - {None}
        naming = [p for p in walked.points if p.drift and names & touched(p.drift)]

        # The commit that made a change of this kind: a removal goes to the commit that removed the
        # op, not to one that only changed it before (2.12→2.13: "Remove concat" dropped the alias
        # comment above concat.names; "Remove concatenate" removed it).
        first = next((p for p in naming if p.drift and _made(change, p.drift)), naming[0])
        assert a.sha == first.sha
        commit = by_entry[a.sha]
        assert (a.subject, a.pr) == split_subject(commit.subject)
        assert a.pr is not None
        assert a.commit_url == f"https://github.com/pytorch/pytorch/commit/{a.sha}"
        assert a.pr_url == f"https://github.com/pytorch/pytorch/pull/{a.pr}"
        # The commit's own entry is one of the names it is credited for, unless an earlier commit
        # touched the same operator (then that one is first).
        if commit.changed in names and first is naming[0]:
            assert not any(
                names & touched(p.drift) for p in walked.points[: walked.points.index(first)] if p.drift
            )
        # Commits that touched the same op after it are counted, not hidden.
        assert a.later == len(naming) - 1 - naming.index(first)
    # 2.12→2.13 dropped the `# alias for torch.cat` comment above concat.names in one commit and the
    # entry in a later one. The alias is PyTorch's own fact (its docs), not the comment's, so the
    # comment's commit changes nothing and the removal alone is credited; several commits touching one
    # op are covered by test_first_commit_wins_and_later_ones_are_counted.
    concat = [p for p in walked.points if p.drift and "concat.names" in touched(p.drift)]
    assert len(concat) == 1 and concat[0].drift is not None and "concat.names" in concat[0].drift.removed
    removal = next(c for c in drift.changes if c.name == "concat.names")
    assert found[removal.fingerprint].sha == concat[0].sha


def test_first_commit_wins_and_later_ones_are_counted() -> None:
    def point(sha: str, subject: str, **drift: tuple[str, ...]) -> Point:
        return Point(sha=sha, date="", subject=subject, operators=1, drift=PointDrift(base="0" * 40, **drift))  # type: ignore[arg-type]

    drift = compute_drift(*realistic_pair())
    added = drift.added[0]
    points = [
        Point(sha="a" * 40, date="", subject="first point, no drift"),
        point("b" * 40, "Add it (#101)", added=(added.name,)),
        Point(sha="c" * 40, date="", subject="broken", error="bad yaml", drift=None),
        point("d" * 40, "Tweak it", changed=(added.name,)),
        point("e" * 40, "Unrelated (#103)", changed=("something_else",)),
    ]
    found = attribute([added], points, upstream="my-org/pytorch-fork")
    assert found == {
        added.fingerprint: Attribution(
            sha="b" * 40,
            subject="Add it",
            pr=101,
            commit_url=f"https://github.com/my-org/pytorch-fork/commit/{'b' * 40}",
            pr_url="https://github.com/my-org/pytorch-fork/pull/101",
            later=1,
        )
    }
    # A rename is found by either name.
    renamed = PointDrift(base="0" * 40, renamed=(("old_name", added.name),))
    assert added.name in touched(renamed) and "old_name" in touched(renamed)
    with pytest.raises(AttributionError):
        attribute([added], points, upstream="not a slug")


def test_hostile_subjects_render_inert() -> None:
    drift = compute_drift(*realistic_pair())
    c = drift.added[0]
    evil = "@everyone see [here](http://evil.example) <img src=x> #1 `x` | * _"
    ctx = ReportContext(
        attributions={
            c.fingerprint: Attribution(
                sha="f" * 40,
                subject=evil,
                pr=5,
                commit_url=f"https://github.com/pytorch/pytorch/commit/{'f' * 40}",
                pr_url="https://github.com/pytorch/pytorch/pull/5",
            )
        }
    )
    body = render(drift, "weekly-issue", context=ctx)
    line = next(line for line in body.splitlines() if "· by [`fffffff`]" in line)
    assert "@everyone" not in line and f"@{ZWJ}everyone" in line
    assert "](http://evil" not in line and "<img" not in line and "&lt;img" in line
    assert f"#{ZWJ}1" in line
    assert line.endswith("([#5](https://github.com/pytorch/pytorch/pull/5))")
    # Attribution only decorates a change's line; the text report keeps it on that one line.
    text = render(drift, "text", context=ctx)
    (text_line,) = [t for t in text.splitlines() if "by fffffff" in t]
    assert text_line.endswith(f"by fffffff {evil} (#5)")


def test_range_comes_from_the_sources_commits_or_the_flags() -> None:
    base = SourceMeta(kind="snapshot", path="base.json", commit="a" * 40)
    head = SourceMeta(kind="snapshot", path="head.json", commit="b" * 40)
    assert history_range(base, head, None, None) == ("a" * 40, "b" * 40)
    assert history_range(base, head, "v2.12.0", "main") == ("v2.12.0", "main")
    bare = SourceMeta(kind="yaml", path="native_functions.yaml")
    with pytest.raises(AttributionError, match=r"native_functions.yaml records no commit; give --from REV"):
        history_range(bare, head, None, None)
    with pytest.raises(AttributionError, match="bad revision"):
        history_range(base, head, "--upload-pack=x", None)


def test_a_range_missing_from_the_clone_says_so(fine: History, tmp_path: Path) -> None:
    with pytest.raises(AttributionError, match=re.escape("shallow clone?")):
        walk_range(str(fine.path), "0123456789abcdef0123456789abcdef01234567", "HEAD")


def test_an_attributed_change_says_which_release_ships_it(request: pytest.FixtureRequest) -> None:
    """The commit's date puts the change in the next release whose branch is cut after it: 2026-11-02 is
    before 2.16's cut (2026-11-30), so the weekly issue says 2.16; a commit after the last cut the
    calendar knows says that its release is not scheduled yet, rather than guess one."""
    drift = compute_drift(*realistic_pair())
    added = drift.added[0]
    points = [
        Point(sha="a" * 40, date="2026-11-01T08:00:00Z", subject="first point, no drift"),
        Point(sha="b" * 40, date="2026-11-02T10:00:00Z", subject="Add it (#101)", operators=1,
              drift=PointDrift(base="0" * 40, added=(added.name,))),
    ]  # fmt: skip
    found = attribute([added], points)
    assert found[added.fingerprint].date == "2026-11-02T10:00:00Z"
    body = render(drift, "weekly-issue", context=ReportContext(attributions=found))
    line = next(line for line in body.splitlines() if "· by [`bbbbbbb`]" in line)
    # the release it ships in and its cut, or that it missed the cut (golden: the wording)
    assert line.endswith("; ships in 2.16 (branch cut 2026-11-30)"), line
    text = render(drift, "text", context=ReportContext(attributions=found))
    (text_line,) = [x for x in text.splitlines() if "by bbbbbbb Add it (#101); " in x]
    assert "2.16" in text_line and "2026-11-30" in text_line
    late = {added.fingerprint: dataclasses.replace(found[added.fingerprint], date="2027-01-04T00:00:00Z")}
    body = render(drift, "weekly-issue", context=ReportContext(attributions=late))
    assert "ships in 2." not in body
    late_line = next(x for x in body.splitlines() if "· by [`bbbbbbb`]" in x)
    assert "after 2.16" in late_line and "2026-11-30" in late_line
    said = f"{line}\n{text_line}\n{late_line}\n"
    check_golden_entry("report.lines.txt", "attribution: the release it ships in", said, updating(request))
