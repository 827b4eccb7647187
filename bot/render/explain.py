"""`opdrift explain OP`: one operator's bucket, the rule that decided it (and why), and its facets;
with ``--backend``, what each backend must do for it: coverage's verdict, asked of the same engine
(`opdrift.coverage.check.backend_engine`: the backend's list, its Autograd-key registrations, its
decomposition table).

`explain_view` gathers what is shown (`ExplainView`); `render_text`, `render_markdown` and `render_json`
print it. The text is built in Python, not through a template, so that ``opdrift explain`` never loads
Jinja2: it is a quick look-up whose start-up the import would dominate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from opdrift.coverage.check import backend_engine, fallback_of
from opdrift.coverage.kinds import EDGE_KINDS, KIND_BY_ID
from opdrift.coverage.oplist import BackendList, relative_path, root_label
from opdrift.coverage.workitems import TODAY_WORDS, has_cpu_kernel
from opdrift.dispatchkeys import CIA
from opdrift.model import Facets, OpRecord, Snapshot
from opdrift.operators.exported import export_fate
from opdrift.operators.functionalize import Functionalization
from opdrift.operators.kernels import (
    DELEGATE,
    OWN,
    PROFILE_KEY,
    PROFILES,
    Profile,
    composite_for,
    profile_kernel,
    table_of,
)
from opdrift.snapshot import meta_json
from opdrift.taxonomy.classify import resolve_op
from opdrift.taxonomy.rules import RULES_BY_ID
from opdrift.taxonomy.scope import scope_of
from opdrift.text import code, md, one_line
from opdrift.work.engine import (
    NEEDS_KERNEL,
    TRAINING_ONLY,
    VERIFIER_REJECTS,
    Engine,
    Verdict,
    profile_engines,
)
from opdrift.work.rules import DECOMPOSES, DEFAULT_KERNEL, LISTED, words

FORMATS = ("text", "markdown", "json")


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
class ExplainedVerdict:
    """What one backend must do for one registered operator: coverage's verdict and its reason."""

    name: str
    # "covered", "needs_kernel", or "training_only" / "verifier_rejects" (neither served nor needed), as
    # coverage counts
    status: str
    rule: str  # the engine's rule (`opdrift.work.engine.RULES`, "training_only" or "needs_kernel")
    via: str  # the operator that carries it, when not itself
    alternative: str  # for one that needs a kernel: the variant whose kernel would serve it instead
    why: str  # how it is covered, or why it needs a kernel, in words


@dataclass(frozen=True)
class ExplainedBackend:
    """One ``--backend``: as coverage names it, and its verdict for each registered operator of OP."""

    name: str  # its NAME, "" when none was given
    kind: str
    path: str  # as coverage's JSON gives it (the paths given)
    read_from: str  # what the text and Markdown say it was read from: no machine path (`_read_from`)
    profile: str
    decompositions: str  # export: the table it is judged with (coverage's), else ""
    fallback: str | None  # its boxed CPU fallback, where an op without a kernel runs meanwhile
    verdicts: tuple[ExplainedVerdict, ...]


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
    backends: tuple[ExplainedBackend, ...] = ()
    source: Mapping[str, object] | None = None  # the SOURCE's metadata, as every JSON output writes it


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


def _served_text(rec: OpRecord, engine: Engine) -> str:
    """What a backend of the engine's profile that lists nothing must do for REC, with the reason."""
    v = engine.judge(rec)
    if not v.covered:
        said = words(v.rule, v.via, engine.backend.profile)
        if engine.backend.profile == "export":
            if rec.facets.decomposes_to:
                return f"{said}, or a decomposition exists (see decomposes_to)"
            return said
        return said + (f" (or {v.alternative}, which its default kernel calls)" if v.alternative else "")
    return _how_text(rec, v, engine)


def _how_text(rec: OpRecord, v: Verdict, engine: Engine) -> str:
    """How the engine's backend gets REC, by the rule of its verdict V (one that covers it): the rule's
    sentence (`opdrift.work.rules`), then what only explain adds (which kernel, which table)."""
    profile = engine.backend.profile
    said = words(v.rule, v.via, profile)
    if v.rule == DECOMPOSES and profile == "export" and CIA not in table_of(rec.facets):
        fate = export_fate(rec, engine.export)
        if fate == "evaluated":
            return f"{said} (answered while export traces)"
        return f"{said} ({engine.export.table.origin} names it)"
    if v.rule == DEFAULT_KERNEL:
        # the kernel the engine found serving (`Engine._serving`): a native key's own slot, else the profile's
        table, key = table_of(rec.facets), engine.backend.dispatch_key
        kernel = composite_for(table, key) if key is not None else profile_kernel(table, profile)
        return f"{said} ({kernel})"
    return said


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


