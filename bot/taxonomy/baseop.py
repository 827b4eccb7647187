"""What a taxonomy rule looks at: `BaseOp`, one base operator with all its registered overloads.

A rule that looks at a schema looks at the base operator's *representative*: the default overload
(``relu``) when there is one, else the first entry in file order (``add.Tensor``). The post
(docs/taxonomy.md) judged each base operator by its first entry; the default overload is preferred because
it is the operator's plain call and does not move when someone inserts an overload above it.

It is a module of its own because both the matchers (`opdrift.taxonomy.matchers`) and the classifier
(`opdrift.taxonomy.classify`, which builds one per base name) need it, and the rule table needs both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from opdrift.model import Operator, OpSignal
from opdrift.schema.grammar import parse_schema
from opdrift.schema.model import FunctionSchema


@dataclass(frozen=True)
class BaseOp:
    """One base operator (``add``) with every registered operator that shares its name.

    Built by `make_base_op`; everything but the representative's parsed schema is computed up front.
    """

    name: str
    overloads: tuple[Operator, ...]  # every registered operator of this base, sorted by name
    entries: tuple[Operator, ...]  # those written in the yaml (autogen ones are derived, never decide)
    rep: Operator  # the representative overload (module docstring)
    all_bases: frozenset[str]  # every base name of the source, for "twin" rules (svd ↔ linalg_svd)
    kernels: Mapping[str, tuple[str, ...]]  # op name → backend keys (delegate's if none); absent: none
    alias_of: str | None = None  # the original operator, when a comment or alias map announces one
    alias_evidence: str = ""  # where alias_of came from, for the reason sentence
    source_tags: frozenset[str] = frozenset()  # every tag any operator of the source carries
    # what PyTorch's Python side says about how it is built (targets kept to the source's operators and
    # prims), and where those facts come from; None when the source has no facts at all
    signal: OpSignal | None = None
    signal_origin: str = ""

    @property
    def schema(self) -> FunctionSchema:
        """The representative's parsed schema (`parse_schema` keeps every schema it parsed)."""
        return parse_schema(self.rep.schema)

    def backends_of(self, op: Operator) -> tuple[str, ...]:
        """Backend dispatch keys of one overload, its structured_delegate's when it names none."""
        return self.kernels.get(op.name, ())


def make_base_op(
    name: str,
    overloads: tuple[Operator, ...],
    all_bases: frozenset[str],
    kernels: Mapping[str, tuple[str, ...]],
    alias_of: str | None = None,
    alias_evidence: str = "",
    source_tags: frozenset[str] = frozenset(),
    signal: OpSignal | None = None,
    signal_origin: str = "",
) -> BaseOp:
    entries = tuple(op for op in overloads if op.autogen_from is None) or overloads
    rep = next((op for op in entries if op.overload == ""), None)
    if rep is None:
        rep = min(entries, key=lambda op: (op.line, op.name))
    return BaseOp(
        name,
        overloads,
        entries,
        rep,
        all_bases,
        kernels,
        alias_of,
        alias_evidence,
        source_tags,
        signal,
        signal_origin,
    )
