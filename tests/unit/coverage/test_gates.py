"""Ascend op-plugin's version gates, applied at the torch version a ``gh:`` SOURCE's version.txt names.

The list is Ascend's real op_plugin_functions.yaml (tests/data/backends/real, SOURCES.md): it builds
`_unsafe_index.Tensor` for torch 2.1 only (``op_api: v2.1``) and
`fake_quantize_per_channel_affine_cachemask` for 2.1 and 2.2 (``op_api: v2.1, v2.2``), and `mean.dim`
for every release from 2.1 on (``[v2.1, newest]``). pytorch/pytorch is served on the fake GitHub API
(real HTTP) with release 2.13.0's operator files and a version.txt saying 2.13.0a0, as main says
before the 2.13 branch cut. A pull request that changes `_unsafe_index.Tensor` and removes
`fake_quantize_per_channel_affine_cachemask` touches nothing Ascend builds against 2.13: no channel
may tell it otherwise. One that changes `mean.dim`'s signature stops its kernel from compiling.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA, release_text
from fake_github import FakeGitHub
from goldens import check_golden_entry, updating
from watch_upstream import UPSTREAM, ServedUpstream, with_fast, with_gated_ops_changed

from opdrift.errors import SourceError
from opdrift.github.api import ApiSettings
from opdrift.github.ghcache import blob_sha
from opdrift.github.ghsource import read_github_source
from opdrift.github.retry import RetryPolicy

TOKEN = "ghs_versiongates00000000000000000000000"
REPO = "me/ascend"
GATED = ("_unsafe_index", "fake_quantize_per_channel_affine_cachemask")
OP_PLUGIN = lzma.decompress(
    (DATA / "backends" / "real" / "op-plugin.op_plugin_functions.yaml.xz").read_bytes()
)


@pytest.fixture
def up(github_server: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ServedUpstream:
    github_server.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
    github_server.add_repo(REPO)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("OPDRIFT_BOT_LOGIN", "github-actions[bot]")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "op_plugin_functions.yaml").write_bytes(OP_PLUGIN)
    return ServedUpstream.serve(github_server, "2.13.0", "2.13.0a0")


@pytest.mark.slow
def test_the_vendored_list_gates_the_two_ops_to_torch_2_1_and_2_2() -> None:
    """What the tests below rest on, read from the real list (not assumed)."""
    from opdrift.coverage.yaml_lists import read_op_plugin

    def names(version: str) -> set[str]:
        return {op.name for op in read_op_plugin(OP_PLUGIN.decode(), "op_plugin_functions.yaml", version).ops}

    for version, listed in (("2.1", True), ("2.2", True), ("2.13.0a0", False), ("2.14", False)):
        assert ("fake_quantize_per_channel_affine_cachemask" in names(version)) is listed, version
    assert "_unsafe_index.Tensor" in names("2.1")
    assert "_unsafe_index.Tensor" not in names("2.2") | names("2.13.0a0")
    assert "mean.dim" in names("2.1") & names("2.13.0a0") & names("2.15")


def _impact_section(body: str) -> str:
    return body.split("### 🧭 Downstream impact", 1)[1].split("\n### ", 1)[0]


def _version_reads(fake: FakeGitHub, since: int = 0) -> list[str]:
    return [r.path for r in fake.requests[since:] if r.path.split("?")[0].endswith("/contents/version.txt")]


@pytest.mark.slow
def test_the_pr_comment_on_gh_sources_tells_ascend_only_of_the_op_it_builds_at_the_commits_version(
    up: ServedUpstream, opdrift: Opdrift, tmp_path: Path
) -> None:
    """The privileged poster's run: BASE and HEAD read through the API (the merge base and the head),
    the config's `backends:` naming Ascend's list. The PR changes the two gated ops and `mean.dim`:
    the impact table names `mean.dim` alone, and version.txt costs one request per commit, once."""
    native, derivatives = with_gated_ops_changed(
        release_text("2.13.0"), release_text("2.13.0", "derivatives.yaml")
    )
    head = up.head(with_fast(native), derivatives=derivatives)
    pr = up.open("gated ops, and mean: a fast path", head)
    config = tmp_path / "opdrift.yml"
    config.write_text("backends:\n  - {name: Ascend, kind: op-plugin, path: op_plugin_functions.yaml}\n")
    argv = (
        "comment", "--repo", UPSTREAM, "--pr", str(pr), "--head-sha", head, "--dry-run", "--config", str(config),
        f"gh:{UPSTREAM}#{pr}:merge-base", f"gh:{UPSTREAM}@{head}",
    )  # fmt: skip
    run = opdrift(*argv)
    assert run.code == 0, run.err
    assert "no torch version" not in run.err
    # The drift itself reports both changes: they are upstream's, whoever builds them.
    assert "_unsafe_index.Tensor" in run.out and "fake_quantize_per_channel_affine_cachemask" in run.out
    table = _impact_section(run.out)
    assert "| `Ascend` | `op-plugin` |" in table
    assert "`mean.dim`" in table
    assert not [name for name in GATED if name in table], table
    assert sorted(_version_reads(up.fake)) == sorted(
        f"/repos/{UPSTREAM}/contents/version.txt?ref={sha}" for sha in (up.main, head)
    )
    # Again: the version of each commit is cached with its blob, no request.
    mark = len(up.fake.requests)
    again = opdrift(*argv)
    assert again.out == run.out
    assert _version_reads(up.fake, mark) == []


@pytest.mark.slow
def test_coverage_of_a_gh_source_applies_the_gates_of_its_version_txt(
    up: ServedUpstream, opdrift: Opdrift, tmp_path: Path
) -> None:
    """`coverage` against gh: SOURCEs: at 2.13.0a0 the two gated ops are not Ascend's, so the one
    removed is no stale entry and the changed one raises no schema alert; `--torch-version 2.1` (the
    release that builds them) shows what the gates keep out."""
    native, derivatives = with_gated_ops_changed(
        release_text("2.13.0"), release_text("2.13.0", "derivatives.yaml")
    )
    head = up.head(native, derivatives=derivatives)
    plugin = f"op-plugin={tmp_path / 'op_plugin_functions.yaml'}"
    argv = ("coverage", f"gh:{UPSTREAM}@{head}", "--base", f"gh:{UPSTREAM}@{up.main}", "--backend", plugin)
    run = opdrift(*argv, "--format", "json")
    assert run.code == 0, run.err
    assert "no torch version" not in run.err
    report = run.out
    assert not [name for name in GATED if name in report]
    at_2_1 = opdrift(*argv, "--format", "json", "--torch-version", "2.1")
    assert at_2_1.code == 0, at_2_1.err
    assert all(name in at_2_1.out for name in GATED)
    assert json.loads(report)  # a whole report, not an error


@pytest.mark.slow
def test_the_watch_warns_nobody_of_a_pr_that_touches_only_ops_gated_out_at_its_version(
    up: ServedUpstream, opdrift: Opdrift, tmp_path: Path
) -> None:
    """`opdrift watch` as it runs hourly: both open PRs touch the operator files and are judged from
    their merge base to their head, read as gh:pytorch/pytorch@SHA; the one that changes and removes
    the two gated ops is on no dashboard row and in no comment, the one that changes `mean.dim` is,
    with @ascend-team mentioned once."""
    native, derivatives = with_gated_ops_changed(
        release_text("2.13.0"), release_text("2.13.0", "derivatives.yaml")
    )
    gated = up.open("gated ops", up.head(native, derivatives=derivatives))
    mean = up.open("mean: a fast path", up.head(with_fast(release_text("2.13.0"))))
    config = tmp_path / "opdrift.yml"
    config.write_text(
        'subscriptions:\n  - who: ["@ascend-team"]\n'
        "    backend: {kind: op-plugin, path: op_plugin_functions.yaml}\n"
    )
    out = tmp_path / "watch.json"
    argv = ("watch", "--upstream", UPSTREAM, "--repo", REPO, "--config", str(config))
    run = opdrift(*argv, "--format", "json", "-o", str(out))
    assert run.code == 0, run.err
    assert "2 judged" in run.err and "no torch version" not in run.err
    assert [p["number"] for p in json.loads(out.read_text())["pulls"]] == [mean]
    (issue,) = [i for i in up.fake.issues(REPO) if i["user"]["login"] == "github-actions[bot]"]
    body = str(issue["body"])
    assert f"/pull/{mean})" in body and f"/pull/{gated})" not in body
    assert not [name for name in GATED if name in body]
    (comment,) = up.fake.comments(REPO, int(issue["number"]))
    text = str(comment["body"])
    assert text.count("@ascend-team") == 1 and "`mean.dim`" in text
    assert not [name for name in GATED if name in text]


@pytest.mark.slow
def test_a_judgement_is_cached_by_the_torch_version_of_both_sides_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    """A version.txt bump changes none of the three operator files, but it changes which entries of
    Ascend's list count: a judgement made at 2.1 is not the one at 2.13.0a0."""
    from opdrift.app.watch_judge import Judge, JudgementCache
    from opdrift.cli.common import start_run, warn
    from opdrift.config.file import parse_config
    from opdrift.model import SourceFiles, SourceMeta, TextFile

    (tmp_path / "op_plugin_functions.yaml").write_bytes(OP_PLUGIN)
    cfg = parse_config(
        'subscriptions:\n  - who: ["@ascend-team"]\n    backend: {kind: op-plugin, path: op_plugin_functions.yaml}\n',
        str(tmp_path / "opdrift.yml"),
        base_dir=str(tmp_path),
    )
    native, derivatives = with_gated_ops_changed(
        release_text("2.13.0"), release_text("2.13.0", "derivatives.yaml")
    )
    texts = {
        "base": (release_text("2.13.0"), release_text("2.13.0", "derivatives.yaml")),
        "head": (native, derivatives),
    }
    version: list[str | None] = ["2.1.0a0"]

    def read(spec: str) -> SourceFiles:
        nf, deriv = texts[spec]
        return SourceFiles(
            meta=SourceMeta(kind="git", path=spec, torch_version=version[0]),
            native_functions=TextFile(f"{spec}:native_functions.yaml", nf),
            tags=TextFile(f"{spec}:tags.yaml", release_text("2.13.0", "tags.yaml")),
            derivatives=TextFile(f"{spec}:derivatives.yaml", deriv),
        )

    judge = Judge(cfg, lambda sha: sha, read, cache=JudgementCache(tmp_path / "watch", warn=print))
    (at_2_1,) = judge("base", "head")
    assert [k.op for k in at_2_1.broken] == ["_unsafe_index.Tensor"]
    assert at_2_1.removed == ("fake_quantize_per_channel_affine_cachemask",)
    version[0] = "2.13.0a0"
    assert judge("base", "head") == ()
    assert (judge.judged, judge.cached) == (2, 0)
    # A source with no version at all (no release tag, no version.txt): every entry counts, and the
    # run says so once however many pull requests it judges (the command line's warn, once a run).
    start_run()
    version[0] = None
    blind = Judge(cfg, lambda sha: sha, read, warn=warn)
    (ungated,) = blind("base", "head")
    assert ungated.removed == ("fake_quantize_per_channel_affine_cachemask",)
    blind("head", "base")
    assert blind.judged == 2
    (warning,) = capsys.readouterr().err.splitlines()
    assert "op_plugin_functions.yaml: " in warning and "every entry counts" in warning
    said = warning.replace(str(tmp_path), "DIR") + "\n"
    check_golden_entry("warnings.lines.txt", "op-plugin: no torch version", said, updating(request))


