"""One open upstream pull request judged for every subscribed backend (`opdrift watch`), and the disk
cache that keeps a judgement from being made twice.

The judgement is the weekly issue's and the PR comment's, not a second one: the drift from the PR's
merge base to its head (`opdrift.drift.changes.compute_drift`), each backend list read and covered against
the head (`opdrift.app.prepare.backend_work`), and the subscriptions matched (`opdrift.app.subscriptions.
backend_gaps`): what the backend would lack, the kernels that would stop compiling in its form, the ops
it implements that the PR removes, each broken kernel with what changed in the form the backend writes
it in. This module only merges those gaps per backend and caps their lists.

The cache: a judgement is keyed by the blob shas of both sides' operator files, the content of every
subscribed backend list, and a digest of the code that judges (`opdrift.history.cache.code_digest`, plus
the coverage and app code it leaves out). A PR whose head moved without touching the operator files,
or a cold start, then costs the reads of its files and nothing else. One small JSON file per judgement,
written atomically, a damaged one a miss with a warning, the least recently used removed past MAX_ENTRIES
(`opdrift.files.prune`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from opdrift import pipeline
from opdrift.app.overrides import load_overrides
from opdrift.app.prepare import backend_work
from opdrift.app.subscriptions import Kernels, backend_gaps, backend_specs, gap_of
from opdrift.app.watch_impact import StateError, impact_data, read_impact
from opdrift.config.backend_specs import BackendSpec
from opdrift.config.file import BotConfig
from opdrift.coverage.kinds import KIND_BY_ID
from opdrift.drift.changes import Change, compute_drift
from opdrift.files import BLOCK
from opdrift.github.ghcache import blob_sha
from opdrift.history.cache import DiskCache, code_digest
from opdrift.model import SourceFiles
from opdrift.render.context import GAP_FIELDS, BackendGap
from opdrift.render.watch import MAX_OPS
from opdrift.taxonomy.overrides import Overrides

Say = Callable[[str], None]
MAX_ENTRIES = 2000  # judgements kept on disk; each is a few hundred bytes
_KIND = "watch"
# The parts of the package `code_digest` leaves out that decide a judgement too: the coverage readers,
# and render's gap record (`BackendGap`, its lists `GAP_LISTS`) and the watch's cap (`MAX_OPS`). The
# rest it leaves out shows, sends or publishes a judgement.
_JUDGING = ("coverage", "render")


def who_by_backend(cfg: BotConfig) -> dict[str, tuple[str, ...]]:
    """Each subscribed backend's key (``kind:where``) → the handles of the subscriptions naming it."""
    out: dict[str, dict[str, str]] = {}
    for sub in cfg.subscriptions:
        if sub.backend is not None:
            seen = out.setdefault(sub.backend.key, {})
            for h in sub.who:
                seen.setdefault(h.lower(), h)
    return {k: tuple(v.values()) for k, v in out.items()}


def _files_key(files: SourceFiles) -> list[str | None]:
    # The torch version too: it selects op-plugin's gated entries (and the codegen's rules), and a
    # version.txt bump leaves the three files as they were.
    return [
        *(
            blob_sha(f.text.encode("utf-8")) if f is not None else None
            for f in (files.native_functions, files.tags, files.derivatives)
        ),
        files.meta.torch_version,
    ]


def _tree_files(root: str) -> Iterator[str]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            yield os.path.join(folder, name)


def backend_digest(cfg: BotConfig) -> str | None:
    """A digest of what a judgement depends on besides the PR's files: every backend subscription's
    matchers and handles, the overrides file, and every subscribed backend list's content (a
    directory's files too); None when one cannot be read (then nothing is cached: the judgement is
    made and the read's error shown by it). A subscription narrowed to a tag, or another override,
    changes what `backend_gaps` finds, so it must change the cache key and judge every open PR again."""
    digest = hashlib.sha256()
    for sub in cfg.subscriptions:
        if sub.backend is not None:
            matchers = (
                sub.backend.kind,
                sub.backend.value,
                sub.buckets,
                sub.facets,
                sub.tags,
                sub.dispatch_keys,
            )
            digest.update(repr((*matchers, sub.who)).encode() + b"\0")
    if cfg.overrides:
        try:
            digest.update(b"overrides\0" + hashlib.sha256(Path(cfg.overrides).read_bytes()).digest())
        except OSError:
            return None
    for spec in backend_specs(cfg):
        digest.update(f"{spec.kind}\0{spec.value}\0".encode())
        if KIND_BY_ID[spec.kind].in_pytorch:
            continue
        paths = list(_tree_files(spec.resolved)) if os.path.isdir(spec.resolved) else [spec.resolved]
        try:
            for path in paths:
                digest.update(os.path.relpath(path, spec.resolved).encode() + b"\0")
                digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
        except OSError:
            return None
    return digest.hexdigest()


