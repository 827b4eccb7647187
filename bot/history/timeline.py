"""The history timeline: its records, its JSON form (and back), and the merge of shards.

CSV and Markdown with a Mermaid chart are rendering (`opdrift.render.timeline`). Everything here is pure
except `Progress`, which draws on a terminal. The JSON form is the one shards
exchange, so it is deterministic (sorted keys, fixed separators, a final newline) and lossless:
``parse_json(render_json(t)) == t``. That is what lets `merge` join shard outputs into the very bytes a
single run writes.

JSON structure (``format: "opdrift-history"``, ``format_version: 1``)::

    {
      "format": "opdrift-history", "format_version": 1, "opdrift_version": "0.1.0",
      "repo": "path as given",
      "range": {"from": REV|null, "from_sha": SHA|null, "to": REV, "to_sha": SHA,
                "paths": [...], "tags": PATTERN|null},
      "buckets": [bucket ids, in the taxonomy's order],
      "points": [
        {"sha": SHA, "date": ISO 8601, "subject": str, "tag": "v2.14.1"|null,
         "status": "ok"|"broken", "error": one line|null,
         "entries": int|null, "operators": int|null, "base_operators": int|null,
         "by_category": {bucket: base operators}|null,
         "drift": {"base": SHA, "added": [...], "removed": [...], "changed": [...],
                   "renamed": [{"from": OLD, "to": NEW}], "breaking": [...],
                   "needs_kernel": [...]}|null}
      ],
      "shard": {"index": I, "count": N, "start": first point's index in the whole range,
                "total": points in the whole range}      (only in a shard's output)
    }

A point's `drift` is null when nothing came before it (the first commit of a walk without ``--from``)
or when the point is broken; otherwise `base` names the last good point before it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

from opdrift import __version__
from opdrift.errors import OpdriftError
from opdrift.shapes import (
    INTEGER,
    LIST,
    OBJECT,
    OPT_INTEGER,
    OPT_STRING,
    STRING,
    STRINGS,
    Kind,
    Reader,
    must_be,
)

FORMAT = "opdrift-history"
FORMAT_VERSION = 1


class TimelineError(OpdriftError):
    """A timeline file (a shard's output) is unreadable or does not fit with the others."""


@dataclass(frozen=True)
class PointDrift:
    """What changed from `base` (the last good point before this one) to this point."""

    base: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()  # (old name, new name)
    changed: tuple[str, ...] = ()
    breaking: tuple[str, ...] = ()
    needs_kernel: tuple[str, ...] = ()


@dataclass(frozen=True)
class Point:
    """One commit (or release tag) of the walk."""

    sha: str
    date: str
    subject: str
    tag: str | None = None
    error: str | None = None  # set when the commit's files could not be read or parsed
    entries: int | None = None
    operators: int | None = None
    base_operators: int | None = None
    by_category: tuple[tuple[str, int], ...] | None = None  # (bucket, base operators), sorted by bucket
    drift: PointDrift | None = None

    @property
    def broken(self) -> bool:
        return self.error is not None

    def category(self, bucket: str) -> int:
        return dict(self.by_category or ()).get(bucket, 0)


@dataclass(frozen=True)
class Shard:
    """Which slice of the whole range a shard's timeline holds."""

    index: int  # 1-based
    count: int
    start: int  # index of this shard's first point in the whole range
    total: int  # points in the whole range


@dataclass(frozen=True)
class Timeline:
    repo: str
    to_rev: str
    to_sha: str
    from_rev: str | None = None
    from_sha: str | None = None
    paths: tuple[str, ...] = ()
    tags: str | None = None
    buckets: tuple[str, ...] = ()
    points: tuple[Point, ...] = ()
    shard: Shard | None = None
    opdrift_version: str = field(default=__version__)


# --- JSON --------------------------------------------------------------------------------------


def _drift_json(d: PointDrift | None) -> dict[str, object] | None:
    if d is None:
        return None
    return {
        "base": d.base,
        "added": list(d.added),
        "removed": list(d.removed),
        "renamed": [{"from": old, "to": new} for old, new in d.renamed],
        "changed": list(d.changed),
        "breaking": list(d.breaking),
        "needs_kernel": list(d.needs_kernel),
    }


def point_json(p: Point) -> dict[str, object]:
    return {
        "sha": p.sha,
        "date": p.date,
        "subject": p.subject,
        "tag": p.tag,
        "status": "broken" if p.broken else "ok",
        "error": p.error,
        "entries": p.entries,
        "operators": p.operators,
        "base_operators": p.base_operators,
        "by_category": None if p.by_category is None else dict(p.by_category),
        "drift": _drift_json(p.drift),
    }


def to_json(t: Timeline) -> dict[str, object]:
    out: dict[str, object] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "opdrift_version": t.opdrift_version,
        "repo": t.repo,
        "range": {
            "from": t.from_rev,
            "from_sha": t.from_sha,
            "to": t.to_rev,
            "to_sha": t.to_sha,
            "paths": list(t.paths),
            "tags": t.tags,
        },
        "buckets": list(t.buckets),
        "points": [point_json(p) for p in t.points],
    }
    if t.shard is not None:
        out["shard"] = {
            "index": t.shard.index,
            "count": t.shard.count,
            "start": t.shard.start,
            "total": t.shard.total,
        }
    return out


