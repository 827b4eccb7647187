"""The per-commit walk: every commit that touched the operator files → one timeline point each.

The walk lists the commits (or release tags) with one ``git log --raw`` (`opdrift.sources.gitlog`),
reads blobs through one `GitReader`, and keeps one incremental `Engine` (`opdrift.history.engine`)
that moves the classified state from one good commit to the next. An optional `DiskCache`
(`opdrift.history.cache`) keeps each point's figures and drift, so a rerun only computes new commits.
A run can be one shard of the points; shards merge into the single run's timeline byte for byte.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from opdrift.errors import GitError, OpdriftError, SourceError
from opdrift.history.cache import (
    DiskCache,
    encode_drift,
    encode_summary,
    overrides_digest,
)
from opdrift.history.engine import Engine
from opdrift.history.figures import Changes, Summary, drift_of, point_drift
from opdrift.history.timeline import Point, PointDrift, Shard, Timeline
from opdrift.model import (
    DERIVATIVES_PATH,
    NATIVE_PATH,
    TAGS_PATH,
    VERSION_PATH,
    Snapshot,
    SourceFiles,
    SourceMeta,
    TextFile,
)
from opdrift.pipeline import operators_from_files
from opdrift.sources.git import GitReader, is_ancestor
from opdrift.sources.gitlog import (
    OPERATOR_FILES,
    TRACKED_FILES,
    LogEntry,
    check_paths,
    list_commits,
    list_tags,
)
from opdrift.sources.read import MAX_FILE_BYTES, decode, version_of
from opdrift.taxonomy import buckets
from opdrift.taxonomy import classify as taxonomy
from opdrift.taxonomy.overrides import Overrides

DEFAULT_PATHS = OPERATOR_FILES

# The blob oids of native_functions.yaml, tags.yaml, derivatives.yaml and version.txt (None: absent):
# a point's figures depend on these four files alone.
Oids = tuple[str | None, str | None, str | None, str | None]


class HistoryError(OpdriftError):
    """The walk cannot run: a bad --shard, an empty tag pattern, a repository without the files."""


@dataclass(frozen=True)
class WalkOptions:
    from_rev: str | None = None
    to_rev: str = "HEAD"
    paths: tuple[str, ...] = DEFAULT_PATHS
    tags: str | None = None  # walk release tags matching this glob instead of commits
    shard: tuple[int, int] | None = None  # (I, N), 1-based
    # A real history holds commits whose files upstream's codegen refuses (an entry moved by adding it
    # before removing it defines an operator twice): by default such a commit is a broken point and the
    # walk goes on; False (`history --strict`) stops at the first one.
    keep_going: bool = True
    cache_dir: str | None = None
    overrides: Overrides | None = None


class BrokenCommitError(HistoryError):
    """Under `--strict`: a commit whose files do not build stopped the walk (the message says how to
    go on); its path and line are the commit's file and line."""

    def __init__(self, err: OpdriftError) -> None:
        hint = "--strict stops at the first such commit; without it the walk records it and goes on"
        super().__init__(f"{err.message} ({hint})", path=err.path, line=err.line)


SKIPPED_SHOWN = 3  # how many skipped commits the summary names


def skipped_summary(points: Sequence[Point], limit: int = SKIPPED_SHOWN) -> list[str]:
    """The lines that tell how many commits the walk skipped (broken points), naming the first LIMIT
    with their reason; no line when none was skipped."""
    broken = [p for p in points if p.broken]
    if not broken:
        return []
    lines = [
        f"skipped {len(broken)} commit(s) whose operator files do not build (recorded as broken in the "
        "timeline; --strict stops at the first):"
    ]
    lines.extend(f"  {p.tag or p.sha[:12]} {p.error}" for p in broken[:limit])
    if len(broken) > limit:
        lines.append(f"  ... and {len(broken) - limit} more: the timeline lists them all")
    return lines


