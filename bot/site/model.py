"""The site's records: what the pages and the JSON export are built from (frozen, pure data)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from opdrift.coverage.firstwork import FirstWork
from opdrift.coverage.workitems import WorkItem
from opdrift.history.attribution import Attribution
from opdrift.model import Facets
from opdrift.schema.codes import Detail
from opdrift.schema.kernel import KernelChange
from opdrift.site.commits import CommitRef

UPSTREAM = "https://github.com/pytorch/pytorch"
_LINK_REF = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}|v[0-9]+(?:\.[0-9]+){1,3}(?:[a-z]+[0-9]*)?")


@dataclass(frozen=True)
class SiteRelease:
    """One SOURCE, oldest first: its label, and the git ref its native_functions.yaml links to."""

    label: str
    ref: str | None  # a commit, or the release tag vX.Y.Z; None for a bare yaml of unknown origin
    native_path: str  # the path of native_functions.yaml inside the repository

    def line_url(self, line: int) -> str | None:
        # The ref comes from a SOURCE or a stored snapshot: only a sha or a release tag goes into a link.
        if self.ref is None or line <= 0 or not _LINK_REF.fullmatch(self.ref):
            return None
        return f"{UPSTREAM}/blob/{self.ref}/{self.native_path}#L{line}"


@dataclass(frozen=True)
class BackendColumn:
    """One ``--backend NAME:KIND=PATH``; PATH is shown by its last part only (no machine paths)."""

    name: str
    kind: str
    label: str
    profile: str


@dataclass(frozen=True)
class Cell:
    """One registered operator against one backend."""

    backend: str
    covered: bool
    rule: str  # coverage.check RULES, or needs_kernel
    via: str = ""
    profile: str = ""  # the backend's profile: its need reads "needs a lowering" on the export path


@dataclass(frozen=True)
class Overload:
    name: str
    overload: str
    schema: str
    kind: str
    line: int
    url: str | None
    facets: Facets
    profiles: tuple[str, ...]  # the backend profiles that must write a kernel for it
    coverage: tuple[Cell, ...]


@dataclass(frozen=True)
class Event:
    """One thing that happened to one registered operator of the base between two releases."""

    release: str  # the label of the release where it is first seen
    kind: str  # added, removed, renamed, changed
    name: str
    old_name: str = ""
    callers: str = ""  # breaking / compatible: does code calling the operator still work
    kernel: str = "none"  # breaking / symint / compatible / none: does an out-of-tree kernel still build
    details: tuple[Detail, ...] = ()
    kernel_changes: tuple[KernelChange, ...] = ()
    keys_gained: tuple[str, ...] = ()
    keys_lost: tuple[str, ...] = ()
    tags_gained: tuple[str, ...] = ()
    tags_lost: tuple[str, ...] = ()
    url: str | None = None
    commit: Attribution | None = None  # with --history: the upstream commit that made the change


@dataclass(frozen=True)
class BackendSummary:
    """One base operator against one backend: covered overloads of how many."""

    backend: str
    covered: int
    total: int

    @property
    def missing(self) -> bool:
        return self.covered < self.total


@dataclass(frozen=True)
class PathModels:
    """One base operator on one path of the model corpus (`opdrift.usage.models`): ``used_by`` of ``of``
    models dispatch at least one of its overloads there. ``no_data_yet``: none does and one of its
    overloads is newer than the table's release, so the table cannot say "none"."""

    path: str
    used_by: int
    of: int
    names: tuple[str, ...]  # every model that dispatched it, most calls first
    overloads: tuple[tuple[str, int], ...]  # the overloads dispatched, with how many models each
    no_data_yet: bool = False


@dataclass(frozen=True)
class OpModels:
    """One base operator against the model table: per path, and on any path (the index's column)."""

    paths: tuple[PathModels, ...]
    used_by: int  # models that dispatch it on any path
    of: int  # models with a run on any path
    release: str  # the table's torch release
    no_data_yet: bool = False


