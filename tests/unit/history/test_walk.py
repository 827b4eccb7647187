"""The per-commit history walk: incremental results equal cold classification, shards merge byte for
byte, the cache changes nothing, broken commits are reported or recorded.

Everything runs on fine-grained histories built from the vendored release files (tests/pytorch_history.py).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import release_text
from goldens import check_golden_entry, updating
from pytorch_history import NATIVE, History, build_history

from opdrift.drift.changes import compute_drift
from opdrift.errors import OpdriftError
from opdrift.history import timeline
from opdrift.history import walk as history
from opdrift.history.blocks import block_starts
from opdrift.history.engine import Engine
from opdrift.history.figures import point_drift, summarize
from opdrift.model import Snapshot
from opdrift.operators import entries as nativeyaml
from opdrift.render import timeline as timeline_render
from opdrift.sources.gitlog import check_paths
from opdrift.sources.read import read_revision

# Two release steps of single-entry commits (2.12.0 → 2.13.0 removes many named-tensor overloads,
# so the sample holds removals as well as additions and edits), capped to keep the test quick. The
# history tool moves an entry by adding it before removing it, so a few commits define an operator
# twice: real broken commits, which the walk must report exactly as cold classification does.
FIRST, LAST, CAP = "2.12.0", "2.14.1", 12
KEEP = history.WalkOptions(keep_going=True)


@pytest.fixture(scope="module")
def fine(tmp_path_factory: pytest.TempPathFactory) -> History:
    return build_history(
        tmp_path_factory.mktemp("fine") / "pytorch", first=FIRST, last=LAST, fine=True, cap=CAP
    )


@pytest.fixture(scope="module")
def cold(fine: History) -> dict[str, Snapshot | str]:
    """Every commit classified from scratch through the ordinary pipeline (DIR@REV), or its error."""
    out: dict[str, Snapshot | str] = {}
    for c in fine.commits:
        try:
            out[c.sha] = history.cold_point(read_revision(str(fine.path), c.sha))
        except OpdriftError as err:
            out[c.sha] = " ".join(str(err).split())
    return out


@pytest.fixture(scope="module")
def walked(fine: History) -> timeline.Timeline:
    return history.walk(str(fine.path), KEEP)


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    clean.update(env or {})
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, env=clean, text=True
    )
    return done.stdout.strip()


# --- blocks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.12.0", "2.0.0", "2.14.1", "2.15.0"])
def test_blocks_parse_alone_like_the_whole_file(version: str) -> None:
    text = release_text(version)
    starts = block_starts(text)
    ends = [*starts[1:], len(text)]
    assert "".join(text[a:b] for a, b in zip(starts, ends, strict=True)) == text
    joined = []
    line = 1
    for a, b in zip(starts, ends, strict=True):
        chunk = text[a:b]
        for e in nativeyaml.read_entries(chunk, "x"):
            joined.append((e.line + line - 1, dict(e.data), e.comments))
        line += chunk.count("\n")
    whole = [(e.line, dict(e.data), e.comments) for e in nativeyaml.read_entries(text, "x")]
    assert joined == whole


def test_block_of_an_entry_takes_the_comments_above_it() -> None:
    text = "- func: a(Tensor x) -> Tensor\n  # trailing note\n\n# b, alias for a\n- func: b(Tensor x) -> Tensor\n"
    starts = block_starts(text)
    assert [text[s:].split("\n", 1)[0] for s in starts] == [
        "- func: a(Tensor x) -> Tensor",
        "  # trailing note",
    ]


# --- incremental = cold --------------------------------------------------------------------------


@pytest.mark.slow
def test_history_walks_the_commits_that_touched_the_files(fine: History, walked: timeline.Timeline) -> None:
    assert [p.sha for p in walked.points] == [c.sha for c in fine.commits]
    assert [p.subject for p in walked.points] == [c.subject for c in fine.commits]
    assert [p.date for p in walked.points] == [c.date for c in fine.commits]
    assert walked.points[0].drift is None
    assert all((p.drift is None) == p.broken for p in walked.points[1:])
    assert 0 < sum(p.broken for p in walked.points) < len(walked.points) // 3


def _small_history(dest: Path, texts: list[str]) -> list[str]:
    """A repository whose native_functions.yaml goes through TEXTS, one commit each; their shas."""
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@localhost",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@localhost",
    }
    (dest / NATIVE).parent.mkdir(parents=True)
    _git(dest, "init", "-q", "-b", "main")
    shas = []
    for i, text in enumerate(texts):
        (dest / NATIVE).write_text(text, encoding="utf-8")
        _git(dest, "add", "-A")
        stamp = {
            "GIT_AUTHOR_DATE": f"@{1700000000 + i} +0000",
            "GIT_COMMITTER_DATE": f"@{1700000000 + i} +0000",
        }
        _git(dest, "commit", "-qm", f"step {i}", env={**env, **stamp})
        shas.append(_git(dest, "rev-parse", "HEAD"))
    return shas


def test_an_entry_moved_past_its_siblings_re_decides_its_base(tmp_path: Path) -> None:
    """foo has no default overload, so its first entry in file order decides its bucket."""
    foo_a, relu, foo_b = (
        "- func: foo.a(Tensor self) -> Tensor\n",
        "- func: relu(Tensor self) -> Tensor\n",
        "- func: foo.b(int[] size) -> Tensor\n",
    )
    shas = _small_history(
        tmp_path / "pytorch",
        [
            "\n".join([foo_a, relu, foo_b]),
            "\n".join([foo_b, foo_a, relu]),
            "\n".join([foo_b, foo_a + "...\n", relu]),
        ],
    )
    walked = history.walk(str(tmp_path / "pytorch"), KEEP)
    assert [p.sha for p in walked.points] == shas
    for point, sha in zip(walked.points[:2], shas, strict=False):
        s = summarize(history.cold_point(read_revision(str(tmp_path / "pytorch"), sha)))
        assert (point.base_operators, point.by_category) == (s.base_operators, s.by_category)
    assert dict(walked.points[1].by_category or ())["factory"] == 1  # foo.b takes no tensor: a factory now
    # "..." ends the YAML document: fine in one block alone, invalid in the whole file, as cold says.
    assert walked.points[2].broken
    with pytest.raises(OpdriftError, match="invalid YAML"):
        history.cold_point(read_revision(str(tmp_path / "pytorch"), shas[2]))


@pytest.mark.slow
def test_every_point_equals_cold_classification(
    fine: History, walked: timeline.Timeline, cold: dict[str, Snapshot | str]
) -> None:
    prev: Snapshot | None = None
    prev_sha = ""
    for point, commit in zip(walked.points, fine.commits, strict=True):
        snap = cold[commit.sha]
        if isinstance(snap, str):
            assert point.error == snap, commit.subject
            assert point.operators is None and point.drift is None
            continue
        assert not point.broken, commit.subject
        s = summarize(snap)
        assert (point.entries, point.operators, point.base_operators, point.by_category) == (
            s.entries,
            s.operators,
            s.base_operators,
            s.by_category,
        ), commit.subject
        if prev is not None:
            assert point.drift == point_drift(prev_sha, compute_drift(prev, snap)), commit.subject
        prev, prev_sha = snap, commit.sha


@pytest.mark.slow
def test_fine_commits_change_what_they_say(walked: timeline.Timeline, fine: History) -> None:
    # The history is not trivial: single-entry commits add, remove and edit operators.
    drifts = [p.drift for p in walked.points if p.drift is not None]
    assert sum(bool(d.added) for d in drifts) >= 2
    assert sum(bool(d.removed or d.renamed) for d in drifts) >= 3
    assert sum(bool(d.changed) for d in drifts) >= 8


@pytest.mark.slow
def test_engine_state_is_the_cold_snapshot(fine: History, cold: dict[str, Snapshot | str]) -> None:
    engine = Engine()
    repo = str(fine.path)
    for i, c in enumerate(fine.commits):
        want = cold[c.sha]
        if isinstance(want, str):
            with pytest.raises(OpdriftError):
                engine.load(read_revision(repo, c.sha))
            continue
        engine.load(read_revision(repo, c.sha))
        if i % 7 == 3 or c.tag:
            snap = engine.snapshot()
            assert dict(snap.operators) == dict(want.operators), c.subject
            assert dict(snap.decisions) == dict(want.decisions), c.subject
            assert snap.entries == want.entries
            # the incrementally kept records differ from cold only in stale line numbers
            assert {n: (r.bucket, r.rule, r.facets, r.schema) for n, r in engine.records.items()} == {
                n: (r.bucket, r.rule, r.facets, r.schema) for n, r in want.operators.items()
            }
    assert engine.stats["steps"] > len(fine.commits) // 2  # most commits went the incremental way


# --- tags ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tag_walk_agrees_with_stats(fine: History, opdrift: Opdrift) -> None:
    repo = str(fine.path)
    run = opdrift("history", repo, "--tags", "v*", "--format", "json")
    assert run.code == 0
    t = timeline.parse_json(run.out, "stdout")
    assert [p.tag for p in t.points] == [c.tag for c in fine.commits if c.tag]
    for p in t.points:
        run = opdrift("stats", f"{repo}@{p.tag}", "--format", "json")
        stats = json.loads(run.out)
        assert (p.entries, p.operators, p.base_operators) == (
            stats["entries"],
            stats["operators"],
            stats["base_operators"],
        )
        assert dict(p.by_category or ()) == stats["by_category"]
    assert t.points[0].drift is None
    assert t.points[1].drift is not None and t.points[1].drift.base == t.points[0].sha


# --- shards ----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("count", [1, 4])
def test_shards_merge_into_the_single_run_bytes(
    fine: History, walked: timeline.Timeline, count: int, tmp_path: Path, opdrift: Opdrift
) -> None:
    repo = str(fine.path)
    single = opdrift("history", repo, "--keep-going")
    assert single.code == 0
    assert single.out == timeline.render_json(walked)
    files = []
    for i in range(count, 0, -1):  # any order
        out = tmp_path / f"shard-{i}.json"
        assert opdrift("history", repo, "--keep-going", "--shard", f"{i}/{count}", "-o", str(out)).code == 0
        files.append(str(out))
    merged = opdrift("history-merge", *files)
    assert merged.code == 0
    assert merged.out == single.out


def test_merge_refuses_an_incomplete_set(fine: History, tmp_path: Path, opdrift: Opdrift) -> None:
    out = tmp_path / "s1.json"
    assert opdrift("history", str(fine.path), "--keep-going", "--shard", "1/2", "-o", str(out)).code == 0
    run = opdrift("history-merge", str(out))
    assert run.code == 2
    assert "missing shard(s) 2/2" in run.err
    assert len(run.err.strip().splitlines()) == 1
    # A damaged count is named, not enumerated (range(10**12) ran out of memory).
    data = json.loads(out.read_text())
    data["shard"]["count"] = 10**12
    out.write_text(json.dumps(data))
    run = opdrift("history-merge", str(out))
    assert run.code == 2 and "missing shard(s) 2/1000000000000" in run.err and "more" in run.err
    out.write_text(json.dumps({**data, "shard": {**data["shard"], "count": 2}}))
    for bad, words in ((b"\xff\xfe", "not UTF-8"), (b"[" * 100_000, "nested too deeply")):
        out.write_bytes(bad)
        run = opdrift("history-merge", str(out))
        assert (run.code, len(run.err.strip().splitlines())) == (2, 1) and words in run.err


@pytest.mark.slow
def test_more_shards_than_commits(fine: History) -> None:
    # The last three commits, in five shards: two shards are empty and still merge.
    start = fine.commits[-4].sha
    parts = [
        (
            str(i),
            history.walk(str(fine.path), history.WalkOptions(from_rev=start, shard=(i, 5), keep_going=True)),
        )
        for i in range(1, 6)
    ]
    assert sum(not t.points for _, t in parts) == 2
    single = history.walk(str(fine.path), history.WalkOptions(from_rev=start, keep_going=True))
    assert len(single.points) == 3
    assert timeline.render_json(timeline.merge(parts)) == timeline.render_json(single)


# --- cache -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_warm_cache_gives_the_same_timeline(fine: History, walked: timeline.Timeline, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    warnings: list[str] = []
    opts = history.WalkOptions(cache_dir=str(cache), keep_going=True)
    first = history.walk(str(fine.path), opts, warn=warnings.append)
    files = sorted(cache.rglob("*.json"))
    assert files
    second = history.walk(str(fine.path), opts, warn=warnings.append)
    assert timeline.render_json(first) == timeline.render_json(second) == timeline.render_json(walked)
    assert warnings == []
    # A damaged cache file is ignored with a warning and recomputed.
    files[0].write_text("{not json", encoding="utf-8")
    files[1].write_text("[1, 2]", encoding="utf-8")
    files[2].write_bytes(b"\xff\xfe not UTF-8")
    files[3].write_text("[" * 100_000, encoding="utf-8")  # too deep for json to rebuild
    third = history.walk(str(fine.path), opts, warn=warnings.append)
    assert timeline.render_json(third) == timeline.render_json(walked)
    assert len(warnings) == 4
    assert all("ignoring corrupt cache file" in w for w in warnings)


@pytest.mark.slow
def test_partly_warm_cache(fine: History, walked: timeline.Timeline, tmp_path: Path) -> None:
    # A cache filled up to the middle (last week's run): the rest is computed from there.
    middle = fine.commits[len(fine.commits) // 2].sha
    opts = history.WalkOptions(cache_dir=str(tmp_path), keep_going=True)
    history.walk(str(fine.path), history.WalkOptions(cache_dir=str(tmp_path), to_rev=middle, keep_going=True))
    assert timeline.render_json(history.walk(str(fine.path), opts)) == timeline.render_json(walked)


# --- errors and --keep-going -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    """Two releases, then a commit whose yaml does not parse, then a good one."""
    h = build_history(tmp_path_factory.mktemp("broken") / "pytorch", first="2.12.0", last="2.13.0")
    repo = h.path
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@localhost",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@localhost",
        "GIT_AUTHOR_DATE": "@1700000000 +0000",
        "GIT_COMMITTER_DATE": "@1700000000 +0000",
    }
    good = release_text("2.13.0")
    (repo / NATIVE).write_text(good + "- func: [oops\n", encoding="utf-8")
    _git(repo, "commit", "-qam", "Break the yaml", env=env)
    bad_sha = _git(repo, "rev-parse", "HEAD")
    (repo / NATIVE).write_text(release_text("2.14.1"), encoding="utf-8")
    _git(repo, "commit", "-qam", "Fix the yaml", env=env)
    return h, bad_sha, _git(repo, "rev-parse", "HEAD")


@pytest.mark.slow
def test_strict_stops_at_a_broken_commit_naming_it(
    broken: tuple[History, str, str], opdrift: Opdrift
) -> None:
    h, bad, _ = broken
    run = opdrift("history", str(h.path), "--strict")
    assert run.code == 2
    assert run.out == ""
    assert run.err.startswith(f"opdrift: error: {bad}:{NATIVE}:")
    assert "--strict stops at the first" in run.err
    assert len(run.err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str]:
    """2.12.0, 2.13.0, then a commit that moves `abs` the way upstream PRs sometimes do, adding the new
    copy before removing the old one: the file defines `abs` twice, which torchgen refuses
    (torchgen/native_function_generation.py, pre_group_native_functions: "Duplicate schema kind"), then
    the commit that removes the old copy."""
    h = build_history(tmp_path_factory.mktemp("refused") / "pytorch", first="2.12.0", last="2.13.0")
    text = release_text("2.13.0")
    start = text.index("- func: abs(Tensor self) -> Tensor\n")
    end = text.index("- func:", start + 1)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@localhost",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@localhost",
    }
    (h.path / NATIVE).write_text(text + "\n" + text[start:end], encoding="utf-8")
    _git(h.path, "commit", "-qam", "Move abs (1/2)", env=env)
    bad = _git(h.path, "rev-parse", "HEAD")
    (h.path / NATIVE).write_text(text[:start] + text[end:] + "\n" + text[start:end], encoding="utf-8")
    _git(h.path, "commit", "-qam", "Move abs (2/2)", env=env)
    return h, bad


@pytest.mark.slow
def test_a_commit_codegen_refuses_is_skipped_by_default_and_summarized(
    refused: tuple[History, str], opdrift: Opdrift, request: pytest.FixtureRequest
) -> None:
    h, bad = refused
    run = opdrift("history", str(h.path), "--format", "csv")
    assert run.code == 0, run.err
    lines = run.err.splitlines()
    assert lines[-2].startswith("opdrift: skipped 1 commit(s) ") and "--strict" in lines[-2]
    check_golden_entry("warnings.lines.txt", "history: skipped a commit", lines[-2] + "\n", updating(request))
    assert lines[-1].startswith(f"opdrift:   {bad[:12]} {bad}:{NATIVE}:")
    assert "duplicate operator 'abs'" in lines[-1]
    rows = [r.split(",") for r in run.out.splitlines()[1:]]
    assert [r[5] for r in rows] == ["ok", "ok", "broken", "ok"]
    # the old spelling is a no-op alias of the default
    assert opdrift("history", str(h.path), "--format", "csv", "--keep-going").out == run.out
    strict = opdrift("history", str(h.path), "--strict")
    assert strict.code == 2 and strict.out == ""
    assert (
        strict.err.startswith(f"opdrift: error: {bad}:{NATIVE}:") and "duplicate operator 'abs'" in strict.err
    )
    assert len(strict.err.splitlines()) == 1
    assert opdrift("history", str(h.path), "--strict", "--keep-going").code == 2


def test_the_skipped_summary_names_the_first_few() -> None:
    points = [
        timeline.Point(sha=f"{i:x}" * 40, date="", subject="", tag=None, error=f"e{i}") for i in range(5)
    ]
    points.insert(2, timeline.Point(sha="f" * 40, date="", subject="", tag=None, entries=1))
    lines = history.skipped_summary(points)
    assert lines[0].startswith("skipped 5 commit(s)")
    assert lines[1:4] == [f"  {str(i) * 12} e{i}" for i in range(3)]
    assert lines[4] == "  ... and 2 more: the timeline lists them all"
    assert history.skipped_summary(points[2:3]) == []


@pytest.mark.slow
def test_keep_going_records_the_broken_commit(broken: tuple[History, str, str], opdrift: Opdrift) -> None:
    h, bad, fixed = broken
    run = opdrift("history", str(h.path), "--keep-going")
    assert run.code == 0
    assert "skipped 1 commit(s)" in run.err
    t = timeline.parse_json(run.out, "stdout")
    by_sha = {p.sha: p for p in t.points}
    error = by_sha[bad].error
    assert error is not None and bad in error
    assert by_sha[bad].operators is None and by_sha[bad].drift is None
    last_good = h.commits[-1].sha
    after = by_sha[fixed]
    assert after.drift is not None and after.drift.base == last_good
    # the drift skips the broken commit: it equals the drift between the two good commits
    want = compute_drift(
        history.cold_point(read_revision(str(h.path), last_good)),
        history.cold_point(read_revision(str(h.path), fixed)),
    )
    assert after.drift == point_drift(last_good, want)
    # shards agree with the single run around the broken commit
    parts = [
        (str(i), history.walk(str(h.path), history.WalkOptions(shard=(i, 4), keep_going=True)))
        for i in (1, 2, 3, 4)
    ]
    assert timeline.render_json(timeline.merge(parts)) == run.out
    # and the CSV and Markdown say it is broken
    assert ",broken," in timeline_render.render_csv(t)
    assert "broken" in timeline_render.render_markdown(t)


def test_unknown_revision(fine: History, opdrift: Opdrift) -> None:
    run = opdrift("history", str(fine.path), "--from", "no-such-rev")
    assert run.code == 2
    assert "unknown revision 'no-such-rev'" in run.err
    assert len(run.err.strip().splitlines()) == 1


def test_repository_that_is_not_pytorch(tmp_path: Path, opdrift: Opdrift) -> None:
    repo = tmp_path / "other"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "README").write_text("hello\n")
    _git(repo, "add", "README")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "init")
    run = opdrift("history", str(repo))
    assert run.code == 2
    assert "not a PyTorch-shaped repository" in run.err
    run = opdrift("history", str(tmp_path / "absent"))
    assert run.code == 2


def test_bad_shard_spec(fine: History, opdrift: Opdrift) -> None:
    for spec in ("0/3", "4/3", "x"):
        run = opdrift("history", str(fine.path), "--shard", spec)
        assert run.code == 2 and "--shard" in run.err


# --- rendering -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_json_round_trips(walked: timeline.Timeline) -> None:
    text = timeline.render_json(walked)
    assert timeline.parse_json(text, "x") == walked
    assert timeline.render_json(timeline.parse_json(text, "x")) == text


@pytest.mark.slow
def test_csv_has_fixed_columns_and_one_row_per_point(walked: timeline.Timeline) -> None:
    rows = timeline_render.render_csv(walked).splitlines()
    header = rows[0].split(",")
    assert header[: len(timeline_render.CSV_FIXED)] == list(timeline_render.CSV_FIXED)
    assert header[len(timeline_render.CSV_FIXED) :] == [f"bucket:{b}" for b in walked.buckets]
    assert len(rows) == len(walked.points) + 1


def test_markdown_has_a_mermaid_chart(walked: timeline.Timeline) -> None:
    text = timeline_render.render_markdown(walked)
    assert "```mermaid" in text and "xychart-beta" in text
    assert text.count("  line [") == len(timeline_render.CHART_SERIES)
    first_line = next(ln for ln in text.splitlines() if ln.startswith("  line ["))
    good = [p for p in walked.points if not p.broken]
    assert first_line == "  line [" + ", ".join(str(p.operators) for p in good) + "]"


def test_chart_of_last_points(walked: timeline.Timeline) -> None:
    """The weekly chart plots what moves: operators added (bars) and removed (line) per commit, on an
    axis fitted to them, and a title that counts what it plots."""
    last = [p for p in walked.points[-5:] if not p.broken and p.drift is not None]
    added = [len(p.drift.added) + len(p.drift.renamed) for p in last if p.drift is not None]
    removed = [len(p.drift.removed) + len(p.drift.renamed) for p in last if p.drift is not None]
    chart = timeline_render.chart_of_last(walked, 5)
    if sum(1 for a, r in zip(added, removed, strict=True) if a or r) >= timeline_render.MIN_CHART_POINTS:
        x_axis = next(ln for ln in chart.splitlines() if "x-axis" in ln)
        assert x_axis.count('"') == 2 * len(last)
        assert f"  bar [{', '.join(map(str, added))}]" in chart
        assert f"  line [{', '.join(map(str, removed))}]" in chart
        assert f"last {len(last)} commits" in chart
        top = int(next(ln for ln in chart.splitlines() if "y-axis" in ln).rsplit(" ", 1)[1])
        assert max(*added, *removed) < top <= max(*added, *removed) + 2
    else:
        assert "```mermaid" not in chart and ("| commit |" in chart or chart.startswith("No operator"))
    assert timeline_render.chart_of_last(walked, 0) == ""


def test_hostile_tag_cannot_break_the_chart() -> None:
    p = timeline.Point(sha="a" * 40, date="", subject="", tag='v1"] \n```<b>', operators=1, by_category=())
    label = timeline_render.point_label(p)
    assert all(ch.isalnum() or ch in "._+/-" for ch in label)


def test_progress_is_silent_off_a_terminal() -> None:
    buf = io.StringIO()
    bar = timeline.Progress(buf)
    for i in range(1, 11):
        bar(i, 10)
    assert buf.getvalue() == ""


@pytest.mark.slow
def test_paths_are_normalised_and_patterns_refused(fine: History, opdrift: Opdrift) -> None:
    assert check_paths(["./aten/src/ATen/native/native_functions.yaml", "tools/autograd/"]) == (
        "aten/src/ATen/native/native_functions.yaml",
        "tools/autograd",
    )
    start = fine.commits[-3].sha
    plain = opdrift("history", str(fine.path), "--keep-going", "--from", start, "--paths", NATIVE)
    dotted = opdrift("history", str(fine.path), "--keep-going", "--from", start, "--paths", f"./{NATIVE}")
    assert plain.code == dotted.code == 0 and plain.out == dotted.out
    assert json.loads(plain.out)["points"]  # the commits that touched it, not an empty walk
    for bad in ("aten/src/ATen/native/*.yaml", "/abs/path", "../outside", ":(glob)x"):
        run = opdrift("history", str(fine.path), "--paths", bad)
        assert run.code == 2 and len(run.err.strip().splitlines()) == 1, run.err


def test_from_must_be_older_than_to(fine: History, opdrift: Opdrift) -> None:
    older, newer = fine.commits[1].sha, fine.commits[-1].sha
    run = opdrift("history", str(fine.path), "--from", newer, "--to", older)
    assert run.code == 2 and "is newer than --to" in run.err and len(run.err.strip().splitlines()) == 1
    run = opdrift("history", str(fine.path), "--keep-going", "--from", newer, "--to", newer)
    assert run.code == 0 and json.loads(run.out)["points"] == []  # an empty range is not an error


def test_from_a_release_tag_off_the_branch_walks_the_branch(tmp_path: Path, opdrift: Opdrift) -> None:
    """vX.Y.0 tags sit on release branches: FROM need not be an ancestor of TO, only not newer."""
    text = "- func: a(Tensor self) -> Tensor\n"
    repo = tmp_path / "pytorch"
    shas = _small_history(repo, [text, text + "\n- func: b(Tensor self) -> Tensor\n"])
    _git(repo, "checkout", "-q", "-b", "release", shas[0])
    (repo / NATIVE).write_text(text + "\n- func: c(Tensor self) -> Tensor\n", encoding="utf-8")
    _git(
        repo,
        "commit",
        "-qam",
        "cherry-pick",
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@l",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@l",
        },
    )
    _git(repo, "tag", "v9.9.0")
    run = opdrift("history", str(repo), "--from", "v9.9.0", "--to", "main")
    assert run.code == 0, run.err
    assert [p["sha"] for p in json.loads(run.out)["points"]][-1] == shas[1]


def test_the_callers_git_environment_and_config_do_not_change_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What git lists must not depend on who runs the walk: `git -c` (inherited through
    GIT_CONFIG_PARAMETERS by anything git starts), GIT_CONFIG_COUNT, a shallow file, or the
    repository's own config turning off the root commit or re-encoding subjects."""
    from opdrift.sources.gitlog import list_commits

    text = release_text("2.14.1")
    repo = tmp_path / "repo"
    shas = _small_history(repo, [text, text.replace("- func: relu(", "# a note\n- func: relu(", 1)])
    _git(repo, "commit", "--amend", "-qm", "Füge Kommentar hinzu (naïve)")
    shas[-1] = _git(repo, "rev-parse", "HEAD")
    expected = [(e.sha, e.subject) for e in list_commits(str(repo), None, shas[-1], [NATIVE])]
    assert expected == [(shas[0], "step 0"), (shas[1], "Füge Kommentar hinzu (naïve)")]

    shallow = tmp_path / "shallow"
    shallow.write_text(shas[1] + "\n")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'log.showroot'='false'")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "i18n.logOutputEncoding")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "UTF-16")
    monkeypatch.setenv("GIT_SHALLOW_FILE", str(shallow))
    _git(repo, "config", "log.showRoot", "false")
    _git(repo, "config", "i18n.logOutputEncoding", "ISO-8859-1")
    _git(repo, "config", "log.showSignature", "true")
    assert [(e.sha, e.subject) for e in list_commits(str(repo), None, shas[-1], [NATIVE])] == expected


