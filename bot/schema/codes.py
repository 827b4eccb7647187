"""The detail codes: the one place a kind of detail is defined, with its severity and its wording.

A `Detail` is one classified fact about a change (an argument retyped, a tag added). Like griffe's
`BreakageKind`, each kind is one member of `Code`, which carries its severity and the sentence every
report words it with, so a code without wording cannot exist: a `Detail` is made by calling its code
(``Code.ARGUMENT_RENAMED(subject, before, after)``) and refuses an id the table lacks. The ids are the
stable strings the JSON reports and fingerprints carry. `opdrift.render.details` words them,
`opdrift.drift.changes` knows which are in-tree kernels only, the catalogue which it lists apart; adding
a code is a member here (`tests/unit/render/test_details.py` checks every member is worded and every emitted code
is a member).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, unique
from typing import Literal

Severity = Literal["breaking", "compatible", "info"]


@dataclass(frozen=True)
class Detail:
    """One classified fact about a change: a stable `code`, its severity, and before/after values.

    `subject` names what the fact is about (an argument, a dispatch key, a tag); `before`/`after` are
    the values as text, "" when absent. Renderers build their sentence from these fields, so every
    source-derived piece can be escaped on its own.
    """

    code: str
    severity: Severity
    subject: str = ""
    before: str = ""
    after: str = ""

    def __post_init__(self) -> None:
        if self.code not in BY_ID:
            raise ValueError(f"unknown detail code {self.code!r}: add it to opdrift.schema.codes.Code")

    @property
    def kind(self) -> Code:
        return BY_ID[self.code]

    def as_json(self) -> dict[str, str]:
        """The detail as every JSON output writes it (the drift report's ``changes``, coverage's alerts'
        ``details``, the site's export): its code, severity, subject and both values, in that order."""
        return {
            "code": self.code,
            "severity": self.severity,
            "subject": self.subject,
            "before": self.before,
            "after": self.after,
        }


@dataclass(frozen=True)
class _Row:
    """A code's value: its severity, its wording (a `str.format` template over the quoted
    ``{subject}``, ``{before}`` and ``{after}``), the wordings for an empty side where empty means
    something else than "none", whether it is news for in-tree kernels only (noise for every other
    backend), and whether the catalogue lists it apart (its tags and kernels columns)."""

    severity: Severity
    wording: str
    if_no_before: str | None = None
    if_no_after: str | None = None
    kernels_only: bool = False
    apart: bool = False


@unique
class Code(Enum):
    """Every kind of detail, with its `_Row`."""

    value: _Row

    @property
    def severity(self) -> Severity:
        return self.value.severity

    @property
    def row(self) -> _Row:
        return self.value

    @property
    def id(self) -> str:
        """The stable string the reports carry: ``argument_renamed``."""
        return self.name.lower()

    def __call__(
        self, subject: str = "", before: str = "", after: str = "", *, severity: Severity | None = None
    ) -> Detail:
        """A detail of this kind; `severity` only where the member's comment says it varies."""
        return Detail(self.id, severity or self.severity, subject, before, after)

    # For callers (`opdrift.schema.compare`; PyTorch's FunctionSchema::isBackwardCompatibleWith)
    ARGUMENT_REMOVED = _Row("breaking", "argument {subject} removed (was {before})")
    ARGUMENT_RENAMED = _Row("breaking", "argument {before} renamed to {after}")
    ARGUMENT_RETYPED = _Row("breaking", "argument {subject} retyped {before} → {after}")
    ARGUMENT_WIDENED = _Row("compatible", "argument {subject} widened {before} → {after}")
    ALIAS_ANNOTATION_CHANGED = _Row("breaking", "alias annotation of {subject} changed {before} → {after}")
    DEFAULT_REMOVED = _Row("breaking", "default of {subject} removed (was {before})")
    DEFAULT_ADDED = _Row("compatible", "default {after} added to {subject}")
    DEFAULT_CHANGED = _Row("breaking", "default of {subject} changed {before} → {after}")
    DEFAULT_RESPELLED = _Row("info", "default of {subject} respelled {before} → {after} (the same value)")
    ARGUMENT_ADDED = _Row("breaking", "new argument {subject}: {after}")
    ARGUMENT_ADDED_WITH_DEFAULT = _Row("compatible", "new argument {after}")
    ARGUMENT_ADDED_REQUIRED = _Row("breaking", "new required argument {after}")
    ARGUMENT_INSERTED = _Row("breaking", "argument {after} inserted before existing ones")
    OUT_ARGUMENT_ADDED = _Row("breaking", "new out argument {after}")
    KWARG_ONLY_MADE_POSITIONAL = _Row("compatible", "keyword-only argument {subject} made positional")
    POSITIONAL_MADE_KWARG_ONLY = _Row("breaking", "positional argument {subject} made keyword-only")
    ARGUMENT_MOVED = _Row("breaking", "argument {subject} moved from {before} to {after}")
    ARGUMENTS_REORDERED = _Row("breaking", "arguments reordered: {before} → {after}")
    RETURN_CHANGED = _Row("breaking", "return changed {before} → {after}")
    RETURN_ALIAS_ANNOTATION_CHANGED = _Row("breaking", "return alias annotation changed {before} → {after}")
    # The schema as a whole: breaking when a side does not parse (erring on the side of telling), `info`
    # when only its printing differs (`opdrift.drift.changes`)
    SCHEMA_CHANGED = _Row("breaking", "schema changed {before} → {after}")
    # How the operator gets its kernels, and its other facts (`opdrift.drift.changes`)
    STOPPED_DECOMPOSING = _Row(
        "info",
        "no longer decomposes: {before} → {after}",
        if_no_after="no longer decomposes: {before} dropped, it has kernels of its own",
    )
    NOW_DECOMPOSES = _Row(
        "info",
        "now decomposes: {before} → {after}",
        if_no_before="now decomposes: had kernels of its own, now {after}",
    )
    COMPOSITE_CHANGED = _Row("info", "composite kind {before} → {after}")
    KERNEL_ADDED = _Row("info", "kernel added for {subject}", kernels_only=True, apart=True)
    KERNEL_REMOVED = _Row("info", "kernel removed for {subject}", kernels_only=True, apart=True)
    STRUCTURED_CHANGED = _Row("info", "structured {before} → {after}")
    CONST_REF_CHANGED = _Row("info", "use_const_ref_for_mutable_tensors {before} → {after}")
    TENSOR_LISTS_CHANGED = _Row("info", "the codegen takes its tensor lists as {after} (was {before})")
    STRUCTURED_DELEGATE_CHANGED = _Row("info", "structured_delegate {before} → {after}")
    TAG_ADDED = _Row("info", "tag {subject} added", apart=True)
    TAG_REMOVED = _Row("info", "tag {subject} removed", apart=True)
    BUCKET_CHANGED = _Row("info", "bucket {before} → {after}")
    VARIANT_REMOVED = _Row("breaking", "variant {subject} removed")
    VARIANT_ADDED = _Row("compatible", "variant {subject} added")
    PYTHON_MODULE_CHANGED = _Row("breaking", "python_module {before} → {after}")
    DERIVATIVE_ADDED = _Row("info", "autograd formula added")
    DERIVATIVE_REMOVED = _Row("info", "autograd formula removed")
    ALIAS_OF_CHANGED = _Row("info", "alias of {before} → {after}")


BY_ID: dict[str, Code] = {c.id: c for c in Code}
