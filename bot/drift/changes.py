"""Base snapshot vs head snapshot → typed, fingerprinted changes (pure).

A `Change` is one registered operator that was added, removed, renamed or changed. It carries the
records on both sides, its classified `details`, the answers a backend maintainer needs
(`needs_kernel`, `breaking`, `new_core`, `now_decomposes`) and a `fingerprint`: a short hash of the
change kind, the operator name and the facts that changed, never of line numbers or commit ids, so an
acknowledgement of a change keeps matching while the same change is rebased, re-run or released.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from opdrift.dispatchkeys import CIA, GENERIC_KEYS
from opdrift.drift.needs import ProfileNeeds
from opdrift.errors import SchemaError
from opdrift.model import OpRecord, Snapshot, SourceMeta
from opdrift.operators.codegen import (
    NEWEST,
    CodegenRules,
    in_structured_group,
    kernel_binding,
    rules_for_version,
)
from opdrift.operators.kernels import PROFILES, Profile
from opdrift.schema.codes import Code, Detail
from opdrift.schema.compare import argument_types, diff_schemas
from opdrift.schema.grammar import parse_schema
from opdrift.schema.kernel import KernelChange, KernelVerdict, kernel_changes, verdict_at
from opdrift.schema.model import FunctionSchema
from opdrift.taxonomy.counts import count_by_bucket

ChangeKind = Literal["added", "removed", "renamed", "changed"]

FINGERPRINT_LEN = 12
KERNEL_ONLY_CODES = frozenset(c.id for c in Code if c.row.kernels_only)


@dataclass(frozen=True)
class Change:
    """One operator's change between base and head.

    `name` is the operator's name in the snapshot (``add.Tensor``); for a rename it is the new name
    and `old_name` the old one. `category` is the operator's bucket (head side, base side for a
    removal). `details` are empty for plain additions and removals.
    """

    kind: ChangeKind
    name: str
    category: str
    fingerprint: str
    before: OpRecord | None
    after: OpRecord | None
    details: tuple[Detail, ...] = ()
    old_name: str | None = None
    breaking: bool = False
    new_core: bool = False
    now_decomposes: bool = False
    # The second axis: does an out-of-tree kernel still build? "none" when neither the schema nor the
    # kernel's C++ signature changed (or the operator is new or gone); "breaking" when the int64_t
    # form changed (every kernel), "symint" when only the SymInt form did (only kernels written with
    # c10::SymInt), "compatible" when neither did; judged by HEAD's release, see
    # Note [SymInt kernels from 1.13].
    kernel: KernelVerdict = "none"
    kernel_changes: tuple[KernelChange, ...] = ()
    # The backend profiles that must act (`opdrift.drift.needs`), in PROFILES order: for a new or renamed
    # operator those that must write it; for a removed one those that had to; for a changed one those
    # that must write it now and did not have to before, or whose kernel no longer builds.
    profiles: tuple[Profile, ...] = ()
    # Of those, the ones that must now write a kernel (a lowering, for export) they did not need
    # before: a new operator, or one that lost the kernel PyTorch gave that kind of backend.
    needs_kernel_for: tuple[Profile, ...] = ()

    @property
    def needs_kernel(self) -> bool:
        """Some kind of backend must now write a kernel for it (`needs_kernel_for` says which)."""
        return bool(self.needs_kernel_for)

    @property
    def record(self) -> OpRecord:
        """The record to show: head's, or base's for a removal."""
        rec = self.after if self.after is not None else self.before
        if rec is None:  # pragma: no cover - every constructor sets one side
            raise ValueError(f"change of {self.name} has no record")
        return rec

    @property
    def line(self) -> int:
        return self.record.line

    @property
    def kernels_only(self) -> bool:
        """Only the set of in-tree backend kernels changed: news for that backend, noise for the rest.

        Never a rename: the new name is news for every backend, whatever else stayed the same.
        """
        return (
            self.kind == "changed"
            and bool(self.details)
            and all(d.code in KERNEL_ONLY_CODES for d in self.details)
        )


@dataclass(frozen=True)
class BucketCount:
    """Base operators in one bucket, before → after."""

    bucket: str
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before


@dataclass(frozen=True)
class Drift:
    """Everything that differs between two snapshots, sorted by operator name within each kind."""

    base: SourceMeta
    head: SourceMeta
    added: tuple[Change, ...]
    removed: tuple[Change, ...]
    renamed: tuple[Change, ...]
    changed: tuple[Change, ...]
    buckets: tuple[BucketCount, ...]
    base_operators: int = 0
    head_operators: int = 0
    base_entries: int = 0
    head_entries: int = 0

    @property
    def changes(self) -> tuple[Change, ...]:
        """Every change, sorted by operator name (renames by their new name)."""
        return tuple(sorted(self.added + self.removed + self.renamed + self.changed, key=lambda c: c.name))

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.renamed or self.changed)


# --- facts about one record ----------------------------------------------------------------------


def decomposes(rec: OpRecord) -> bool:
    """CompositeImplicitAutograd: every backend gets it through its decomposition.

    The parse records that kind for every entry without a dispatch table, so an op with no kernels and
    no composite kind is an explicit ``dispatch: {}``: it has no decomposition either.
    """
    return rec.facets.composite == CIA


def _core(rec: OpRecord | None) -> bool:
    return rec is not None and "core" in rec.facets.tags


def _parse(schema: str) -> FunctionSchema | None:
    # No memo here: parse_schema interns every schema it parsed (bounded, in opdrift.schema.grammar).
    try:
        return parse_schema(schema)
    except SchemaError:
        # Neither a parsed source nor a loaded snapshot gets here: both reject a bad schema with its
        # file:line. A Snapshot built in code could; one unreadable schema must not sink the whole
        # diff, so callers fall back: `_diff_schema` compares the text and reports a change as one
        # breaking `schema_changed` (erring on the side of telling the backend), and rename
        # detection leaves the operator out rather than guess.
        return None


def fingerprint(kind: str, name: str, facts: object) -> str:
    """Short sha256 of the change kind, the operator name and the JSON of the facts that changed."""
    payload = json.dumps([kind, name, facts], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:FINGERPRINT_LEN]


def _detail_facts(details: Iterable[Detail]) -> list[list[str]]:
    return [[d.code, d.subject, d.before, d.after] for d in details]


# --- the differences between two records ---------------------------------------------------------


def _diff_schema(before: OpRecord, after: OpRecord) -> list[Detail]:
    if before.schema == after.schema:
        return []
    a, b = _parse(before.schema), _parse(after.schema)
    if a is None or b is None:
        return [Code.SCHEMA_CHANGED("", before.schema, after.schema)]
    found = list(diff_schemas(a, b))
    if not found and str(a.name) != str(b.name):
        return []
    if not found:
        # Printing differs but nothing the rules look at (e.g. spacing): still show it.
        found = [Code.SCHEMA_CHANGED("", before.schema, after.schema, severity="info")]
    return found


def _diff_kernels(
    before: OpRecord, after: OpRecord, rules: tuple[CodegenRules, CodegenRules]
) -> list[Detail]:
    out: list[Detail] = []
    fb, fa = before.facets, after.facets
    was_dec, now_dec = decomposes(before), decomposes(after)
    # before/after hold the composite kind; "" means kernels of its own (or a structured delegate).
    if was_dec and not now_dec:
        out.append(Code.STOPPED_DECOMPOSING("", CIA, fa.composite or ""))
    elif now_dec and not was_dec:
        out.append(Code.NOW_DECOMPOSES("", fb.composite or "", CIA))
    elif fb.composite != fa.composite:
        out.append(Code.COMPOSITE_CHANGED("", fb.composite or "", fa.composite or ""))
    keys_b, keys_a = set(fb.dispatch), set(fa.dispatch)
    for key in sorted(keys_a - keys_b):
        if key not in GENERIC_KEYS:
            out.append(Code.KERNEL_ADDED(key, "", key))
    for key in sorted(keys_b - keys_a):
        if key not in GENERIC_KEYS:
            out.append(Code.KERNEL_REMOVED(key, key, ""))
    const_before, const_after = _const_refs(before, after)
    if const_before != const_after:
        # No caller sees it, but every kernel's mutable tensors change C++ type (the kernel verdict).
        out.append(Code.CONST_REF_CHANGED("", str(const_before), str(const_after)))
    if fb.structured != fa.structured:
        out.append(Code.STRUCTURED_CHANGED("", str(fb.structured), str(fa.structured)))
    lists = _tensor_lists(before, after, rules)
    if lists is not None and in_structured_group(before.facets) == in_structured_group(after.facets):
        # The same group on both sides, but the releases' codegens take its tensor lists differently
        # (1.12 → 1.13, `CodegenRules.ilistref_for_structured`): no schema or key changed.
        out.append(Code.TENSOR_LISTS_CHANGED("", *lists))
    if fb.structured_delegate != fa.structured_delegate:
        out.append(
            Code.STRUCTURED_DELEGATE_CHANGED(
                "",
                fb.structured_delegate or "",
                fa.structured_delegate or "",
            )
        )
    return out


def _diff_rest(before: OpRecord, after: OpRecord) -> list[Detail]:
    out: list[Detail] = []
    fb, fa = before.facets, after.facets
    tb, ta = set(fb.tags), set(fa.tags)
    for tag in sorted(ta - tb):
        out.append(Code.TAG_ADDED(tag, "", tag))
    for tag in sorted(tb - ta):
        out.append(Code.TAG_REMOVED(tag, tag, ""))
    if before.bucket != after.bucket:
        out.append(Code.BUCKET_CHANGED("", before.bucket, after.bucket))
    # Dropping the method or function variant removes `Tensor.foo` / `torch.foo` for Python callers.
    vb, va = set(fb.variants), set(fa.variants)
    for v in sorted(vb - va):
        out.append(Code.VARIANT_REMOVED(v, v, ""))
    for v in sorted(va - vb):
        out.append(Code.VARIANT_ADDED(v, "", v))
    if fb.python_module != fa.python_module:
        out.append(Code.PYTHON_MODULE_CHANGED("", fb.python_module or "", fa.python_module or ""))
    if (
        fb.has_derivative is not None
        and fa.has_derivative is not None
        and fb.has_derivative != fa.has_derivative
    ):
        code = Code.DERIVATIVE_ADDED if fa.has_derivative else Code.DERIVATIVE_REMOVED
        out.append(code("", str(fb.has_derivative), str(fa.has_derivative)))
    if fb.alias_of != fa.alias_of:
        out.append(Code.ALIAS_OF_CHANGED("", fb.alias_of or "", fa.alias_of or ""))
    return out


def diff_records(
    before: OpRecord, after: OpRecord, rules: tuple[CodegenRules, CodegenRules] = (NEWEST, NEWEST)
) -> tuple[Detail, ...]:
    """Every classified difference between two records of (possibly renamed) operators. `rules`: each
    side's release's codegen rules (`rules_of`), which bind its kernel (`kernel_binding`)."""
    return tuple(
        _diff_schema(before, after) + _diff_kernels(before, after, rules) + _diff_rest(before, after)
    )


# --- building changes -----------------------------------------------------------------------------


def _ordered(profiles: Iterable[Profile]) -> tuple[Profile, ...]:
    chosen = frozenset(profiles)
    return tuple(p for p in PROFILES if p in chosen)


def _added(rec: OpRecord, needs: frozenset[Profile]) -> Change:
    return Change(
        kind="added",
        name=rec.name,
        category=rec.bucket,
        fingerprint=fingerprint("added", rec.name, [rec.schema]),
        before=None,
        after=rec,
        breaking=False,
        new_core=_core(rec),
        now_decomposes=False,
        profiles=_ordered(needs),
        needs_kernel_for=_ordered(needs),
    )


def _removed(rec: OpRecord, needs: frozenset[Profile]) -> Change:
    return Change(
        kind="removed",
        name=rec.name,
        category=rec.bucket,
        fingerprint=fingerprint("removed", rec.name, [rec.schema]),
        before=rec,
        after=None,
        breaking=True,
        profiles=_ordered(needs),
    )


def _changed(
    before: OpRecord,
    after: OpRecord,
    kind: ChangeKind,
    needs_b: ProfileNeeds,
    needs_h: ProfileNeeds,
    head_version: str | None,
    rules: tuple[CodegenRules, CodegenRules] = (NEWEST, NEWEST),
) -> Change | None:
    details = diff_records(before, after, rules)
    if kind == "changed" and not details:
        return None
    need_before, need_after = needs_b(before), needs_h(after)
    facts: object = _detail_facts(details)
    if kind == "renamed":
        facts = [before.name, after.schema, facts]
    breaking = kind == "renamed" or any(d.severity == "breaking" for d in details)
    verdict, kernels = _kernel_verdict(before, after, head_version, rules)
    # A renamed operator needs its kernels registered under the new name, whatever the old one had.
    newly = need_after if kind == "renamed" else need_after - need_before
    # One whose kernel no longer builds is work for everyone who writes it; a SymInt-only change is
    # work only for the backends that write that operator's kernel with SymInts, which no profile says.
    profiles = need_after if verdict == "breaking" else newly
    return Change(
        kind=kind,
        name=after.name,
        category=after.bucket,
        fingerprint=fingerprint(kind, after.name, facts),
        before=before,
        after=after,
        details=details,
        old_name=before.name if kind == "renamed" else None,
        breaking=breaking,
        new_core=_core(after) and not _core(before),
        now_decomposes=decomposes(after) and not decomposes(before),
        kernel=verdict,
        kernel_changes=kernels,
        profiles=_ordered(profiles),
        needs_kernel_for=_ordered(newly),
    )


def rules_of(snap: Snapshot) -> CodegenRules:
    """The codegen rules of SNAP's release, which bind its kernels (`kernel_binding`; the newest rules
    when the version is unknown)."""
    return rules_for_version(snap.meta.torch_version)


_LIST_TYPES = {False: "at::TensorList", True: "const at::ITensorListRef &"}
_TENSOR_LIST = re.compile(r"\bTensor(?:\([^)]*\))?\[\]")  # Tensor[], Tensor(a!)[]; not Tensor?[]


def _tensor_lists(
    before: OpRecord, after: OpRecord, rules: tuple[CodegenRules, CodegenRules]
) -> tuple[str, str] | None:
    """The C++ type of the tensor lists on each side, when it differs and the operator takes one."""
    b, a = kernel_binding(before.facets, rules[0]).ilistref, kernel_binding(after.facets, rules[1]).ilistref
    if b == a or not (_TENSOR_LIST.search(before.schema) or _TENSOR_LIST.search(after.schema)):
        return None
    return _LIST_TYPES[b], _LIST_TYPES[a]


def _const_refs(before: OpRecord, after: OpRecord) -> tuple[bool, bool]:
    """use_const_ref_for_mutable_tensors on each side; unknown on one (a version-1 snapshot) reads as
    the other's, so an upgrade alone reports no change."""
    b, a = before.facets.const_ref_mutable, after.facets.const_ref_mutable
    b = a if b is None else b
    a = b if a is None else a
    return bool(b), bool(a)