@dataclass(frozen=True)
class ModelSource:
    """The model table the site's "used by N of M models" come from."""

    release: str  # the table's torch release
    caveat: str  # "torch 2.15.0 has no table of its own"; "" when it has
    of: int  # models with a run on any path


@dataclass(frozen=True)
class WorkRow:
    """One work item of a backend's coverage, with the page of the base operator it belongs to."""

    item: WorkItem
    file: str


@dataclass(frozen=True)
class BackendWork:
    """A backend's first work: the top items of `opdrift coverage`'s ranked list (those every backend
    needs), of how many."""

    backend: str
    rows: tuple[WorkRow, ...]
    total: int
    paths: tuple[str, ...]  # the corpus paths that reach the backend
    # `opdrift coverage`'s first work (`opdrift.coverage.firstwork`): the fewest items that let the most
    # models run without fallback, step by step; None without model data
    first: FirstWork | None = None


@dataclass(frozen=True)
class OpPage:
    name: str
    file: str  # the page's and the JSON's file name (without extension)
    bucket: str
    rule: str
    reason: str
    first_release: str
    last_release: str  # the newest release that has it (the last SOURCE's label while it exists)
    present: bool  # in the last SOURCE
    overloads: tuple[Overload, ...]  # of the newest release that has it
    events: tuple[Event, ...]
    tags: tuple[str, ...]
    composites: tuple[str, ...]
    keys: tuple[str, ...]  # backend dispatch keys with a kernel in-tree
    profiles: tuple[str, ...]
    coverage: tuple[BackendSummary, ...]
    commits: tuple[CommitRef, ...] = ()  # with --history: every commit that touched it, oldest first
    models: OpModels | None = None  # present in the last SOURCE and a model table answers for it


@dataclass(frozen=True)
class Growth:
    """Base operators per bucket in one release (or in the seed post's 2021 figures)."""

    label: str
    counts: tuple[tuple[str, int], ...]
    seed: bool = False


@dataclass(frozen=True)
class BucketGap:
    """One bucket against one backend: registered operators missing of how many."""

    bucket: str
    backend: str
    missing: int
    total: int


@dataclass(frozen=True)
class Site:
    releases: tuple[SiteRelease, ...]
    backends: tuple[BackendColumn, ...]
    ops: tuple[OpPage, ...]  # sorted by name; those gone from the last SOURCE too
    growth: tuple[Growth, ...]
    gaps: tuple[BucketGap, ...]
    registered: int  # registered operators of the last SOURCE
    history: bool = False  # built with --history (per-commit attribution)
    models: ModelSource | None = None  # None: no model table answers for the last SOURCE
    work: tuple[BackendWork, ...] = ()  # per backend, in the columns' order

    @property
    def now(self) -> SiteRelease:
        return self.releases[-1]


_PLAIN = re.compile(r"[a-z0-9_]+")
_LOWER_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
# File systems allow 255 bytes a name; with ``.html`` and room to spare, a longer name is cut and told
# apart by a hash of the whole name.
MAX_FILE_NAME = 200


def file_name(base: str) -> str:
    """A base name as a file name: safe (it cannot leave ``ops/``), unique even where case does not count
    (macOS, Windows: ``Foo`` and ``foo`` must not be one file), short enough for any file system, and
    stable (a function of the name alone, so links keep working).

    Lower-case ATen identifiers stay as they are. An upper-case letter is written as ``-`` and the
    letter in lower case (``_cast_Byte`` → ``_cast_-byte``); any other character as ``~HEX~``. A result
    over MAX_FILE_NAME characters keeps its start and ends with a hash of the whole name.
    """
    if len(base) <= MAX_FILE_NAME and _PLAIN.fullmatch(base):
        return base
    parts = []
    for c in base:
        if c in _LOWER_PLAIN:
            parts.append(c)
        elif "A" <= c <= "Z":
            parts.append("-" + c.lower())
        else:
            parts.append(f"~{ord(c):x}~")
    name = "".join(parts)
    if len(name) <= MAX_FILE_NAME:
        return name
    digest = hashlib.sha256(base.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{name[: MAX_FILE_NAME - 18]}~~{digest}"