# --- silent wrong numbers: figures that look plausible ---------------------------------------------

_NEW_OP = "\n- func: opdrift_new_op(Tensor self) -> Tensor\n  dispatch:\n    CPU: opdrift_new_op\n"


def _walk(repo: Path, **kwargs: object) -> timeline.Timeline:
    return history.walk(str(repo), history.WalkOptions(**kwargs))  # type: ignore[arg-type]


def test_after_a_commit_built_cold_the_next_drift_is_not_everything(tmp_path: Path) -> None:
    """CRLF line endings leave a commit without entry blocks; the next commit's drift must still be
    taken against its records, not against nothing (which would list all 3104 operators as added)."""
    crlf = release_text("2.14.1").replace("\n", "\r\n")
    repo = tmp_path / "repo"
    _small_history(repo, [crlf, crlf + _NEW_OP.replace("\n", "\r\n")])
    last = _walk(repo).points[-1]
    assert last.drift is not None and last.drift.added == ("opdrift_new_op",)
    assert last.drift.removed == () and last.drift.changed == ()


def test_paths_outside_the_three_files_still_see_their_changes(tmp_path: Path) -> None:
    """README, then native_functions.yaml alone, then README again: walking --paths README, the second
    README commit's figures are the file as it is then, not as it is at the first one: the files'
    versions are carried through the commits the filter leaves out."""
    text = release_text("2.14.1")
    repo = tmp_path / "repo"
    _small_history(repo, [text])
    who = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@l",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@l",
    }
    for i, (name, content) in enumerate([("README", "a\n"), (NATIVE, text + _NEW_OP), ("README", "b\n")]):
        (repo / name).write_text(content)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", f"commit {i}", env=who)
    points = _walk(repo, paths=("README",)).points
    assert [p.subject for p in points] == ["commit 0", "commit 2"]
    assert [p.operators for p in points] == [3103, 3104]  # as a cold parse of each commit counts them
    last = points[-1].drift
    assert last is not None and last.added == ("opdrift_new_op",)


