"""The drift report's view model: the lead sections (what a backend must do), the bucket sections, the
acknowledged changes and the in-tree-kernels tally, built once from a `Drift` for every format.

Every format leads with what a backend must do (⚠️ needs a kernel, ❌ BC-breaking, 🔧 kernel signature
changed, ⭐ new core ops, ♻️ now decomposes), then lists every change by bucket. A change to the SymInt
form alone breaks only kernels written with SymInts; those are counted on one folded line under 🔧.
The operators that only gained or lost in-tree kernels are left out of the bucket lists, tallied per
dispatch key and listed apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Literal

from opdrift.drift.allowlist import Acknowledgements
from opdrift.drift.changes import Change, Drift
from opdrift.drift.flags import FLAG_TABLE, FLAGS, SECTIONS, Flag
from opdrift.model import SourceMeta
from opdrift.operators.kernels import PROFILES
from opdrift.render.rank import Item, grouped, ranked
from opdrift.schema.codes import Code
from opdrift.taxonomy.scope import scope_of

# Every tuple a view holds declares in its field's metadata how a capped body shows it, so a new list
# is cut to fit (opdrift.render.fit) by construction: a tier (lead lists are cut last, kernel lists are
# never longer than fit.MAX_KERNEL_OPS), "parts" (sections that declare their own lists) or "whole"
# (a short table, shown whole). `lists_of` refuses a view class with an undeclared tuple.
Tier = Literal["lead", "bucket", "kernel"]
_TIER_OF: Mapping[str, Tier] = {"lead": "lead", "bucket": "bucket", "kernel": "kernel"}
_CAPPED = "capped"
LEAD: Mapping[str, object] = {_CAPPED: "lead"}
BUCKET: Mapping[str, object] = {_CAPPED: "bucket"}
KERNEL: Mapping[str, object] = {_CAPPED: "kernel"}
WHOLE: Mapping[str, object] = {_CAPPED: "whole"}


def parts(of: type) -> Mapping[str, object]:
    """The metadata of a tuple of sections of class `of`, each declaring its own lists."""
    return {_CAPPED: "parts", "of": of}


@dataclass(frozen=True)
class Section:
    """A titled list of changes, shown capped; `key` is stable for templates and JSON.

    `changes` are all of them; `items` the ranked, family-grouped lines of those every backend needs
    (`opdrift.render.rank`); `other` the changes only some backends need (`opdrift.taxonomy.scope`), which a
    report lists collapsed, with a count.
    """

    key: str
    title: str
    emoji: str
    hint: str
    changes: tuple[Change, ...] = field(metadata=WHOLE)  # counted; its lines are `items` and `other`
    items: tuple[Item, ...] = field(default=(), metadata=LEAD)
    other: tuple[Change, ...] = field(default=(), metadata=LEAD)


@dataclass(frozen=True)
class BucketSection:
    bucket: str
    before: int
    after: int
    changes: tuple[Change, ...] = field(metadata=BUCKET)
    added: int = 0
    removed: int = 0
    renamed: int = 0
    changed: int = 0
    kernels_only: int = 0  # changes left out of `changes`: in-tree kernels only, listed separately


@dataclass(frozen=True)
class View:
    drift: Drift
    lead: tuple[Section, ...] = field(metadata=parts(Section))
    buckets: tuple[BucketSection, ...] = field(metadata=parts(BucketSection))
    acknowledged: tuple[Change, ...] = field(metadata=BUCKET)
    counts: Mapping[str, int] = field(default_factory=dict)
    # changes whose only details are in-tree kernels added/removed, and a per-key tally of them (one
    # row per dispatch key: a few dozen at most)
    kernels_only: tuple[Change, ...] = field(default=(), metadata=KERNEL)
    kernel_keys: tuple[tuple[str, int, int], ...] = field(default=(), metadata=WHOLE)
    # the backend profiles no unacknowledged change asks anything of (`Change.profiles`)
    idle_profiles: tuple[str, ...] = field(default=(), metadata=WHOLE)
    # unacknowledged changes that altered only the SymInt form of a kernel's C++ signature: kernels
    # written with int64_t still build, so the 🔧 section folds them into one line with a count
    kernel_symint: tuple[Change, ...] = field(default=(), metadata=KERNEL)


def _declared(cls: type) -> tuple[tuple[str, str, type | None], ...]:
    """(field, how it is capped, the class of its parts) for every tuple field of `cls`, checked."""
    out = []
    for f in fields(cls):
        how = f.metadata.get(_CAPPED)
        if how is None:
            # `from __future__ import annotations`: the type is its source text
            if str(f.type).startswith("tuple["):
                raise TypeError(
                    f"{cls.__name__}.{f.name}: a list the view shows must declare how it is capped"
                )
            continue
        of = f.metadata.get("of")
        if how == "parts":
            if not isinstance(of, type):
                raise TypeError(f"{cls.__name__}.{f.name}: parts() names the class of its sections")
            _declared(of)
        out.append((f.name, str(how), of if isinstance(of, type) else None))
    return tuple(out)


def lists_of(view: object) -> Iterator[tuple[tuple[object, ...], Tier]]:
    """Every capped list `view` (a View, or any dataclass declaring its lists alike) holds, with its tier."""
    for name, how, _ in _declared(type(view)):
        value = getattr(view, name)
        if how == "parts":
            for section in value:
                yield from lists_of(section)
        elif how != "whole":
            yield value, _TIER_OF[how]


def _section(flag: Flag, changes: Iterable[Change]) -> Section:
    every = ranked(changes)
    if not flag.scoped:
        return Section(flag.id, flag.title, flag.emoji, flag.hint, every, grouped(every))
    scoped = [(c, scope_of(c.record).generic) for c in every]
    generic = tuple(c for c, is_generic in scoped if is_generic)
    other = tuple(c for c, is_generic in scoped if not is_generic)
    return Section(flag.id, flag.title, flag.emoji, flag.hint, every, grouped(generic), other)


def lead_sections(drift: Drift, acks: Acknowledgements) -> tuple[Section, ...]:
    """One section per flag of `opdrift.drift.flags` that has one, in the table's order."""
    live = [c for c in drift.changes if c not in acks]
    return tuple(_section(f, (c for c in live if f(c))) for f in SECTIONS)