def _kernel_verdict(
    before: OpRecord,
    after: OpRecord,
    head_version: str | None,
    rules: tuple[CodegenRules, CodegenRules] = (NEWEST, NEWEST),
) -> tuple[KernelVerdict, tuple[KernelChange, ...]]:
    """The verdict for out-of-tree kernels built against HEAD, whose torch version (HEAD_VERSION)
    decides whether a kernel written with int64_t serves a SymInt schema (`verdict_at`). RULES: each
    side's codegen rules, which bind its kernel beyond the schema (`kernel_binding`)."""
    same_schema = before.schema == after.schema
    const_before, const_after = _const_refs(before, after)
    # An unknown const-ref key (a version-1 snapshot's) reads as the other side's (`_const_refs`).
    bound_before = replace(kernel_binding(before.facets, rules[0]), const_ref=const_before)
    bound_after = replace(kernel_binding(after.facets, rules[1]), const_ref=const_after)
    if same_schema and bound_before == bound_after:
        return "none", ()
    a, b = _parse(before.schema), _parse(after.schema)
    if a is None or b is None:
        return "breaking", ()  # unreadable: tell the backend, as `_diff_schema` does for callers
    # Joining or leaving a structured group (at a release that takes its tensor lists as ITensorListRef)
    # changes how tensor lists are taken, and the const-ref key how mutable tensors are, with the
    # schema unchanged.
    found = kernel_changes(a, b, binding_before=bound_before, binding_after=bound_after)
    if found:
        return verdict_at(found, head_version), found
    return ("none" if same_schema else "compatible"), found


