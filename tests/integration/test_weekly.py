"""The weekly issue end to end: a fine-grained PyTorch-shaped history, backend subscriptions, attribution.

A git repository is built from the vendored 2.3.0 and 2.4.0 releases with one entry-level change per
commit (tests/pytorch_history.py, subjects like "Add rms_norm (#70007)"); the week is a stretch of
those commits; BASE and HEAD are snapshots taken at its ends, as the weekly workflow stores them; GitHub
is tests/fake_github.py over real HTTP, driven through PyGithub by `opdrift issue`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from fake_github import FakeGitHub
from goldens import check_golden_entry, updating
from pytorch_history import History, HistoryCommit, build_history

from opdrift import pipeline, snapshot
from opdrift.coverage import backends
from opdrift.coverage import check as coverage
from opdrift.taxonomy.scope import scope_of

TARGET = "downstream/backend"
TOKEN = "ghs_weeklye2etoken000000000000000000"
WEEK = "2026-W10"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return build_history(
        tmp_path_factory.mktemp("e2e") / "pytorch", first="2.3.0", last="2.4.0", fine=True, cap=24
    )


@pytest.fixture
def fake(github_for_step: Callable[[str, str], FakeGitHub]) -> FakeGitHub:
    return github_for_step(TOKEN, TARGET)


def _fine(history: History) -> list[HistoryCommit]:
    return [c for c in history.commits if c.tag is None]


def _the_week(history: History) -> tuple[HistoryCommit, HistoryCommit, HistoryCommit]:
    """(the commit before the week, the week's last commit, the added op's commit).

    The added op is the first "Add" commit whose op needs a kernel on a backend that lists nothing
    and is one every backend needs (not a sparse or CUDA-only op: `opdrift.taxonomy.scope`), found from
    the data, not assumed; the week runs from three commits before it to one after it.
    """
    fine = _fine(history)
    head_snap = pipeline.load_snapshot(f"{history.path}@{fine[-1].sha}")
    empty = coverage.compute_coverage(head_snap, backends.BackendList("text", "none", ()))
    lacking = {o.name for o in empty.uncovered if scope_of(head_snap.operators[o.name]).generic}
    i = next(
        i
        for i, c in enumerate(fine)
        if c.subject.startswith("Add ") and c.changed in lacking and 3 <= i < len(fine) - 1
    )
    return fine[i - 3], fine[i + 1], fine[i]


@pytest.mark.slow
def test_weekly_issue_attributes_the_added_op_and_mentions_only_the_backend_that_lacks_it(
    history: History, fake: FakeGitHub, tmp_path: Path, opdrift: Opdrift, request: pytest.FixtureRequest
) -> None:
    start, end, added = _the_week(history)
    op = added.changed
    assert op is not None
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(snapshot.to_json(pipeline.load_snapshot(f"{history.path}@{start.sha}")))
    head.write_text(snapshot.to_json(pipeline.load_snapshot(f"{history.path}@{end.sha}")))

    # Every other op of the week is listed by both backends (or covered anyway), so the only gap
    # either can have is the added op, which one backend lists and the other does not.
    fine = _fine(history)
    week = fine[fine.index(start) + 1 : fine.index(end) + 1]
    others = sorted({c.changed for c in week if c.changed and c.changed != op})
    listed = "supported:\n" + "".join(f"  - {name}\n" for name in [op, *others])
    lacks = "supported:\n" + "".join(f"  - {name}\n" for name in others)
    (tmp_path / "backends").mkdir()
    (tmp_path / "backends" / "has.yaml").write_text(listed)
    (tmp_path / "backends" / "lacks.yaml").write_text(lacks)
    config = tmp_path / "opdrift.yml"
    config.write_text(
        "subscriptions:\n"
        "  - who: ['@has-it']\n"
        "    backend: {kind: xla, path: backends/has.yaml}\n"
        "  - who: ['@lacks-it']\n"
        "    backend: {kind: xla, path: backends/lacks.yaml}\n"
        "weekly:\n  chart: 20\n"
    )

    argv = ["issue", "--repo", TARGET, "--config", str(config), "--week", WEEK, str(base), str(head)]
    run = opdrift(*argv, "--history", str(history.path))
    assert run.code == 0, run.err

    (issue,) = fake.issues(TARGET)
    body = str(issue["body"])
    pr = int(re.search(r"\(#(\d+)\)$", added.subject).group(1))  # type: ignore[union-attr]
    subject = added.subject.rsplit(" (#", 1)[0]
    escaped = subject.replace("_", "\\_")  # the subject is escaped Markdown text
    attribution = (
        f" · by [`{added.sha[:7]}`](https://github.com/pytorch/pytorch/commit/{added.sha}) {escaped} "
        f"([#{pr}](https://github.com/pytorch/pytorch/pull/{pr}))"
    )
    op_lines = [line for line in body.splitlines() if f"[`{op}`](" in line and line.startswith("- ")]
    assert len(op_lines) == 2, body  # under ⚠️ Needs a kernel, and in its bucket
    assert all(line.endswith(attribution) for line in op_lines), op_lines
    # ... and only that commit's ops carry its sha: every other change is attributed elsewhere.
    assert body.count(f"/commit/{added.sha})") == len(op_lines)

    mentioned = set(re.findall(r"(?<![\w`])@[\w-]+", body))
    assert mentioned == {"@lacks-it"}, mentioned
    # the config subscribes backends: the issue leads with what it asks of each, by name
    lead = body.split("\n---\n", 1)[0]
    assert "### 🔌 What this asks of `has` and `lacks` first" in lead
    assert "✅ **`has`**: nothing in this drift asks anything of it" in lead
    said = lead.split("**`lacks`** (@lacks-it):\n\n", 1)[1].splitlines()[0]
    assert said.startswith("- ⚠️ it lacks **") and f": `{op}`" in said
    check_golden_entry("weekly.lines.md", "lacks: the op it lacks", said + "\n", updating(request))
    assert "```mermaid" in body
    x_axis = next(line for line in body.splitlines() if "x-axis" in line)
    assert f'_{added.sha[:7]}"' in x_axis  # a point of the chart, labelled by its date and sha
    assert "  bar [" in body  # operators added per commit

    # A re-run edits the same issue and gives the same body (nothing depends on the clock).
    assert opdrift(*argv, "--history", str(history.path)).code == 0
    (again,) = fake.issues(TARGET)
    assert again["number"] == issue["number"]
    assert again["body"] == body


def test_history_range_defaults_to_the_snapshots_commits_and_errors_name_the_fix(
    history: History, tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    fine = _fine(history)
    base_yaml = tmp_path / "native_functions.yaml"
    base_yaml.write_text(
        (history.path / "aten/src/ATen/native/native_functions.yaml").read_text(encoding="utf-8")
    )
    # A bare yaml records no commit: --history must be told where to start.
    run = opdrift(
        "issue",
        "--repo",
        TARGET,
        "--week",
        WEEK,
        str(base_yaml),
        f"{history.path}@{fine[2].sha}",
        "--history",
        str(history.path),
    )
    assert run.code == 2
    assert "records no commit; give --from REV" in run.err
    # --chart without --history is refused before anything is computed.
    run = opdrift("issue", "--repo", TARGET, str(base_yaml), str(base_yaml), "--chart", "5")
    assert run.code == 2
    assert "need --history REPO" in run.err
