"""Classify an `OperatorSet`: one bucket per base operator (rules in `opdrift.taxonomy.rules`), facets per operator.

`classify` is two steps: `decide_all` groups the registered operators by base name, finds announced
aliases (the source's alias map, else the comments above the entries), runs the rule table on each
base operator and applies the user's overrides; `snapshot_of` then builds one record per registered
operator and returns a `Snapshot`. `reclassify` applies overrides to a stored snapshot.
`resolve_op` finds what ``opdrift explain`` shows (`opdrift.render.explain`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from opdrift.dispatchkeys import CIA, COMPOSITE_KEYS
from opdrift.errors import OpdriftError
from opdrift.model import (
    Decision,
    Facets,
    Operator,
    OperatorSet,
    OpRecord,
    OpSignal,
    Signals,
    Snapshot,
    SourceMeta,
)
from opdrift.taxonomy.baseop import BaseOp, make_base_op
from opdrift.taxonomy.rules import RULES, Rule

if TYPE_CHECKING:
    # The caller parses the overrides (opdrift.app.overrides); classifying only asks them for decisions.
    from opdrift.taxonomy.overrides import Overrides

_COMPOSITE = frozenset(COMPOSITE_KEYS)


class UnknownOperatorError(OpdriftError):
    """``opdrift explain`` was asked about an operator the source does not have."""


# --- aliases announced in comments ---------------------------------------------------------------
# The phrasings PyTorch uses above alias entries (1.12.0-2.15.0):
#   "arccos, alias of acos"   "divide, alias for div"   "true_divide, an alias for div"
#   "clip is an alias for clamp"   "row_stack is the alias of vstack"   "Absolute, alias for abs"
#   "torch.det, alias for torch.linalg.det"   "alias for torch.cat"   "Alias to linalg.matrix_power"
# A sentence with a subject counts only when the subject is the entry itself: "binary max, alias of
# maximum" sits above max.other, but `max` as a whole is not an alias (the next line says so).
_QUALIFIED = r"(?:torch\.)?[A-Za-z_][\w.]*"
_ALIAS_SENTENCE = re.compile(
    rf"^(?:(?P<subject>{_QUALIFIED})(?: is)?,? )?(?:an |the )?alias (?:for|of|to) (?P<target>{_QUALIFIED})",
    re.IGNORECASE,
)


def aten_name(qualified: str) -> str:
    """``torch.linalg.det`` → ``linalg_det``: the Python spelling of a namespaced op → its ATen name."""
    name = qualified.rstrip(".").lower()
    name = name.removeprefix("torch.")
    return name.replace(".", "_")


def alias_from_comments(
    base: str, entries: Iterable[Operator], bases: frozenset[str]
) -> tuple[str, str] | None:
    """(target, evidence) when a comment above one of the entries announces `base` as an alias."""
    for op in entries:
        for comment in op.comments:
            if "lias" not in comment:  # cheap filter: most comments are not about aliases
                continue
            text = comment.strip()
            if "not an alias" in text.lower():
                continue
            m = _ALIAS_SENTENCE.match(text)
            if m is None:
                continue
            subject = m.group("subject")
            if subject is not None and aten_name(subject) != base:
                continue
            target = aten_name(m.group("target"))
            if target != base and target in bases:
                return target, f"comment above line {op.line}: '# {text}'"
    return None


# --- grouping ------------------------------------------------------------------------------------


def resolved_kernels(operators: Sequence[Operator]) -> dict[str, tuple[str, ...]]:
    """Backend keys per operator: its own, plus its structured_delegate's (``add.Tensor`` runs on the
    CPU/CUDA kernels of ``add.out`` and lists only its extra backends itself)."""
    # Operator.backends, inlined: this runs for every operator of every snapshot.
    own = {
        op.name: tuple([k for k, _ in op.dispatch if k not in _COMPOSITE]) for op in operators if op.dispatch
    }
    kernels: dict[str, tuple[str, ...]] = {}
    for op in operators:
        keys = own.get(op.name, ())
        if op.structured_delegate is not None:
            delegated = own.get(op.structured_delegate, ())
            if delegated:
                keys = tuple(sorted(set(keys).union(delegated)))
        if keys:
            kernels[op.name] = keys
    return kernels


def base_operators(opset: OperatorSet) -> dict[str, BaseOp]:
    """Every base operator of the set, as the rules see it (aliases and kernels resolved)."""
    groups: dict[str, list[Operator]] = defaultdict(list)
    for op in opset.operators:
        groups[op.base].append(op)
    bases = frozenset(groups)
    source_tags = frozenset().union(*[op.tags for op in opset.operators])
    kernels = MappingProxyType(resolved_kernels(opset.operators))
    return {
        name: base_operator(
            name,
            tuple(ops),
            bases=bases,
            kernels=kernels,
            aliases=opset.aliases,
            source_tags=source_tags,
            signals=opset.signals,
        )
        for name, ops in groups.items()
    }


def base_operator(
    name: str,
    ops: tuple[Operator, ...],
    *,
    bases: frozenset[str],
    kernels: Mapping[str, tuple[str, ...]],
    aliases: Mapping[str, str],
    source_tags: frozenset[str],
    signals: Signals | None = None,
) -> BaseOp:
    """One base operator as the rules see it: OPS are its operators; BASES, KERNELS (`resolved_kernels`
    of at least OPS and their delegates), ALIASES, SOURCE_TAGS and SIGNALS are the whole source's views.

    Its alias comes from the source's alias map, else from what PyTorch's Python side says (docs,
    overrides, _refs, the JIT's alias map) together with the comments above its entries: an alias whose
    comment was deleted is still an alias while the docs say so.
    """
    alias_of: str | None = None
    evidence = ""
    mapped = aliases.get(name)
    if mapped is not None:
        alias_of, evidence = mapped, "the source's alias map"
    else:
        said = _signal_alias(name, ops, bases, kernels, signals)
        found = None
        if any(op.comments for op in ops):
            found = alias_from_comments(name, [o for o in ops if o.autogen_from is None], bases)
        if said is not None and (found is None or found[0] == said[0]):
            alias_of, evidence = said
            if found is not None:
                evidence = f"{evidence}; {found[1]}"
        elif found is not None:
            alias_of, evidence = found
    signal = None if signals is None else _kept_signal(signals.ops.get(name), bases)
    origin = "" if signals is None else signals.origin
    return make_base_op(name, ops, bases, kernels, alias_of, evidence, source_tags, signal, origin)


_NO_SIGNAL = OpSignal()


def _kept_signal(signal: OpSignal | None, bases: frozenset[str]) -> OpSignal:
    """SIGNAL with only the targets the source has (a source's own files name helpers and Python builtins)."""
    if signal is None:
        return _NO_SIGNAL
    kept = tuple(t for t in signal.decomposes_to if t in bases or t.startswith("prims."))
    return signal if kept == signal.decomposes_to else replace(signal, decomposes_to=kept)


def _signal_alias(
    name: str,
    ops: tuple[Operator, ...],
    bases: frozenset[str],
    kernels: Mapping[str, tuple[str, ...]],
    signals: Signals | None,
) -> tuple[str, str] | None:
    """(target, evidence) when the Python side calls NAME an alias of an operator the source has.

    Only an operator built from others (CompositeImplicitAutograd, no kernels) is taken as the alias:
    the docs call torch.erf an alias of torch.special.erf, but in ATen it is special_erf that calls erf.
    """
    said = None if signals is None else signals.aliases.get(name)
    if said is None or said.target == name or said.target not in bases:
        return None
    for op in ops:
        if op.autogen_from is None and (op.composite != CIA or kernels.get(op.name)):
            return None
    return said.target, f"{', '.join(said.where)}; {signals.origin if signals else ''}"


def decide(op: BaseOp, rules: tuple[Rule, ...] = RULES) -> Decision:
    """The first rule that matches `op`, as a Decision."""
    for rule in rules:
        why = rule.when.reason(op)
        if why is not None:
            return Decision(bucket=rule.bucket, rule=rule.id, reason=why)
    # The table ends with an always-matching rule; a table without one is a programming error.
    raise LookupError(f"no rule matched {op.name}; the rule table must end with a catch-all")


def decide_base(op: BaseOp, overrides: Overrides | None) -> Decision:
    """A base operator's decision: the user's override when there is one, else the rule table's."""
    return _override_decision(op.name, overrides) or decide(op)


def _override_decision(base: str, overrides: Overrides | None) -> Decision | None:
    return None if overrides is None else overrides.decision(base)


# --- facets --------------------------------------------------------------------------------------


def _has_derivative(op: Operator, derivatives: frozenset[str] | None) -> bool | None:
    """Whether autograd has a formula: its own entry in derivatives.yaml, or (in-place) its functional one.

    Out variants never get one (autograd does not differentiate out= calls), so only the name and,
    for ``relu_``, the functional ``relu`` with the same overload are looked up.
    """
    if derivatives is None:
        return None
    if op.name in derivatives:
        return True
    if op.kind == "inplace" and op.base.endswith("_"):
        functional = op.base[:-1] + (f".{op.overload}" if op.overload else "")
        return functional in derivatives
    return False


def facets_of(op: Operator, base: BaseOp, derivatives: frozenset[str] | None) -> Facets:
    keys = {k for k, _ in op.dispatch}
    keys.update(base.kernels.get(op.name, ()))
    if op.composite is not None:
        keys.add(op.composite)
    return Facets(
        composite=op.composite,
        dispatch=tuple(sorted(keys)),
        tags=op.tags,
        python_module=op.python_module,
        structured=op.structured,
        structured_delegate=op.structured_delegate,
        alias_of=base.alias_of,
        has_derivative=None if derivatives is None else _has_derivative(op, derivatives),
        foreach=op.base.startswith("_foreach_"),
        autogen=op.autogen_from is not None,
        variants=op.variants,
        kernels=op.kernels,
        const_ref_mutable=op.const_ref_mutable,
        decomposes_to=() if base.signal is None else base.signal.decomposes_to,
        has_ref=None if base.signal is None else base.signal.has_ref,
    )


# --- the stage -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decided:
    """A source's operators with every base operator decided: what `snapshot_of` turns into records.

    `opdrift stats` counts from this (`opdrift.taxonomy.stats`) and builds no record: a record per
    registered operator is most of classifying's cost, and the table reads none of its facets that
    the operator does not carry itself.
    """

    opset: OperatorSet
    bases: Mapping[str, BaseOp]  # base name → base operator
    decisions: Mapping[str, Decision]  # base name → decision, sorted by name

    @property
    def meta(self) -> SourceMeta:
        return self.opset.meta

    @property
    def entries(self) -> int:
        return self.opset.entries


def decide_all(opset: OperatorSet, overrides: Overrides | None = None) -> Decided:
    """Place every base operator of OPSET in one bucket (the user's override, else the rule table)."""
    bases = base_operators(opset)
    decisions = {name: decide_base(base, overrides) for name, base in bases.items()}
    return Decided(opset, bases, MappingProxyType(dict(sorted(decisions.items()))))


def snapshot_of(decided: Decided) -> Snapshot:
    """The snapshot of a decided source: one record, with its facets, per registered operator."""
    opset = decided.opset
    records: dict[str, OpRecord] = {}
    for name, base in decided.bases.items():
        records.update(base_records(base, decided.decisions[name], opset.derivatives))
    return Snapshot(
        meta=opset.meta,
        entries=opset.entries,
        operators=MappingProxyType(dict(sorted(records.items()))),
        decisions=decided.decisions,
        native_display=opset.native_display,
        warnings=opset.warnings,
    )


def classify(opset: OperatorSet, overrides: Overrides | None = None) -> Snapshot:
    """Place every base operator in one bucket and attach facets to every registered operator."""
    return snapshot_of(decide_all(opset, overrides))


def base_records(base: BaseOp, decision: Decision, derivatives: frozenset[str] | None) -> dict[str, OpRecord]:
    """The records of a base operator's registered operators, all in the bucket of its DECISION."""
    return {
        op.name: OpRecord(
            name=op.name,
            base=op.base,
            overload=op.overload,
            schema=op.schema,
            bucket=decision.bucket,
            rule=decision.rule,
            kind=op.kind,
            facets=facets_of(op, base, derivatives),
            line=op.line,
        )
        for op in base.overloads
    }


def reclassify(snapshot: Snapshot, overrides: Overrides) -> Snapshot:
    """A stored snapshot with the user's overrides applied on top of its stored decisions."""
    decisions = dict(snapshot.decisions)
    for base in decisions:
        decision = _override_decision(base, overrides)
        if decision is not None:
            decisions[base] = decision
    records = {
        name: replace(rec, bucket=decisions[rec.base].bucket, rule=decisions[rec.base].rule)
        if rec.base in decisions
        else rec
        for name, rec in snapshot.operators.items()
    }
    return replace(
        snapshot,
        operators=MappingProxyType(records),
        decisions=MappingProxyType(dict(sorted(decisions.items()))),
    )


# --- looking an operator up -------------------------------------------------------------------


def resolve_op(snapshot: Snapshot, op: str) -> tuple[str, list[OpRecord]]:
    """(base name, the records to show) for a registered name (``add.out``) or a base name (``add``)."""
    record = snapshot.operators.get(op)
    if record is not None and record.base != op:
        return record.base, [record]
    if op in snapshot.decisions:
        records = [r for r in snapshot.operators.values() if r.base == op]
        return op, sorted(records, key=lambda r: (r.line, r.name))
    import difflib  # here: only an unknown name needs it, not the classifying every command does

    names = list(snapshot.decisions) + [n for n in snapshot.operators if n not in snapshot.decisions]
    close = difflib.get_close_matches(op, names, n=5, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownOperatorError(f"no operator named {op!r} in this source{hint}", path=snapshot.meta.path)
