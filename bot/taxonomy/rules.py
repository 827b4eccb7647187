"""The taxonomy's rule table: read it top to bottom, the first rule that matches a base operator wins.

Each `Rule` is data: an id (recorded in every snapshot and shown by ``opdrift explain``), the bucket it
assigns (one of `opdrift.taxonomy.buckets`), and a predicate built from the named matchers of
`opdrift.taxonomy.matchers` combined with ``&``, ``|`` and ``~``. What a rule sees is a `BaseOp`
(`opdrift.taxonomy.baseop`): one base operator with all its registered overloads.

The order and the vocabulary come from docs/taxonomy.md (top-level buckets, strictly in its order) and
from the post it cites (the core sub-buckets, which the post sorted by hand). The core rules are
ordered from the most specific signal to the most general one: an announced alias beats
everything; domain vocabularies (named, fbgemm, rnn, quantization, fft, linalg, sparse, complex,
scatter/gather) come before the structural signals (views, factories, matmul, reductions,
pointwise) because a domain op is often also a view or a reduction, and the domain says more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from opdrift.dispatchkeys import CIA
from opdrift.taxonomy.matchers import (
    AliasKnown,
    Always,
    BuiltFromOthers,
    CategoryOverride,
    CompositeKind,
    DimnameArgs,
    ElementwiseSignature,
    HasArg,
    HasTag,
    InplaceTwin,
    Matcher,
    NamePrefix,
    NameRegex,
    NoDecomposition,
    NoTensorInput,
    OnlyBackends,
    OwnKernels,
    PointwiseRef,
    Primitive,
    PythonModule,
    ReturnsNoTensor,
    StripsToExisting,
    TagUnused,
    ViewAlias,
)


@dataclass(frozen=True)
class Rule:
    """Base operators that satisfy `when` go to `bucket`; `id` is what snapshots and explain show."""

    id: str
    bucket: str
    when: Matcher
    note: str = ""  # why the rule is there, when its predicate does not say it


# Pointwise: the tag (from 2.0), or the structure of its reference on the Python side; before the
# tag, an elementwise signature with an in-place twin (add/add_, sigmoid/sigmoid_) stands in too.
_POINTWISE = (
    HasTag("pointwise") | PointwiseRef() | (TagUnused("pointwise") & InplaceTwin() & ElementwiseSignature())
)

RULES: tuple[Rule, ...] = (
    # --- the post's top-level filters, in docs/taxonomy.md's order --------------------------------------
    Rule(
        "conv",
        "convolution",
        NameRegex("conv", "conv(?!ert)"),
        "1d/2d/3d, transposed, per backend, and their backwards; 'convert' is not a convolution",
    ),
    Rule("pool", "pooling", NameRegex("pool", "pool")),
    Rule("batch_norm", "batch_norm", NameRegex("batch norm", "batch_norm")),
    Rule(
        "private",
        "private",
        NameRegex("private", "^_[^_]"),
        "a single leading underscore; _foreach_* ops land here and get the foreach facet",
    ),
    Rule("inplace", "inplace", NameRegex("in-place", r"_$") & ~NameRegex("dunder", "^__.*__$")),
    Rule("backward", "backward", NameRegex("backward", "backward")),
    Rule(
        "weird.no_tensor",
        "weird",
        ReturnsNoTensor(),
        "the post filtered out ops whose schema returns no Tensor (size, is_*, item, q_scale...)",
    ),
    Rule("weird.backend", "weird", NameRegex("backend-specific", "cudnn|miopen|mkldnn|thnn|^slow_")),
    Rule(
        "weird.native",
        "weird",
        NameRegex("native", "native", why="name contains `native`: the post's backend-specific rule"),
        "the post's script tested the word in the name; native_layer_norm is not backend-specific",
    ),
    # --- core: the post's hand-sorted sub-buckets, from data ----------------------------------------
    Rule("core.alias", "alias", AliasKnown()),
    Rule(
        "core.alias.special",
        "alias",
        StripsToExisting("special_") & CompositeKind(CIA),
        "torch.special re-exports: special_X built from an existing X (special_expm1 → expm1)",
    ),
    Rule("core.named", "named", DimnameArgs() | NameRegex("named-tensor", "^(align_|refine_names$|rename$)")),
    Rule("core.fbgemm", "fbgemm", NamePrefix("fbgemm_")),
    Rule("core.rnn", "rnn", NameRegex("rnn", r"(^|_)(lstm|gru|rnn)(_|$)")),
    Rule(
        "core.quantization",
        "quantization",
        NameRegex("quantization", r"quantize|^q_|^int_repr$|qparams|^quantized_")
        | OnlyBackends("Quantized*", "Quantized"),
    ),
    Rule("core.fft", "fft", PythonModule("fft") | NameRegex("fft", r"^fft_|^i?stft$")),
    Rule(
        "core.linalg",
        "linalg",
        PythonModule("linalg")
        | NamePrefix("linalg_")
        | NameRegex(
            "linear-algebra",
            r"cholesky|^lu(_|$)|triangular_solve|symeig|^eig|geqrf|ormqr|orgqr|^inverse$|det$|^matrix_|^svd|^solve$"
            r"|^qr$|lstsq",
        ),
        "ops from before torch.linalg have no python_module; their vocabulary marks them",
    ),
    Rule(
        "core.sparse",
        "sparse",
        PythonModule("sparse")
        | NameRegex(
            "sparse",
            r"sparse|^(smm|hspmm|sspaddmm|coalesce|indices|values|crow_indices|col_indices|ccol_indices|row_indices"
            r"|to_dense)$",
        )
        | OnlyBackends("Sparse*", "Sparse"),
    ),
    Rule("core.complex", "complex", NameRegex("complex", r"(^|_)(conj|complex|real|imag)(_|$)")),
    Rule(
        "core.scatter_gather",
        "scatter_gather",
        NameRegex(
            "scatter/gather",
            r"scatter|gather|^index(_add|_copy|_fill|_put|_reduce|_select)?$|^take|^put$|^masked_select$|^one_hot$",
        ),
    ),
    Rule(
        "core.factory",
        "factory",
        NoTensorInput()
        | CategoryOverride("factory")
        | NameRegex("factory", r"_like$|^new_")
        | (HasTag("nondeterministic_seeded") & OwnKernels()),
        "inputs used only as metadata (*_like, new_*) or sampled from (bernoulli, poisson) still make a factory",
    ),
    Rule(
        "core.view",
        "view",
        ViewAlias()
        | HasTag("view_copy")
        | NameRegex(
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
        NameRegex("matmul", r"mm$|matmul|^(mv|addmv|einsum|bilinear|linear|tensordot|chain_matmul)$"),
    ),
    Rule(
        "core.reduction",
        "composite_reduction",
        HasTag("reduction")
        | HasArg("bool keepdim")
        | NameRegex(
            "reduction",
            r"loss|cross_entropy|^kl_div$|similarity|norm|softmax|^cum|^log(cum)?sumexp|dist$"
            r"|^(dot|vdot|inner|trace|embedding_bag|diff|trapz|trapezoid|count_nonzero)$",
        ),
    ),
    # The post's distinction: composite pointwise is "implementable in terms of primitive pointwise ops",
    # so PyTorch's own decompositions decide, and having kernels does not make an op primitive.
    Rule(
        "core.pointwise.primitive",
        "primitive_pointwise",
        _POINTWISE & Primitive(),
        "PyTorch's own primitives (torch/_prims) are the post's primitive pointwise ops",
    ),
    Rule("core.pointwise.composite", "composite_pointwise", _POINTWISE & BuiltFromOthers()),
    Rule(
        "core.pointwise.kernels",
        "primitive_pointwise",
        _POINTWISE & OwnKernels() & NoDecomposition(),
        "only its own kernels, and no decomposition anywhere",
    ),
    Rule("core.misc", "misc", Always()),
)


RULES_BY_ID: Mapping[str, Rule] = {rule.id: rule for rule in RULES}


def describe_rules(rules: tuple[Rule, ...] = RULES) -> str:
    """The table as text, one rule per line: what ``opdrift explain`` and the docs can quote."""
    lines = []
    for rule in rules:
        what = rule.when.describe() or "everything else"
        lines.append(f"{rule.id:28} → {rule.bucket:20} if {what}")
    return "\n".join(lines)
