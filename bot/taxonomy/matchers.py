"""The named tests the rule table is built from, combined with ``&``, ``|`` and ``~``.

A matcher answers with the *reason* it matched ("name matches conv pattern 'conv'", "tag pointwise and
own kernels (CPU, CUDA)") or None, so every decision carries a sentence a maintainer can check against
the source; `describe` says what it tests, for `opdrift.taxonomy.rules.describe_rules`. Rules that look at
tags, kernels or arguments take every overload into account and say which overload gave the answer;
rules that look at a schema look at the representative (`opdrift.taxonomy.baseop`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from opdrift.taxonomy.baseop import BaseOp


class Matcher:
    """A named test on a `BaseOp`: `reason` returns why it matched, or None.

    Matchers are built once, at import, into the rule table, and compared by identity. One with
    parameters is a dataclass that generates only its `__init__` (no comparison, no printing: `describe`
    says what it tests), one without is a plain class. `dataclass` compiles each method it generates
    from source, at every start, and a frozen class has six; nothing assigns to a matcher after
    `__post_init__`.
    """

    def reason(self, op: BaseOp) -> str | None:
        raise NotImplementedError

    def describe(self) -> str:
        """What the matcher tests, for documentation (`describe_rules`)."""
        raise NotImplementedError

    def __and__(self, other: Matcher) -> Matcher:
        return AllOf((self, other))

    def __or__(self, other: Matcher) -> Matcher:
        return AnyOf((self, other))

    def __invert__(self) -> Matcher:
        return Not(self)


@dataclass(eq=False, repr=False)
class AllOf(Matcher):
    """Every part matches; the reasons joined."""

    parts: tuple[Matcher, ...]

    def reason(self, op: BaseOp) -> str | None:
        reasons: list[str] = []
        for part in self.parts:
            why = part.reason(op)
            if why is None:
                return None
            reasons.append(why)
        return " and ".join(reasons)

    def describe(self) -> str:
        return " and ".join(p.describe() for p in self.parts)

    def __and__(self, other: Matcher) -> Matcher:
        return AllOf((*self.parts, other))


@dataclass(eq=False, repr=False)
class AnyOf(Matcher):
    """The first part that matches, with its reason."""

    parts: tuple[Matcher, ...]

    def reason(self, op: BaseOp) -> str | None:
        for part in self.parts:
            why = part.reason(op)
            if why is not None:
                return why
        return None

    def describe(self) -> str:
        return "(" + " or ".join(p.describe() for p in self.parts) + ")"

    def __or__(self, other: Matcher) -> Matcher:
        return AnyOf((*self.parts, other))


@dataclass(eq=False, repr=False)
class Not(Matcher):
    """The part does not match."""

    part: Matcher

    def reason(self, op: BaseOp) -> str | None:
        return f"not {self.part.describe()}" if self.part.reason(op) is None else None

    def describe(self) -> str:
        return f"not {self.part.describe()}"


@dataclass(eq=False, repr=False)
class NameRegex(Matcher):
    """The base name matches a regex (searched, not anchored, unless the pattern anchors itself)."""

    label: str
    pattern: str
    why: str = ""  # the reason to give instead of "name matches ...", when the pattern needs saying why
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.compiled = re.compile(self.pattern)

    def reason(self, op: BaseOp) -> str | None:
        if self.compiled.search(op.name) is None:
            return None
        return self.why or f"name matches {self.label} pattern '{self.pattern}'"

    def describe(self) -> str:
        return f"name matches {self.label} pattern '{self.pattern}'"


@dataclass(eq=False, repr=False)
class NamePrefix(Matcher):
    """The base name starts with a fixed prefix (``fbgemm_``, ``linalg_``)."""

    prefix: str

    def reason(self, op: BaseOp) -> str | None:
        return f"name starts with '{self.prefix}'" if op.name.startswith(self.prefix) else None

    def describe(self) -> str:
        return f"name starts with '{self.prefix}'"


@dataclass(eq=False, repr=False)
class HasTag(Matcher):
    """Some entry of the base operator carries the tag (tags.yaml)."""

    tag: str

    def reason(self, op: BaseOp) -> str | None:
        for o in op.entries:
            if self.tag in o.tags:
                return f"tag {self.tag} (on {o.name})"
        return None

    def describe(self) -> str:
        return f"tag {self.tag}"


@dataclass(eq=False, repr=False)
class TagUnused(Matcher):
    """No operator of the source carries the tag: the source predates it, so weaker hints must stand in."""

    tag: str

    def reason(self, op: BaseOp) -> str | None:
        return None if self.tag in op.source_tags else f"the source has no {self.tag} tags"

    def describe(self) -> str:
        return f"the source predates tag {self.tag}"


@dataclass(eq=False, repr=False)
class PythonModule(Matcher):
    """Some entry is exposed under ``torch.<module>`` (``python_module:``)."""

    module: str

    def reason(self, op: BaseOp) -> str | None:
        for o in op.entries:
            if o.python_module == self.module:
                return f"python_module: {self.module}"
        return None

    def describe(self) -> str:
        return f"python_module: {self.module}"


class ReturnsNoTensor(Matcher):
    """The representative returns no tensor (``-> bool``, ``-> int[]``, ``-> ()``, a packed-params class)."""

    def reason(self, op: BaseOp) -> str | None:
        schema = op.rep.schema
        # The returns follow the last " -> " (annotations inside the arguments use "->" too, but never
        # the top-level one); any tensor-like return type spells "Tensor".
        if "Tensor" in schema[schema.rindex(") -> ") + 5 :]:
            return None
        return f"{op.rep.name} returns no tensor"

    def describe(self) -> str:
        return "returns no tensor"


class NoTensorInput(Matcher):
    """The representative takes no tensor argument (outputs aside): it makes a tensor from sizes or values."""

    def reason(self, op: BaseOp) -> str | None:
        if op.schema.tensor_inputs():
            return None
        return f"{op.rep.name} takes no tensor input"

    def describe(self) -> str:
        return "takes no tensor input"


class DimnameArgs(Matcher):
    """Every entry takes a Dimname: the operator exists only for named tensors."""

    def reason(self, op: BaseOp) -> str | None:
        if all("Dimname" in o.schema for o in op.entries):
            return "every overload takes a Dimname"
        return None

    def describe(self) -> str:
        return "every overload takes a Dimname"


class ViewAlias(Matcher):
    """The representative returns ``Tensor(a)`` aliasing an input ``Tensor(a)``: a view."""

    def reason(self, op: BaseOp) -> str | None:
        pairs = op.schema.aliased_returns()
        if not pairs:
            return None
        ret, arg = pairs[0]
        return f"{op.rep.name} returns {ret.type.render(ret.annotation)} aliasing input '{arg.name}'"

    def describe(self) -> str:
        return "returns an alias of an input (a view)"


@dataclass(eq=False, repr=False)
class CompositeKind(Matcher):
    """Every entry is of this composite kind (CompositeImplicitAutograd: built from other operators)."""

    kind: str

    def reason(self, op: BaseOp) -> str | None:
        if all(o.composite == self.kind and not op.backends_of(o) for o in op.entries):
            return f"{self.kind} (no kernels of its own)"
        return None

    def describe(self) -> str:
        return f"{self.kind} (no kernels of its own)"


class OwnKernels(Matcher):
    """Some entry has backend kernels (a dispatch key that is not a composite kind)."""

    def reason(self, op: BaseOp) -> str | None:
        keys = sorted({k for o in op.entries for k in op.backends_of(o)})
        if not keys:
            return None
        shown = ", ".join(keys[:4]) + (", ..." if len(keys) > 4 else "")
        return f"own kernels ({shown})"

    def describe(self) -> str:
        return "has kernels of its own"


@dataclass(eq=False, repr=False)
class OnlyBackends(Matcher):
    """Every dispatch key of every entry is of one family (Sparse*, Quantized*): nothing else runs it."""

    label: str
    pattern: str
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.compiled = re.compile(self.pattern)

    def reason(self, op: BaseOp) -> str | None:
        keys: set[str] = set()
        for o in op.entries:
            if o.composite is not None:
                return None
            keys.update(op.backends_of(o))
        if keys and all(self.compiled.match(k) for k in keys):
            return f"kernels only for {self.label} ({', '.join(sorted(keys)[:3])})"
        return None

    def describe(self) -> str:
        return f"kernels only for {self.label}"


@dataclass(eq=False, repr=False)
class HasArg(Matcher):
    """Some entry has an argument of this name and type (``bool keepdim``)."""

    text: str  # e.g. "bool keepdim", matched as a whole argument

    def reason(self, op: BaseOp) -> str | None:
        needle = f" {self.text}"
        for o in op.entries:
            i = o.schema.find(needle)
            if i >= 0 and o.schema[i + len(needle)] in "=,)":
                return f"argument '{self.text}' (in {o.name})"
        return None

    def describe(self) -> str:
        return f"has argument '{self.text}'"


@dataclass(eq=False, repr=False)
class CategoryOverride(Matcher):
    """native_functions.yaml's own ``category_override:`` (PyTorch marks factories taking tensors so)."""

    category: str

    def reason(self, op: BaseOp) -> str | None:
        for o in op.entries:
            if o.category_override == self.category:
                return f"category_override: {self.category} (on {o.name})"
        return None

    def describe(self) -> str:
        return f"category_override: {self.category}"