def build_view(drift: Drift, acks: Acknowledgements) -> View:
    by_bucket: dict[str, list[Change]] = defaultdict(list)
    for c in drift.changes:
        by_bucket[c.category].append(c)
    order = [b.bucket for b in drift.buckets] + sorted(set(by_bucket) - {b.bucket for b in drift.buckets})
    counts = {b.bucket: (b.before, b.after) for b in drift.buckets}
    sections = []
    for bucket in order:
        every = by_bucket.get(bucket, [])
        cs = [c for c in every if not c.kernels_only]
        if not every:
            continue
        before, after = counts.get(bucket, (0, 0))
        sections.append(
            BucketSection(
                bucket,
                before,
                after,
                tuple(cs),
                kernels_only=len(every) - len(cs),
                added=sum(c.kind == "added" for c in cs),
                removed=sum(c.kind == "removed" for c in cs),
                renamed=sum(c.kind == "renamed" for c in cs),
                changed=sum(c.kind == "changed" for c in cs),
            )
        )
    lead = lead_sections(drift, acks)
    # the one flag folded into a section's line (`Flag.folded_into`): the SymInt form alone
    symint = ranked(c for c in drift.changes if FLAGS["kernel_symint"](c) and c not in acks)
    kernels_only = tuple(c for c in drift.changes if c.kernels_only)
    gained: dict[str, int] = defaultdict(int)
    lost: dict[str, int] = defaultdict(int)
    for c in kernels_only:
        for d in c.details:
            (gained if d.code == Code.KERNEL_ADDED.id else lost)[d.subject] += 1
    keys = sorted(set(gained) | set(lost), key=lambda k: (-gained[k] - lost[k], k))
    return View(
        kernels_only=kernels_only,
        kernel_keys=tuple((k, gained[k], lost[k]) for k in keys),
        drift=drift,
        lead=lead,
        buckets=tuple(sections),
        acknowledged=tuple(c for c in drift.changes if c in acks),
        counts={f.id: sum(1 for c in drift.changes if c not in acks and f(c)) for f in FLAG_TABLE},
        kernel_symint=symint,
        idle_profiles=tuple(
            p for p in PROFILES if not any(p in c.profiles for c in drift.changes if c not in acks)
        ),
    )


SHA_SHOWN = 10  # characters of a commit sha a label shows


def source_label(meta: SourceMeta, *, short: bool = False) -> str:
    """A source's name: the torch version, the git revision, or the end of the path (a yaml with its
    directory, which says which one it is), followed by its commit.

    `short` is for titles, where space is scarce: the commit alone when there is one, and a path's
    name without the file it points into (``2.14.1`` for ``2.14.1/native_functions.yaml``).
    """
    commit = meta.commit[:SHA_SHOWN] if meta.commit else ""
    if short and commit:
        return commit
    parts = [p for p in meta.path.replace("\\", "/").split("/") if p]
    name = parts[-1] if parts else meta.path
    if name.endswith((".yaml", ".yml")) and len(parts) > 1:
        name = parts[-2] if short else "/".join(parts[-2:])
    elif short:
        name = name.removesuffix(".json").removesuffix(".whl")
    label = meta.torch_version or meta.revision or name or meta.kind
    return label if short or not commit else f"{label} ({commit})"