def test_a_subject_cannot_forge_a_file_change(tmp_path: Path) -> None:
    """Only "\\n" ends a line of git's output, so a subject holding U+2028 and a fake --raw line is
    never read as a change of native_functions.yaml."""
    text = release_text("2.14.1")
    repo = tmp_path / "repo"
    shas = _small_history(repo, [text, text + _NEW_OP])
    fake = f"Tidy\u2028:100644 100644 {'0' * 40} {'1' * 40} M\t{NATIVE}"
    _git(repo, "commit", "--amend", "-qm", fake)
    points = _walk(repo).points
    assert [p.sha for p in points] == [*shas[:1], points[-1].sha]
    assert points[-1].subject == fake and points[-1].operators == 3104


def test_an_emptied_file_is_a_clear_error_not_a_traceback(tmp_path: Path, opdrift: Opdrift) -> None:
    text = release_text("2.14.1")
    repo = tmp_path / "repo"
    _small_history(repo, [text, ""])
    run = opdrift("history", str(repo), "--format", "csv", "--strict")
    assert run.code == 2 and run.err.count("\n") == 1 and "Traceback" not in run.err
    run = opdrift("history", str(repo), "--format", "csv")
    assert run.code == 0 and run.out.splitlines()[-1].split(",")[5] == "broken"


