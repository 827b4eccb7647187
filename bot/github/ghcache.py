"""The on-disk caches of what GitHub's API taught: blobs by their git sha, JSON answers by key.

Both are shared by the ``gh:`` reads (`opdrift.github.ghsource`, `opdrift.github.ghfiles`) and the pull
request scan (`opdrift.github.pulls`). An entry is checked when read (a blob against its sha, a JSON
entry against its key and a digest of its value), so a damaged file is a miss, never a wrong answer;
both are `opdrift.files.CacheFiles` (written atomically), pruned by its one policy past their bounds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opdrift.files import CacheFiles


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
    """Blob contents by their git sha, under ROOT/blobs (`opdrift.files.CacheFiles`); a file that does not
    hash to its name is ignored (and replaced). A read marks the blob recently used; `prune` keeps the
    total under MAX_BLOB_BYTES."""

    def __init__(self, root: Path | None) -> None:
        self.files = None if root is None else CacheFiles(root / "blobs")

    def get(self, sha: str) -> bytes | None:
        if self.files is None:
            return None
        try:
            data = self.files.read(sha)
        except OSError:
            return None
        if data is None or blob_sha(data) != sha:
            return None
        return data

    def put(self, sha: str, data: bytes) -> None:
        if self.files is not None:
            with contextlib.suppress(OSError):  # a cache that cannot be written only costs a request
                self.files.write(sha, data)

    def prune(self, limit: int | None = None) -> None:
        """`opdrift.files.prune`'s policy, at LIMIT (MAX_BLOB_BYTES)."""
        if self.files is not None:
            self.files.prune(MAX_BLOB_BYTES if limit is None else limit)


# A cache of API answers stays small: past this many bytes the least recently used entries go.
MAX_CACHE_BYTES = 64 * 1024 * 1024
MAX_ENTRY_BYTES = 4 * 1024 * 1024


class JsonCache:
    """JSON values by (namespace, key), under ROOT/NAMESPACE/ (`opdrift.files.CacheFiles`): what an answer
    taught, or the answer itself with its ETag. Each entry carries its key and a digest of its value: a
    file that does not parse, names another key or fails its digest is a miss (and is replaced), never
    a wrong answer. `prune` keeps the total under MAX_CACHE_BYTES."""

    def __init__(self, root: Path | None, namespace: str) -> None:
        self.files = None if root is None else CacheFiles(root / namespace, ".json")

    @staticmethod
    def _name(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @staticmethod
    def _digest(key: str, value: Any) -> str:
        return hashlib.sha256(json.dumps([key, value], sort_keys=True).encode()).hexdigest()

    def get(self, key: str) -> Any:
        """The stored value, or None (a miss)."""
        if self.files is None:
            return None
        try:
            data = self.files.read(self._name(key), limit=MAX_ENTRY_BYTES)
            entry = None if data is None else json.loads(data)
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or "value" not in entry:
            return None
        value = entry["value"]
        if entry.get("digest") != self._digest(key, value):
            return None
        return value

    def put(self, key: str, value: Any) -> None:
        if self.files is None:
            return
        data = json.dumps({"key": key, "value": value, "digest": self._digest(key, value)}).encode()
        if len(data) <= MAX_ENTRY_BYTES:
            with contextlib.suppress(OSError):  # a cache that cannot be written only costs a request
                self.files.write(self._name(key), data)

    def prune(self, limit: int = MAX_CACHE_BYTES) -> None:
        """`opdrift.files.prune`'s policy, at LIMIT."""
        if self.files is not None:
            self.files.prune(limit)
