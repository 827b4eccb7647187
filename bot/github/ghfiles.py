"""A file or a directory of any GitHub repository at a ref, ``gh:OWNER/NAME@REF:PATH``, read through
the REST API into a private temporary directory, for the backend readers that read local paths.

The config's `backends:` list names each backend's op list this way (XLA's
``gh:pytorch/xla@master:codegen/xla_native_functions.yaml``, or dlprim's source tree
``gh:artyom-beilis/pytorch_dlprim@master:src``), and `opdrift.app.prepare` hands the local copy to the same
readers ``coverage --backend`` uses. The readers walk files on disk (a C++ tree, a torch-mlir
checkout), so the files are written out rather than passed as texts: one reader, one way.

Requests: the commit (REF → sha), the tree of PATH's parent directory at that commit (what PATH is:
file or directory, and its blob or tree sha), for a directory its tree recursively, and each wanted
blob's content with the raw media type. Blob shas come from the git trees API, never from the
contents API, whose JSON carries the content base64-encoded. Contents are cached by blob sha in the
cache of `opdrift.github.ghcache` and checked against it, so a repeat downloads no content.

Everything the API says is untrusted: a truncated (too large) tree, more than `MAX_TREE_FILES` files
or `MAX_TREE_BYTES` bytes wanted, or a file over the one-file limit is refused; a symlink, a submodule,
or a path with ``..``, ``.``, an empty part or a backslash is skipped with a warning. Files are written
only under a fresh ``mkdtemp`` directory (mode 0700), created without following links, and removed
when the reader is done.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from opdrift.errors import SourceError

if TYPE_CHECKING:
    from opdrift.github.api import Api, ApiSettings

PREFIX = "gh:"
_PATH_SPEC = re.compile(
    r"gh:(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+)@(?P<ref>[^\s:~^]+):(?P<path>[^\s]+)"
)
_SHA = re.compile(r"[0-9a-f]{40}")

# A backend's source tree: dlprim's src/ has a few dozen C++ files, torch-xpu-ops' ATen sources a few
# hundred. Every file is one request on a cold cache, within the API's per-call request cap.
MAX_TREE_FILES = 500
MAX_TREE_BYTES = 64 * 1024 * 1024
_FILE_MODES = ("100644", "100755")
_SYMLINK_MODE = "120000"

Say = Callable[[str], None]


@dataclass(frozen=True)
class GitHubPath:
    repo: str  # OWNER/NAME
    ref: str  # a branch, a tag or a commit sha
    path: str  # inside the repository, without a leading or trailing slash


def _parts(path: str) -> tuple[str, ...] | None:
    """PATH's components, or None when one could leave the directory it is written under."""
    parts = tuple(path.split("/"))
    if any(p in ("", ".", "..") or "\\" in p or "\0" in p for p in parts):
        return None
    return parts


def parse_path_spec(spec: str) -> GitHubPath:
    m = _PATH_SPEC.fullmatch(spec)
    if m is None:
        raise SourceError("a gh: file or directory is gh:OWNER/NAME@REF:PATH", path=spec)
    path = m["path"].strip("/")
    if _parts(path) is None:
        raise SourceError("the PATH of gh:OWNER/NAME@REF:PATH has an empty, '.' or '..' part", path=spec)
    return GitHubPath(m["repo"], m["ref"], path)


@dataclass(frozen=True)
class Fetched:
    """What `materialised` wrote: `root` is the file, or the directory, inside the temporary one."""

    root: Path
    commit: str
    files: int  # files written
    downloaded: int  # of them, not found in the cache


def _entries(data: Any, what: str, spec: str) -> list[dict[str, Any]]:
    tree = data.get("tree") if isinstance(data, dict) else None
    if not isinstance(tree, list):
        raise SourceError(f"GitHub sent no tree for {what}", path=spec)
    if data.get("truncated") is True:
        raise SourceError(f"{what} is too large for one tree listing: name a smaller directory", path=spec)
    return [e for e in tree if isinstance(e, dict)]


