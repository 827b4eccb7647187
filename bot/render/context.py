"""What a drift report is told beyond the drift itself: `ReportContext`, and the `BackendGap`s in it:
what a change asks of one backend, per backend subscription, per backend of the config's `backends:`
for the PR comment's impact table, and per subscribed backend of an upstream pull request for
`opdrift watch` (`opdrift.render.watch`): one record, one key.

Both are records the use cases (`opdrift.app`, above this stage) build and the renderer reads, so they are
defined with the renderer's input: `opdrift.app.subscriptions.backend_gaps` makes the gaps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from opdrift.coverage.kinds import BackendKind, backend_key
from opdrift.coverage.workitems import ModelReach
from opdrift.drift.allowlist import NO_ACKNOWLEDGEMENTS, Acknowledgements
from opdrift.drift.changes import Drift
from opdrift.drift.warnings import SourceWarning
from opdrift.history.attribution import Attribution
from opdrift.model import NATIVE_PATH
from opdrift.schema.kernel import KernelSignature

_SHA = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class BrokenKernel:
    """An op the backend implements whose kernel no longer compiles in the form it is written in."""

    op: str
    # "int64_t" or "SymInt": the form the kernel is judged in; "" when not known (then `before` and
    # `after` are in the form such a kernel is judged in, `opdrift.schema.kernel.FORM_IF_UNKNOWN`)
    form: str
    # what changed in that form's C++ signature: (where, before, after), as `KernelChange.differences`;
    # what the watch's fingerprint is made of (a state written before `before` and `after` existed
    # reads the same)
    parts: tuple[tuple[str, str, str], ...] = ()
    # that form's signature before and after the change, parameters named: the watch shows both
    # declarations and names what changed (`opdrift.schema.kernel.named_changes`); None when not known
    before: KernelSignature | None = None
    after: KernelSignature | None = None
    # the models of the corpus that dispatch the op on the backend's paths and device (the weekly
    # issue's count, `opdrift.app.subscriptions.ModelData`); None without a model table. Not what the
    # change asks of the backend, so not compared
    models: ModelReach | None = field(default=None, compare=False)


@dataclass(frozen=True)
class BackendGap:
    """What a change asks of one backend, the one record of every output that says it: for the
    weekly issue a drift's, per backend subscription; for the PR comment's impact table a drift's,
    per backend of the config's `backends:` (`who` empty: it mentions no one); for `opdrift watch` one
    upstream pull request's, per subscribed backend (its matching subscriptions merged, its lists
    capped: `more` counts the rest). The new operators its backend lacks (or those that now need a
    kernel it lacks), those it implements whose kernel a change broke, and those it lists that
    upstream removed where its codegen refuses the name; then the lists of `GAP_LISTS`, each apart.
    Or, with `unread`, why its list could not be read, and nothing else."""

    who: tuple[str, ...]
    kind: BackendKind
    where: str  # the path (or gh: spec) as written in the config, or the dispatch key
    ops: tuple[str, ...] = ()  # sorted, each once
    # the ops it implements whose kernel no longer builds in the form it is written in, sorted by op
    broken: tuple[BrokenKernel, ...] = ()
    # the ops it implements that upstream removed or renamed (by the name it lists), which its
    # codegen then refuses, sorted
    removed: tuple[str, ...] = ()
    # The lists of GAP_LISTS, each sorted, each op once (docs/config.md says what each asks):
    # ops whose schema it records (torch-mlir's ODS ops) whose schema changed as coverage's alerts judge it
    schema_changed: tuple[str, ...] = ()
    left_core: tuple[str, ...] = ()  # export, functional: ops it lists that left the core set
    joined_core: tuple[str, ...] = ()  # export, functional: ops it lacks that joined the core set
    # ops it registers by name where an impl without a def still builds (C++ m.impl) that upstream
    # removed or renamed: the registration is dead
    dead: tuple[str, ...] = ()
    # new ops, or ops that now need a kernel, it lacks that only some backends need (opdrift.work.engine.scope)
    some_need: tuple[str, ...] = ()
    # what every report calls the backend: its subscription's `name:`, else one derived from its list
    # (`opdrift.config.file.default_name`); never a machine path. The watch sets it from the config
    # each run, never from its state: not part of what the change asks, so not compared
    name: str = field(default="", compare=False)
    # which models of the corpus (`opdrift.usage.models`) reach the ops of `ops` and of `broken` on the
    # backend's paths and device (`opdrift.coverage.workitems.model_reach`); None without model data.
    # Not what the change asks of the backend, so not compared
    ops_models: ModelReach | None = field(default=None, compare=False)
    broken_models: ModelReach | None = field(default=None, compare=False)
    # said once per report when those counts come from another release's table than HEAD's
    # (`opdrift.usage.models.UsageChoice.caveat`)
    models_caveat: str = field(default="", compare=False)
    # a backend of `backends:` whose list could not be read (another repository's, renamed, gone,
    # malformed): why, in one line; its lists are then empty, and the table says it was not judged
    unread: str = ""
    # (list, how many more ops it asks than that list names), in GAP_FIELDS order, non-zero counts
    # only: the watch's lists are capped (`capped`), the reports' never are
    more: tuple[tuple[str, int], ...] = ()

    @property
    def label(self) -> str:
        return self.name or self.where

    @property
    def key(self) -> str:
        """The backend list's key across runs and reports (`opdrift.coverage.kinds.backend_key`)."""
        return backend_key(self.kind, self.where)

    @property
    def broken_names(self) -> tuple[str, ...]:
        """The ops of `broken`, as the reports list them."""
        return tuple(b.op for b in self.broken)

    def more_of(self, lst: str) -> int:
        """How many more ops than list LST (a name of GAP_FIELDS) names the change asks (`capped`)."""
        return dict(self.more).get(lst, 0)

    def count(self, lst: str) -> int:
        """How many ops list LST holds, those it names and those it counts."""
        return len(getattr(self, lst)) + self.more_of(lst)

    def warns(self) -> bool:
        """Whether the gap asks something of the backend that is news to its subscribers: anything
        but ops only some backends need, which are listed apart and mention no one."""
        return any(self.count(f) for f in ("ops", "broken", "removed")) or any(
            self.count(g.field) for g in GAP_LISTS if g.warns
        )

    def also(self) -> tuple[tuple[GapList, tuple[str, ...], int], ...]:
        """The lists of GAP_LISTS that hold something, in that order: each (its kind, the ops it
        names, how many more it counts)."""
        return tuple(
            (g, getattr(self, g.field), self.more_of(g.field)) for g in GAP_LISTS if self.count(g.field)
        )

    def items(self) -> frozenset[str]:
        """What the change asks of this backend, one item per op and verdict (a different break of
        the same kernel is a different item): the watch's fingerprint is made of these."""
        out = {f"{self.key}\0need\0{op}" for op in self.ops}
        out |= {f"{self.key}\0remove\0{op}" for op in self.removed}
        out |= {break_item(self, b) for b in self.broken}
        # Ops only some backends need are listed, never news (`GapList.warns`).
        out |= {f"{self.key}\0{g.field}\0{op}" for g in GAP_LISTS if g.warns for op in getattr(self, g.field)}
        return frozenset(out)

    def capped(self, cap: int) -> BackendGap:
        """The gap naming at most CAP ops per list, the rest counted in `more`."""
        lists: dict[str, tuple[Any, ...]] = {f: getattr(self, f) for f in GAP_FIELDS}
        more = {f: self.more_of(f) + max(0, len(ops) - cap) for f, ops in lists.items()}
        return self.with_lists({f: ops[:cap] for f, ops in lists.items()}, more)

    def with_lists(
        self, lists: Mapping[str, tuple[Any, ...]], more: Mapping[str, int] | None = None
    ) -> BackendGap:
        """The gap with LISTS (a field of GAP_FIELDS → its ops, or its kernels for "broken") in place
        of those lists, and with MORE (list → how many more) as its counts when given."""
        if not set(lists) <= set(GAP_FIELDS):
            raise ValueError(f"not lists of a gap: {sorted(set(lists) - set(GAP_FIELDS))}")
        changes: dict[str, Any] = dict(lists)
        if more is not None:
            changes["more"] = _more_counts(more)
        return replace(self, **changes)