def _settings(fake: FakeGitHub, cache: Path) -> ApiSettings:
    return ApiSettings(
        api_url=fake.api_url, token=TOKEN, cache_dir=cache, retry=RetryPolicy(total_seconds=30)
    )


def test_a_gh_sources_version_is_its_tags_else_its_version_txts_and_what_is_no_version_is_none(
    up: ServedUpstream, tmp_path: Path
) -> None:
    fake, settings = up.fake, _settings(up.fake, tmp_path / "c")
    assert read_github_source(f"gh:{UPSTREAM}@main", settings).meta.torch_version == "2.13.0a0"
    # A release tag names its version: no request for version.txt.
    fake.repos[UPSTREAM].refs["v2.13.0"] = up.main
    mark = len(fake.requests)
    assert read_github_source(f"gh:{UPSTREAM}@v2.13.0", settings).meta.torch_version == "2.13.0"
    assert _version_reads(fake, mark) == []
    # A head whose version.txt is no version (any PR may write one), or that has none: no version,
    # and no error. The absence is cached too.
    files = dict(up.files)
    files["version.txt"] = b"<script>alert(1)</script>\n"
    garbage = fake.add_commit(UPSTREAM, files, parent=up.main)
    del files["version.txt"]
    absent = fake.add_commit(UPSTREAM, files, parent=up.main)
    for sha in (garbage, absent, absent):
        assert read_github_source(f"gh:{UPSTREAM}@{sha}", settings).meta.torch_version is None
    assert [r.status for r in fake.requests if r.path.endswith(f"version.txt?ref={absent}")] == [404]
    # Content that is not the blob it claims to be is refused, as for the operator files.
    files["version.txt"] = b"2.13.0a0\n"
    forged = fake.add_commit(UPSTREAM, files, parent=up.main, date="2026-12-03T10:00:00Z")
    fake.blobs[blob_sha(b"2.13.0a0\n")] = b"9.99.0\n"
    with pytest.raises(SourceError, match="not blob"):
        read_github_source(f"gh:{UPSTREAM}@{forged}", _settings(fake, tmp_path / "other"))


def test_a_checkouts_version_txt_is_read_as_any_other_sources(tmp_path: Path) -> None:
    from opdrift.sources.read import read_source

    root = tmp_path / "pytorch"
    native = root / "aten" / "src" / "ATen" / "native" / "native_functions.yaml"
    native.parent.mkdir(parents=True)
    native.write_text(release_text("2.13.0"))
    for text, version in (("2.13.0a0\n", "2.13.0a0"), ("not a version\n", None), ("", None)):
        (root / "version.txt").write_text(text)
        assert read_source(str(root)).meta.torch_version == version
