"""One sentence per schema `Detail` ("argument self retyped Tensor → Tensor?", the wording its code
carries in `bot.schema.codes`), and one for what a change did to the kernels' C++ signature, for every
report.

The drift report and the coverage report both describe what changed in a signature with these words;
each passes its own `quote` (a Markdown code span, or backticks around terminal-safe text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.schema.codes import Detail
from bot.schema.kernel import KernelChange


def describe(d: Detail, quote: Callable[[str], str]) -> str:
    """One sentence for a detail; `quote` renders each source-derived value (code span, or plain)."""
    row = d.kind.row  # every code has its wording: `bot.schema.codes.Code`
    template = row.wording
    if not d.after and row.if_no_after is not None:
        template = row.if_no_after
    if not d.before and row.if_no_before is not None:
        template = row.if_no_before
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
        phrases.append(f"{which}: {signature_parts(parts, quote)}")
    return "; ".join(phrases)


def signature_parts(parts: Sequence[tuple[str, str, str]], quote: Callable[[str], str]) -> str:
    """What changed in one form's C++ signature (`KernelChange.differences`), e.g. ``parameter 3
    `int64_t dim` → `bool fast```: for a report that has judged the form already (`opdrift watch`)."""
    return ", ".join(_signature_part(*part, quote) for part in parts)


def _signature_part(where: str, before: str, after: str, quote: Callable[[str], str]) -> str:
    """``parameter 3 `a` → `b```, or ``parameters added `x, y``` when one side is empty."""
    if not before:
        return f"{where} {quote(after)}"
    if not after:
        return f"{where} {quote(before)}"
    return f"{where} {quote(before)} → {quote(after)}"
