"""The PR comment's Downstream impact table: the config's `backends:` list, each list read through a
``gh:OWNER/NAME@REF:PATH`` spec over the (fake) REST API, judged by the backend subscriptions' engine.

The backends are real: XLA's xla_native_functions.yaml and dlprim's C++ `src/` tree, vendored in
tests/data/backends/real (SOURCES.md). The PRs are real too: one carries the 2.5.0 → 2.6.0 change of
`rrelu_with_noise`'s `noise` to a mutable `Tensor(b!)` (which changes every form of its kernel's C++
signature, so XLA's kernel stops compiling), the other is the whole 2.12.0 → 2.13.0 drift, which asks
nothing of either backend.

Refresh the golden file with ``pytest tests/unit/app/test_prepare.py --update-golden``.
"""

from __future__ import annotations

import lzma
import tarfile
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import release_text, write_release
from fake_github import FakeGitHub
from goldens import check_golden, check_golden_entry, updating

from opdrift.config.file import parse_config
from opdrift.errors import ConfigError, SourceError
from opdrift.github import ghfiles
from opdrift.github.api import ApiSettings
from opdrift.github.ghcache import blob_sha
from opdrift.github.retry import RetryPolicy

REAL = Path(__file__).parents[2] / "data" / "backends" / "real"
GOLDEN = Path(__file__).parents[2] / "golden"
TOKEN = "ghs_impacttoken000000000000000000000000"
XLA_REPO, XLA_PATH = "pytorch/xla", "codegen/xla_native_functions.yaml"
DLPRIM_REPO = "artyom-beilis/pytorch_dlprim"
XLA_SPEC = f"gh:{XLA_REPO}@master:{XLA_PATH}"
DLPRIM_SPEC = f"gh:{DLPRIM_REPO}@master:src"
CONFIG = f"""\
backends:
  - name: XLA
    kind: xla
    path: {XLA_SPEC}
  - name: dlprim
    kind: cpp
    path: {DLPRIM_SPEC}
"""
FILES = ("native_functions.yaml", "tags.yaml", "derivatives.yaml")


def _dlprim_files() -> dict[str, bytes]:
    """dlprim's real src/ tree, path → bytes, as its repository holds it."""
    out = {}
    with tarfile.open(REAL / "pytorch_dlprim.src.tar.xz") as tar:
        for member in tar.getmembers():
            if member.isfile():
                handle = tar.extractfile(member)
                assert handle is not None
                out[member.name.removeprefix("./")] = handle.read()
    assert all(p.startswith("src/") for p in out) and len(out) > 5
    return out


XLA_YAML = lzma.decompress((REAL / "pytorch-xla.xla_native_functions.yaml.xz").read_bytes())