def parse_shard(spec: str) -> tuple[int, int]:
    """``"2/5"`` → (2, 5); anything else, or I outside 1..N, is a `HistoryError`."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec)
    if m is None:
        raise HistoryError(f"--shard must be I/N (like 2/5), not {spec!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if not 1 <= i <= n:
        raise HistoryError(f"--shard {spec}: I must be between 1 and N")
    return i, n


def shard_bounds(total: int, index: int, count: int) -> tuple[int, int]:
    """[start, end) of shard INDEX (1-based) of COUNT contiguous, near-equal chunks of TOTAL points."""
    return (index - 1) * total // count, index * total // count


@dataclass(frozen=True)
class _Visit:
    """One point the walk visits: a commit, or the commit a release tag names."""

    sha: str
    rev: str  # as shown in file names: the sha, or the tag
    date: str
    subject: str
    oids: Oids | None = None  # from the log; None: looked up in the commit's tree


@dataclass(frozen=True)
class _Ref:
    """A good point the next one diffs against."""

    sha: str
    rev: str
    key: Oids
    date: str = ""


class _Walker:
    """Measures points through one engine, loading the base first when the engine is elsewhere."""

    def __init__(self, repo: str, git: GitReader, options: WalkOptions, cache: DiskCache | None) -> None:
        self.repo = repo
        self.git = git
        self.options = options
        self.cache = cache
        self.engine = Engine(options.overrides)
        self.engine_at: Oids | None = None
        self._texts: dict[str, str] = {}

    def oids(self, sha: str) -> Oids:
        native_oid = self.git.blob_id(sha, NATIVE_PATH)
        if native_oid is None:
            raise SourceError(f"no {NATIVE_PATH} at {sha}: not a PyTorch-shaped revision", path=self.repo)
        tags_oid, deriv_oid = self.git.blob_id(sha, TAGS_PATH), self.git.blob_id(sha, DERIVATIVES_PATH)
        return native_oid, tags_oid, deriv_oid, self.git.blob_id(sha, VERSION_PATH)

    def _text(self, oid: str, display: str) -> str:
        text = self._texts.get(oid)
        if text is None:
            text = decode(self.git.read_blob(oid, max_size=MAX_FILE_BYTES), display)
            # Keep only the current files' texts: a walk visits each blob version once, in order.
            if len(self._texts) > 8:
                self._texts.clear()
            self._texts[oid] = text
        return text

    def files(self, ref: _Ref, date: str) -> SourceFiles:
        def text_file(oid: str | None, path: str) -> TextFile | None:
            if oid is None:
                return None
            display = f"{ref.rev}:{path}"
            return TextFile(display=display, text=self._text(oid, display))

        native_oid, tags_oid, deriv_oid, version_oid = ref.key
        version_txt = text_file(version_oid, VERSION_PATH)
        meta = SourceMeta(
            kind="git",
            path=f"{self.repo}@{ref.rev}",
            revision=ref.rev,
            commit=ref.sha,
            date=date,
            torch_version=version_of(ref.rev, None if version_txt is None else version_txt.text),
        )
        return SourceFiles(
            meta=meta,
            native_functions=text_file(native_oid, NATIVE_PATH),
            tags=text_file(tags_oid, TAGS_PATH),
            derivatives=text_file(deriv_oid, DERIVATIVES_PATH),
        )

    def _load(self, ref: _Ref) -> Changes:
        date = ref.date or self.git.commit_info(ref.sha).date
        try:
            changes = self.engine.load(self.files(ref, date))
        except BaseException:
            # A commit that fails leaves a valid engine where it was; anything else is reloaded.
            if not self.engine.ready:
                self.engine_at = None
            raise
        self.engine_at = ref.key
        return changes

    def measure(self, ref: _Ref, base: _Ref | None) -> tuple[Summary, PointDrift | None]:
        """REF's figures and its drift from BASE, from the cache or the engine."""
        cache = self.cache
        skey = cache.key("summary", *ref.key) if cache else ""
        dkey = cache.key("drift", *base.key, *ref.key) if cache and base else ""
        summary: Summary | None = None
        pdrift: PointDrift | None = None
        if cache is not None:
            summary = cache.summary(skey)
            if base is not None:
                pdrift = cache.drift(dkey, base.sha)
        if summary is not None and (base is None or pdrift is not None):
            return summary, pdrift
        if base is not None and self.engine_at != base.key:
            self._load(base)
        changes = self._load(ref)
        summary = self.engine.summary()
        if base is not None:
            head_meta = self.engine.meta
            pdrift = point_drift(base.sha, drift_of(changes, head_meta, head_meta, self.engine.records))
        if cache is not None:
            cache.put("summary", skey, encode_summary(summary))
            if pdrift is not None:
                cache.put("drift", dkey, encode_drift(pdrift))
        return summary, pdrift