def judging_files(root: Path) -> list[Path]:
    """The files of the package at ROOT that `_judging_digest` adds to `code_digest`'s."""
    return [
        path
        for part in _JUDGING
        for path in sorted((root / part).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    ]


def _judging_digest() -> str | None:
    base = code_digest()
    if base is None:
        return None
    digest = hashlib.sha256(base.encode())
    root = Path(__file__).resolve().parent.parent
    try:
        for path in judging_files(root):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


def _entry_digest(key: str, items: object) -> str:
    """A digest of a judgement's content and the key it was written under, stored beside it. Not an
    HMAC (there is no secret to key one with): whoever can write the cache directory can write a
    matching digest. What it catches is a file that is not the one written for that key: a write
    cut short, a damaged block, an entry copied or restored under another key (a judgement of one
    pair of files served for another), a file edited by hand or by another version of the code."""
    text = json.dumps([key, items], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class JudgementCache:
    """Judgements on disk under ROOT (`opdrift.history.cache.DiskCache`'s files, its atomic writes and its
    damaged-file policy), at most MAX_ENTRIES of them."""

    def __init__(self, root: str | os.PathLike[str], *, warn: Say, max_entries: int = MAX_ENTRIES) -> None:
        self.disk = DiskCache(root, warn=warn, code=_judging_digest() or "")
        self.warn = warn
        self.max_entries = max_entries

    def get(self, key: str, who: Mapping[str, tuple[str, ...]]) -> tuple[BackendGap, ...] | None:
        raw = self.disk.get(_KIND, key)
        if raw is None:
            return None
        try:
            items = raw.get("impacts")
            if not isinstance(items, list):
                raise StateError("no impacts")
            if raw.get("digest") != _entry_digest(key, items):
                raise StateError("its digest does not match its content and key")
            found = [read_impact(x, f"impacts[{i}]", who) for i, x in enumerate(items)]
        except StateError as err:
            self.warn(f"watch cache {key[:12]}: ignoring a damaged judgement ({err})")
            return None
        return tuple(i for i in found if i is not None)

    def put(self, key: str, impacts: tuple[BackendGap, ...]) -> None:
        items = [impact_data(i) for i in impacts]
        self.disk.put(_KIND, key, {"impacts": items, "digest": _entry_digest(key, items)})
        self._prune()

    def _prune(self) -> None:
        # One block per judgement (a few hundred bytes each): `opdrift.files.prune`'s bound in entries.
        self.disk.prune(_KIND, self.max_entries * BLOCK)


def impacts_of(
    cfg: BotConfig,
    changes: tuple[Change, ...],
    lacking: dict[BackendSpec, frozenset[str]],
    implemented: dict[BackendSpec, Kernels],
) -> tuple[BackendGap, ...]:
    """The gaps of `backend_gaps` (one per matching subscription) merged per backend (`gap_of`), each
    capped at MAX_OPS ops per list. A backend whose gap only lists ops some backends need is no row:
    the PR asks nothing of it (`BackendGap.warns`)."""
    by_name = {c.name: c for c in changes}
    specs = {s.key: s for s in backend_specs(cfg)}
    merged: dict[str, dict[str, set[str]]] = {}
    # Only the handles of the subscriptions that matched: two on one list, each narrowed to its ops,
    # mention only the one whose ops the PR touches (each handle once, GitHub's are case-insensitive).
    who: dict[str, dict[str, str]] = {}
    for g in backend_gaps(cfg, changes, lacking, implemented):
        lists = merged.setdefault(g.key, {})
        for name in GAP_FIELDS:
            lists.setdefault(name, set()).update(g.broken_names if name == "broken" else getattr(g, name))
        if not g.warns():
            continue
        handles = who.setdefault(g.key, {})
        for h in g.who:
            handles.setdefault(h.lower(), h)
    return tuple(
        gap_of(specs[key], tuple(who[key].values()), lists, by_name, implemented[specs[key]]).capped(MAX_OPS)
        for key, lists in merged.items()
        if key in who  # else only ops some backends need
    )


@dataclass
class Judge:
    """Judges a pull request from its merge base and head commit: `spec_for(sha)` names the SOURCE of a
    commit (``gh:OWNER/NAME@SHA`` in production, ``DIR@SHA`` of a local clone in tests), `read` reads
    it. `judged` and `cached` count what a run did. Each PR reads the same lists again, so WARN hears
    the same warning once per PR: the command line's `opdrift.cli.common.warn` says each once a run."""

    cfg: BotConfig
    spec_for: Callable[[str], str]
    read: Callable[[str], SourceFiles]
    cache: JudgementCache | None = None
    warn: Say | None = None
    judged: int = 0
    cached: int = 0

    def __post_init__(self) -> None:
        self._overrides: Overrides | None = load_overrides(self.cfg.overrides) if self.cfg.overrides else None
        self._who = who_by_backend(self.cfg)
        self.backends = backend_digest(self.cfg)  # what the judgements are made against (None: unreadable)

    def __call__(self, merge_base: str, head: str) -> tuple[BackendGap, ...]:
        base_files = self.read(self.spec_for(merge_base))
        head_files = self.read(self.spec_for(head))
        key = None
        if self.cache is not None and self.backends is not None:
            key = self.cache.disk.key(_files_key(base_files), _files_key(head_files), self.backends)
            hit = self.cache.get(key, self._who)
            if hit is not None:
                self.cached += 1
                return hit
        self.judged += 1
        base = pipeline.load_snapshot(self.spec_for(merge_base), self._overrides, read=lambda _: base_files)
        head_snap = pipeline.load_snapshot(self.spec_for(head), self._overrides, read=lambda _: head_files)
        drift = compute_drift(base, head_snap)
        lacking, implemented = backend_work(self.cfg, head_snap, warn=self.warn)
        impacts = impacts_of(self.cfg, drift.changes, lacking, implemented)
        if key is not None and self.cache is not None:
            self.cache.put(key, impacts)
        return impacts
