"""One sentence per schema `Detail` ("argument self retyped Tensor → Tensor?"), and one for what a
change did to the kernels' C++ signature, for every report.

The drift report and the coverage report both describe what changed in a signature with these words;
each passes its own `quote` (a Markdown code span, or backticks around terminal-safe text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.schema.compare import Detail
from bot.schema.kernel import KernelChange

_DETAIL_TEXT: dict[str, str] = {
    "argument_removed": "argument {subject} removed (was {before})",
    "argument_renamed": "argument {before} renamed to {after}",
    "argument_retyped": "argument {subject} retyped {before} → {after}",
    "argument_widened": "argument {subject} widened {before} → {after}",
    "alias_annotation_changed": "alias annotation of {subject} changed {before} → {after}",
    "default_removed": "default of {subject} removed (was {before})",
    "default_added": "default {after} added to {subject}",
    "default_changed": "default of {subject} changed {before} → {after}",
    "default_respelled": "default of {subject} respelled {before} → {after} (the same value)",
    "argument_added": "new argument {subject}: {after}",
    "argument_added_with_default": "new argument {after}",
    "argument_added_required": "new required argument {after}",
    "argument_inserted": "argument {after} inserted before existing ones",
    "out_argument_added": "new out argument {after}",
    "kwarg_only_made_positional": "keyword-only argument {subject} made positional",
    "positional_made_kwarg_only": "positional argument {subject} made keyword-only",
    "argument_moved": "argument {subject} moved from {before} to {after}",
    "arguments_reordered": "arguments reordered: {before} → {after}",
    "return_changed": "return changed {before} → {after}",
    "return_alias_annotation_changed": "return alias annotation changed {before} → {after}",
    "schema_changed": "schema changed {before} → {after}",
    "stopped_decomposing": "no longer decomposes: {before} → {after}",
    "now_decomposes": "now decomposes: {before} → {after}",
    "composite_changed": "composite kind {before} → {after}",
    "kernel_added": "kernel added for {subject}",
    "kernel_removed": "kernel removed for {subject}",
    "structured_changed": "structured {before} → {after}",
    "const_ref_changed": "use_const_ref_for_mutable_tensors {before} → {after}",
    "tensor_lists_changed": "the codegen takes its tensor lists as {after} (was {before})",
    "structured_delegate_changed": "structured_delegate {before} → {after}",
    "tag_added": "tag {subject} added",
    "tag_removed": "tag {subject} removed",
    "bucket_changed": "bucket {before} → {after}",
    "variant_removed": "variant {subject} removed",
    "variant_added": "variant {subject} added",
    "python_module_changed": "python_module {before} → {after}",
    "derivative_added": "autograd formula added",
    "derivative_removed": "autograd formula removed",
    "alias_of_changed": "alias of {before} → {after}",
}

# For the decomposition details an empty side means "kernels of its own", not "nothing".
_DETAIL_TEXT_EMPTY = {
    ("stopped_decomposing", "after"): "no longer decomposes: {before} dropped, it has kernels of its own",
    ("now_decomposes", "before"): "now decomposes: had kernels of its own, now {after}",
}


def describe(d: Detail, quote: Callable[[str], str]) -> str:
    """One sentence for a detail; `quote` renders each source-derived value (code span, or plain)."""
    template = _DETAIL_TEXT.get(d.code, d.code.replace("_", " ") + " {before} → {after}")
    if not d.after:
        template = _DETAIL_TEXT_EMPTY.get((d.code, "after"), template)
    if not d.before:
        template = _DETAIL_TEXT_EMPTY.get((d.code, "before"), template)
    return template.format(
        subject=quote(d.subject) if d.subject else "",
        before=quote(d.before) if d.before else "none",
        after=quote(d.after) if d.after else "none",
    )


def describe_kernel(changes: Sequence[KernelChange], quote: Callable[[str], str]) -> str:
    """What changed in the kernel's C++ signature, once per set of forms it changed alike:
    ``SymInt and int64_t kernels: parameter 3 `a` → `b```."""
    by_parts: dict[tuple[tuple[str, str, str], ...], list[str]] = {}
    for k in changes:
        by_parts.setdefault(k.differences(), []).append(k.form)
    if not by_parts:
        return "a schema does not parse, so the signature cannot be compared"
    phrases = []
    for parts, forms in by_parts.items():
        which = " and ".join(forms) + " kernels"
        phrases.append(f"{which}: {', '.join(_signature_part(*part, quote) for part in parts)}")
    return "; ".join(phrases)


def _signature_part(where: str, before: str, after: str, quote: Callable[[str], str]) -> str:
    """``parameter 3 `a` → `b```, or ``parameters added `x, y``` when one side is empty."""
    if not before:
        return f"{where} {quote(after)}"
    if not after:
        return f"{where} {quote(before)}"
    return f"{where} {quote(before)} → {quote(after)}"