def dumps(value: object) -> str:
    """The one JSON spelling every timeline file uses, so equal data gives equal bytes."""
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": ")) + "\n"


def render_json(t: Timeline) -> str:
    return dumps(to_json(t))


# Timeline files are ours but may be hand-edited or damaged; each field is read through the one shape
# reader, and a mismatch names the file (`path`) and the field in a "`key` must be ..." sentence.
_READ: Reader[str] = Reader(lambda where, message: TimelineError(message, path=where), must_be)
_INTEGERS: Kind[list[object]] = Kind("integers", lambda v: all(INTEGER.accepts(n) for n in v))


def _str(d: Mapping[str, object], key: str, where: str) -> str:
    return _READ.field(STRING, d, key, f"`{key}`", where)


def _opt_str(d: Mapping[str, object], key: str, where: str) -> str | None:
    return _READ.field(OPT_STRING, d, key, f"`{key}`", where)


def _opt_int(d: Mapping[str, object], key: str, where: str) -> int | None:
    return _READ.field(OPT_INTEGER, d, key, f"`{key}`", where)


def _names(d: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    return _READ.field(STRINGS, d, key, f"`{key}`", where)


def _renames(d: Mapping[str, object], where: str) -> tuple[tuple[str, str], ...]:
    v = d.get("renamed")
    out: list[tuple[str, str]] = []
    if not isinstance(v, list):
        raise TimelineError("`renamed` must be a list", path=where)
    for item in v:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("from"), str)
            or not isinstance(item.get("to"), str)
        ):
            raise TimelineError("`renamed` items must be {from, to} strings", path=where)
        out.append((item["from"], item["to"]))
    return tuple(out)


def _mapping(v: object, what: str, where: str) -> Mapping[str, object]:
    return _READ.read(OBJECT, v, what, where)


def _point_from(v: object, where: str) -> Point:
    d = _mapping(v, "a point", where)
    drift: PointDrift | None = None
    if d.get("drift") is not None:
        dd = _mapping(d["drift"], "`drift`", where)
        drift = PointDrift(
            base=_str(dd, "base", where),
            added=_names(dd, "added", where),
            removed=_names(dd, "removed", where),
            renamed=_renames(dd, where),
            changed=_names(dd, "changed", where),
            breaking=_names(dd, "breaking", where),
            needs_kernel=_names(dd, "needs_kernel", where),
        )
    by_category: tuple[tuple[str, int], ...] | None = None
    if d.get("by_category") is not None:
        bc = _mapping(d["by_category"], "`by_category`", where)
        _READ.read(_INTEGERS, list(bc.values()), "`by_category` values", where)
        by_category = tuple(sorted((k, INTEGER.convert(n)) for k, n in bc.items()))
    return Point(
        sha=_str(d, "sha", where),
        date=_str(d, "date", where),
        subject=_str(d, "subject", where),
        tag=_opt_str(d, "tag", where),
        error=_opt_str(d, "error", where),
        entries=_opt_int(d, "entries", where),
        operators=_opt_int(d, "operators", where),
        base_operators=_opt_int(d, "base_operators", where),
        by_category=by_category,
        drift=drift,
    )


