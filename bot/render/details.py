"""One sentence per schema `Detail` ("argument self retyped Tensor → Tensor?", the wording its code
carries in `opdrift.schema.codes`), and one for what a change did to the kernels' C++ signature, for every
report.

The drift report and the coverage report both describe what changed in a signature with these words;
each passes its own `quote` (a Markdown code span, or backticks around terminal-safe text). A backend's
broken kernel (`opdrift.render.context.BrokenKernel`) is said one way in every report that names it
(the weekly issue, the PR comment, the watch): `broken_change` and `broken_declarations`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opdrift.render.context import BrokenKernel
from opdrift.schema.codes import Detail
from opdrift.schema.kernel import KernelChange, ParamChange
from opdrift.text import code_block


def describe(d: Detail, quote: Callable[[str], str]) -> str:
    """One sentence for a detail; `quote` renders each source-derived value (code span, or plain)."""
    row = d.kind.row  # every code has its wording: `opdrift.schema.codes.Code`
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
    """What changed in the kernel's C++ signature, once per set of forms it changed alike, each
    parameter by its name: ``SymInt and int64_t kernels: `bool fast` added after `keepdim```."""
    by_parts: dict[tuple[ParamChange, ...], list[str]] = {}
    for k in changes:
        by_parts.setdefault(k.named(), []).append(k.form)
    if not by_parts:
        return "a schema does not parse, so the signature cannot be compared"
    phrases = []
    for parts, forms in by_parts.items():
        which = " and ".join(forms) + " kernels"
        phrases.append(f"{which}: {named_parts(parts, quote)}")
    return "; ".join(phrases)


def named_parts(parts: Sequence[ParamChange], quote: Callable[[str], str]) -> str:
    """What changed in one form's C++ signature, each parameter by its name
    (`opdrift.schema.kernel.named_changes`): ``return `a` → `b`, `bool fast` added after `keepdim```."""
    return ", ".join(_named_part(p, quote) for p in parts) or "only parameter names changed"


def _named_part(p: ParamChange, quote: Callable[[str], str]) -> str:
    if p.kind == "return":
        return f"return {quote(p.before)} → {quote(p.after)}"
    if p.kind == "added":
        return f"{quote(p.after)} added " + (f"after {quote(p.anchor)}" if p.anchor else "first")
    if p.kind == "removed":
        return f"{quote(p.before)} removed"
    if p.kind == "retyped":
        return f"{quote(p.name)} retyped {quote(p.before)} → {quote(p.after)}"
    return f"{quote(p.before)} became {quote(p.after)}"


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


def broken_change(b: BrokenKernel, quote: Callable[[str], str]) -> str:
    """What changed in a backend's broken kernel B, as every report says it: each parameter by its
    name (`named_parts`; a watch state written before the declarations were kept: `signature_parts`),
    then the form it is judged in. A backend whose form is not known is told so, and in which form B
    was judged and is shown (`opdrift.schema.kernel.FORM_IF_UNKNOWN`): never one form's declarations
    as if they were its own."""
    if b.before is not None and b.after is not None:
        change = named_parts(b.before.named_against(b.after), quote)
    else:
        change = signature_parts(b.parts, quote) if b.parts else "its schema no longer parses"
    if b.form:
        return f"{change} (your form: {quote(b.form)})"
    if b.before is not None and b.after is not None:
        return f"{change} (your form is not known: judged, and shown, as written with {quote(b.before.form)})"
    return change


def broken_declarations(b: BrokenKernel, indent: int = 4) -> str:
    """B's C++ declarations before and after, in the form `broken_change` names, as a ``diff`` block
    indented by INDENT (under a list item); "" when B has none."""
    if b.before is None or b.after is None:
        return ""
    lines = (f"- {b.before.declaration(b.op)}", f"+ {b.after.declaration(b.op)}")
    return code_block(lines, "diff", indent=indent)
