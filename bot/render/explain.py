"""`opdrift explain OP`: one operator's bucket, the rule that decided it (and why), and its facets.

`explain_view` gathers what is shown (`ExplainView`); `render_text` prints it. The text is built in
Python, not through a template, so that ``opdrift explain`` never loads Jinja2: it is a quick look-up
whose start-up the import would dominate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.dispatchkeys import CIA
from bot.model import Facets, OpRecord, Snapshot
from bot.operators.exported import export_fate
from bot.operators.kernels import DELEGATE, OWN, PROFILE_KEY, PROFILES, Profile, profile_kernel, table_of
from bot.taxonomy.classify import resolve_op
from bot.taxonomy.rules import RULES_BY_ID
from bot.taxonomy.scope import scope_of
from bot.text import one_line
from bot.work.engine import TRAINING_ONLY, Engine, profile_engines


@dataclass(frozen=True)
class ExplainedRecord:
    """One registered operator of the base: where it is, its schema and its facets in words."""

    name: str
    kind: str
    where: str  # the source file shown to the reader
    line: int
    schema: str
    facets: tuple[str, ...]


@dataclass(frozen=True)
class ExplainView:
    """What `opdrift explain` shows for one operator, as plain values for the renderer."""

    op: str  # as asked
    base: str
    total: int  # registered operators of the base
    bucket: str
    rule: str
    reason: str
    note: str | None  # why the rule exists, when the rule table says
    records: tuple[ExplainedRecord, ...]


def _derivative_text(facets: Facets, kind: str) -> str:
    """The derivative facet for a reader: "no" alone would suggest the op cannot be differentiated."""
    if facets.has_derivative is None:
        return "unknown (no derivatives.yaml in this source)"
    if facets.has_derivative:
        return "yes"
    if kind == "out":
        return "no (autograd does not differentiate out= calls)"
    if facets.composite == CIA:
        return "no (none needed: autograd differentiates its decomposition)"
    return "no"


# The engine's rules (`bot.work.engine`) in the words of the "without its own" line.
_RULE_WORDS = {
    "decomposes": "decomposes",
    "structured_delegate": "no work of its own: the out= kernel of {via} serves it",
    "autograd_key": "no work of its own: {via} at the Autograd key",
    TRAINING_ONLY: "only in training graphs",
}


def _served_text(rec: OpRecord, engine: Engine) -> str:
    """What a backend of the engine's profile that lists nothing must do for REC, with the reason."""
    v = engine.judge(rec)
    profile = engine.backend.profile
    if v.rule == "decomposes" and profile == "export":
        if CIA in table_of(rec.facets):
            return "decomposes"
        fate = export_fate(rec, engine.export)
        if fate == "evaluated":
            return "answered while export traces"
        return f"decomposed by {engine.export.table.origin}"
    if v.rule == "default_kernel":
        table = table_of(rec.facets)
        kernel = profile_kernel(table, profile)
        return f"{kernel} kernel" + (f" (calling {v.via})" if v.via else "")
    if v.rule == "backend_codegen":
        into = f" {v.via}" if v.via else ""
        return f"no work of its own: functionalized into its functional op{into}"
    if v.rule in _RULE_WORDS:
        return _RULE_WORDS[v.rule].format(via=v.via)
    if profile == "export":
        if rec.facets.decomposes_to:
            return "needs a lowering, or a decomposition exists (see decomposes_to)"
        return "needs a lowering"
    return "needs a kernel" + (
        f" (or {v.alternative}, which its default kernel calls)" if v.alternative else ""
    )


