"""The on-disk caches of what GitHub's API taught: blobs by their git sha, JSON answers by key.

Both are shared by the ``gh:`` reads (`bot.github.ghsource`, `bot.github.ghfiles`) and the pull
request scan (`bot.github.pulls`). An entry is checked when read (a blob against its sha, a JSON
entry against its key and a digest of its value), so a damaged file is a miss, never a wrong answer;
writes are atomic; each cache is pruned, least recently used first, past its bound.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    """$XDG_CACHE_HOME/opdrift, or ~/.cache/opdrift (the XDG default)."""
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "opdrift"


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 git's object id


# Blobs kept on disk: past this many bytes the least recently used go. `opdrift watch` reads two sides
# of every pull request that touches the operator files, and each new head brings a new
# native_functions.yaml of about 0.7 MB: the cache would grow by that every hour. 128 MB holds about
# 180 of them, three times what a cold start over pytorch/pytorch's 60 touching pull requests reads.
MAX_BLOB_BYTES = 128 * 1024 * 1024


class BlobCache:
    """Blob contents by their git sha, under ROOT/blobs; a file that does not hash to its name is
    ignored (and replaced). A read marks the blob recently used; `prune` keeps the total under
    MAX_BLOB_BYTES."""

    def __init__(self, root: Path | None) -> None:
        self.root = None if root is None else root / "blobs"

    def _path(self, sha: str) -> Path | None:
        return None if self.root is None else self.root / sha[:2] / sha

    def get(self, sha: str) -> bytes | None:
        path = self._path(sha)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if blob_sha(data) != sha:
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: `prune` removes the oldest first
        return data

    def put(self, sha: str, data: bytes) -> None:
        path = self._path(sha)
        if path is not None:
            write_atomically(path, data)

    def prune(self, limit: int | None = None) -> None:
        """Remove the least recently used blobs until at most 3/4 of LIMIT (MAX_BLOB_BYTES) is held."""
        if self.root is not None:
            _prune(self.root, MAX_BLOB_BYTES if limit is None else limit)


def _prune(root: Path, limit: int) -> None:
    """Remove ROOT/*/* files, least recently modified first (a read touches its file), until they
    take at most 3/4 of LIMIT bytes; nothing when they take LIMIT or less. The quarter left free
    keeps a cache near its cap from being walked and pruned on every run."""
    try:
        entries = []
        for path in root.glob("*/*"):
            st = path.stat()
            # What the file takes on disk: a small entry still fills a block.
            entries.append((st.st_mtime, max(st.st_size, 4096), path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return
    for _, size, path in sorted(entries):
        if total <= limit * 3 // 4:
            break
        try:
            path.unlink()
        except OSError:
            continue
        total -= size


def write_atomically(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a cache that cannot be written only costs the next run a request


# A cache of API answers stays small: past this many bytes the least recently used entries go.
MAX_CACHE_BYTES = 64 * 1024 * 1024
MAX_ENTRY_BYTES = 4 * 1024 * 1024


class JsonCache:
    """JSON values by (namespace, key), under ROOT/NAMESPACE/: what an answer taught, or the answer
    itself with its ETag. Each entry carries its key and a digest of its value: a file that does not
    parse, names another key or fails its digest is a miss (and is replaced), never a wrong answer.
    Writes are atomic (a temporary file renamed); `prune` keeps the total under MAX_CACHE_BYTES."""

    def __init__(self, root: Path | None, namespace: str) -> None:
        self.root = None if root is None else root / namespace

    def _path(self, key: str) -> Path | None:
        if self.root is None:
            return None
        name = hashlib.sha256(key.encode()).hexdigest()
        return self.root / name[:2] / f"{name}.json"

    @staticmethod
    def _digest(key: str, value: Any) -> str:
        return hashlib.sha256(json.dumps([key, value], sort_keys=True).encode()).hexdigest()

    def get(self, key: str) -> Any:
        """The stored value, or None (a miss)."""
        path = self._path(key)
        if path is None:
            return None
        try:
            if path.stat().st_size > MAX_ENTRY_BYTES:
                return None
            entry = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or "value" not in entry:
            return None
        value = entry["value"]
        if entry.get("digest") != self._digest(key, value):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: `prune` removes the oldest first
        return value

    def put(self, key: str, value: Any) -> None:
        path = self._path(key)
        if path is None:
            return
        data = json.dumps({"key": key, "value": value, "digest": self._digest(key, value)}).encode()
        if len(data) <= MAX_ENTRY_BYTES:
            write_atomically(path, data)

    def prune(self, limit: int = MAX_CACHE_BYTES) -> None:
        """Remove the least recently used entries until the namespace holds at most 3/4 of LIMIT."""
        if self.root is not None:
            _prune(self.root, limit)