def _signature(rec: OpRecord) -> object | None:
    parsed = _parse(rec.schema)
    return None if parsed is None else argument_types(parsed)


# How alike two base names must be (difflib's ratio) to pair them by signature alone. The renames in
# the releases 1.12-2.15 score 0.52-0.95 (mps_max_pool2d_backward → max_pool2d_backward: 0.9, normal →
# normal_functional: 0.52); the chance pairings of one removal with one addition score 0.06-0.44.
RENAME_SIMILARITY = 0.5


def _similar(old: str, new: str) -> bool:
    return difflib.SequenceMatcher(None, old, new).ratio() >= RENAME_SIMILARITY


def _same_arguments(old: OpRecord, new: OpRecord) -> bool:
    """Whether two overloads of one base share at least half their argument names (Jaccard ≥ 0.5).

    An overload renamed keeps most of its arguments; ``softmax.Dimname`` (self, dim, dtype) removed
    while ``softmax.masked`` (self, mask, inverted) is added are two changes, not a rename.
    """
    before, after = _parse(old.schema), _parse(new.schema)
    if before is None or after is None:
        return False
    a = {x.name for x in before.arguments.flat_all}
    b = {x.name for x in after.arguments.flat_all}
    return not (a or b) or len(a & b) * 2 >= len(a | b)