def _check_options(options: WalkOptions) -> None:
    if options.tags is not None and (options.from_rev is not None or options.to_rev != "HEAD"):
        raise HistoryError("--tags walks release tags; it does not combine with --from/--to")
    if options.tags is not None and tuple(options.paths) != DEFAULT_PATHS:
        raise HistoryError("--tags walks every matching tag; it does not combine with --paths")


def _tag_visits(repo: str, git: GitReader, pattern: str) -> list[_Visit]:
    names = list_tags(repo, pattern)
    if not names:
        raise HistoryError(f"no tag matches {pattern!r}", path=repo)
    visits = []
    for t in names:
        sha = git.resolve(t)
        info = git.commit_info(sha)
        visits.append(_Visit(sha, t, info.date, info.subject))
    return visits


def _with_log_oids(
    git: GitReader, visits: Sequence[_Visit], listed: Sequence[LogEntry], start: int, end: int
) -> list[_Visit]:
    """VISITS (the counted commits of LISTED) with the tracked files' oids filled in for [start, end).

    The oids are carried forward through every listed commit's changes (counted or not), from the
    first parent of the first visit: no tree lookup per commit.
    """
    out = list(visits)
    if start >= end:
        return out
    current = dict(zip(TRACKED_FILES, _oids_before(git, visits[start].sha), strict=True))
    k = next(i for i, e in enumerate(listed) if e.sha == visits[start].sha)
    for i in range(start, end):
        while True:
            for path, oid in listed[k].changes:
                if path in current:
                    current[path] = oid
            k += 1
            if listed[k - 1].sha == visits[i].sha:
                break
        out[i] = replace(
            visits[i],
            oids=(current[NATIVE_PATH], current[TAGS_PATH], current[DERIVATIVES_PATH], current[VERSION_PATH]),
        )
    return out


def _first_base(walker: _Walker, candidates: Sequence[tuple[str, str]], keep_going: bool) -> _Ref | None:
    """The point the first one diffs against: the first of CANDIDATES (sha, rev) that measures."""
    for sha, rev in candidates:
        try:
            ref = _Ref(sha, rev, walker.oids(sha))
            walker.measure(ref, None)
        except OpdriftError as err:
            if not keep_going:
                raise BrokenCommitError(err) from err
            continue
        return ref
    return None


