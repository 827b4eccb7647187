"""The walk's on-disk cache: each point's figures keyed by its files' blob oids, each drift by both sides'.

A rerun, or next week's run, then only computes new commits. The codecs turn `Summary` and
`PointDrift` into the JSON stored and back; a stored value of the wrong shape decodes to None and
is recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from bot import __version__
from bot.history.figures import Summary
from bot.history.timeline import PointDrift
from bot.shapes import COUNTS, INTEGER, STRINGS, Kind
from bot.taxonomy.overrides import Overrides


def overrides_digest(overrides: Overrides | None) -> str:
    if overrides is None:
        return ""
    items = sorted((b, o.bucket, o.reason) for b, o in overrides.entries.items())
    return hashlib.sha256(json.dumps([overrides.display, items]).encode()).hexdigest()[:16]


# What a cached value means, beside the release: raised when the same files would give other figures
# (per-profile kernel needs changed what "needs a kernel" counts), so an older cache is not read.
CACHE_FORMAT = 2


class DiskCache:
    """Point figures and drifts on disk, one small JSON file each, keyed by blob oids.

    A point's figures depend only on its three files (and the opdrift version and overrides, which
    salt every key); a drift only on both points' files. Files are written atomically; a file that
    does not read back as the expected shape is ignored with a warning and recomputed.
    """

    def __init__(self, root: str | os.PathLike[str], *, salt: str = "", warn: Callable[[str], None]) -> None:
        self.root = Path(root) / f"opdrift-{__version__}"
        self.salt = salt
        self.warn = warn
        self.hits = 0
        self._write_failed = False

    def key(self, *parts: object) -> str:
        payload = json.dumps([__version__, CACHE_FORMAT, self.salt, *parts], separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()

    def _path(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / f"{key}.json"

    def get(self, kind: str, key: str) -> dict[str, object] | None:
        path = self._path(kind, key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as err:
            self.warn(f"{path}: ignoring unreadable cache file ({err.strerror or err})")
            return None
        except ValueError as err:  # not UTF-8: a damaged file, rebuilt like any miss
            self.warn(f"{path}: ignoring corrupt cache file ({err})")
            return None
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as err:
            self.warn(f"{path}: ignoring corrupt cache file ({type(err).__name__})")
            return None
        if not isinstance(value, dict):
            self.warn(f"{path}: ignoring corrupt cache file (not an object)")
            return None
        self.hits += 1
        return value

    def put(self, kind: str, key: str, value: Mapping[str, object]) -> None:
        path = self._path(kind, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(value, f, sort_keys=True, separators=(",", ":"))
            os.replace(tmp, path)
        except OSError as err:
            # A cache that cannot be written only makes the next run slower; saying so once is enough,
            # where a warning per file would print several lines for every commit of the walk.
            if not self._write_failed:
                self._write_failed = True
                self.warn(
                    f"{path}: cannot write cache file ({err.strerror or err}); the walk goes on uncached"
                )


def encode_summary(s: Summary) -> dict[str, object]:
    return {
        "entries": s.entries,
        "operators": s.operators,
        "base_operators": s.base_operators,
        "by_category": dict(s.by_category),
    }


def decode_summary(d: Mapping[str, object]) -> Summary | None:
    nums = [d.get(k) for k in ("entries", "operators", "base_operators")]
    cats = d.get("by_category")
    if not all(INTEGER.accepts(n) for n in nums) or not COUNTS.accepts(cats):
        return None
    e, o, b = (INTEGER.convert(n) for n in nums)
    return Summary(
        entries=e, operators=o, base_operators=b, by_category=tuple(sorted(COUNTS.convert(cats).items()))
    )


_DRIFT_LISTS = ("added", "removed", "changed", "breaking", "needs_kernel")
_RENAMES: Kind[list[list[str]]] = Kind(
    "a list of [old, new] name pairs",
    lambda v: (
        isinstance(v, list)
        and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in v)
    ),
)


def encode_drift(d: PointDrift) -> dict[str, object]:
    out: dict[str, object] = {k: list(getattr(d, k)) for k in _DRIFT_LISTS}
    out["renamed"] = [list(p) for p in d.renamed]
    return out


def decode_drift(d: Mapping[str, object], base: str) -> PointDrift | None:
    if not all(STRINGS.accepts(d.get(k)) for k in _DRIFT_LISTS) or not _RENAMES.accepts(d.get("renamed")):
        return None
    lists = {k: STRINGS.convert(d.get(k)) for k in _DRIFT_LISTS}
    renamed = tuple((old, new) for old, new in _RENAMES.convert(d.get("renamed")))
    return PointDrift(base=base, renamed=renamed, **lists)