def find_renames(
    removed: Mapping[str, OpRecord], added: Mapping[str, OpRecord]
) -> list[tuple[OpRecord, OpRecord]]:
    """Pairs (old, new) that are probably one operator renamed.

    Two rules, each accepted only when the pairing is unambiguous (one candidate on each side), since
    dozens of unary ops share ``(Tensor self) -> Tensor`` and must not be paired at random:
    1. same base name, another overload name, the same kind (functional/out/inplace), and at least
       half the argument names in common;
    2. otherwise the same argument and return types, the same kind, and similar base names
       (`RENAME_SIMILARITY`): one removal and one unrelated addition of the same shape in a diff are
       two changes, not a rename (1.12→1.13 would pair matrix_rank with _test_autograd_multiple_dispatch).
    """
    pairs: list[tuple[OpRecord, OpRecord]] = []
    used_r: set[str] = set()
    used_a: set[str] = set()

    by_base_r: dict[str, list[OpRecord]] = defaultdict(list)
    by_base_a: dict[str, list[OpRecord]] = defaultdict(list)
    for r in removed.values():
        by_base_r[f"{r.base}\0{r.kind}"].append(r)
    for a in added.values():
        by_base_a[f"{a.base}\0{a.kind}"].append(a)
    for key, rs in by_base_r.items():
        as_ = by_base_a.get(key, [])
        if len(rs) == 1 and len(as_) == 1 and _same_arguments(rs[0], as_[0]):
            pairs.append((rs[0], as_[0]))
            used_r.add(rs[0].name)
            used_a.add(as_[0].name)
        elif rs and as_:
            # Several overloads of one base changed at once: pair those whose signature is kept.
            sig_r = Counter(_signature(r) for r in rs)
            sig_a = Counter(_signature(a) for a in as_)
            for r in rs:
                s = _signature(r)
                if s is None or sig_r[s] != 1 or sig_a[s] != 1:
                    continue
                a = next(x for x in as_ if _signature(x) == s)
                pairs.append((r, a))
                used_r.add(r.name)
                used_a.add(a.name)

    by_sig_r: dict[object, list[OpRecord]] = defaultdict(list)
    by_sig_a: dict[object, list[OpRecord]] = defaultdict(list)
    for r in removed.values():
        s = _signature(r)
        if r.name not in used_r and s is not None:
            by_sig_r[(s, r.kind)].append(r)
    for a in added.values():
        s = _signature(a)
        if a.name not in used_a and s is not None:
            by_sig_a[(s, a.kind)].append(a)
    for sig, rs in by_sig_r.items():
        as_ = by_sig_a.get(sig, [])
        if len(rs) == 1 and len(as_) == 1 and _similar(rs[0].base, as_[0].base):
            pairs.append((rs[0], as_[0]))
    return sorted(pairs, key=lambda p: p[1].name)


