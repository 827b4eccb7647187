"""The taxonomy's rule table: read it top to bottom, the first rule that matches a base operator wins.

Each `Rule` is data: an id (recorded in every snapshot and shown by ``opdrift explain``), the bucket it
assigns, and a predicate built from the small named matchers defined below and combined with ``&``,
``|`` and ``~``. A matcher answers with the *reason* it matched ("name matches conv pattern 'conv'",
"tag pointwise and own kernels (CPU, CUDA)") or None, so every decision carries a sentence a
maintainer can check against the source.

What a rule sees is a `BaseOp`: one base operator with all its registered overloads. Rules that look
at a schema look at its *representative*: the default overload (``relu``) when there is one, else the
first entry in file order (``add.Tensor``). The post (TAXONOMY.md) judged each base operator by its
first entry; the default overload is preferred because it is the operator's plain call and does not
move when someone inserts an overload above it. Rules that look at tags, kernels or arguments take
every overload into account, and say which overload gave the answer.

The order and the vocabulary come from TAXONOMY.md (top-level buckets, strictly in its order) and
from the post it cites (the core sub-buckets, which the post sorted by hand). The core rules are
ordered from the most specific signal to the most general one: an announced alias beats
everything; domain vocabularies (named, fbgemm, rnn, quantization, fft, linalg, sparse, complex,
scatter/gather) come before the structural signals (views, factories, matmul, reductions,
pointwise) because a domain op is often also a view or a reduction, and the domain says more.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.model import Operator, fast_constructor
from bot.schema.grammar import FunctionSchema, parse_schema

# --- what a rule sees --------------------------------------------------------------------------


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

    @property
    def schema(self) -> FunctionSchema:
        """The representative's parsed schema (`parse_schema` keeps every schema it parsed)."""
        return parse_schema(self.rep.schema)

    def backends_of(self, op: Operator) -> tuple[str, ...]:
        """Backend dispatch keys of one overload, its structured_delegate's when it names none."""
        return self.kernels.get(op.name, ())


_new_base_op = fast_constructor(BaseOp)  # one per base operator of every classified source


def make_base_op(
    name: str,
    overloads: tuple[Operator, ...],
    all_bases: frozenset[str],
    kernels: Mapping[str, tuple[str, ...]],
    alias_of: str | None = None,
    alias_evidence: str = "",
    source_tags: frozenset[str] = frozenset(),
) -> BaseOp:
    entries = tuple(op for op in overloads if op.autogen_from is None) or overloads
    rep = next((op for op in entries if op.overload == ""), None)
    if rep is None:
        rep = min(entries, key=lambda op: (op.line, op.name))
    return _new_base_op(
        name, overloads, entries, rep, all_bases, kernels, alias_of, alias_evidence, source_tags
    )


# --- matchers ------------------------------------------------------------------------------------


class Matcher:
    """A named test on a `BaseOp`: `reason` returns why it matched, or None."""

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


@dataclass(frozen=True)
class AllOf(Matcher):
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


@dataclass(frozen=True)
class AnyOf(Matcher):
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


@dataclass(frozen=True)
class Not(Matcher):
    part: Matcher

    def reason(self, op: BaseOp) -> str | None:
        return f"not {self.part.describe()}" if self.part.reason(op) is None else None

    def describe(self) -> str:
        return f"not {self.part.describe()}"


@dataclass(frozen=True)
class NameRegex(Matcher):
    """The base name matches a regex (searched, not anchored, unless the pattern anchors itself)."""

    label: str
    pattern: str
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", re.compile(self.pattern))

    def reason(self, op: BaseOp) -> str | None:
        if self.compiled.search(op.name) is None:
            return None
        return f"name matches {self.label} pattern '{self.pattern}'"

    def describe(self) -> str:
        return f"name matches {self.label} pattern '{self.pattern}'"


def name_regex(label: str, pattern: str) -> Matcher:
    return NameRegex(label, pattern)


