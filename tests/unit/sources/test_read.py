"""SOURCE reading: git objects through one cat-file process, checkouts, DIR@REV, wheels, bare yaml."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from datafiles import has_release_file, release_text, write_release
from goldens import check_golden_entry, updating
from pytorch_history import DERIVATIVES, NATIVE, TAGS, History, build_history, entry_blocks

from opdrift.errors import GitError, SourceError
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH
from opdrift.sources import read as sources
from opdrift.sources.git import GitReader, parse_commit

FIRST, LAST = "2.12.0", "2.14.1"


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, env={**base, **(env or {})}
    )
    return done.stdout.decode("utf-8")


def commit_all(repo: Path, message: str) -> str:
    ident = {
        "GIT_AUTHOR_NAME": "T",
        "GIT_AUTHOR_EMAIL": "t@localhost",
        "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@localhost",
        "GIT_COMMITTER_DATE": "1700000000 +0530",
        "GIT_AUTHOR_DATE": "1700000000 +0530",
    }
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, env=ident)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """Three real releases with up to 15 single-entry commits before each of the later two."""
    return build_history(
        tmp_path_factory.mktemp("hist") / "pytorch", first=FIRST, last=LAST, fine=True, cap=15
    )


# --- the history helper itself ----------------------------------------------------------------


@pytest.mark.slow
def test_history_has_tagged_releases_and_single_entry_commits(history: History) -> None:
    tags = [c.tag for c in history.commits if c.tag]
    assert tags == ["v2.12.0", "v2.13.0", "v2.14.1"]
    assert len(history.commits) == 3 + 2 * 15
    assert git(history.path, "rev-list", "--count", "main").strip() == str(len(history.commits))
    log = git(history.path, "log", "--reverse", "--format=%H %cI %s").splitlines()
    assert log == [f"{c.sha} {c.date} {c.subject}" for c in history.commits]
    # A fine commit changes exactly one entry block of native_functions.yaml, nothing else.
    for parent, child in zip(history.commits, history.commits[1:], strict=False):
        if child.tag:
            continue
        assert git(history.path, "diff", "--name-only", parent.sha, child.sha).split() == [NATIVE]
        before = entry_blocks(git(history.path, "show", f"{parent.sha}:{NATIVE}"))
        after = entry_blocks(git(history.path, "show", f"{child.sha}:{NATIVE}"))
        changed = len(set(before) ^ set(after))
        assert changed in (1, 2), child.subject  # added or removed: 1; edited: old and new
        assert child.changed is not None and child.subject.split()[1] == child.changed


def test_history_release_commits_hold_the_release_files(history: History) -> None:
    for version in (FIRST, LAST):
        sha = history.tag_sha(version)
        assert git(history.path, "show", f"{sha}:{NATIVE}") == release_text(version)
        assert git(history.path, "show", f"{sha}:{TAGS}") == release_text(version, "tags.yaml")
        assert git(history.path, "show", f"{sha}:{DERIVATIVES}") == release_text(version, "derivatives.yaml")
    # checkout=True leaves the working tree at the last release, clean
    assert (history.path / NATIVE).read_text(encoding="utf-8") == release_text(LAST)
    assert git(history.path, "status", "--porcelain") == ""


def test_history_is_deterministic(tmp_path: Path) -> None:
    one = build_history(tmp_path / "a", first="2.13.0", last="2.14.1", fine=True, cap=5, checkout=False)
    two = build_history(tmp_path / "b", first="2.13.0", last="2.14.1", fine=True, cap=5, checkout=False)
    assert [c.sha for c in one.commits] == [c.sha for c in two.commits]
    assert len(one.commits) == 2 + 5
    assert not (tmp_path / "a" / NATIVE).exists()  # no checkout asked for
    with pytest.raises(FileExistsError):
        build_history(tmp_path / "a")


def test_entry_blocks_join_back_losslessly() -> None:
    text = release_text(LAST)
    blocks = entry_blocks(text)
    assert "".join(blocks) == text
    funcs = [sum(line.startswith("- func:") for line in b.splitlines()) for b in blocks]
    # The file's header comments sit right above the first entry, so they belong to it: no preamble.
    assert set(funcs) == {1}
    assert len(blocks) == sum(line.startswith("- func:") for line in text.splitlines())
    # comments right above an entry travel with it
    assert any(b.startswith("#") for b in blocks[1:])


# --- GitReader ----------------------------------------------------------------------------------


def test_reader_resolves_tags_branches_and_relative_revisions(history: History) -> None:
    with GitReader(history.path) as reader:
        head = history.commits[-1].sha
        assert reader.resolve("main") == head
        assert reader.resolve("HEAD") == head
        assert reader.resolve("v2.13.0") == history.tag_sha("2.13.0")  # an annotated tag peels to its commit
        assert reader.resolve("refs/tags/v2.13.0") == history.tag_sha("2.13.0")
        assert reader.resolve("HEAD~2") == history.commits[-3].sha
        assert reader.resolve(head[:10]) == head


def test_reader_reads_every_commit_through_one_process(history: History) -> None:
    with GitReader(history.path) as reader:
        batch = reader._batch
        assert batch is not None
        pid = batch._proc.pid
        for c in history.commits:
            data = reader.read(c.sha, NATIVE)
            assert data is not None
            assert data.decode("utf-8") == git(history.path, "show", f"{c.sha}:{NATIVE}")
            assert reader.commit_info(c.sha) == (c.date, c.subject)
        assert reader._batch is batch and batch._proc.pid == pid and batch._proc.poll() is None
    assert batch._proc.poll() == 0  # closed with the context


def test_reader_missing_path_is_none_but_unknown_revision_is_an_error(
    history: History, request: pytest.FixtureRequest
) -> None:
    with GitReader(history.path) as reader:
        assert reader.read("v2.12.0", "no/such/file.yaml") is None
        assert reader.blob_id("v2.12.0", "no/such/file.yaml") is None
        with pytest.raises(GitError) as err:
            reader.read("v9.9.9", NATIVE)
        said = str(err.value)
        assert said.startswith(f"{history.path}: ") and "'v9.9.9'" in said
        said = said.replace(str(history.path), "REPO") + "\n"
        check_golden_entry("errors.lines.txt", "git: an unknown revision", said, updating(request))
        for bad in ("", "--all", "no-such-branch", "HEAD~999"):
            with pytest.raises(GitError, match="unknown revision"):
                reader.resolve(bad)
        with pytest.raises(GitError, match="line break"):
            reader.resolve("main\nHEAD")
        with pytest.raises(GitError, match="is a tree, not a file"):
            reader.read("main", "aten/src")
        # the stream is still in step after every refusal
        assert reader.read("v2.12.0", TAGS) == release_text("2.12.0", "tags.yaml").encode()


def test_reader_blob_ids_match_git_and_read_back(history: History) -> None:
    with GitReader(history.path) as reader:
        for c in history.commits[:5]:
            oid = reader.blob_id(c.sha, NATIVE)
            assert oid == git(history.path, "rev-parse", f"{c.sha}:{NATIVE}").strip()
            assert reader.read_blob(oid) == reader.read(c.sha, NATIVE)
        with pytest.raises(GitError, match="no object"):
            reader.read_blob("0" * 40)
        with pytest.raises(GitError, match="not a blob"):
            reader.read_blob(history.commits[0].sha)


def test_reader_is_binary_safe(tmp_path: Path) -> None:
    repo = tmp_path / "bin"
    repo.mkdir()
    git(repo, "init", "-q")
    payloads = {
        "empty": b"",
        "nul-and-newlines": b"\0\n\n\0abc\r\n",
        "no-trailing-newline": b"x" * 70000,
        "looks-like-a-header": b"0123456789012345678901234567890123456789 blob 5\nmissing\n",
        "not-utf8": bytes(range(256)),
    }
    for name, data in payloads.items():
        (repo / name).write_bytes(data)
    sha = commit_all(repo, "binary")
    with GitReader(repo) as reader:
        for _ in range(2):  # twice, interleaved: any framing slip would show on the second pass
            for name, data in payloads.items():
                assert reader.read(sha, name) == data


def test_reader_size_limit_refuses_and_keeps_the_stream_in_step(history: History) -> None:
    with GitReader(history.path) as reader:
        with pytest.raises(GitError, match="over the 1000-byte limit"):
            reader.read("main", NATIVE, max_size=1000)
        assert reader.read("main", TAGS) == release_text(LAST, "tags.yaml").encode()


def test_commit_info_agrees_with_git_log_for_offsets_and_paragraphs(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f").write_text("x")
    sha = commit_all(repo, "Fix the thing\nacross two lines\n\nBody text.\n")
    with GitReader(repo) as reader:
        date, subject = reader.commit_info(sha)
    assert (date, subject) == tuple(git(repo, "log", "-1", "--format=%cI%n%s", sha).splitlines())
    assert date.endswith("+05:30")


def test_parse_commit_skips_signature_continuation_lines() -> None:
    raw = (
        b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
        b"author A <a@x> 1640995260 +0000\n"
        b"committer C <c@x> 1640995320 -0700\n"
        b"gpgsig -----BEGIN PGP SIGNATURE-----\n"
        b" committer Fake <f@x> 1 +0000\n"
        b" -----END PGP SIGNATURE-----\n"
        b"\n"
        b"Subject line\n"
    )
    assert parse_commit(raw) == ("2021-12-31T17:02:00-07:00", "Subject line")


def test_reader_refuses_what_is_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not a git repository") as err:
        GitReader(tmp_path)
    assert err.value.path == str(tmp_path)
    with pytest.raises(GitError, match="no such directory"):
        GitReader(tmp_path / "absent")


def test_closed_reader_refuses_reads(history: History) -> None:
    reader = GitReader(history.path)
    reader.close()
    reader.close()  # twice is harmless
    with pytest.raises(GitError, match="closed"):
        reader.read("main", NATIVE)


# --- read_source: checkout and DIR@REV --------------------------------------------------------


def test_checkout_reads_the_working_tree_and_labels_it_with_head(history: History) -> None:
    files = sources.read_source(str(history.path))
    meta = files.meta
    assert meta.kind == "checkout"
    assert meta.commit == history.commits[-1].sha and meta.date == history.commits[-1].date
    assert meta.revision is None and meta.torch_version is None
    assert files.native_functions is not None and files.tags is not None and files.derivatives is not None
    assert files.native_functions.text == release_text(LAST)
    assert files.native_functions.display == os.path.join(str(history.path), NATIVE_PATH)
    assert files.tags.text == release_text(LAST, "tags.yaml")
    assert files.derivatives.text == release_text(LAST, "derivatives.yaml")


def test_checkout_without_git_and_with_version_txt(tmp_path: Path) -> None:
    root = tmp_path / "pytorch"
    native = write_release("1.12.0", root / "aten/src/ATen/native")
    (root / "version.txt").write_text("1.12.0a0\n")
    files = sources.read_source(str(root))
    assert files.meta.kind == "checkout" and files.meta.commit is None
    assert files.meta.torch_version == "1.12.0a0"
    assert files.native_functions is not None and files.native_functions.text == native.read_text()
    assert files.derivatives is None  # 1.12 had none vendored; a missing optional file is fine


@pytest.mark.parametrize("version", [FIRST, "2.13.0", LAST])
def test_revision_reads_git_objects_without_checkout(history: History, version: str) -> None:
    files = sources.read_source(f"{history.path}@v{version}")
    meta = files.meta
    assert (meta.kind, meta.revision, meta.torch_version) == ("git", f"v{version}", version)
    assert meta.commit == history.tag_sha(version)
    assert meta.date == next(c.date for c in history.commits if c.tag == f"v{version}")
    assert meta.path == f"{history.path}@v{version}"
    assert files.native_functions is not None and files.tags is not None
    assert files.native_functions.text == release_text(version)
    assert files.native_functions.display == f"v{version}:{NATIVE_PATH}"
    assert files.tags.text == release_text(version, "tags.yaml")
    assert files.tags.display == f"v{version}:{TAGS_PATH}"
    assert files.derivatives is not None and files.derivatives.display == f"v{version}:{DERIVATIVES_PATH}"
    # the working tree (at LAST) was not touched or consulted
    assert git(history.path, "status", "--porcelain") == ""


def test_revision_at_a_fine_commit(history: History) -> None:
    fine = next(c for c in history.commits if c.changed is not None)
    files = sources.read_source(f"{history.path}@{fine.sha[:12]}")
    assert files.meta.commit == fine.sha and files.meta.torch_version is None
    assert files.native_functions is not None
    assert files.native_functions.text == git(history.path, "show", f"{fine.sha}:{NATIVE}")


def test_revision_errors_name_the_repository_and_revision(history: History, tmp_path: Path) -> None:
    with pytest.raises(GitError) as err:
        sources.read_source(f"{history.path}@v0.0.1")
    assert "'v0.0.1'" in str(err.value) and str(history.path) in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(SourceError, match="empty revision"):
        sources.read_source(f"{history.path}@")
    with pytest.raises(GitError, match="not a git repository"):
        sources.read_source(f"{tmp_path}@HEAD")


def test_revision_of_a_repository_that_is_not_pytorch_shaped(tmp_path: Path) -> None:
    repo = tmp_path / "other"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README").write_text("hello\n")
    commit_all(repo, "init")
    with pytest.raises(SourceError, match=f"no {NATIVE_PATH} at HEAD: not a PyTorch revision"):
        sources.read_source(f"{repo}@HEAD")


def test_revision_reads_version_txt_when_rev_is_not_a_release_tag(tmp_path: Path) -> None:
    repo = tmp_path / "at@sign"  # a directory whose own name holds '@'
    write_release("2.13.0", repo / "aten/src/ATen/native")
    (repo / "version.txt").write_text("2.13.0a0\n")
    git(repo, "init", "-q")
    sha = commit_all(repo, "import")
    files = sources.read_source(f"{repo}@HEAD")
    assert files.meta.commit == sha and files.meta.torch_version == "2.13.0a0"
    assert files.native_functions is not None and files.native_functions.text == release_text("2.13.0")
    assert files.native_functions.text.count("\r") == 0
    # the same directory, given alone, is a checkout: an existing path wins over splitting on '@'
    assert sources.read_source(str(repo)).meta.kind == "checkout"


def test_revision_refuses_an_oversized_file(history: History, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "MAX_FILE_BYTES", 10_000)
    with pytest.raises(GitError, match="over the 10000-byte limit"):
        sources.read_source(f"{history.path}@v{LAST}")


# --- read_source: files ----------------------------------------------------------------------


def test_bare_yaml_with_tags_and_derivatives_beside_it(tmp_path: Path) -> None:
    native = write_release(LAST, tmp_path / "r")
    files = sources.read_source(str(native))
    assert files.meta.kind == "yaml" and files.meta.path == str(native)
    assert files.native_functions is not None and files.native_functions.display == str(native)
    assert files.native_functions.text == release_text(LAST)
    assert files.tags is not None and files.tags.text == release_text(LAST, "tags.yaml")
    assert files.derivatives is not None and files.derivatives.text == release_text(LAST, "derivatives.yaml")


def test_bare_yaml_alone_and_with_at_in_its_name(tmp_path: Path) -> None:
    native = tmp_path / "native@v2.yaml"
    native.write_text(release_text(FIRST), encoding="utf-8")
    files = sources.read_source(str(native))
    assert files.meta.kind == "yaml" and files.tags is None and files.derivatives is None


def test_yaml_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "native_functions.yaml"
    bad.write_bytes(b"- func: a() -> Tensor\n- func: b() -> Tensor  # caf\xe9\n")
    with pytest.raises(SourceError) as err:
        sources.read_source(str(bad))
    assert (err.value.path, err.value.line) == (str(bad), 2)
    assert "not UTF-8" in err.value.message


def test_yaml_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + release_text(FIRST).encode())
    files = sources.read_source(str(path))
    assert files.native_functions is not None and files.native_functions.text == release_text(FIRST)


def test_oversized_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    native = write_release(FIRST, tmp_path)
    monkeypatch.setattr(sources, "MAX_FILE_BYTES", 1000)
    with pytest.raises(SourceError, match="over the 1000-byte limit") as err:
        sources.read_source(str(native))
    assert err.value.path == str(native)


def test_snapshot_json_is_recognised_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_text("{}")
    files = sources.read_source(str(path))
    assert files.meta.kind == "snapshot" and files.meta.path == str(path)
    assert files.native_functions is None and files.registration_declarations is None


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "absent.yaml", "no such file or directory"),
        (lambda p: p / "absent.json", "no such file or directory"),
        (lambda p: p / "absent@HEAD", "no such file or directory"),
        (lambda p: p, "not a PyTorch checkout"),
        (lambda p: p / "notes.txt", "unrecognised SOURCE file"),
    ],
)
def test_bad_paths(tmp_path: Path, make: object, message: str) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(SourceError, match=message) as err:
        sources.read_source(str(path))
    assert err.value.path == str(path)


def test_not_pytorch_shaped_directory_message(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as err:
        sources.read_source(str(tmp_path))
    assert str(err.value) == f"{tmp_path}: no {NATIVE_PATH} in {tmp_path}: not a PyTorch checkout"


def test_empty_source() -> None:
    with pytest.raises(SourceError, match="empty SOURCE"):
        sources.read_source("  ")


# --- read_source: wheels ----------------------------------------------------------------------


def make_wheel(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def metadata(version: str) -> bytes:
    return f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n\nLong description.\n".encode()


@pytest.mark.parametrize("version", ["1.12.0", LAST])
def test_wheel_with_packaged_yaml(tmp_path: Path, version: str) -> None:
    members = {
        "torch/__init__.py": b"",
        sources.WHEEL_NATIVE: release_text(version).encode(),
        sources.WHEEL_TAGS: release_text(version, "tags.yaml").encode(),
        f"torch-{version}.dist-info/METADATA": metadata(version),
    }
    if has_release_file(version, "derivatives.yaml"):
        members[sources.WHEEL_DERIVATIVES] = release_text(version, "derivatives.yaml").encode()
    wheel = make_wheel(tmp_path / f"torch-{version}-cp311-cp311-macosx_11_0_arm64.whl", members)
    files = sources.read_source(str(wheel))
    assert files.meta.kind == "wheel" and files.meta.torch_version == version
    assert files.native_functions is not None and files.native_functions.text == release_text(version)
    assert files.native_functions.display == f"{wheel}:{sources.WHEEL_NATIVE}"
    assert files.tags is not None and files.tags.text == release_text(version, "tags.yaml")
    assert (files.derivatives is not None) == has_release_file(version, "derivatives.yaml")
    assert files.registration_declarations is None


def test_wheel_version_falls_back_to_the_file_name(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path / "torch-2.13.0+cpu-cp310-cp310-linux_x86_64.whl",
        {sources.WHEEL_NATIVE: release_text("2.13.0").encode()},
    )
    assert sources.read_source(str(wheel)).meta.torch_version == "2.13.0+cpu"


def test_wheel_without_the_files(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "torch-2.0.0-py3-none-any.whl", {"torch/__init__.py": b""})
    with pytest.raises(SourceError, match=r"neither .* nor .*: not a torch wheel") as err:
        sources.read_source(str(wheel))
    assert err.value.path == str(wheel)


def test_wheel_that_is_not_a_zip(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-2.0.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 but not really a zip")
    with pytest.raises(SourceError, match="not a readable wheel"):
        sources.read_source(str(wheel))


def test_wheel_with_a_corrupt_member(tmp_path: Path) -> None:
    text = release_text(FIRST, "tags.yaml").encode()
    wheel = make_wheel(tmp_path / "t.whl", {sources.WHEEL_NATIVE: text}, zipfile.ZIP_STORED)
    raw = bytearray(wheel.read_bytes())
    at = raw.find(text[:40])
    raw[at + 10] ^= 0xFF  # flip one stored byte: the CRC no longer matches
    wheel.write_bytes(bytes(raw))
    with pytest.raises(SourceError, match=r"not a readable wheel.*CRC"):
        sources.read_source(str(wheel))


def test_wheel_with_an_encrypted_member(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "t.whl", {sources.WHEEL_NATIVE: b"- func: a() -> ()\n"}, zipfile.ZIP_STORED)
    raw = bytearray(wheel.read_bytes())
    # Set the "encrypted" flag bit in the local and the central header: zipfile then wants a password.
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = raw.find(signature)
        raw[at + flag_at] |= 0x01
    wheel.write_bytes(bytes(raw))
    with pytest.raises(SourceError, match="encrypted"):
        sources.read_source(str(wheel))


def test_wheel_member_over_the_limit_is_refused_before_inflating(tmp_path: Path) -> None:
    # A real zip bomb: 65 MiB of zeros deflate to about 64 KiB.
    wheel = make_wheel(tmp_path / "bomb.whl", {sources.WHEEL_NATIVE: bytes(65 * 1024 * 1024)})
    assert wheel.stat().st_size < 1024 * 1024
    with pytest.raises(SourceError, match=f"over the {sources.MAX_FILE_BYTES}-byte limit") as err:
        sources.read_source(str(wheel))
    assert err.value.path == f"{wheel}:{sources.WHEEL_NATIVE}"


def test_reader_reports_a_git_process_that_died(history: History) -> None:
    reader = GitReader(history.path)
    try:
        batch = reader._batch
        assert batch is not None
        assert reader.read("main", TAGS) is not None
        batch._proc.kill()
        batch._proc.wait()
        with pytest.raises(GitError, match="git cat-file stopped unexpectedly") as err:
            reader.read("main", NATIVE)
        assert err.value.path == str(history.path)
    finally:
        reader.close()


def test_revision_of_a_bare_clone(history: History, tmp_path: Path) -> None:
    """CI mirrors are often bare: DIR@REV needs no working tree at all."""
    bare = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--bare", str(history.path), str(bare))
    files = sources.read_source(f"{bare}@v2.13.0")
    assert files.meta.commit == history.tag_sha("2.13.0")
    assert files.native_functions is not None and files.native_functions.text == release_text("2.13.0")
    with pytest.raises(SourceError, match="not a PyTorch checkout"):
        sources.read_source(str(bare))  # without @REV there is no working tree to read


@pytest.mark.parametrize("spec", ["a" * 300 + ".json", "nul\0byte.yaml"])
def test_a_path_that_cannot_be_looked_at_is_a_source_error(spec: str) -> None:
    with pytest.raises(SourceError):
        sources.read_source(spec)
    with pytest.raises(SourceError, match="cannot read the config"):
        sources.read_text(spec, "config")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_another_users_repository_reads_with_safe_directory_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git refuses a repository another user owns unless safe.directory allows it; CI containers pass
    that through GIT_CONFIG_*, which the bot's git must keep (only repository-locating variables go)."""
    repo = tmp_path / "theirs"
    build_history(repo, first="2.14.1", last="2.14.1", checkout=False)
    for path in [repo, *repo.rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)
    with pytest.raises(GitError, match=r"dubious ownership|not a git repository|unsafe"):
        sources.read_source(f"{repo}@HEAD")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "safe.directory")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "*")
    files = sources.read_source(f"{repo}@HEAD")
    assert files.native_functions is not None and files.meta.commit is not None


def test_a_damaged_lzma_member_or_a_bad_member_name_is_an_unreadable_wheel(tmp_path: Path) -> None:
    import zipfile as zf

    wheel = tmp_path / "torch-2.14.1-cp311-none-any.whl"
    with zf.ZipFile(wheel, "w", compression=zf.ZIP_LZMA) as z:
        z.writestr(
            "torchgen/packaged/ATen/native/native_functions.yaml",
            "- func: relu(Tensor self) -> Tensor\n" * 200,
        )
    data = bytearray(wheel.read_bytes())
    middle = data.index(b"torchgen") + 200
    data[middle : middle + 40] = b"\x00" * 40  # inside the compressed stream
    wheel.write_bytes(bytes(data))
    with pytest.raises(SourceError, match="not a readable wheel"):
        sources.read_source(str(wheel))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any directory")
def test_an_unsearchable_directory_in_a_checkout_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "aten").mkdir()
    (tmp_path / "aten").chmod(0)
    try:
        with pytest.raises(SourceError, match="cannot read: Permission denied"):
            sources.read_source(str(tmp_path))
    finally:
        (tmp_path / "aten").chmod(0o755)