def walk(
    repo: str,
    options: WalkOptions,
    *,
    progress: Callable[[int, int], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> Timeline:
    """The timeline of REPO's operator history (module docstring); errors name the commit."""

    def _warn(msg: str) -> None:
        print(f"opdrift: warning: {msg}", file=sys.stderr)

    warn = warn or _warn
    _check_options(options)
    with GitReader(repo) as git:
        to_sha = git.resolve(options.to_rev)
        from_sha = git.resolve(options.from_rev) if options.from_rev is not None else None
        paths = check_paths(options.paths) if options.tags is None else ()
        if from_sha is not None and from_sha != to_sha and is_ancestor(repo, to_sha, from_sha):
            # A reversed range lists nothing: say so rather than walk nothing. (FROM need not be an
            # ancestor of TO: a release tag sits on its release branch, and FROM..TO is main's part.)
            raise HistoryError(
                f"--from {options.from_rev} is newer than --to {options.to_rev}: give the older revision as --from",
                path=repo,
            )
        if git.blob_id(to_sha, NATIVE_PATH) is None:
            raise HistoryError(
                f"no {NATIVE_PATH} at {options.to_rev}: not a PyTorch-shaped repository", path=repo
            )
        listed: list[LogEntry] = []
        if options.tags is not None:
            visits = _tag_visits(repo, git, options.tags)
        else:
            listed = list_commits(repo, from_sha, to_sha, paths)
            visits = [_Visit(e.sha, e.sha, e.date, e.subject) for e in listed if e.counted]
        total = len(visits)
        start, end = 0, total
        shard: Shard | None = None
        if options.shard is not None:
            index, count = options.shard
            start, end = shard_bounds(total, index, count)
            shard = Shard(index=index, count=count, start=start, total=total)
        if options.tags is None:
            visits = _with_log_oids(git, visits, listed, start, end)
        cache = (
            DiskCache(options.cache_dir, salt=overrides_digest(options.overrides), warn=warn)
            if options.cache_dir
            else None
        )
        walker = _Walker(repo, git, options, cache)

        # The point the first one diffs against: the last good one before it, as a single run sees it.
        candidates = [(visits[i].sha, visits[i].rev) for i in range(start - 1, -1, -1)]
        if from_sha is not None and options.tags is None:
            candidates.append((from_sha, options.from_rev or from_sha))
        base = _first_base(walker, candidates, options.keep_going)

        points: list[Point] = []
        for done, visit in enumerate(visits[start:end], 1):
            point, ref = _measure_visit(repo, walker, visit, base, options)
            points.append(point)
            if ref is not None:
                base = ref
            if progress is not None:
                progress(done, end - start)
    return Timeline(
        repo=repo,
        to_rev=options.to_rev,
        to_sha=to_sha,
        from_rev=options.from_rev,
        from_sha=from_sha,
        paths=paths,
        tags=options.tags,
        buckets=buckets.BUCKETS,
        points=tuple(points),
        shard=shard,
    )


def _measure_visit(
    repo: str, walker: _Walker, visit: _Visit, base: _Ref | None, options: WalkOptions
) -> tuple[Point, _Ref | None]:
    """VISIT's point, and its ref when it is good (the next point's base); a broken commit is a
    point with its error by default, and `BrokenCommitError` under --strict."""
    sha, date, subject = visit.sha, visit.date, visit.subject
    tag = visit.rev if options.tags is not None else None
    try:
        if visit.oids is None:
            oids = walker.oids(sha)
        elif visit.oids[0] is None:
            raise SourceError(f"no {NATIVE_PATH} at {sha}: not a PyTorch-shaped revision", path=repo)
        else:
            oids = visit.oids
        ref = _Ref(sha, visit.rev, oids, date)
        summary, pdrift = walker.measure(ref, base)
    except OpdriftError as err:
        if not options.keep_going:
            raise BrokenCommitError(err) from err
        return Point(sha=sha, date=date, subject=subject, tag=tag, error=_one_line(err)), None
    point = Point(
        sha=sha,
        date=date,
        subject=subject,
        tag=tag,
        entries=summary.entries,
        operators=summary.operators,
        base_operators=summary.base_operators,
        by_category=summary.by_category,
        drift=pdrift,
    )
    return point, ref


def _one_line(err: OpdriftError) -> str:
    return " ".join(str(err).split())


def _oids_before(git: GitReader, sha: str) -> Oids:
    """The tracked files' oids in the first parent of commit SHA (all None for a root commit)."""
    try:
        parent = git.resolve(f"{sha}^")
    except GitError:
        return None, None, None, None
    native_oid, tags_oid, deriv_oid, version_oid = (git.blob_id(parent, p) for p in TRACKED_FILES)
    return native_oid, tags_oid, deriv_oid, version_oid


def cold_point(files: SourceFiles, overrides: Overrides | None = None) -> Snapshot:
    """A commit's snapshot classified from scratch: the reference the walk must equal."""
    return taxonomy.classify(operators_from_files(files), overrides)