def _write(root: Path, parts: tuple[str, ...], data: bytes) -> None:
    """DATA at ROOT/PARTS: every directory made here, the file created new, no link followed."""
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        if not folder.is_dir():  # nothing here is a link: this module made every entry
            folder.mkdir(mode=0o700)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(folder / parts[-1], flags, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _blob(api: Api, repo: str, oid: str, display: str, limit: int) -> tuple[bytes, bool]:
    """The content of blob OID (from the cache, or downloaded and checked), and whether it was downloaded."""
    from opdrift.github.ghcache import BlobCache, blob_sha

    cache = BlobCache(api.settings.cache_dir)
    data = cache.get(oid)
    if data is not None:
        return data, False
    data = api.raw(f"/repos/{repo}/git/blobs/{oid}", limit)
    if data is None or blob_sha(data) != oid:
        raise SourceError(f"the content GitHub sent is not blob {oid[:12]}", path=display)
    cache.put(oid, data)
    return data, True


def _chosen(
    tree: list[dict[str, Any]], want: Callable[[str], bool], spec: str, warn: Say, max_file: int
) -> list[tuple[tuple[str, ...], str, int]]:
    """The plain files of a recursive listing that `want` accepts: (path parts, blob sha, size); the
    rest skipped with a warning, a file over MAX_FILE bytes refused."""
    out: list[tuple[tuple[str, ...], str, int]] = []
    for item in tree:
        rel, oid, kind, mode = (item.get(k) for k in ("path", "sha", "type", "mode"))
        if not isinstance(rel, str) or kind == "tree":
            continue
        parts = _parts(rel)
        if parts is None:
            warn(f"{spec}: skipped {rel!r}: not a plain path inside the directory")
            continue
        if not want(rel):
            continue
        if kind == "commit" or mode not in _FILE_MODES:
            said = (
                "a submodule"
                if kind == "commit"
                else "a symlink"
                if mode == _SYMLINK_MODE
                else f"of mode {mode}"
            )
            warn(f"{spec}: skipped {rel}: {said}, not a file")
            continue
        size = item.get("size")
        if not isinstance(oid, str) or not _SHA.fullmatch(oid) or not isinstance(size, int):
            warn(f"{spec}: skipped {rel}: GitHub sent no blob id or size")
            continue
        if size > max_file:
            raise SourceError(f"{rel} is {size} bytes, over the {max_file}-byte limit", path=spec)
        out.append((parts, oid, size))
    return out


def fetch_into(
    spec: str, settings: ApiSettings, dest: Path, want: Callable[[str], bool], *, warn: Say
) -> Fetched:
    """SPEC's file, or the files of SPEC's directory whose path relative to it `want` accepts, written
    under DEST (an empty directory of the caller's); skipped entries are told to `warn`."""
    from opdrift.github.api import Api
    from opdrift.github.limits import Guard
    from opdrift.sources.read import MAX_FILE_BYTES

    where = parse_path_spec(spec)
    api = Api(settings, spec)
    # One request per file on a cold cache, plus the commit and two trees, retries included.
    api.guard = Guard(api.guard.root, seconds=settings.retry.total_seconds, max_requests=MAX_TREE_FILES + 20)
    base = f"/repos/{where.repo}"
    try:
        commit = api.json(f"{base}/commits/{quote(where.ref, safe='')}")
        sha = commit.get("sha") if isinstance(commit, dict) else None
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise SourceError(
                f"no commit {where.ref} in {where.repo} (or the token cannot see it)", path=spec
            )
        parent, _, name = where.path.rpartition("/")
        tree_id = f"{sha}:{quote(parent)}" if parent else sha
        listing = api.json(f"{base}/git/trees/{tree_id}")
        if listing is None:
            raise SourceError(f"{parent or 'the root'} is not a directory at {sha[:12]}", path=spec)
        entry = next(
            (e for e in _entries(listing, parent or "the root", spec) if e.get("path") == name), None
        )
        if entry is None:
            raise SourceError(f"{where.path} does not exist at {where.ref} ({sha[:12]})", path=spec)
        oid, kind, mode = entry.get("sha"), entry.get("type"), entry.get("mode")
        if not isinstance(oid, str) or not _SHA.fullmatch(oid):
            raise SourceError(f"GitHub sent no object id for {where.path}", path=spec)
        if kind == "blob" and mode in _FILE_MODES:
            size = entry.get("size")
            if not isinstance(size, int) or size > MAX_FILE_BYTES:
                raise SourceError(f"over the {MAX_FILE_BYTES}-byte limit for one file", path=spec)
            data, fresh = _blob(api, where.repo, oid, spec, MAX_FILE_BYTES)
            _write(dest, (name,), data)
            return Fetched(dest / name, sha, 1, int(fresh))
        if kind != "tree":
            what = "a symlink" if mode == _SYMLINK_MODE else "a submodule" if kind == "commit" else repr(kind)
            raise SourceError(f"{where.path} is {what}, not a file or a directory", path=spec)
        tree = _entries(api.json(f"{base}/git/trees/{oid}", params={"recursive": "1"}), where.path, spec)
        chosen = _chosen(tree, want, spec, warn, MAX_FILE_BYTES)
        total = sum(size for _, _, size in chosen)
        if not chosen:
            raise SourceError(f"{where.path} holds no file that a backend of this kind reads", path=spec)
        if len(chosen) > MAX_TREE_FILES or total > MAX_TREE_BYTES:
            raise SourceError(
                f"{len(chosen)} files of {total} bytes to read, over the bound of {MAX_TREE_FILES} files "
                f"and {MAX_TREE_BYTES} bytes: name a smaller directory",
                path=spec,
            )
        root = dest / name
        root.mkdir(mode=0o700)
        downloaded = 0
        for parts, item_oid, _size in chosen:
            data, fresh = _blob(api, where.repo, item_oid, f"{spec}/{'/'.join(parts)}", MAX_FILE_BYTES)
            downloaded += fresh
            try:
                _write(root, parts, data)
            except OSError as err:  # a path that is a file's and a directory's at once
                warn(f"{spec}: skipped {'/'.join(parts)}: {err.strerror}")
        return Fetched(root, sha, len(chosen), downloaded)
    finally:
        api.close()


@contextmanager
def materialised(
    spec: str, settings: ApiSettings, want: Callable[[str], bool], *, warn: Say
) -> Iterator[Fetched]:
    """`fetch_into` a fresh private temporary directory, removed when the block ends."""
    tmp = Path(tempfile.mkdtemp(prefix="opdrift-gh-"))
    try:
        yield fetch_into(spec, settings, tmp, want, warn=warn)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