def parse_json(text: str, where: str) -> Timeline:
    """A timeline back from `render_json`'s text; `TimelineError` names WHERE on anything else."""
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise TimelineError(f"not a JSON timeline: {err}", path=where) from None
    except RecursionError:
        raise TimelineError("not a JSON timeline: nested too deeply", path=where) from None
    d = _mapping(raw, "the timeline", where)
    if d.get("format") != FORMAT:
        raise TimelineError(f"not an opdrift history file (format is not {FORMAT!r})", path=where)
    if d.get("format_version") != FORMAT_VERSION:
        raise TimelineError(
            f"history format_version {d.get('format_version')!r} is not {FORMAT_VERSION}", path=where
        )
    rng = _mapping(d.get("range"), "`range`", where)
    points = _READ.read(LIST, d.get("points"), "`points`", where)
    buckets = _READ.read(STRINGS, d.get("buckets"), "`buckets`", where)
    shard: Shard | None = None
    if d.get("shard") is not None:
        s = _mapping(d["shard"], "`shard`", where)
        nums = [_opt_int(s, k, where) for k in ("index", "count", "start", "total")]
        if any(n is None for n in nums):
            raise TimelineError("`shard` needs integer index, count, start and total", path=where)
        index, count, start, total = (int(n or 0) for n in nums)
        shard = Shard(index=index, count=count, start=start, total=total)
    return Timeline(
        repo=_str(d, "repo", where),
        to_rev=_str(rng, "to", where),
        to_sha=_str(rng, "to_sha", where),
        from_rev=_opt_str(rng, "from", where),
        from_sha=_opt_str(rng, "from_sha", where),
        paths=_names(rng, "paths", where),
        tags=_opt_str(rng, "tags", where),
        buckets=buckets,
        points=tuple(_point_from(p, where) for p in points),
        shard=shard,
        opdrift_version=_str(d, "opdrift_version", where),
    )


def merge(parts: Sequence[tuple[str, Timeline]]) -> Timeline:
    """Join shard timelines (name, timeline) into the timeline a single run over the range gives."""
    if not parts:
        raise TimelineError("no shard files to merge")
    shards = []
    for name, t in parts:
        if t.shard is None:
            raise TimelineError("not a shard's output (no `shard` section)", path=name)
        shards.append((t.shard.index, name, t))
    shards.sort(key=lambda s: s[0])
    _, first_name, first = shards[0]
    assert_shard = first.shard
    if assert_shard is None:  # for the type checker; checked above
        raise TimelineError("not a shard's output", path=first_name)
    count, total = assert_shard.count, assert_shard.total
    same = (first.repo, first.from_sha, first.to_sha, first.paths, first.tags, first.buckets)
    seen: set[int] = set()
    points: list[Point] = []
    for index, name, t in shards:
        s = t.shard
        if s is None:
            raise TimelineError("not a shard's output", path=name)
        if (t.repo, t.from_sha, t.to_sha, t.paths, t.tags, t.buckets) != same:
            raise TimelineError(f"covers another range or repository than {first_name}", path=name)
        if t.opdrift_version != first.opdrift_version:
            raise TimelineError(
                f"written by opdrift {t.opdrift_version}, {first_name} by {first.opdrift_version}", path=name
            )
        if s.count != count or s.total != total:
            raise TimelineError(f"is shard {index}/{s.count}, others are of {count}", path=name)
        if index in seen:
            raise TimelineError(f"shard {index}/{count} given twice", path=name)
        seen.add(index)
        if s.start != len(points):
            raise TimelineError(
                f"shard {index}/{count} starts at point {s.start}, expected {len(points)}", path=name
            )
        points.extend(t.points)
    if count > len(seen):
        # Named from the indices given, never from range(count): a damaged file's count can be huge.
        missing = [i for i in range(1, min(count, len(seen) + 5) + 1) if i not in seen]
        more = "" if count <= len(seen) + 5 else f" and {count - len(seen) - len(missing)} more"
        raise TimelineError(f"missing shard(s) {', '.join(f'{i}/{count}' for i in missing)}{more}")
    if len(points) != total:
        raise TimelineError(f"the shards hold {len(points)} points, the range has {total}")
    return Timeline(
        repo=first.repo,
        to_rev=first.to_rev,
        to_sha=first.to_sha,
        from_rev=first.from_rev,
        from_sha=first.from_sha,
        paths=first.paths,
        tags=first.tags,
        buckets=first.buckets,
        points=tuple(points),
        shard=None,
        opdrift_version=first.opdrift_version,
    )


# --- progress ----------------------------------------------------------------------------------


class Progress:
    """A one-line progress bar on a terminal; silent when the stream is not one (CI logs, pipes)."""

    WIDTH = 30

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self._last = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        # Redraw at most ~200 times: a terminal write per commit would cost more than the commit.
        if done != total and done - self._last < max(1, total // 200):
            return
        self._last = done
        filled = self.WIDTH * done // total
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.stream.write(f"\r[{bar}] {done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
