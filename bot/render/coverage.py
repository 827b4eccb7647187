"""Coverage results → text, Markdown or JSON for `opdrift coverage`.

Every name and schema comes from someone else's file, so Markdown output goes through
`bot.text.code` (inert code spans) and terminal output through `bot.text.terminal`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from bot.coverage.check import Coverage, CoverageChange, coverage_json
from bot.model import Snapshot
from bot.render.details import describe
from bot.schema.compare import Detail
from bot.snapshot import meta_json
from bot.text import code, md, terminal

Result = tuple[Coverage, CoverageChange | None]

# A terminal or a comment is for reading; the JSON (or -o FILE) keeps every name.
_LIST_CAP = 200
# Schema alerts take several lines each: three backends' worth came to 70,000 characters, over what a
# GitHub comment holds, so Markdown shows the first ones.
_ALERT_CAP = 50


def _detail_text(d: Detail) -> str:
    """The drift report's sentence for `d`, each upstream or backend value in backticks."""
    return describe(d, lambda s: f"`{terminal(s)}`")


def _detail_markdown(d: Detail) -> str:
    """The same sentence with each value an inert code span and the words around them ours."""
    return describe(d, code)


def _text(results: Sequence[Result], head: Snapshot) -> str:
    lines: list[str] = []
    for cov, change in results:
        total = len(cov.ops)
        gap = len(cov.uncovered)
        lines.append(f"{cov.backend_kind} {terminal(cov.backend_path)} against {terminal(head.meta.path)}")
        lines.append(f"  covered {total - gap} of {total} operators; {gap} need a kernel")
        for rule, count in cov.by_rule().items():
            lines.append(f"    {rule:<20} {count:>6}")
        lines.append("  by bucket (covered / needs a kernel):")
        for bucket, (c, n) in cov.by_bucket().items():
            lines.append(f"    {bucket:<20} {c:>6} {n:>6}")
        if change is not None:
            verb = (
                "grew"
                if change.gap_after > change.gap_before
                else "shrank"
                if change.gap_after < change.gap_before
                else "held"
            )
            lines.append(f"  since base: the gap {verb}, {change.gap_before} → {change.gap_after}")
            for name in change.new_uncovered[:_LIST_CAP]:
                lines.append(f"    new, needs a kernel: {terminal(name)}")
            lines.extend(_more_text(change.new_uncovered, "      "))
        if cov.alerts:
            lines.append(f"  schema alerts ({len(cov.alerts)}):")
            for a in cov.alerts:
                kind = "BC-breaking" if a.breaking else "compatible"
                lines.append(
                    f"    {terminal(a.path)}:{a.line}: you implement {terminal(a.name)}; its signature changed upstream ({kind})"
                )
                lines.append(f"      yours:    {terminal(a.backend_schema)}")
                lines.append(f"      upstream: {terminal(a.upstream_schema)}")
                for d in a.details:
                    lines.append(f"      - {_detail_text(d)}")
        if cov.stale:
            lines.append(
                f"  stale ({len(cov.stale)}): listed, but no such operator upstream{_stale_note(cov)}:"
            )
            for op in cov.stale[:_LIST_CAP]:
                lines.append(f"    {terminal(op.path)}:{op.line}: {terminal(op.name)}")
            lines.extend(_more_text(cov.stale, "    "))
        uncovered = cov.uncovered
        lines.append(f"  need a kernel ({len(uncovered)}):")
        for o in uncovered[:_LIST_CAP]:
            lines.append(f"    {terminal(o.name)}  [{o.bucket}]")
        lines.extend(_more_text(uncovered, "    "))
    return "\n".join(lines) + "\n"


def _stale_note(cov: Coverage) -> str:
    # torch-mlir's list comes from the TorchScript registry, which holds built-ins that are not ATen
    # native functions (aten::size, aten::add.t, aten::Int.Tensor): those show up here too.
    if cov.backend_kind != "torch-mlir":
        return ""
    return " (torch-mlir also lists TorchScript built-ins such as size, add.t or Int.Tensor, which are not native functions)"


def _more_text(items: Sequence[object], indent: str) -> list[str]:
    extra = len(items) - _LIST_CAP
    return [f"{indent}… and {extra} more (--format json lists all)"] if extra > 0 else []


def _more_markdown(items: Sequence[object], cap: int = _LIST_CAP) -> list[str]:
    extra = len(items) - cap
    return [f"- … and {extra} more (`--format json` lists all)"] if extra > 0 else []


def _markdown(results: Sequence[Result]) -> str:
    out: list[str] = []
    for cov, change in results:
        total = len(cov.ops)
        gap = len(cov.uncovered)
        out.append(f"## Coverage of {code(cov.backend_kind)} {code(cov.backend_path)}")
        out.append("")
        out.append(f"Covered **{total - gap}** of {total} operators; **{gap}** need a kernel.")
        if change is not None:
            out.append(
                f"Since base: the gap went {change.gap_before} → {change.gap_after}"
                f" ({len(change.new_uncovered)} new, {len(change.newly_covered)} closed)."
            )
        out.append("")
        if cov.alerts:
            out.append(f"### ❌ Schema alerts ({len(cov.alerts)})")
            out.append("")
            for a in cov.alerts[:_ALERT_CAP]:
                kind = "BC-breaking" if a.breaking else "compatible"
                out.append(
                    f"- you implement {code(a.name)} ({md(a.path)}:{a.line}); its signature changed upstream, {kind}:"
                )
                out.append(f"  - yours: {code(a.backend_schema)}")
                out.append(f"  - upstream: {code(a.upstream_schema)}")
                for d in a.details:
                    out.append(f"  - {_detail_markdown(d)}")
            out.extend(_more_markdown(cov.alerts, _ALERT_CAP))
            out.append("")
        if change is not None and change.new_uncovered:
            out.append(f"### ⚠️ New operators that need a kernel ({len(change.new_uncovered)})")
            out.append("")
            out.extend(f"- {code(name)}" for name in change.new_uncovered[:_LIST_CAP])
            out.extend(_more_markdown(change.new_uncovered))
            out.append("")
        out.append("| bucket | covered | needs a kernel |")
        out.append("|---|---:|---:|")
        for bucket, (c, n) in cov.by_bucket().items():
            out.append(f"| {code(bucket, in_table=True)} | {c} | {n} |")
        out.append("")
        if cov.stale:
            out.append(f"<details><summary>Stale entries ({len(cov.stale)})</summary>")
            out.append("")
            if _stale_note(cov):
                out.append(f"Listed, but not in native_functions.yaml{_stale_note(cov)}.")
                out.append("")
            out.extend(f"- {code(op.name)} ({md(op.path)}:{op.line})" for op in cov.stale[:_LIST_CAP])
            out.extend(_more_markdown(cov.stale))
            out.append("")
            out.append("</details>")
            out.append("")
        uncovered = cov.uncovered
        out.append(f"<details><summary>All operators that need a kernel ({len(uncovered)})</summary>")
        out.append("")
        out.extend(f"- {code(o.name)} ({o.bucket})" for o in uncovered[:_LIST_CAP])
        out.extend(_more_markdown(uncovered))
        out.append("")
        out.append("</details>")
        out.append("")
    return "\n".join(out)


def render(results: Sequence[Result], fmt: str, *, head: Snapshot) -> str:
    if fmt == "json":
        doc = {
            "source": meta_json(head.meta),
            "backends": [coverage_json(cov, change) for cov, change in results],
        }
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if fmt == "markdown":
        return _markdown(results)
    return _text(results, head)
