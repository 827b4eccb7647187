"""The post's table for one snapshot: counts at every level, and base operators per bucket.

`compute_stats` is pure, and reads a snapshot or a source decided without its records; `opdrift.render.stats` shows a `Stats` as text, Markdown or JSON.
The figures follow docs/taxonomy.md's levels of counting and the post's TL;DR:

- entries: ``- func:`` items; operators: registered operators (entries plus autogen);
- base_operators: names without the overload part (every bucket counts these, so they sum up);
- overloads: registered operators with an overload name (``add.Tensor``); out_overloads: those of
  kind out (``.out``, ``.grad_input``, ``.values``...), overloads_named_out: those named exactly
  ``out`` (how the post counted its 306); extra_overloads: operators beyond one per base (the post's "exist only as overloads");
- composite_implicit: registered operators built from others (CompositeImplicitAutograd);
- non_composite / non_composite_functional: the post's "after removing composite operators" and
  "after removing in-place/out variants"; core_non_composite: core base operators with any kernel.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from opdrift.dispatchkeys import CIA
from opdrift.model import Snapshot
from opdrift.taxonomy.buckets import CORE_BUCKETS
from opdrift.taxonomy.counts import count_by_bucket

if TYPE_CHECKING:
    # Built by the classifier, which the caller has imported: this module only reads it.
    from opdrift.taxonomy.classify import Decided


@dataclass(frozen=True)
class Stats:
    """The counts `opdrift stats` reports for one snapshot."""

    source: str
    torch_version: str | None
    commit: str | None
    entries: int
    operators: int
    base_operators: int
    entry_base_operators: int  # base names of yaml entries only (autogen left out): the post's 1215
    overloads: int
    out_overloads: int
    overloads_named_out: int
    extra_overloads: int
    composite_implicit: int
    non_composite: int
    non_composite_functional: int
    core: int
    core_non_composite: int
    foreach_base_operators: int
    foreach_operators: int
    autogen_operators: int
    by_category: Mapping[str, int]  # bucket id → base operators, every bucket, in table order
    by_rule: Mapping[str, int]  # rule id → base operators it decided

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "torch_version": self.torch_version,
            "commit": self.commit,
            "entries": self.entries,
            "operators": self.operators,
            "base_operators": self.base_operators,
            "entry_base_operators": self.entry_base_operators,
            "overloads": self.overloads,
            "out_overloads": self.out_overloads,
            "overloads_named_out": self.overloads_named_out,
            "extra_overloads": self.extra_overloads,
            "composite_implicit": self.composite_implicit,
            "non_composite": self.non_composite,
            "non_composite_functional": self.non_composite_functional,
            "core": self.core,
            "core_non_composite": self.core_non_composite,
            "foreach_base_operators": self.foreach_base_operators,
            "foreach_operators": self.foreach_operators,
            "autogen_operators": self.autogen_operators,
            "by_category": dict(self.by_category),
            "by_rule": dict(self.by_rule),
        }


# What the table counts of one registered operator (a record's facets, or the operator's own):
# (base, overload, kind, composite, foreach, autogen); a plain tuple, one per operator.
Counted = tuple[str, str, str, str | None, bool, bool]


def counted(source: Snapshot | Decided) -> Iterator[Counted]:
    """SOURCE's registered operators as the table counts them: a snapshot's records, or a decided
    source's operators, which give the same facts (`opdrift.taxonomy.classify.facets_of`)."""
    if isinstance(source, Snapshot):
        for rec in source.operators.values():
            f = rec.facets
            yield rec.base, rec.overload, rec.kind, f.composite, f.foreach, f.autogen
    else:
        for op in source.opset.operators:
            yield (
                op.base,
                op.overload,
                op.kind,
                op.composite,
                op.base.startswith("_foreach_"),
                op.autogen_from is not None,
            )


def compute_stats(source: Snapshot | Decided) -> Stats:
    """The table of SOURCE: a snapshot, or a source decided without its records (what `opdrift stats`
    reads: the table needs no record)."""
    decisions = source.decisions
    meta, entries = source.meta, source.entries
    by_category = count_by_bucket(d.bucket for d in decisions.values())
    by_rule: dict[str, int] = {}
    for decision in decisions.values():
        by_rule[decision.rule] = by_rule.get(decision.rule, 0) + 1
    core_set = frozenset(CORE_BUCKETS)
    operators = overloads = out_overloads = named_out = implicit = non_composite_functional = 0
    foreach_ops = autogen = 0
    entry_bases: set[str] = set()
    kernel_bases: set[str] = set()
    for base, overload, kind, composite, foreach, generated in counted(source):
        operators += 1
        if overload:
            overloads += 1
            if kind == "out":
                out_overloads += 1
            if overload == "out":
                named_out += 1
        if composite == CIA:
            implicit += 1
        else:
            kernel_bases.add(base)
            if kind in ("functional", "other"):
                non_composite_functional += 1
        if foreach:
            foreach_ops += 1
        if generated:
            autogen += 1
        else:
            entry_bases.add(base)
    core_bases = [b for b, d in decisions.items() if d.bucket in core_set]
    return Stats(
        source=meta.path,
        torch_version=meta.torch_version,
        commit=meta.commit,
        entries=entries,
        operators=operators,
        base_operators=len(decisions),
        entry_base_operators=len(entry_bases),
        overloads=overloads,
        out_overloads=out_overloads,
        overloads_named_out=named_out,
        extra_overloads=operators - len(decisions),
        composite_implicit=implicit,
        non_composite=operators - implicit,
        non_composite_functional=non_composite_functional,
        core=sum(by_category[b] for b in CORE_BUCKETS),
        core_non_composite=sum(1 for b in core_bases if b in kernel_bases),
        foreach_base_operators=sum(1 for b in decisions if b.startswith("_foreach_")),
        foreach_operators=foreach_ops,
        autogen_operators=autogen,
        by_category=MappingProxyType(by_category),
        by_rule=MappingProxyType(dict(sorted(by_rule.items()))),
    )