def bucket_counts(base: Snapshot, head: Snapshot) -> tuple[BucketCount, ...]:
    """Base operators per bucket, before → after, in descending order of the head count."""
    before = _counts(base)
    after = _counts(head)
    names = sorted(set(before) | set(after), key=lambda b: (-after.get(b, 0), -before.get(b, 0), b))
    return tuple(BucketCount(b, before.get(b, 0), after.get(b, 0)) for b in names)


def _counts(snap: Snapshot) -> dict[str, int]:
    """The buckets that hold base operators, with how many; a snapshot without decisions (a partial
    one, of changed records only) is counted from its records' bases."""
    if snap.decisions:
        counts = count_by_bucket(d.bucket for d in snap.decisions.values())
    else:
        counts = count_by_bucket({rec.base: rec.bucket for rec in snap.operators.values()}.values())
    return {b: n for b, n in counts.items() if n}


def compute_drift(
    base: Snapshot,
    head: Snapshot,
    *,
    base_all: Mapping[str, OpRecord] | None = None,
    head_all: Mapping[str, OpRecord] | None = None,
    head_release: str | None = None,
) -> Drift:
    """Every operator-level difference from `base` to `head`.

    `base_all` / `head_all`: every operator of each side, when the snapshots hold only the records
    that changed (the history walk's), so that a variant's functional sibling is still found.
    `head_release`: the torch release whose rules HEAD is read by (``--codegen X.Y``), in place of
    HEAD's own version, for the kernel verdict.
    """
    b_ops, h_ops = base.operators, head.operators
    removed = {n: r for n, r in b_ops.items() if n not in h_ops}
    added = {n: r for n, r in h_ops.items() if n not in b_ops}
    renames = find_renames(removed, added)
    for old, new in renames:
        del removed[old.name]
        del added[new.name]

    need_b = ProfileNeeds(b_ops if base_all is None else base_all, version=base.meta.torch_version)
    need_h = ProfileNeeds(h_ops if head_all is None else head_all, version=head.meta.torch_version)
    rules = (rules_of(base), rules_of(head))
    # The kernels are built against HEAD, so its dispatcher's rule for SymInt schemas applies.
    version = head_release or head.meta.torch_version
    changed: list[Change] = []
    for name in sorted(set(b_ops) & set(h_ops)):
        c = _changed(b_ops[name], h_ops[name], "changed", need_b, need_h, version, rules)
        if c is not None:
            changed.append(c)
    renamed = [
        c
        for old, new in renames
        if (c := _changed(old, new, "renamed", need_b, need_h, version, rules)) is not None
    ]
    return Drift(
        base=base.meta,
        head=head.meta,
        added=tuple(_added(added[n], need_h(added[n])) for n in sorted(added)),
        removed=tuple(_removed(removed[n], need_b(removed[n])) for n in sorted(removed)),
        renamed=tuple(renamed),
        changed=tuple(changed),
        buckets=bucket_counts(base, head),
        base_operators=len(b_ops),
        head_operators=len(h_ops),
        base_entries=base.entries,
        head_entries=head.entries,
    )