@dataclass(frozen=True)
class NamePrefix(Matcher):
    prefixes: tuple[str, ...]

    def reason(self, op: BaseOp) -> str | None:
        for p in self.prefixes:
            if op.name.startswith(p):
                return f"name starts with '{p}'"
        return None

    def describe(self) -> str:
        return "name starts with " + " or ".join(f"'{p}'" for p in self.prefixes)


def name_prefix(*prefixes: str) -> Matcher:
    return NamePrefix(prefixes)


@dataclass(frozen=True)
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


def has_tag(tag: str) -> Matcher:
    return HasTag(tag)


@dataclass(frozen=True)
class TagUnused(Matcher):
    """No operator of the source carries the tag: the source predates it, so weaker hints must stand in."""

    tag: str

    def reason(self, op: BaseOp) -> str | None:
        return None if self.tag in op.source_tags else f"the source has no {self.tag} tags"

    def describe(self) -> str:
        return f"the source predates tag {self.tag}"


def tag_unused(tag: str) -> Matcher:
    return TagUnused(tag)


@dataclass(frozen=True)
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


def python_module(module: str) -> Matcher:
    return PythonModule(module)


@dataclass(frozen=True)
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


def returns_no_tensor() -> Matcher:
    return ReturnsNoTensor()


@dataclass(frozen=True)
class NoTensorInput(Matcher):
    """The representative takes no tensor argument (outputs aside): it makes a tensor from sizes or values."""

    def reason(self, op: BaseOp) -> str | None:
        if op.schema.tensor_inputs():
            return None
        return f"{op.rep.name} takes no tensor input"

    def describe(self) -> str:
        return "takes no tensor input"


def no_tensor_input() -> Matcher:
    return NoTensorInput()


@dataclass(frozen=True)
class DimnameArgs(Matcher):
    """Every entry takes a Dimname: the operator exists only for named tensors."""

    def reason(self, op: BaseOp) -> str | None:
        if all("Dimname" in o.schema for o in op.entries):
            return "every overload takes a Dimname"
        return None

    def describe(self) -> str:
        return "every overload takes a Dimname"


def dimname_args() -> Matcher:
    return DimnameArgs()


@dataclass(frozen=True)
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


def view_alias() -> Matcher:
    return ViewAlias()


@dataclass(frozen=True)
class CompositeKind(Matcher):
    """Every entry is of this composite kind (CompositeImplicitAutograd: built from other operators)."""

    kind: str

    def reason(self, op: BaseOp) -> str | None:
        if all(o.composite == self.kind and not op.backends_of(o) for o in op.entries):
            return f"{self.kind} (no kernels of its own)"
        return None

    def describe(self) -> str:
        return f"{self.kind} (no kernels of its own)"


def composite_kind(kind: str) -> Matcher:
    return CompositeKind(kind)


@dataclass(frozen=True)
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


def own_kernels() -> Matcher:
    return OwnKernels()


@dataclass(frozen=True)
class OnlyBackends(Matcher):
    """Every dispatch key of every entry is of one family (Sparse*, Quantized*): nothing else runs it."""

    label: str
    pattern: str
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", re.compile(self.pattern))

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


def only_backends(label: str, pattern: str) -> Matcher:
    return OnlyBackends(label, pattern)


@dataclass(frozen=True)
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


def has_arg(text: str) -> Matcher:
    return HasArg(text)


@dataclass(frozen=True)
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


def category_override(category: str) -> Matcher:
    return CategoryOverride(category)


@dataclass(frozen=True)
class AliasKnown(Matcher):
    """A comment above the entry, or the source's alias map, names the operator this one aliases."""

    def reason(self, op: BaseOp) -> str | None:
        if op.alias_of is None:
            return None
        return f"alias of {op.alias_of} ({op.alias_evidence})"

    def describe(self) -> str:
        return "announced as an alias (comment or alias map)"