class AliasKnown(Matcher):
    """A comment above the entry, or the source's alias map, names the operator this one aliases."""

    def reason(self, op: BaseOp) -> str | None:
        if op.alias_of is None:
            return None
        return f"alias of {op.alias_of} ({op.alias_evidence})"

    def describe(self) -> str:
        return "announced as an alias (comment or alias map)"


class InplaceTwin(Matcher):
    """``name_`` is also an operator: the in-place half of an elementwise family (``add``/``add_``)."""

    def reason(self, op: BaseOp) -> str | None:
        return f"in-place twin {op.name}_ exists" if op.name + "_" in op.all_bases else None

    def describe(self) -> str:
        return "'<name>_' also exists"


@dataclass(eq=False, repr=False)
class StripsToExisting(Matcher):
    """The name is ``prefix + X`` where X is another operator: a namespaced re-export (``special_expm1``)."""

    prefix: str

    def reason(self, op: BaseOp) -> str | None:
        if not op.name.startswith(self.prefix):
            return None
        plain = op.name[len(self.prefix) :]
        return f"'{plain}' exists without the '{self.prefix}' prefix" if plain in op.all_bases else None

    def describe(self) -> str:
        return f"'{self.prefix}X' where X also exists"


class ElementwiseSignature(Matcher):
    """The representative maps plain tensors (and scalars) to one tensor of the same role: a ufunc shape.

    For a source whose tags.yaml has no ``pointwise`` (before 2.0) this is the only structural hint of a
    pointwise op.
    """

    def reason(self, op: BaseOp) -> str | None:
        schema = op.schema
        inputs = schema.tensor_inputs()
        if not inputs or len(schema.returns) != 1 or str(schema.returns[0].type) != "Tensor":
            return None
        if any(str(a.type) not in ("Tensor", "Tensor?") for a in inputs):
            return None
        if any(a.type.base in ("int", "SymInt", "Dimname") for a in schema.arguments.flat_non_out):
            return None  # dims, sizes and shapes are not elementwise arguments
        return f"{op.rep.name} maps tensors and scalars to one tensor"

    def describe(self) -> str:
        return "elementwise signature (tensors and scalars in, one tensor out, no dims)"