def _listed_at(backend: BackendList, name: str) -> str:
    """Where BACKEND lists NAME ("xla_native_functions.yaml:57", relative to the tree it was read from)."""
    for op in backend.ops:
        if op.name == name:
            where = relative_path(op.path, _roots(backend))
            return f"{PurePath(where).name if where == op.path else where}:{op.line}"
    return ""


def _roots(backend: BackendList) -> tuple[str, ...]:
    return backend.roots or (backend.path,)


def _read_from(backend: BackendList) -> str:
    """What BACKEND was read from as its maintainer knows it: each file or tree by its last component
    (`src`, `xla_native_functions.yaml`), a dispatch key as itself; never the machine's path."""
    return " + ".join(root_label(r) for r in _roots(backend))


def _why_needed(rec: OpRecord, v: Verdict, engine: Engine, backend: BackendList) -> str:
    """Why the backend needs a kernel for REC: not listed, and nothing of PyTorch's serves it."""
    b = engine.backend
    if b.profile == "export" and b.edge:
        # ExecuTorch lists out= variants: the program is converted to them (`opdrift.coverage.workitems`)
        outs = Functionalization(engine.records).out_variants_of(rec)
        why = (
            f"not listed, and it reaches the edge program ({engine.export.table.origin} does not decompose it)"
            + (f"; list its out= variant: `- op: {outs[0]}`" if outs else "; it has no out= variant upstream")
        )
    elif b.profile == "export":
        why = f"not listed, and it reaches the exported graph ({engine.export.table.origin} does not decompose it)"
    else:
        key = b.dispatch_key or PROFILE_KEY[b.profile]
        missing = f"no kernel of its own under {key}" if KIND_BY_ID[backend.kind].in_pytorch else "not listed"
        why = f"{missing}, and no PyTorch kernel serves the {key} key"
    if v.alternative:
        why += f"; or list {v.alternative}, which its default kernel calls"
    fallback = fallback_of(backend)
    fallback = fallback and relative_path(fallback, _roots(backend))
    if not fallback and backend.cpu_fallback_at and rec.name in {op.name for op in backend.cpu_fallback_ops}:
        # torch-xpu-ops' fallback_list: this op alone is sent to CPU, as coverage's `today` says
        fallback = f"the fallback_list at {relative_path(backend.cpu_fallback_at, _roots(backend))}"
        if has_cpu_kernel(rec):
            return f"{why}; meanwhile it {TODAY_WORDS['cpu_fallback']}: {fallback} runs it"
        return f"{why}; meanwhile it {TODAY_WORDS['fails']}: PyTorch has no CPU kernel for {fallback} to run"
    if fallback and has_cpu_kernel(rec):
        why += f"; meanwhile it {TODAY_WORDS['cpu_fallback']}: the boxed CPU fallback ({fallback}) runs it"
    elif fallback:
        # the fallback calls the op again on CPU tensors: without a CPU kernel it fails there too
        why += f"; meanwhile it {TODAY_WORDS['fails']}: PyTorch has no CPU kernel for the fallback to run"
    elif b.profile == "eager":
        why += f"; meanwhile it {TODAY_WORDS['fails']}"
    return why


def _verdict(rec: OpRecord, engine: Engine, backend: BackendList) -> ExplainedVerdict:
    v = engine.judge(rec)
    if v.rule == TRAINING_ONLY:
        # the status already says the rule's sentence ("only in training graphs")
        status, why = TRAINING_ONLY, "neither served nor needed: export's graphs are inference graphs"
    elif v.rule == VERIFIER_REJECTS:
        status, why = (
            VERIFIER_REJECTS,
            "neither served nor needed: no verified program holds it (a kernel listed for it is extra)",
        )
    elif v.covered:
        how = _how_text(rec, v, engine)
        if v.rule == LISTED and KIND_BY_ID[backend.kind].in_pytorch:
            how = f"its own kernel under {backend.dispatch_key}"
        at = _listed_at(backend, rec.name) if v.rule == LISTED else ""
        status, why = "covered", f"{how} ({at})" if at else how
    else:
        status, why = NEEDS_KERNEL, _why_needed(rec, v, engine, backend)
    return ExplainedVerdict(rec.name, status, v.rule, v.via, v.alternative, why)


def _explained_backend(
    snapshot: Snapshot, records: Sequence[OpRecord], backend: BackendList, profile: Profile | None
) -> ExplainedBackend:
    engine = backend_engine(snapshot, backend, profile)
    model = engine.backend
    return ExplainedBackend(
        backend.name,
        backend.kind,
        backend.path,
        _read_from(backend),
        model.profile,
        engine.export.table.origin if model.profile == "export" else "",
        fallback_of(backend),
        tuple(_verdict(rec, engine, backend) for rec in records),
    )