def alias_known() -> Matcher:
    return AliasKnown()


@dataclass(frozen=True)
class InplaceTwin(Matcher):
    """``name_`` is also an operator: the in-place half of an elementwise family (``add``/``add_``)."""

    def reason(self, op: BaseOp) -> str | None:
        return f"in-place twin {op.name}_ exists" if op.name + "_" in op.all_bases else None

    def describe(self) -> str:
        return "'<name>_' also exists"


def inplace_twin() -> Matcher:
    return InplaceTwin()


@dataclass(frozen=True)
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


def strips_to_existing(prefix: str) -> Matcher:
    return StripsToExisting(prefix)


@dataclass(frozen=True)
class ElementwiseSignature(Matcher):
    """The representative maps plain tensors (and scalars) to one tensor of the same role: a ufunc shape.

    Before tags.yaml had ``pointwise`` (2.0) this is the only structural hint of a pointwise op.
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


def elementwise_signature() -> Matcher:
    return ElementwiseSignature()


@dataclass(frozen=True)
class Always(Matcher):
    def reason(self, op: BaseOp) -> str | None:
        return "no earlier rule matched"

    def describe(self) -> str:
        return "always"


def always() -> Matcher:
    return Always()


# --- the table -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """Base operators that satisfy `when` go to `bucket`; `id` is what snapshots and explain show."""

    id: str
    bucket: str
    when: Matcher
    note: str = ""  # why the rule is there, when its predicate does not say it


_IMPLICIT = "CompositeImplicitAutograd"
# The pointwise tag exists from 2.0; before it, an elementwise signature with an in-place twin
# (add/add_, sigmoid/sigmoid_) is the best structural stand-in.
_POINTWISE = has_tag("pointwise") | (tag_unused("pointwise") & inplace_twin() & elementwise_signature())

RULES: tuple[Rule, ...] = (
    # --- the post's top-level filters, in TAXONOMY.md's order --------------------------------------
    Rule(
        "conv",
        "convolution",
        name_regex("conv", "conv(?!ert)"),
        "1d/2d/3d, transposed, per backend, and their backwards; 'convert' is not a convolution",
    ),
    Rule("pool", "pooling", name_regex("pool", "pool")),
    Rule("batch_norm", "batch_norm", name_regex("batch norm", "batch_norm")),
    Rule(
        "private",
        "private",
        name_regex("private", "^_[^_]"),
        "a single leading underscore; _foreach_* ops land here and get the foreach facet",
    ),
    Rule("inplace", "inplace", name_regex("in-place", r"_$") & ~name_regex("dunder", "^__.*__$")),
    Rule("backward", "backward", name_regex("backward", "backward")),
    Rule(
        "weird.no_tensor",
        "weird",
        returns_no_tensor(),
        "the post filtered out ops whose schema returns no Tensor (size, is_*, item, q_scale...)",
    ),
    Rule(
        "weird.backend",
        "weird",
        name_regex("backend-specific", "cudnn|miopen|mkldnn|^native_|thnn|^slow_"),
    ),
    # --- core: the post's hand-sorted sub-buckets, from data ----------------------------------------
    Rule("core.alias", "alias", alias_known()),
    Rule(
        "core.alias.special",
        "alias",
        strips_to_existing("special_") & composite_kind(_IMPLICIT),
        "torch.special re-exports: special_X built from an existing X (special_expm1 → expm1)",
    ),
    Rule(
        "core.named", "named", dimname_args() | name_regex("named-tensor", "^(align_|refine_names$|rename$)")
    ),
    Rule("core.fbgemm", "fbgemm", name_prefix("fbgemm_")),
    Rule("core.rnn", "rnn", name_regex("rnn", r"(^|_)(lstm|gru|rnn)(_|$)")),
    Rule(
        "core.quantization",
        "quantization",
        name_regex("quantization", r"quantize|^q_|^int_repr$|qparams|^quantized_")
        | only_backends("Quantized*", "Quantized"),
    ),
    Rule("core.fft", "fft", python_module("fft") | name_regex("fft", r"^fft_|^i?stft$")),
    Rule(
        "core.linalg",
        "linalg",
        python_module("linalg")
        | name_prefix("linalg_")
        | name_regex(
            "linear-algebra",
            r"cholesky|^lu(_|$)|triangular_solve|symeig|^eig|geqrf|ormqr|orgqr|^inverse$|det$|^matrix_|^svd|^solve$"
            r"|^qr$|lstsq",
        ),
        "ops from before torch.linalg have no python_module; their vocabulary marks them",
    ),
    Rule(
        "core.sparse",
        "sparse",
        python_module("sparse")
        | name_regex(
            "sparse",
            r"sparse|^(smm|hspmm|sspaddmm|coalesce|indices|values|crow_indices|col_indices|ccol_indices|row_indices"
            r"|to_dense)$",
        )
        | only_backends("Sparse*", "Sparse"),
    ),
    Rule("core.complex", "complex", name_regex("complex", r"(^|_)(conj|complex|real|imag)(_|$)")),
    Rule(
        "core.scatter_gather",
        "scatter_gather",
        name_regex(
            "scatter/gather",
            r"scatter|gather|^index(_add|_copy|_fill|_put|_reduce|_select)?$|^take|^put$|^masked_select$|^one_hot$",
        ),
    ),
    Rule(
        "core.factory",
        "factory",
        no_tensor_input()
        | category_override("factory")
        | name_regex("factory", r"_like$|^new_")
        | (has_tag("nondeterministic_seeded") & own_kernels()),
        "inputs used only as metadata (*_like, new_*) or sampled from (bernoulli, poisson) still make a factory",
    ),
    Rule(
        "core.view",
        "view",
        view_alias()
        | has_tag("view_copy")
        | name_regex(
            "reshape/copy",
            r"cat$|stack$|split|chunk|^repeat|^tile$|^flip|^roll$|^rot90$|^pad$|^constant_pad_nd$|^diag|^tril$|^triu$|^clone$"
            r"|^contiguous$|^atleast_|^broadcast_|^meshgrid$|reshape|flatten|^squeeze|^unsqueeze|^expand"
            r"|^narrow|shuffle|^im2col$|^col2im$|^unbind$|^movedim$|^ravel$",
        ),
        "the post's 'view/reshape': views, and ops that copy a tensor into another shape",
    ),
    Rule(
        "core.matmul",
        "composite_matmul",
        name_regex("matmul", r"mm$|matmul|^(mv|addmv|einsum|bilinear|linear|tensordot|chain_matmul)$"),
    ),
    Rule(
        "core.reduction",
        "composite_reduction",
        has_tag("reduction")
        | has_arg("bool keepdim")
        | name_regex(
            "reduction",
            r"loss|cross_entropy|^kl_div$|similarity|norm|softmax|^cum|^log(cum)?sumexp|dist$"
            r"|^(dot|vdot|inner|trace|embedding_bag|diff|trapz|trapezoid|count_nonzero)$",
        ),
    ),
    Rule("core.pointwise.primitive", "primitive_pointwise", _POINTWISE & own_kernels()),
    Rule("core.pointwise.composite", "composite_pointwise", _POINTWISE),
    Rule("core.misc", "misc", always()),
)


RULES_BY_ID: Mapping[str, Rule] = {rule.id: rule for rule in RULES}


def describe_rules(rules: tuple[Rule, ...] = RULES) -> str:
    """The table as text, one rule per line: what ``opdrift explain`` and the docs can quote."""
    lines = []
    for rule in rules:
        what = rule.when.describe() or "everything else"
        lines.append(f"{rule.id:28} → {rule.bucket:20} if {what}")
    return "\n".join(lines)