class Always(Matcher):
    """Matches every base operator: the last rule's catch-all."""

    def reason(self, op: BaseOp) -> str | None:
        return "no earlier rule matched"

    def describe(self) -> str:
        return "always"


# --- PyTorch's Python side (`opdrift.signals`): how an operator is built --------------------------------


def _from(op: BaseOp, where: str) -> str:
    return f"{where}; {op.signal_origin}" if where else op.signal_origin


class PointwiseRef(Matcher):
    """Its reference or decomposition is built with an elementwise wrapper: a pointwise structure."""

    def reason(self, op: BaseOp) -> str | None:
        signal = op.signal
        if signal is None or not signal.pointwise_ref:
            return None
        return f"its reference is elementwise ({signal.where})"

    def describe(self) -> str:
        return "its reference or decomposition is elementwise"


class Primitive(Matcher):
    """torch/_prims defines a primitive of this name, or its reference is one primitive (special_i1 is
    prims.bessel_i1)."""

    def reason(self, op: BaseOp) -> str | None:
        signal = op.signal
        if signal is None:
            return None
        if signal.prim:
            return f"torch/_prims defines the primitive prims.{op.name} ({op.signal_origin})"
        targets = signal.decomposes_to
        if len(targets) == 1 and targets[0].startswith("prims."):
            return f"its reference is the primitive {targets[0]} ({_from(op, signal.where)})"
        return None

    def describe(self) -> str:
        return "a primitive of torch/_prims, or its reference is one"


class BuiltFromOthers(Matcher):
    """PyTorch writes it in terms of other operators: a decomposition or reference on the Python side, or
    no kernels of its own (a composite kind, built from other operators in C++)."""

    def reason(self, op: BaseOp) -> str | None:
        signal = op.signal
        if signal is not None:
            targets = [t for t in signal.decomposes_to if t != op.name]
            if targets:
                shown = ", ".join(targets[:6]) + (", ..." if len(targets) > 6 else "")
                return f"written in terms of {shown} ({_from(op, signal.where)})"
        if any(op.backends_of(o) for o in op.entries):
            return None
        kinds = sorted({o.composite for o in op.entries if o.composite is not None})
        return f"no kernels of its own: built from other operators ({', '.join(kinds) or 'composite'})"

    def describe(self) -> str:
        return "written in terms of other operators (a decomposition, a reference, or no kernels of its own)"


class NoDecomposition(Matcher):
    """Neither torch/_refs nor torch/_decomp writes it in terms of other operators."""

    def reason(self, op: BaseOp) -> str | None:
        if op.signal is None:
            return "no facts about decompositions are known for this source"
        if op.signal.decomposes_to:
            return None
        return f"no decomposition in torch/_refs or torch/_decomp ({op.signal_origin})"

    def describe(self) -> str:
        return "no decomposition anywhere"
