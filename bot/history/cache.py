"""The walk's on-disk cache: each point's figures keyed by its files' blob oids, each drift by both sides'.

A rerun, or next week's run, then only computes new commits. Every key is salted with a digest of
the code that computes the values (`code_digest`), so a cache filled by other code, a changed rule
in the same release of opdrift, is never read. The codecs turn `Summary` and `PointDrift` into the
JSON stored and back; a stored value of the wrong shape, or with figures no run can give (a
negative count, a bucket that does not exist, counts that do not add up), is a miss: recomputed,
with a warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import TypeVar

from opdrift import __version__
from opdrift.files import CacheFiles
from opdrift.history.figures import Summary
from opdrift.history.timeline import PointDrift
from opdrift.shapes import COUNTS, INTEGER, STRINGS, Kind
from opdrift.taxonomy.buckets import BUCKETS
from opdrift.taxonomy.overrides import Overrides

# The parts of the package that never run in the walk: what the values are shown by, sent with, or
# compared to. Every other file of the package (the parse, the codegen rules, the taxonomy, the drift,
# the walk itself, their data tables) decides the cached values, and goes into `code_digest`; a
# module added anywhere else is covered without a change here.
_NOT_DECIDING = frozenset({"cli", "coverage", "publish", "render", "site", "templates"})


@cache
def code_digest() -> str | None:
    """A digest of every file of the package that decides a point's figures or a drift, or None when
    the package's files cannot be read (an installation that is not plain files).

    Computed once per process: about 60 files, 0.5 MB, 15-80 ms on a loaded 2-core machine."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    count = 0
    try:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if rel.parts[0] in _NOT_DECIDING or "__pycache__" in rel.parts or not path.is_file():
                continue
            if path.suffix in (".pyc", ".pyo"):
                continue
            digest.update(f"{rel.as_posix()}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
            count += 1
    except OSError:
        return None
    return digest.hexdigest() if count else None


def overrides_digest(overrides: Overrides | None) -> str:
    if overrides is None:
        return ""
    items = sorted((b, o.bucket, o.reason) for b, o in overrides.entries.items())
    return hashlib.sha256(json.dumps([overrides.display, items]).encode()).hexdigest()[:16]


_T = TypeVar("_T")

# What a cached value means, beside the release: raised when the same files would give other figures
# (per-profile kernel needs changed what "needs a kernel" counts), so an older cache is not read.
CACHE_FORMAT = 2


class DiskCache:
    """Point figures and drifts on disk, one small JSON file each, keyed by blob oids.

    A point's figures depend only on its three files (and the opdrift version and overrides, which
    salt every key); a drift only on both points' files. Files are written atomically; a file that
    does not read back as the expected shape is ignored with a warning and recomputed. Its files are
    `opdrift.files.CacheFiles` (a read touches its file), pruned by that module's one policy.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        salt: str = "",
        warn: Callable[[str], None],
        code: str | None = None,
    ) -> None:
        """`code`: the digest of the code that fills and reads it (`code_digest()` when not given)."""
        self.code = code_digest() if code is None else code
        self.root = Path(root) / f"opdrift-{__version__}-{(self.code or 'unknown')[:16]}"
        self.salt = salt
        self.warn = warn
        self.hits = 0
        self._write_failed = False
        if not self.code:
            # Values whose code cannot be told apart from another's are never trusted: no cache at all.
            self.warn(f"{root}: cannot read opdrift's own files to key the cache; the walk goes on uncached")

    @property
    def usable(self) -> bool:
        return bool(self.code)

    def key(self, *parts: object) -> str:
        payload = json.dumps([__version__, CACHE_FORMAT, self.code, self.salt, *parts], separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()

    def files(self, kind: str) -> CacheFiles:
        return CacheFiles(self.root / kind, ".json")

    def _path(self, kind: str, key: str) -> Path:
        return self.files(kind).path(key)

    def prune(self, kind: str, limit: int) -> None:
        """`opdrift.files.prune`'s policy over KIND's files, at LIMIT bytes."""
        self.files(kind).prune(limit)

    def get(self, kind: str, key: str) -> dict[str, object] | None:
        if not self.usable:
            return None
        path = self._path(kind, key)
        try:
            data = self.files(kind).read(key)
            if data is None:
                return None
            text = data.decode("utf-8")
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

    def summary(self, key: str) -> Summary | None:
        """The figures stored under KEY, or None (a miss) when there are none or they are not believable."""
        return self._decoded("summary", key, summary_problem, decode_summary)

    def drift(self, key: str, base: str) -> PointDrift | None:
        """The drift stored under KEY, from BASE, or None (a miss) as for `summary`."""
        return self._decoded("drift", key, drift_problem, lambda d: decode_drift(d, base))

    def _decoded(
        self,
        kind: str,
        key: str,
        problem: Callable[[Mapping[str, object]], str | None],
        decode: Callable[[Mapping[str, object]], _T | None],
    ) -> _T | None:
        raw = self.get(kind, key)
        if raw is None:
            return None
        found = problem(raw)
        if found is not None:
            self.hits -= 1  # read, but refused: no hit
            self.warn(f"{self._path(kind, key)}: ignoring cache file ({found})")
            return None
        return decode(raw)

    def put(self, kind: str, key: str, value: Mapping[str, object]) -> None:
        if not self.usable:
            return
        path = self._path(kind, key)
        data = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
        try:
            self.files(kind).write(key, data)
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


# Far above any real figure (3,216 operators at most in the releases 1.12-2.15), far below what would
# make a chart or a sum absurd.
MAX_COUNT = 1_000_000
# A drift lists operator names; a name is an identifier with an optional overload.
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?")
MAX_NAME = 1024


def _bad_count(value: object) -> bool:
    return not INTEGER.accepts(value) or not 0 <= INTEGER.convert(value) <= MAX_COUNT


def summary_problem(d: Mapping[str, object]) -> str | None:
    """Why a stored summary cannot be one this code computed, or None when it can."""
    nums = {k: d.get(k) for k in ("entries", "operators", "base_operators")}
    for k, n in nums.items():
        if _bad_count(n):
            return f"{k}: {n!r} is not a count"
    cats = d.get("by_category")
    if not COUNTS.accepts(cats):
        return "by_category: not an object of counts"
    counts = COUNTS.convert(cats)
    for bucket, n in counts.items():
        if bucket not in BUCKETS:
            return f"by_category: no bucket {bucket[:40]!r}"
        if _bad_count(n):
            return f"by_category: {bucket}: {n!r} is not a count"
    operators, base = INTEGER.convert(nums["operators"]), INTEGER.convert(nums["base_operators"])
    if sum(counts.values()) != base:
        return f"by_category adds up to {sum(counts.values())}, not base_operators {base}"
    if base > operators:
        return f"base_operators {base} exceeds operators {operators}"
    return None


def decode_summary(d: Mapping[str, object]) -> Summary | None:
    if summary_problem(d) is not None:
        return None
    nums = [d.get(k) for k in ("entries", "operators", "base_operators")]
    cats = d.get("by_category")
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


def _bad_name(name: str) -> bool:
    return len(name) > MAX_NAME or _OP_NAME.fullmatch(name) is None


def drift_problem(d: Mapping[str, object]) -> str | None:
    """Why a stored drift cannot be one this code computed, or None when it can."""
    for k in _DRIFT_LISTS:
        if not STRINGS.accepts(d.get(k)):
            return f"{k}: not a list of strings"
    if not _RENAMES.accepts(d.get("renamed")):
        return "renamed: not a list of [old, new] name pairs"
    lists = {k: STRINGS.convert(d.get(k)) for k in _DRIFT_LISTS}
    renamed = _RENAMES.convert(d.get("renamed"))
    names = [n for k in _DRIFT_LISTS for n in lists[k]] + [n for pair in renamed for n in pair]
    if len(names) > MAX_COUNT:
        return f"{len(names)} names"
    bad = next((n for n in names if _bad_name(n)), None)
    if bad is not None:
        return f"{bad[:40]!r} is not an operator name"
    # Each breaking or needs-kernel operator is one of the drift's changes.
    changes = {*lists["added"], *lists["removed"], *lists["changed"], *(new for _, new in renamed)}
    for k in ("breaking", "needs_kernel"):
        stray = next((n for n in lists[k] if n not in changes), None)
        if stray is not None:
            return f"{k}: {stray[:40]!r} is none of the drift's changes"
    return None


def decode_drift(d: Mapping[str, object], base: str) -> PointDrift | None:
    if drift_problem(d) is not None:
        return None
    lists = {k: STRINGS.convert(d.get(k)) for k in _DRIFT_LISTS}
    renamed = tuple((old, new) for old, new in _RENAMES.convert(d.get("renamed")))
    return PointDrift(base=base, renamed=renamed, **lists)