def test_csv_cells_never_start_a_formula(tmp_path: Path, opdrift: Opdrift) -> None:
    text = release_text("2.14.1")
    repo = tmp_path / "repo"
    _small_history(repo, [text])
    _git(repo, "commit", "--amend", "-qm", "=cmd|' /C calc'!A0")
    run = opdrift("history", str(repo), "--format", "csv")
    assert run.code == 0 and ",'=cmd|' /C calc'!A0," in run.out


@pytest.mark.slow
def test_the_walk_does_not_depend_on_string_hashing(tmp_path: Path) -> None:
    """Two overloads whose comments announce different alias targets: a cold parse takes the first
    by name, so the walk must re-decide the base in name order; set order would move the answer
    with PYTHONHASHSEED."""
    text = release_text("2.14.1")
    pair = (
        "\n# alias for relu\n- func: opdrift_alias.a(Tensor self) -> Tensor\n"
        "\n# alias for sigmoid\n- func: opdrift_alias.b(Tensor self) -> Tensor\n"
    )
    edited = pair.replace("opdrift_alias.b(Tensor self)", "opdrift_alias.b(Tensor self, int k=0)")
    repo = tmp_path / "repo"
    _small_history(repo, [text + pair, text + edited])
    script = (
        "import sys; from opdrift.history import walk as history; "
        "t = history.walk(sys.argv[1], history.WalkOptions()); d = t.points[-1].drift; "
        "print(d.changed, d.added, d.removed)"
    )
    outputs = set()
    for seed in ("0", "1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script, str(repo)], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(done.stdout.strip())
    assert outputs == {"('opdrift_alias.b',) () ()"}


def test_tags_with_paths_is_refused_and_an_unwritable_cache_is_said_once(
    tmp_path: Path, opdrift: Opdrift
) -> None:
    text = release_text("2.14.1")
    repo = tmp_path / "repo"
    _small_history(repo, [text, text + _NEW_OP, text])
    run = opdrift("history", str(repo), "--tags", "v*", "--paths", "README")
    assert run.code == 2 and "does not combine with --paths" in run.err
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache directory should be")
    run = opdrift("history", str(repo), "--cache", str(blocked), "--format", "csv")
    assert run.code == 0 and run.err.count("cannot write cache file") == 1