def break_item(gap: BackendGap, b: BrokenKernel) -> str:
    """The fingerprint item (`BackendGap.items`) of GAP's broken kernel B."""
    return f"{gap.key}\0break\0{b.op}\0{b.form}\0{b.parts!r}"


def _more_counts(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """COUNTS (list → how many more) as `BackendGap.more` holds them: in GAP_FIELDS order, zeros
    left out."""
    return tuple((f, counts[f]) for f in GAP_FIELDS if counts.get(f, 0))


@dataclass(frozen=True)
class GapList:
    """One of a gap's lists beyond lacks, breaks and removals: the `BackendGap` field and the watch
    JSON key (`field`), its mark, and what it asks of the backend, as each report says it."""

    field: str
    mark: str
    says: str  # "<n> op(s) " + says + ": <names>", in the weekly issue, the impact table, the watch
    short: str  # the dashboard's count: "<mark> <n> " + short
    warns: bool = True  # False: listed apart, it alone mentions no one and puts no PR on the watch


GAP_LISTS: tuple[GapList, ...] = (
    GapList(
        "schema_changed",
        "📐",
        "whose recorded schema changed upstream (regenerate the ODS op and update the patterns that "
        "build or match it)",
        "recorded schema changed",
    ),
    GapList(
        "left_core",
        "📉",
        "it lists that left the Core ATen opset (tag core removed; exported graphs hold what they "
        "decompose into instead)",
        "left the core set",
    ),
    GapList(
        "joined_core",
        "📈",
        "it lacks that joined the Core ATen opset (tag core added; a backend of the Core ATen opset "
        "must lower them)",
        "joined the core set",
    ),
    GapList(
        "dead",
        "🪦",
        "it registers that upstream removed or renamed (the registration is dead: it still builds, "
        "and callers reach whatever replaced the op)",
        "registrations dead",
    ),
    GapList(
        "some_need",
        "🔹",
        "it lacks that only some backends need (CUDA-, cuDNN-, MPS-only, sparse, quantized, "
        "nested-tensor and test ops)",
        "only some backends need",
        warns=False,
    ),
)
# Every list of a gap, by its field: what `BackendGap.more` counts for each.
GAP_FIELDS: tuple[str, ...] = ("ops", "broken", "removed", *(g.field for g in GAP_LISTS))


@dataclass(frozen=True)
class ReportContext:
    """What the caller knows beyond the drift: links, a title, who to mention, acknowledgements.

    Built once by the command that renders (`linked` adds the drift's commit links) and passed whole:
    the templates read it as ``ctx``. Every field a template or helper reads is set by some caller in
    ``bot/``, so no branch on it is dead (`tests/unit/render/test_context.py`).

    `head_blob_url` / `base_blob_url` point at native_functions.yaml at one commit
    (``https://github.com/pytorch/pytorch/blob/<sha>/aten/src/ATen/native/native_functions.yaml``);
    ops link to ``#L<line>`` there. `mentions` are GitHub logins or ``org/team`` slugs chosen by the
    publisher: the only @ a report may contain. `limit` overrides the format's size limit.
    """

    title: str = ""
    head_blob_url: str | None = None
    base_blob_url: str | None = None
    mentions: tuple[str, ...] = ()
    acknowledgements: Acknowledgements = NO_ACKNOWLEDGEMENTS
    limit: int | None = None
    site_url: str | None = None  # the operator catalogue (`opdrift site`), linked from the weekly issue
    marker: str | None = None  # replaces the format's marker, e.g. the weekly issue's per-window one
    # the number of the previous window's weekly issue, which the new one links (opdrift.publish.weekly_issue)
    previous_issue: int | None = None
    # per backend subscription: the new ops its backend lacks, or those that now need a kernel (opdrift.app.subscriptions.backend_gaps)
    backend_gaps: tuple[BackendGap, ...] = ()
    # per backend of the config's `backends:` the drift affects, or whose list could not be read
    # (`BackendGap.unread`; opdrift.app.prepare.downstream_impact): the PR comment's Downstream impact table
    impact: tuple[BackendGap, ...] = ()
    # change fingerprint → the upstream commit that introduced it (opdrift.history.attribution.attribute)
    attributions: Mapping[str, Attribution] = field(default_factory=dict)
    # a Mermaid chart built by opdrift.render.timeline.chart_of_last (its labels are sanitised there)
    chart: str = ""
    # HEAD's parse warnings that BASE's parse did not give (opdrift.drift.warnings.new_warnings)
    warnings: tuple[SourceWarning, ...] = ()
    # the names of the config's backend subscriptions, in config order (`BackendSpec.label`): the
    # weekly issue of a backend's repository leads with what the drift asks of each
    backends: tuple[str, ...] = ()

    def linked(self, drift: Drift) -> ReportContext:
        """This context, linking to pytorch/pytorch at the drift's base and head commits where it names
        no blob of its own and the commit is a known sha."""
        return replace(
            self,
            head_blob_url=self.head_blob_url or blob_url(drift.head.commit),
            base_blob_url=self.base_blob_url or blob_url(drift.base.commit),
        )


def blob_url(
    commit: str | None, repo_url: str = "https://github.com/pytorch/pytorch", path: str = NATIVE_PATH
) -> str | None:
    """The URL of native_functions.yaml at `commit`, or None when the commit is not a known sha."""
    if commit is None or _SHA.fullmatch(commit) is None:
        return None
    return f"{repo_url.rstrip('/')}/blob/{commit}/{path}"