def _kernel_lines(rec: OpRecord, engines: Mapping[Profile, Engine]) -> tuple[str, ...]:
    """Which backend keys have a kernel and whose it is, then what a backend of each profile that
    registers nothing must do (the work engine's verdict; for export, at the snapshot's release with
    PyTorch's Core-ATen table)."""
    facets = rec.facets
    table = table_of(facets)
    keys = [(key, source) for key, source in sorted(table.items()) if source in (OWN, DELEGATE)]
    own = [key for key, source in keys if source == OWN]
    delegated = [key for key, source in keys if source == DELEGATE]
    parts = []
    if own:
        parts.append(f"{', '.join(own)} (own)")
    if delegated:
        parts.append(f"{', '.join(delegated)} (from {facets.structured_delegate})")
    served = []
    for profile in PROFILES:
        where = "an exported graph" if profile == "export" else PROFILE_KEY[profile]
        served.append(f"{profile} ({where}): {_served_text(rec, engines[profile])}")
    return (f"backend kernels: {'; '.join(parts) or '-'}", f"without its own: {'; '.join(served)}")


def _scope_line(rec: OpRecord) -> str:
    found = scope_of(rec)
    if found.generic:
        return "scope: every backend (no scope rule applies)"
    return f"scope: only some backends: {found.reason} ({found.rule})"


def _facet_lines(rec: OpRecord, engines: Mapping[Profile, Engine]) -> tuple[str, ...]:
    facets, kind = rec.facets, rec.kind

    def yes_no(value: bool | None) -> str:
        return "unknown" if value is None else ("yes" if value else "no")

    return (
        f"composite: {facets.composite or 'no (backend kernels only)'}",
        f"dispatch: {', '.join(facets.dispatch) or '-'}",
        *_kernel_lines(rec, engines),
        f"tags: {', '.join(facets.tags) or '-'}",
        f"python_module: {facets.python_module or '-'}",
        f"structured: {yes_no(facets.structured)}"
        + (f" (delegate {facets.structured_delegate})" if facets.structured_delegate else ""),
        f"alias_of: {facets.alias_of or '-'}",
        f"decomposes_to: {', '.join(facets.decomposes_to) or '-'}",
        f"has_ref (torch/_refs): {yes_no(facets.has_ref)}",
        f"has autograd formula: {_derivative_text(facets, kind)}",
        f"foreach: {yes_no(facets.foreach)}",
        f"autogen: {yes_no(facets.autogen)}",
        f"variants: {', '.join(facets.variants) or '-'}",
    )


def explain_view(snapshot: Snapshot, op: str) -> ExplainView:
    """What `explain` shows for `op` (a registered name or a base name); UnknownOperatorError if none."""
    base, records = resolve_op(snapshot, op)
    decision = snapshot.decisions[base]
    rule = RULES_BY_ID.get(decision.rule)
    where = snapshot.native_display or snapshot.meta.path
    engines = profile_engines(snapshot.operators, version=snapshot.meta.torch_version)
    return ExplainView(
        op=op,
        base=base,
        total=sum(1 for r in snapshot.operators.values() if r.base == base),
        bucket=decision.bucket,
        rule=decision.rule,
        reason=decision.reason,
        note=rule.note if rule is not None and rule.note else None,
        records=tuple(
            ExplainedRecord(
                rec.name,
                rec.kind,
                where,
                rec.line,
                rec.schema,
                (*_facet_lines(rec, engines), _scope_line(rec)),
            )
            for rec in records
        ),
    )


def render_text(view: ExplainView) -> str:
    total = view.total
    lines = [
        f"{view.op}  (base operator {view.base}: {total} registered operator{'s' if total != 1 else ''})",
        f"bucket:  {view.bucket}",
        f"rule:    {view.rule}",
        f"reason:  {view.reason}",
    ]
    if view.note is not None:
        lines.append(f"why the rule exists: {view.note}")
    lines.append("")
    for rec in view.records:
        lines.append(f"{rec.name}  [{rec.kind}]  {rec.where}:{rec.line}")
        lines.append(f"  {rec.schema}")
        lines.extend(f"  {line}" for line in rec.facets)
    # Every value comes from the source: a newline in one would start a line of its own, and in a CI
    # log a line such as "::error::" is a workflow command.
    return "\n".join(one_line(line) for line in lines).rstrip() + "\n"


def explain(snapshot: Snapshot, op: str) -> str:
    """An operator's bucket, the rule that decided it (with its reason) and its facets, as text."""
    return render_text(explain_view(snapshot, op))