@pytest.fixture
def fake(github_server: FakeGitHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeGitHub:
    github_server.add_token(TOKEN, "github-actions[bot]")
    github_server.add_repo(XLA_REPO)
    github_server.add_commit(XLA_REPO, {XLA_PATH: XLA_YAML, "README.md": b"xla\n"}, refs=("master",))
    github_server.add_repo(DLPRIM_REPO)
    github_server.add_commit(DLPRIM_REPO, {**_dlprim_files(), "README.md": b"dlprim\n"}, refs=("master",))
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return github_server


def _settings(fake: FakeGitHub, tmp_path: Path) -> ApiSettings:
    return ApiSettings(
        api_url=fake.api_url, token=TOKEN, cache_dir=tmp_path / "blobs", retry=RetryPolicy(total_seconds=30)
    )


def _requests(fake: FakeGitHub, since: int) -> list[str]:
    return [r.path.split("?")[0].rsplit("/", 2)[-2] for r in fake.requests[since:]]


# --- gh:OWNER/NAME@REF:PATH -----------------------------------------------------------------------


def test_a_file_is_read_from_its_blob_sha_in_the_trees_api_and_a_repeat_downloads_no_content(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    settings, said = _settings(fake, tmp_path), list[str]()
    before = len(fake.requests)
    with ghfiles.materialised(XLA_SPEC, settings, lambda rel: False, warn=said.append) as got:
        assert got.root.read_bytes() == XLA_YAML
        assert (got.files, got.downloaded) == (1, 1)
        folder = got.root.parent
    assert not folder.exists(), "the temporary copy is removed"
    paths = [r.path for r in fake.requests[before:]]
    assert paths == [
        f"/repos/{XLA_REPO}/commits/master",
        f"/repos/{XLA_REPO}/git/trees/{fake.repos[XLA_REPO].refs['master']}:codegen",
        f"/repos/{XLA_REPO}/git/blobs/{blob_sha(XLA_YAML)}",
    ]
    assert not [r for r in fake.requests if "/contents/" in r.path], "no content inside JSON"
    before = len(fake.requests)
    with ghfiles.materialised(XLA_SPEC, settings, lambda rel: False, warn=said.append) as got:
        assert got.root.read_bytes() == XLA_YAML and got.downloaded == 0
    assert [p for p in fake.requests[before:] if "/git/blobs/" in p.path] == []
    assert len(fake.requests) - before == 2  # the commit and the tree: no content
    assert said == []


def test_a_directory_is_read_recursively_only_the_files_its_reader_wants_and_cached(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    from opdrift.coverage.backends import reads_in_tree

    sources = {p: d for p, d in _dlprim_files().items() if reads_in_tree("cpp", p.removeprefix("src/"))}
    settings, said = _settings(fake, tmp_path), list[str]()
    before = len(fake.requests)
    with ghfiles.materialised(
        DLPRIM_SPEC, settings, lambda r: reads_in_tree("cpp", r), warn=said.append
    ) as got:
        written = {
            "src/" + p.relative_to(got.root).as_posix(): p.read_bytes()
            for p in got.root.rglob("*")
            if p.is_file()
        }
        assert written == sources
        assert (got.files, got.downloaded) == (len(sources), len(sources))
    kinds = _requests(fake, before)
    assert (
        kinds.count("blobs") == len(sources) and kinds.count("trees") == 2 and len(kinds) == len(sources) + 3
    )
    before = len(fake.requests)
    with ghfiles.materialised(
        DLPRIM_SPEC, settings, lambda r: reads_in_tree("cpp", r), warn=said.append
    ) as got:
        assert got.downloaded == 0
    assert len(fake.requests) - before == 3 and said == []


def test_a_hostile_tree_is_skipped_or_refused_and_nothing_is_written_outside_the_copy(
    fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    evil = blob_sha(b"evil\n")
    fake.blobs[evil] = b"evil\n"
    fake.extra_tree_entries = [
        {"path": "../../escape.cpp", "mode": "100644", "type": "blob", "sha": evil, "size": 5},
        {"path": "/abs.cpp", "mode": "100644", "type": "blob", "sha": evil, "size": 5},
        {"path": "link.cpp", "mode": "120000", "type": "blob", "sha": evil, "size": 5},
        {"path": "third_party/sub.cpp", "mode": "160000", "type": "commit", "sha": evil},
    ]
    settings, said = _settings(fake, tmp_path), list[str]()
    with ghfiles.materialised(DLPRIM_SPEC, settings, lambda r: r.endswith(".cpp"), warn=said.append) as got:
        names = {p.name for p in got.root.parent.rglob("*")}
        assert not {"escape.cpp", "abs.cpp", "link.cpp", "sub.cpp"} & names
        assert all(p.resolve().is_relative_to(got.root.parent) for p in got.root.parent.rglob("*"))
    skipped = sorted(m.split(": skipped ")[1] for m in said)
    # each entry skipped once, by its path as the tree gave it (golden: why, in words)
    assert [s.rsplit(": ", 1)[0] for s in skipped] == [
        "'../../escape.cpp'",
        "'/abs.cpp'",
        "link.cpp",
        "third_party/sub.cpp",
    ]
    said_skipped = "".join(f"{s}\n" for s in skipped)
    check_golden_entry(
        "warnings.lines.txt", "a source tree: entries skipped", said_skipped, updating(request)
    )
    assert not (tmp_path.parent / "escape.cpp").exists()
    monkeypatch.setattr(ghfiles, "MAX_TREE_FILES", 3)
    with pytest.raises(SourceError, match="over the bound of 3 files"):
        ghfiles.fetch_into(DLPRIM_SPEC, settings, _empty(tmp_path / "a"), lambda r: True, warn=said.append)
    with pytest.raises(SourceError, match="holds no file that a backend of this kind reads"):
        ghfiles.fetch_into(DLPRIM_SPEC, settings, _empty(tmp_path / "b"), lambda r: False, warn=said.append)
    monkeypatch.setattr(ghfiles, "MAX_TREE_FILES", 500)
    monkeypatch.setattr(ghfiles, "MAX_TREE_BYTES", 1000)
    with pytest.raises(SourceError, match="bytes to read, over the bound of 500 files and 1000 bytes"):
        ghfiles.fetch_into(DLPRIM_SPEC, settings, _empty(tmp_path / "c"), lambda r: True, warn=said.append)
    fake.truncated_trees = True
    with pytest.raises(SourceError, match="src is too large for one tree listing"):
        ghfiles.fetch_into(DLPRIM_SPEC, settings, _empty(tmp_path / "d"), lambda r: True, warn=said.append)
    assert not [p for x in "abcd" for p in (tmp_path / x).iterdir()], "refused before anything is written"


def _empty(folder: Path) -> Path:
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gh:pytorch/xla@master", "gh:OWNER/NAME@REF:PATH"),
        ("gh:pytorch/xla@master:../etc/passwd", "'..' part"),
        ("gh:pytorch/xla@master:codegen//x.yaml", "empty"),
    ],
)
def test_a_path_spec_is_checked(spec: str, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        ghfiles.parse_path_spec(spec)


def test_a_path_that_is_missing_says_so(fake: FakeGitHub, tmp_path: Path) -> None:
    spec = f"gh:{XLA_REPO}@master:codegen/nope.yaml"
    with pytest.raises(SourceError, match="does not exist at master"):
        ghfiles.fetch_into(spec, _settings(fake, tmp_path), tmp_path, lambda r: True, warn=print)


# --- the config -------------------------------------------------------------------------------------


def test_backends_parse_with_local_paths_against_the_config_and_gh_specs_as_written() -> None:
    cfg = parse_config(
        CONFIG + "  - name: mine\n    kind: text\n    path: ops.txt\n", "cfg/c.yml", base_dir="cfg"
    )
    assert [(b.name, b.spec.kind, b.spec.resolved, b.remote, b.line) for b in cfg.backends] == [
        ("XLA", "xla", XLA_SPEC, True, 2),
        ("dlprim", "cpp", DLPRIM_SPEC, True, 5),
        ("mine", "text", "cfg/ops.txt", False, 8),
    ]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("backends: {name: x}\n", 1, "backends must be a list"),
        ("backends:\n  - name: XLA\n    kind: xla\n", 2, "backends: item 1 has no `path:`"),
        ("backends:\n  - name: XLA\n    kind: xls\n    path: x.yaml\n", 3, "unknown backend kind 'xls'"),
        ("backends:\n  - name: MPS\n    kind: dispatch\n    path: MPS\n", 3, "not a downstream backend"),
        (
            "backends:\n  - name: XLA\n    kind: xla\n    path: gh:pytorch/xla@master\n",
            4,
            "gh:OWNER/NAME@REF:PATH",
        ),
        ("backends:\n  - name: XLA\n    kind: xla\n    path: gh:pytorch/xla@master:a/../b\n", 4, "'..'"),
        (
            "backends:\n  - {name: XLA, kind: xla, path: a}\n  - {name: xla, kind: cpp, path: b}\n",
            3,
            "item 1's too",
        ),
        ("backends:\n  - {name: XLA, kind: xla, path: a, who: ['@x']}\n", 2, "unknown key 'who'"),
    ],
)
def test_backends_errors_name_their_line(text: str, line: int, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "c.yml")
    assert (info.value.line, message in info.value.message) == (line, True), info.value.message


# --- the comment --------------------------------------------------------------------------------------


def _pr(tmp_path: Path) -> tuple[Path, Path]:
    """BASE: 2.5.0's three files; HEAD: the same with 2.6.0's `rrelu_with_noise` schemas (native_functions
    and derivatives), the change PyTorch made between those releases, as one PR."""
    base, head = tmp_path / "base", tmp_path / "head"
    for folder in (base, head):
        folder.mkdir()
    for name in FILES:
        old, new = release_text("2.5.0", name), release_text("2.6.0", name)
        (base / name).write_text(old, encoding="utf-8")
        key = "- func: rrelu_with_noise" if name == "native_functions.yaml" else "- name: rrelu_with_noise"
        newer = {ln.split("(")[0]: ln for ln in new.splitlines() if ln.startswith(key)}
        lines = [newer.get(ln.split("(")[0], ln) if ln.startswith(key) else ln for ln in old.splitlines()]
        (head / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert (head / "native_functions.yaml").read_text() != (base / "native_functions.yaml").read_text()
    return base, head


def _comment(opdrift: Opdrift, fake: FakeGitHub, config: Path, base: Path, head: Path) -> str:
    fake.add_repo("acme/pytorch")
    pr = fake.add_pull("acme/pytorch")
    run = opdrift(
        "comment", "--repo", "acme/pytorch", "--pr", str(pr), "--dry-run", "--config", str(config),
        str(base / "native_functions.yaml"), str(head / "native_functions.yaml"),
    )  # fmt: skip
    assert run.code == 0, run.err
    return run.out


def test_a_pr_that_breaks_a_listed_backends_kernel_gets_the_impact_table(
    fake: FakeGitHub, opdrift: Opdrift, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """As the privileged poster runs it: BASE and HEAD read through the API too (the PR's merge base
    and its head commit), the backends' lists from their own repositories."""
    from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, VERSION_PATH

    config = tmp_path / "opdrift.yml"
    config.write_text(CONFIG, encoding="utf-8")
    base, head = _pr(tmp_path)
    paths = dict(zip(FILES, (NATIVE_PATH, TAGS_PATH, DERIVATIVES_PATH), strict=True))
    fake.add_repo("pytorch/pytorch")

    def commit(folder: Path, parent: str | None) -> str:
        files = {paths[n]: (folder / n).read_bytes() for n in FILES}
        files[VERSION_PATH] = b"2.6.0a0\n"  # a PR against 2.6's main: the model counts' release
        return fake.add_commit("pytorch/pytorch", files, parent=parent, refs=() if parent else ("main",))

    base_sha = commit(base, None)
    head_sha = commit(head, base_sha)
    pr = fake.add_pull("pytorch/pytorch", sha=head_sha)
    fake.set_pull_base("pytorch/pytorch", pr, base_sha)
    run = opdrift(
        "comment", "--repo", "pytorch/pytorch", "--pr", str(pr), "--head-sha", head_sha, "--dry-run",
        "--config", str(config), f"gh:pytorch/pytorch#{pr}:merge-base", f"gh:pytorch/pytorch@{head_sha}",
    )  # fmt: skip
    assert run.code == 0, run.err
    body = run.out
    table = body.split("### 🧭 Downstream impact", 1)[1].split("<details>", 1)[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| `")]
    # dlprim lacks the rrelu trio before and after: a new signature of an op it never wrote asks
    # nothing of it (it falls back to CPU as before), so it gets no row.
    assert rows == ["| `XLA` | `xla` | 1 | 1 | 0 |  |"]
    assert "dlprim" not in table
    # the folded details by the backend's name alone, as the table's row: never its list's path
    assert "<details><summary>XLA: the ops</summary>" in body and "xla_native_functions.yaml" not in body
    xla = body.split("<summary>XLA:", 1)[1].split("</details>", 1)[0]
    # each list says how many models of the corpus reach its ops on XLA's path, in the golden file's
    # words; 2.6.0 has no table of its own: the nearest one's, said once
    assert "`rrelu_with_noise` — used by " in xla and "`rrelu_with_noise_functional` — used by " in xla
    assert body.count("Model data from torch 2.13.0") == 1
    check_golden("impact-rrelu.pr-comment.md", body, updating(request))


@pytest.mark.slow
def test_a_pr_that_affects_no_listed_backend_gets_no_table(
    fake: FakeGitHub, opdrift: Opdrift, tmp_path: Path
) -> None:
    """2.12.0 → 2.13.0 changes 130 operators, none that XLA or dlprim implement or must now write: the
    comment is the one a config without `backends:` gets."""
    base, head = tmp_path / "base", tmp_path / "head"
    for folder, version in ((base, "2.12.0"), (head, "2.13.0")):
        folder.mkdir()
        for name in FILES:
            (folder / name).write_text(release_text(version, name), encoding="utf-8")
    config, plain = tmp_path / "opdrift.yml", tmp_path / "plain.yml"
    config.write_text(CONFIG, encoding="utf-8")
    plain.write_text("labels: [drift]\n", encoding="utf-8")
    before = len(fake.requests)
    body = _comment(opdrift, fake, config, base, head)
    assert any("/git/blobs/" in r.path for r in fake.requests[before:]), "both lists were read"
    assert "Downstream impact" not in body
    assert body == _comment(opdrift, fake, plain, base, head)


def test_a_local_backends_list_that_is_missing_is_a_config_error_at_its_line(
    opdrift: Opdrift, tmp_path: Path
) -> None:
    config = tmp_path / "opdrift.yml"
    config.write_text("backends:\n  - name: mine\n    kind: text\n    path: ops.txt\n", encoding="utf-8")
    base, head = _pr(tmp_path)
    run = opdrift("comment", "--repo", "acme/pytorch", "--pr", "1", "--config", str(config),
                  str(base / "native_functions.yaml"), str(head / "native_functions.yaml"))  # fmt: skip
    assert run.code == 2
    assert run.err.startswith(f"opdrift: error: {config}:4: backends: mine: "), run.err


def test_a_local_list_gets_the_verdict_of_the_engine_without_the_api(tmp_path: Path) -> None:
    """The table's verdict for a local XLA list equals the gh: one's: the copy is what the reader reads."""
    from opdrift import pipeline
    from opdrift.app.prepare import downstream_impact
    from opdrift.drift.changes import compute_drift

    (tmp_path / "xla.yaml").write_bytes(XLA_YAML)
    base, head = _pr(tmp_path)
    cfg = parse_config(
        "backends:\n  - {name: XLA, kind: xla, path: xla.yaml}\n", "c.yml", base_dir=str(tmp_path)
    )
    before, after = (pipeline.load_snapshot(str(p / "native_functions.yaml")) for p in (base, head))
    (impact,) = downstream_impact(cfg, after, list(compute_drift(before, after).changes), warn=print)
    assert not impact.unread
    assert (impact.name, impact.broken_names, impact.removed) == ("XLA", ("rrelu_with_noise",), ())
    assert impact.who == ()


def test_the_documented_backends_example_parses() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "config.md").read_text(encoding="utf-8")
    section = doc.split("## Downstream backends", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    cfg = parse_config(example, ".github/opdrift.yml", base_dir=".github")
    assert [(b.name, b.spec.kind, b.spec.resolved) for b in cfg.backends] == [
        ("XLA", "xla", XLA_SPEC),
        ("dlprim", "cpp", DLPRIM_SPEC),
        ("our plugin", "text", ".github/backends/ops.txt"),
    ]


@pytest.mark.slow
def test_an_op_renamed_away_from_a_listed_backend_is_in_its_removed_column(tmp_path: Path) -> None:
    """1.13.0 → 2.0.0 renamed `prelu_backward` to `_prelu_kernel_backward` (the drift pairs the two).
    An XLA-kind list naming the old name (a two-line list: no vendored list of that time has it) no
    longer builds, since torchgen's gen_backend_stubs refuses a name native_functions.yaml lacks, as
    for a removal: the row names it as the list has it. A C++ tree's `m.impl` of it still compiles."""
    from opdrift import pipeline
    from opdrift.app.prepare import downstream_impact
    from opdrift.drift.changes import compute_drift

    (tmp_path / "xla.yaml").write_text(
        "backend: XLA\ncpp_namespace: torch_xla\nsupported:\n  - prelu_backward\n"
    )
    (tmp_path / "ops.cpp").write_text(
        'TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n  m.impl("prelu_backward", &prelu_backward);\n}\n'
    )
    text = "backends:\n  - {name: XLA, kind: xla, path: xla.yaml}\n  - {name: C, kind: cpp, path: ops.cpp}\n"
    cfg = parse_config(text, "c.yml", base_dir=str(tmp_path))
    base, head = (write_release(v, tmp_path / v) for v in ("1.13.0", "2.0.0"))
    before, after = (pipeline.load_snapshot(str(p)) for p in (base, head))
    changes = list(compute_drift(before, after).changes)
    (rename,) = [c for c in changes if c.old_name == "prelu_backward"]
    assert rename.name == "_prelu_kernel_backward"
    impact = {i.name: i for i in downstream_impact(cfg, after, changes, warn=print) if not i.unread}
    assert impact["XLA"].removed == ("prelu_backward",)
    assert "prelu_backward" not in impact["XLA"].broken_names
    assert "prelu_backward" not in (impact["C"].removed if "C" in impact else ())


def test_more_than_the_bound_of_backends_is_an_error() -> None:
    from opdrift.config.backend_specs import MAX_BACKENDS

    items = "".join(f"  - {{name: b{i}, kind: text, path: ops{i}.txt}}\n" for i in range(MAX_BACKENDS + 1))
    with pytest.raises(ConfigError, match=f"at most {MAX_BACKENDS}") as info:
        parse_config("backends:\n" + items, "c.yml")
    assert info.value.line == 2


@pytest.mark.slow
def test_an_unreadable_gh_list_is_a_row_not_judged_and_the_weekly_issue_reads_none(
    fake: FakeGitHub, opdrift: Opdrift, tmp_path: Path
) -> None:
    """Another repository's list (renamed, gone) must not cost a PyTorch PR its comment: the other
    backends are judged, the unreadable one is named as not judged, with why, and a warning."""
    config = tmp_path / "opdrift.yml"
    config.write_text(
        CONFIG.replace("codegen/xla_native_functions.yaml", "codegen/gone.yaml"), encoding="utf-8"
    )
    base, head = _pr(tmp_path)
    fake.add_repo("acme/pytorch")
    pr = fake.add_pull("acme/pytorch")
    sides = (str(base / "native_functions.yaml"), str(head / "native_functions.yaml"))
    run = opdrift(
        "comment", "--repo", "acme/pytorch", "--pr", str(pr), "--dry-run", "--config", str(config), *sides
    )
    assert run.code == 0, run.err
    why = f"codegen/gone.yaml does not exist at master ({fake.repos[XLA_REPO].refs['master'][:12]})"
    assert "backends: XLA: gh:pytorch/xla@master:codegen/gone.yaml: " in run.err and why in run.err
    table = run.out.split("### 🧭 Downstream impact", 1)[1].split("Not judged", 1)[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| `")]
    assert rows == ["| `XLA` | `xla` | ? | ? | ? | ? |"]  # dlprim: read, judged, nothing to do
    assert "Not judged: a list could not be read" in run.out and why in run.out
    before = len(fake.requests)
    run = opdrift("issue", "--repo", "acme/pytorch", "--dry-run", "--config", str(config), *sides)
    assert run.code == 0, run.err
    assert not [r for r in fake.requests[before:] if XLA_REPO in r.path or DLPRIM_REPO in r.path]


def test_a_hostile_backend_name_and_path_stay_inert_in_the_table() -> None:
    """A name or a path from the config cannot break the table, open HTML or mention anyone."""
    from driftcases import realistic_pair

    from opdrift.drift.changes import compute_drift
    from opdrift.render.context import BackendGap, BrokenKernel, ReportContext
    from opdrift.render.report import render

    drift = compute_drift(*realistic_pair())
    gap = BackendGap(
        (),
        "cpp",
        "gh:a/b@main:src</summary><script>",
        ("add.Tensor",),
        (BrokenKernel("mul.Tensor", ""),),
        name="x | @evil <b>",
    )
    ctx = ReportContext(impact=(gap,)).linked(drift)
    body = render(drift, "pr-comment", context=ctx)
    (row,) = [ln for ln in body.splitlines() if ln.startswith("| `x")]
    assert row.startswith("| `x \\| @evil <b>` |") and row.count(" | ") == 5  # a code span: no mention
    (summary,) = [ln for ln in body.splitlines() if ln.startswith("<details><summary>x")]
    assert "@evil" not in summary and "<b>" not in summary and "<script>" not in summary


def test_an_acknowledged_change_still_shows_in_the_table(tmp_path: Path) -> None:
    """An allow-list entry says PyTorch meant the break; XLA's build breaks all the same, so the
    impact table keeps it (acknowledged changes only mention nobody)."""
    from opdrift.app.prepare import publish_setup

    (tmp_path / "xla.yaml").write_bytes(XLA_YAML)
    base, head = _pr(tmp_path)
    (tmp_path / "allow.yml").write_text(
        "- name: rrelu_with_noise*\n  reason: meant\n  expires: 2099-12-31\n", encoding="utf-8"
    )
    (tmp_path / "c.yml").write_text(
        "allowlist: allow.yml\nbackends:\n  - {name: XLA, kind: xla, path: xla.yaml}\n", encoding="utf-8"
    )
    setup = publish_setup(
        "acme/pytorch", str(base / "native_functions.yaml"), str(head / "native_functions.yaml"),
        config=str(tmp_path / "c.yml"), allowlist=None, warn=print, note=print, impact=True,
    )  # fmt: skip
    assert [c for c in setup.drift.changes if c in setup.acks]  # the break is acknowledged
    (impact,) = setup.impact
    assert not impact.unread and impact.broken_names == ("rrelu_with_noise",)


def test_a_malformed_gh_list_is_a_row_not_judged(fake: FakeGitHub, opdrift: Opdrift, tmp_path: Path) -> None:
    """Another repository's list that does not parse is that repository's problem, not the PR's: the
    comment is posted, the row says why the list was not judged."""
    main = fake.repos[XLA_REPO].refs["master"]
    fake.add_commit(XLA_REPO, {XLA_PATH: b"backend: XLA\nsupported: [add\n"}, parent=main, refs=("broken",))
    config = tmp_path / "opdrift.yml"
    config.write_text(CONFIG.replace(f"{XLA_REPO}@master", f"{XLA_REPO}@broken"), encoding="utf-8")
    base, head = _pr(tmp_path)
    body = _comment(opdrift, fake, config, base, head)
    table = body.split("### 🧭 Downstream impact", 1)[1].split("Not judged", 1)[0]
    assert "| `XLA` | `xla` | ? | ? | ? |" in table
    assert "Not judged: a list could not be read" in body