def explain_view(
    snapshot: Snapshot, op: str, backends: Sequence[BackendList] = (), profile: Profile | None = None
) -> ExplainView:
    """What `explain` shows for `op` (a registered name or a base name); UnknownOperatorError if none.
    For each of BACKENDS (read as `coverage` reads them), judged as a backend of PROFILE (default: its
    kind's), coverage's verdict for each registered operator of OP."""
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
        backends=tuple(_explained_backend(snapshot, records, b, profile) for b in backends),
        source=meta_json(snapshot.meta),
    )


def _status_words(v: ExplainedVerdict, b: ExplainedBackend) -> str:
    """A verdict's status column: "covered", else its rule's sentence (a need, or training only)."""
    return "covered" if v.status == "covered" else words(v.rule, "", b.profile, edge=b.kind in EDGE_KINDS)


def _backend_title(b: ExplainedBackend) -> str:
    table = f"; decompositions: {b.decompositions}" if b.decompositions else ""
    return f"{b.name or b.kind}  [{b.kind}, profile {b.profile}{table}]  {b.read_from}"


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
    for b in view.backends:
        lines.append("")
        lines.append(f"backend {_backend_title(b)}")
        lines.extend(f"  {v.name}: {_status_words(v, b)} ({v.rule}): {v.why}" for v in b.verdicts)
    # Every value comes from the source: a newline in one would start a line of its own, and in a CI
    # log a line such as "::error::" is a workflow command.
    return "\n".join(one_line(line) for line in lines).rstrip() + "\n"


def render_markdown(view: ExplainView) -> str:
    """The same view as Markdown: every name and schema is someone else's text, quoted (`opdrift.text`)."""
    total = view.total
    lines = [
        f"### {code(view.op)}",
        "",
        f"Base operator {code(view.base)}: {total} registered operator{'s' if total != 1 else ''}.",
        "",
        f"- bucket: {code(view.bucket)}",
        f"- rule: {code(view.rule)}",
        f"- reason: {md(view.reason)}",
    ]
    if view.note is not None:
        lines.append(f"- why the rule exists: {md(view.note)}")
    for rec in view.records:
        lines += ["", f"#### {code(rec.name)} ({md(rec.kind)}, {code(f'{rec.where}:{rec.line}')})", ""]
        lines.append(f"- schema: {code(rec.schema, 10_000)}")
        lines.extend(f"- {md(line)}" for line in rec.facets)
    for b in view.backends:
        table = f", decompositions: {md(b.decompositions)}" if b.decompositions else ""
        lines += [
            "",
            f"#### Backend {code(b.name or b.kind)} ({code(b.kind)}, profile {code(b.profile)}{table})",
            "",
            f"Read from {code(b.read_from, 10_000)}.",
            "",
            "| operator | verdict | rule | how or why |",
            "|---|---|---|---|",
        ]
        lines.extend(
            f"| {code(v.name, in_table=True)} | {_status_words(v, b)} | {code(v.rule, in_table=True)} "
            f"| {md(v.why).replace('|', chr(92) + '|')} |"
            for v in b.verdicts
        )
    return "\n".join(lines) + "\n"


def explain_json(view: ExplainView) -> dict[str, object]:
    """The machine form of `explain` (``--format json``): the view's fields, each backend's verdicts in
    coverage's words (``status``: covered, needs_kernel, training_only or verifier_rejects; ``rule``: its
    by_rule key)."""
    return {
        "source": view.source,
        "op": view.op,
        "base": view.base,
        "registered": view.total,
        "bucket": view.bucket,
        "rule": view.rule,
        "reason": view.reason,
        "note": view.note,
        "records": [
            {
                "name": r.name,
                "kind": r.kind,
                "path": r.where,
                "line": r.line,
                "schema": r.schema,
                "facets": list(r.facets),
            }
            for r in view.records
        ],
        "backends": [
            {
                "backend": {
                    "kind": b.kind,
                    "path": b.path,
                    **({"name": b.name} if b.name else {}),
                    "profile": b.profile,
                    "fallback": b.fallback,
                    **({"decompositions": b.decompositions} if b.profile == "export" else {}),
                },
                "operators": [
                    {
                        "name": v.name,
                        "status": v.status,
                        "covered": v.status == "covered",
                        "rule": v.rule,
                        "via": v.via or None,
                        "alternative": v.alternative or None,
                        "why": v.why,
                    }
                    for v in b.verdicts
                ],
            }
            for b in view.backends
        ],
    }


def render(view: ExplainView, fmt: str) -> str:
    """VIEW in FMT, one of `FORMATS`."""
    if fmt == "json":
        return json.dumps(explain_json(view), indent=2, sort_keys=True) + "\n"
    if fmt == "markdown":
        return render_markdown(view)
    return render_text(view)


def explain(snapshot: Snapshot, op: str) -> str:
    """An operator's bucket, the rule that decided it (with its reason) and its facets, as text."""
    return render_text(explain_view(snapshot, op))
