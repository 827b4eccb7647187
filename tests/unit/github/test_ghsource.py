"""The gh: SOURCE over real HTTP against the fake GitHub API: same report as the files, cached by blob sha."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import release_text
from fake_github import FakeGitHub

from opdrift.errors import SourceError
from opdrift.github.api import ApiSettings
from opdrift.github.ghcache import BlobCache, blob_sha
from opdrift.github.ghsource import parse_spec, read_github_source
from opdrift.github.retry import RetryPolicy
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH

REPO = "acme/pytorch"
TOKEN = "ghs_ghsourcetoken00000000000000000000"
NATIVE_DIR = NATIVE_PATH.rpartition("/")[0]
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}


def _files(version: str) -> dict[str, bytes]:
    return {path: release_text(version, name).encode() for path, name in NAMES.items()}


@pytest.fixture
def fake(github_server: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeGitHub:
    github_server.add_token(TOKEN, "reader")
    github_server.add_repo(REPO)
    first = github_server.add_commit(REPO, _files("2.14.1"), refs=("v2.14.1",), date="2026-03-02T10:00:00Z")
    github_server.add_commit(
        REPO, _files("2.15.0"), refs=("v2.15.0", "main"), date="2026-06-01T10:00:00Z", parent=first
    )
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return github_server


def _without_sources(report: str) -> object:
    data = json.loads(report)
    return {k: v for k, v in data.items() if k not in ("base", "head")}


@pytest.mark.slow
def test_diff_of_two_tags_is_the_report_of_the_files_and_a_repeat_fetches_no_content(
    fake: FakeGitHub, opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    argv = ("diff", f"gh:{REPO}@v2.14.1", f"gh:{REPO}@v2.15.0", "--fail-on", "never")
    files = ("diff", str(release_file("2.14.1")), str(release_file("2.15.0")), "--fail-on", "never")
    remote = opdrift(*argv, "--format", "json")
    assert remote.code == 0, remote.err
    local = opdrift(*files, "--format", "json")
    assert _without_sources(remote.out) == _without_sources(local.out)
    assert json.loads(remote.out)["added"], "the two releases differ"
    head = json.loads(remote.out)["head"]
    assert (head["kind"], head["revision"], head["date"]) == ("git", "v2.15.0", "2026-06-01T10:00:00Z")
    assert head["commit"] == fake.repos[REPO].refs["v2.15.0"]
    blobs = [r.path for r in fake.requests if "/git/blobs/" in r.path]
    distinct = {blob_sha(d) for v in ("2.14.1", "2.15.0") for d in _files(v).values()}
    assert sorted(blobs) == sorted(
        f"/repos/{REPO}/git/blobs/{oid}" for oid in distinct
    )  # a file both share: once
    assert all(
        r.headers.get("Accept", "").startswith("application/vnd.github.raw")
        for r in fake.requests
        if "/git/blobs/" in r.path
    )
    assert all(r.headers.get("Authorization") == f"Bearer {TOKEN}" for r in fake.requests)

    # Blob shas come from the trees of the two directories, not from the contents API, whose JSON
    # carries the whole file base64-encoded: apart from the blobs themselves, no answer holds content.
    assert not [r for r in fake.requests if "/contents/" in r.path]
    trees = sorted(r.path.split("/git/trees/")[1] for r in fake.requests if "/git/trees/" in r.path)
    assert trees == sorted(
        f"{fake.repos[REPO].refs[tag]}:{d}"
        for tag in ("v2.14.1", "v2.15.0")
        for d in (NATIVE_DIR, "tools/autograd")
    )
    metadata = sum(r.size for r in fake.requests if "/git/blobs/" not in r.path)
    assert (
        metadata
        < min(len(d) for d in _files("2.14.1").values())
        < 100_000
        < len(_files("2.14.1")[NATIVE_PATH])
    )

    text_remote = opdrift(*argv, "--format", "text")
    before = len(fake.requests)
    again = opdrift(*argv, "--format", "text")
    assert again.out == text_remote.out
    repeat = fake.requests[before:]
    assert not [r for r in repeat if "/git/blobs/" in r.path], "the cache by blob sha serves every content"
    # Per side only the commit, its sha (the tag resolved in the sha media type) then its git object:
    # a tree at a commit sha never changes, so its listing is cached too.
    assert [r.path.split("/")[-2] for r in repeat] == ["commits"] * 4
    assert sum(r.size for r in repeat) < 2_000
    assert text_remote.out.splitlines()[1:] == opdrift(*files, "--format", "text").out.splitlines()[1:]


def test_snapshot_of_a_pull_request_and_its_merge_base(
    fake: FakeGitHub, opdrift: Opdrift, tmp_path: Path
) -> None:
    state = fake.repos[REPO]
    base_tip = fake.add_commit(
        REPO, _files("2.13.0"), date="2026-06-03T10:00:00Z", parent=state.refs["v2.14.1"]
    )
    number = fake.add_pull(REPO, sha=state.refs["v2.15.0"])
    fake.set_pull_base(REPO, number, base_tip)
    out = tmp_path / "pr.json"
    assert opdrift("snapshot", f"gh:{REPO}#{number}", "-o", str(out)).code == 0
    assert state.refs["v2.15.0"] in out.read_text()
    mb = tmp_path / "mb.json"
    run = opdrift("snapshot", f"gh:{REPO}#{number}:merge-base", "-o", str(mb))
    assert run.code == 0, run.err
    assert state.refs["v2.14.1"] in mb.read_text()  # the fork point, not the base branch's tip
    assert any(r.path.startswith(f"/repos/{REPO}/compare/{base_tip}...") for r in fake.requests)


def test_errors_are_one_line_with_exit_2(fake: FakeGitHub, opdrift: Opdrift) -> None:
    for spec, words in (
        (f"gh:{REPO}@no-such-tag", "no commit no-such-tag"),
        (f"gh:{REPO}", "a gh: SOURCE is gh:OWNER/NAME@REF"),
        ("gh:acme/absent@main", "no commit main in acme/absent"),
    ):
        run = opdrift("stats", spec)
        assert run.code == 2, (spec, run.err)
        assert run.err.count("\n") == 1
        assert words in run.err
        assert TOKEN not in run.err


def test_server_errors_are_retried_and_a_bad_cache_entry_is_refetched(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    fake.fail("GET", r"/commits/", 502, times=2)
    settings = ApiSettings(
        api_url=fake.api_url,
        token=TOKEN,
        cache_dir=tmp_path / "c",
        retry=RetryPolicy(first_delay=0.01, max_delay=0.02),
    )
    files = read_github_source(f"gh:{REPO}@v2.14.1", settings)
    assert files.native_functions is not None
    assert [r.status for r in fake.requests if "/commits/" in r.path] == [
        502,
        502,
        200,
        200,
    ]  # ref, git/commits
    oid = blob_sha(_files("2.14.1")[NATIVE_PATH])
    cached = tmp_path / "c" / "blobs" / oid[:2] / oid
    cached.write_bytes(b"tampered")
    assert BlobCache(tmp_path / "c").get(oid) is None
    # A tree listing that no longer parses, or names another blob under its old digest, is a miss too.
    listings = sorted((tmp_path / "c" / "trees").rglob("*.json"))
    assert len(listings) == 2
    listings[0].write_bytes(b"{truncated")
    entry = json.loads(listings[1].read_bytes())
    entry["value"] = {name: [kind, "0" * 40, size] for name, (kind, _, size) in entry["value"].items()}
    listings[1].write_text(json.dumps(entry))
    mark = len(fake.requests)
    files = read_github_source(f"gh:{REPO}@v2.14.1", settings)
    assert cached.read_bytes() == _files("2.14.1")[NATIVE_PATH]
    assert files.derivatives is not None and files.derivatives.text == release_text(
        "2.14.1", "derivatives.yaml"
    )
    assert sum("/git/trees/" in r.path for r in fake.requests[mark:]) == 2


def test_a_file_over_the_cap_is_refused_before_it_is_downloaded(
    fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import opdrift.github.ghsource as ghsource

    monkeypatch.setattr(ghsource, "MAX_FILE_BYTES", 1000)
    settings = ApiSettings(api_url=fake.api_url, token=TOKEN, cache_dir=None)
    with pytest.raises(SourceError, match="over the 1000-byte limit"):
        read_github_source(f"gh:{REPO}@v2.14.1", settings)
    assert not [r for r in fake.requests if "/git/blobs/" in r.path]


def test_spec_grammar() -> None:
    assert parse_spec("gh:pytorch/pytorch@v2.14.1").ref == "v2.14.1"
    assert parse_spec("gh:pytorch/pytorch#123").pr == 123
    assert parse_spec("gh:pytorch/pytorch#123:merge-base").merge_base
    for bad in ("gh:pytorch@main", "gh:o/n@", "gh:o/n#0", "gh:o/n@a b", "gh:-o/n@main"):
        with pytest.raises(SourceError):
            parse_spec(bad)


def test_the_blob_cache_keeps_the_most_recently_used_blobs_under_its_cap(tmp_path: Path) -> None:
    import os

    cache = BlobCache(tmp_path)
    blobs = [bytes([65 + n]) * 10_000 for n in range(6)]
    for n, data in enumerate(blobs):
        cache.put(blob_sha(data), data)
        path = tmp_path / "blobs" / blob_sha(data)[:2] / blob_sha(data)
        os.utime(path, (1_000_000 + n, 1_000_000 + n))  # put one after the other, oldest first
    assert cache.get(blob_sha(blobs[0])) == blobs[0], "read: now the most recently used"
    cache.prune(limit=45_000)  # 60,000 bytes held: down to 3/4 of the cap, the least recently used first
    kept = [n for n, data in enumerate(blobs) if cache.get(blob_sha(data)) is not None]
    assert kept == [0, 4, 5]
    cache.prune(limit=45_000)
    assert len(list((tmp_path / "blobs").glob("*/*"))) == 3, "under the cap: nothing more goes"


def test_a_watch_run_prunes_the_blobs_its_reads_cached(
    fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import opdrift.github.ghcache as ghcache
    from opdrift.github.pulls import PullsClient

    settings = ApiSettings(api_url=fake.api_url, token=TOKEN, cache_dir=tmp_path / "c")
    read_github_source(f"gh:{REPO}@v2.14.1", settings)
    read_github_source(f"gh:{REPO}@v2.15.0", settings)
    held = list((tmp_path / "c" / "blobs").glob("*/*"))
    assert len(held) >= 4, "two releases' files, some shared"
    monkeypatch.setattr(ghcache, "MAX_BLOB_BYTES", sum(p.stat().st_size for p in held) // 2)
    PullsClient(settings, REPO).close()
    assert 0 < len(list((tmp_path / "c" / "blobs").glob("*/*"))) < len(held)
