"""The types that flow between the stages: source files → operators → classified snapshot.

Every record is a frozen dataclass, so a stage can hand its result on without fear that a later
stage edits it. Collections inside records are tuples (or read-only mappings) for the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from opdrift.dispatchkeys import COMPOSITE_KEYS

# What a SOURCE argument named. "snapshot" sources skip parsing and classification.
SourceKind = Literal["checkout", "git", "wheel", "yaml", "snapshot"]

# The taxonomy's `kind` facet of a registered operator (docs/taxonomy.md, "Facets").
OpKind = Literal["functional", "inplace", "out", "other"]

# In-tree paths of the files the bot reads from a PyTorch checkout.
NATIVE_PATH = "aten/src/ATen/native/native_functions.yaml"
TAGS_PATH = "aten/src/ATen/native/tags.yaml"
DERIVATIVES_PATH = "tools/autograd/derivatives.yaml"
VERSION_PATH = "version.txt"  # the torch version a checkout builds; it selects the codegen's rules
# The files of PyTorch's Python side (and the JIT's alias map) that say how operators are built
# (`opdrift.signals`). Checkouts, DIR@REV and wheels carry the Python ones; only a checkout has the .cpp.
SIGNAL_PATHS = (
    "torch/_prims/__init__.py",
    "torch/_refs/__init__.py",
    "torch/_refs/nn/functional/__init__.py",
    "torch/_refs/special/__init__.py",
    "torch/_refs/linalg/__init__.py",
    "torch/_refs/fft.py",
    "torch/_decomp/decompositions.py",
    "torch/_torch_docs.py",
    "torch/overrides.py",
    "torch/csrc/jit/passes/normalize_ops.cpp",
)


# The files whose change changes the operator surface: a pull request that touches none of them asks
# nothing of a backend (`opdrift watch`).
OPERATOR_PATHS = (NATIVE_PATH, TAGS_PATH, DERIVATIVES_PATH)

PullState = Literal["open", "closed", "merged"]


@dataclass(frozen=True)
class PullRef:
    """One upstream pull request as the pull-request listing describes it (`opdrift watch`): read by
    opdrift.publish from GitHub, judged by opdrift.app. Every text field is untrusted (a fork's author wrote it)."""

    number: int
    title: str
    author: str  # login
    draft: bool
    state: PullState
    updated_at: str  # ISO 8601, as GitHub gives it
    html_url: str
    head_sha: str
    base_sha: str  # the base branch's commit GitHub recorded for the PR (not the merge base)


@dataclass(frozen=True)
class SourceMeta:
    """Where a set of operator definitions came from; stored in every snapshot."""

    kind: SourceKind
    path: str  # as the user gave it (a directory, DIR@REV, a wheel, a yaml or a snapshot file)
    revision: str | None = None  # REV of DIR@REV, as given
    commit: str | None = None  # full sha, when the source is a git revision or a checkout with .git
    date: str | None = None  # committer date, ISO 8601, when known
    torch_version: str | None = None  # e.g. "2.14.1": a wheel's, a release tag's, else version.txt's


@dataclass(frozen=True)
class TextFile:
    """One file's text plus the name errors should use for it (``v2.14.1:aten/.../native_functions.yaml``)."""

    display: str
    text: str


@dataclass(frozen=True)
class SourceFiles:
    """The raw files of one SOURCE, before any parsing. `opdrift.sources` is the only producer."""

    meta: SourceMeta
    native_functions: TextFile | None = None
    tags: TextFile | None = None
    derivatives: TextFile | None = None
    # Wheels older than 1.12 ship no yaml; their RegistrationDeclarations.h lists every operator.
    registration_declarations: TextFile | None = None
    # PyTorch's Python side (SIGNAL_PATHS): in-tree path → its text, for the sources that have it
    python_side: tuple[tuple[str, TextFile], ...] = ()


@dataclass(frozen=True)
class RawEntry:
    """One ``- func:`` item of native_functions.yaml exactly as YAML would load it.

    `data` is the mapping PyYAML builds for the item; `line` is the 1-based line of ``- func:``;
    `comments` are the comment lines directly above it (without the leading ``#``), oldest first.
    """

    data: Mapping[str, object]
    line: int
    comments: tuple[str, ...] = ()


@dataclass(frozen=True)
class Operator:
    """A registered operator: an entry, or an operator that an entry's ``autogen:`` generates."""

    name: str  # "add.Tensor", or the bare base name for the default overload ("relu")
    base: str  # "add"
    overload: str  # "Tensor", or "" for the default overload
    schema: str  # the function schema, as torchgen prints it
    kind: OpKind
    line: int  # line of the entry in native_functions.yaml (of the generating entry, for autogen)
    comments: tuple[str, ...] = ()
    # dispatch key → kernel name, sorted by key; empty for CompositeImplicitAutograd-by-omission.
    dispatch: tuple[tuple[str, str], ...] = ()
    # the composite kind a dense backend without a kernel of its own runs (`opdrift.operators.kernels`):
    # CompositeImplicitAutograd, CompositeExplicitAutograd(NonFunctional), or None
    composite: str | None = None
    structured: bool = False
    structured_delegate: str | None = None
    tags: tuple[str, ...] = ()
    python_module: str | None = None
    variants: tuple[str, ...] = ("function",)
    category_override: str | None = None
    autogen_from: str | None = None  # the entry whose autogen: made this operator
    # keys of the entry that the bot does not model, kept verbatim (rendered as text) and warned about
    unknown_keys: tuple[tuple[str, str], ...] = ()
    # dispatch key → where its kernel comes from (`opdrift.operators.kernels.SOURCES`), sorted by key,
    # alias keys included (CompositeImplicitAutograd for an entry without a dispatch table)
    kernels: tuple[tuple[str, str], ...] = ()
    # use_const_ref_for_mutable_tensors: its kernels take (and return) mutable tensors as const refs
    const_ref_mutable: bool = False

    @property
    def backends(self) -> tuple[str, ...]:
        """Dispatch keys that name a backend kernel (not a composite kind)."""
        return tuple(k for k, _ in self.dispatch if k not in COMPOSITE_KEYS)


@dataclass(frozen=True)
class OpSignal:
    """What PyTorch's Python side says about how one base operator is built (facts, never a bucket)."""

    # the operators (ATen base names, or ``prims.X``) its reference or decomposition is written in
    # terms of, sorted; empty when the Python side has none
    decomposes_to: tuple[str, ...] = ()
    where: str = ""  # the in-tree file of that reference or decomposition
    has_ref: bool = False  # torch/_refs has a reference implementation
    # its reference or decomposition is built with an elementwise wrapper (a pointwise structure)
    pointwise_ref: bool = False
    prim: bool = False  # torch/_prims defines a primitive of this very name


@dataclass(frozen=True)
class AliasSignal:
    """One name PyTorch calls an alias of another: the target base name and the files that say so."""

    target: str
    where: tuple[str, ...]


@dataclass(frozen=True)
class Signals:
    """The Python side's facts about one release (`opdrift.signals`), from the source or the shipped table."""

    origin: str  # where the facts come from, for reasons: "torch-2.14.1.whl", "the shipped table (2.14.1)"
    ops: Mapping[str, OpSignal] = field(default_factory=dict)  # base name → its facts
    aliases: Mapping[str, AliasSignal] = field(default_factory=dict)  # alias base name → original
    prims_file: str = "torch/_prims/__init__.py"


@dataclass(frozen=True)
class OperatorSet:
    """Everything the parse stage learned from one SOURCE."""

    meta: SourceMeta
    operators: tuple[Operator, ...]  # sorted by name
    entries: int  # number of ``- func:`` entries (the post's first figure)
    native_display: str = ""  # file name errors and links use for native_functions.yaml
    derivatives: frozenset[str] | None = None  # names with an autograd formula; None if unknown
    aliases: Mapping[str, str] = field(default_factory=dict)  # alias base name → original base name
    warnings: tuple[str, ...] = ()  # e.g. unknown keys, one line each with file:line
    signals: Signals | None = None  # the Python side's facts (`opdrift.signals`); None when none are known


@dataclass(frozen=True)
class Facets:
    """What a backend needs to know about one registered operator (docs/taxonomy.md, "Facets")."""

    composite: str | None = None  # what a dense backend without a kernel runs (Operator.composite)
    dispatch: tuple[str, ...] = ()  # every dispatch key, sorted, composite kinds included
    tags: tuple[str, ...] = ()
    python_module: str | None = None
    structured: bool = False
    structured_delegate: str | None = None
    alias_of: str | None = None
    has_derivative: bool | None = None  # None when derivatives.yaml was not available
    foreach: bool = False
    autogen: bool = False
    variants: tuple[str, ...] = ()
    kernels: tuple[tuple[str, str], ...] = ()  # Operator.kernels: dispatch key → source of its kernel
    # Operator.const_ref_mutable; None when unknown (read from a version-1 snapshot, which lacks it)
    const_ref_mutable: bool | None = None
    # the Python side's decomposition of the base operator (OpSignal), and whether torch/_refs has a
    # reference; None when no facts were known (a snapshot written before they were recorded)
    decomposes_to: tuple[str, ...] = ()
    has_ref: bool | None = None


@dataclass(frozen=True)
class Decision:
    """Why a base operator sits in its bucket: the rule's id and a sentence a maintainer can check."""

    bucket: str
    rule: str
    reason: str


@dataclass(frozen=True)
class OpRecord:
    """One registered operator as a snapshot stores it."""

    name: str
    base: str
    overload: str
    schema: str
    bucket: str
    rule: str
    kind: OpKind
    facets: Facets
    line: int


@dataclass(frozen=True)
class Snapshot:
    """A classified operator surface: the unit that is stored, diffed and reported."""

    meta: SourceMeta
    entries: int
    operators: Mapping[str, OpRecord]  # name → record
    decisions: Mapping[str, Decision]  # base name → decision
    native_display: str = ""
    # the parse's warnings, "native_display:line: message" (OperatorSet.warnings), kept for reports
    warnings: tuple[str, ...] = ()
