"""Coverage results → text, Markdown or JSON for `opdrift coverage`.

`coverage_view` builds one `CoverageView` per backend; the text (``coverage.txt.j2``) and the Markdown
(``coverage.md.j2``) templates show that same view, schema alerts included, and differ only in layout
and escaping. Every name and schema comes from someone else's file, so the Markdown template quotes
them through `opdrift.text.code` / `md`, and the text environment makes every value one terminal-safe line.
The JSON is `opdrift.coverage.jsonform.coverage_json`, and loads no Jinja2.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from opdrift.coverage.change import CoverageChange
from opdrift.coverage.check import Coverage, SchemaAlert, falls_back
from opdrift.coverage.firstwork import FirstWork, first_work, first_work_json
from opdrift.coverage.jsonform import coverage_json
from opdrift.coverage.kinds import EDGE_KINDS, KIND_BY_ID, BackendKind
from opdrift.coverage.names import last_registered
from opdrift.coverage.oplist import relative_path, root_label
from opdrift.coverage.workitems import (
    ModelReach,
    WorkItem,
    has_cpu_kernel,
    model_choice,
    model_paths,
    model_usage,
    models_recorded,
    work_items,
)
from opdrift.model import NATIVE_PATH, Snapshot
from opdrift.operators.kernels import FUNCTIONALIZED
from opdrift.render.context import blob_url
from opdrift.render.details import describe, describe_kernel
from opdrift.render.fit import largest_cap_fitting
from opdrift.render.rank import record_rank_key, work_item_rank_key
from opdrift.render.reach import through_json
from opdrift.schema.codes import Detail
from opdrift.snapshot import meta_json
from opdrift.taxonomy.scope import GENERIC
from opdrift.text import Safe, code, link, md, terminal
from opdrift.versions import is_final_release
from opdrift.work.engine import scope
from opdrift.work.rules import NEEDS_KERNEL, TRAINING_ONLY, words

Result = tuple[Coverage, CoverageChange | None]

# A terminal or a comment is for reading; the JSON (or -o FILE) keeps every name.
LIST_CAP = 200
# Schema alerts take several lines each: three backends' worth came to 70,000 characters, over what a
# GitHub comment holds, so Markdown shows the first ones.
ALERT_CAP = 50
# Work items shown in full (why, C++ declaration, schema: four lines each); the rest one line each.
ITEM_DETAIL_CAP = 12
# First-work steps the text and Markdown show (the JSON gives every step).
FIRST_STEPS = 8
# What a Markdown report must fit: a GitHub comment or issue body, with room for what a poster adds.
MARKDOWN_LIMIT = 65_536 - 1_000

_NO_TEXT = Safe("")


def _stale_note(kind: BackendKind) -> Safe:
    """What a kind's lists name beyond native functions (`KindRow.also_lists`), beside its stale entries."""
    also = KIND_BY_ID[kind].also_lists
    return Safe(f" ({kind} also lists {also}, which are not native functions)") if also else _NO_TEXT


# What a "symint" verdict means to a backend whose kernel is int64_t (`opdrift.coverage.alerts.judge_in_form`).
SYMINT_ONLY = "your int64_t kernel still builds; only the SymInt form changed"

# An alert's grade, by what it does to the backend's own kernel before callers are considered: its C++
# signature changed ("kernel"); only the SymInt form did and callers are fine ("symint"); callers break
# and the kernel builds ("caller"); neither ("cosmetic"). Every format counts and lists by `grade`.
Grade = Literal["kernel", "symint", "caller", "cosmetic"]
GRADES: tuple[Grade, ...] = ("kernel", "symint", "caller", "cosmetic")


def grade(a: SchemaAlert) -> Grade:
    """A SymInt-only change that breaks callers (`_efficient_attention_backward` 2.1.0 → 2.2.0 reorders
    arguments) is caller news first."""
    if a.kernel == "breaking":
        return "kernel"
    if a.breaking:
        return "caller"
    return "symint" if a.kernel == "symint" else "cosmetic"


@dataclass(frozen=True)
class AlertCounts:
    """A backend's schema alerts counted by grade, all of them (what the base raised too): the one
    count the text, the Markdown and the JSON give. `new`: with --base, how many the base did not
    raise (`opdrift.coverage.change.compare_coverage`), which the Markdown lists; None without a base."""

    kernel: int = 0
    symint: int = 0
    caller: int = 0
    cosmetic: int = 0
    new: int | None = None

    @property
    def total(self) -> int:
        return self.kernel + self.symint + self.caller + self.cosmetic

    @property
    def quiet(self) -> int:
        """Those that break nothing the backend builds."""
        return self.total - self.kernel


def alert_counts(alerts: Sequence[SchemaAlert], change: CoverageChange | None) -> AlertCounts:
    grades = [grade(a) for a in alerts]
    return AlertCounts(
        kernel=grades.count("kernel"),
        symint=grades.count("symint"),
        caller=grades.count("caller"),
        cosmetic=grades.count("cosmetic"),
        new=None if change is None else len(change.new_alerts),
    )


@dataclass(frozen=True)
class GapChange:
    """How the gap moved since BASE."""

    before: int
    after: int
    verb: str  # grew, shrank or held
    new_uncovered: tuple[str, ...]
    newly_covered: int


@dataclass(frozen=True)
class CoverageView:
    kind: str
    path: str
    profile: str  # eager, functional or export: which PyTorch kernels serve this backend
    total: int
    covered: int
    gap: int
    by_rule: tuple[tuple[str, int], ...]
    # (bucket, covered, needs, training-only); bucket ids are the taxonomy's, shown as they are
    by_bucket: tuple[tuple[Safe, int, int, int], ...]
    change: GapChange | None
    alerts: tuple[SchemaAlert, ...]
    stale: tuple[tuple[str, str, int], ...]  # (name, path, line)
    stale_note: Safe  # "" unless the backend's list is known to hold names that are not operators
    # how many of the operators that need a kernel only some backends need (`opdrift.taxonomy.scope`)
    other_ops: int = 0
    # every alert counted by grade (the header of each format), and with --base how many are new
    counts: AlertCounts = AlertCounts()
    # the alerts listed (with --base, the new ones), graded: the kernel's C++ signature changed; only
    # callers break; neither
    alerts_kernel: tuple[SchemaAlert, ...] = ()
    # only the SymInt form changed, and the backend's kernel is int64_t: it still builds; callers too
    alerts_symint: tuple[SchemaAlert, ...] = ()
    # callers break, the kernel still builds (a SymInt-only change to an int64_t kernel among them)
    alerts_caller: tuple[SchemaAlert, ...] = ()
    alerts_cosmetic: tuple[SchemaAlert, ...] = ()
    old_alerts: int = 0  # with --base: alerts the base already raised, left out of the graded lists
    fallback: str = ""  # where the backend's boxed fallback is registered, "" when it has none
    fails: int = 0  # of the gap, the ops the fallback cannot run: PyTorch has no CPU kernel for them
    # the list of ops the backend runs on CPU one by one (torch-xpu-ops' fallback_list), "" when none,
    # and how many of the gap it runs there (listed, with a CPU kernel); the rest of the gap fails
    cpu_fallback_at: str = ""
    listed_on_cpu: int = 0
    roots: tuple[str, ...] = ()  # the files or trees the backend's lists were read from
    # the stale entries split: upstream removed them (name, path, line, the last release that had
    # them), or no release from 1.9 on ever registered them (a TorchScript built-in, a typo)
    stale_removed: tuple[tuple[str, str, int, str], ...] = ()
    stale_never: tuple[tuple[str, str, int], ...] = ()
    # what an op without a kernel does, in the report's words: plural ("need a kernel", "fall back to
    # CPU", after a count) and singular; a boxed CPU fallback turns a gap into slower ops, not failures
    gap_words: str = "need a kernel"
    gap_word: str = ""
    # the training-only rule's sentence (`opdrift.work.rules`)
    training_words: str = ""
    # the needs as work items (`opdrift.coverage.workitems`), ranked (`work_item_rank_key`): those every
    # backend needs, and those only some do (folded, with the scope's reason)
    items: tuple[WorkItem, ...] = ()
    items_other: tuple[WorkItem, ...] = ()
    # how an item's members follow from it: "by structured_delegate" (eager) or "by functionalization"
    follow: str = ""
    # what one item is, singular and plural: "kernel to write", "op to lower", "out= kernel to write"
    unit: tuple[str, str] = ("kernel to write", "kernels to write")
    # with --base: the new gaps only some backends need, (name, bucket, why), folded like the main list
    new_other: tuple[tuple[str, Safe, str], ...] = ()
    # export: the decomposition table judged by, and the ops only a training graph holds (name, bucket)
    decompositions: str = ""
    training_only: tuple[tuple[str, Safe], ...] = ()
    # ExecuTorch: the ops its edge verifier refuses, neither covered nor needed, and how many of them
    # it lists all the same (extra kernels)
    rejected: int = 0
    rejected_listed: int = 0
    # the backend's NAME when its lists were given one: the heading leads with it, the kind and the
    # paths (`roots`) follow
    name: str = ""
    # the model table the items' "used by N of M models" come from (`opdrift.usage.models`): its torch
    # release, how many models ran on the backend's paths, and the caveat when the snapshot's release
    # has no table of its own ("" when it has); release "" without model data
    models_release: Safe = _NO_TEXT
    models_count: int = 0
    models_caveat: Safe = _NO_TEXT
    models_paths: tuple[str, ...] = ()
    # the fewest items that let the most models run without fallback (`opdrift.coverage.firstwork`), None
    # without model data; `first_steps` those shown, `first_items` how many items they write
    first_work: FirstWork | None = None
    first_steps: tuple[tuple[tuple[str, ...], tuple[str, ...], int], ...] = ()
    first_items: int = 0


def _change(change: CoverageChange | None) -> GapChange | None:
    if change is None:
        return None
    before, after = change.gap_before, change.gap_after
    verb = "grew" if after > before else "shrank" if after < before else "held"
    return GapChange(before, after, verb, change.new_uncovered, len(change.newly_covered))


def coverage_view(cov: Coverage, change: CoverageChange | None, head: Snapshot) -> CoverageView:
    uncovered = cov.uncovered
    records = head.operators
    # With a base, an alert the base already raised is not news: only new or changed ones are graded.
    shown = cov.alerts if change is None else change.new_alerts
    new_ranked = (
        ()
        if change is None
        else tuple(
            sorted(
                change.new_uncovered,
                key=lambda n: record_rank_key(records[n]) if n in records else (3, 0, n),
            )
        )
    )
    # Scope folds the new gaps as it folds the main list: a CUDA-only op does not lead an OpenCL
    # backend's news either.
    new_scopes = {n: scope(records[n]) if n in records else GENERIC for n in new_ranked}
    gap = (
        change
        if change is None
        else dataclasses.replace(change, new_uncovered=tuple(n for n in new_ranked if new_scopes[n].generic))
    )
    items = sorted(work_items(cov, head), key=work_item_rank_key)
    choice = model_choice(head.meta.torch_version)
    paths = model_paths(cov)
    export = cov.profile == "export"
    # The fallback calls an op again on CPU tensors, so it runs only what PyTorch has a CPU kernel for;
    # the rest fails on the device though the backend has a fallback (`today` of each work item).
    fails = (
        sum(1 for o in uncovered if o.name in records and not has_cpu_kernel(records[o.name]))
        if falls_back(cov)
        else 0
    )
    # the singular is the need's sentence (`opdrift.work.rules`), "needs a lowering" on the export path;
    # ExecuTorch writes kernels, of out= variants (`opdrift.coverage.workitems`); other export backends lower
    edge = export and cov.backend_kind in EDGE_KINDS
    gap_words, gap_word = (
        ("fall back to CPU", "falls back to CPU")
        if falls_back(cov) and not fails
        else (
            "need an out= kernel" if edge else "need a lowering" if export else "need a kernel",
            words(NEEDS_KERNEL, profile=cov.profile, edge=edge),
        )
    )
    fw = None if choice is None else first_work(items, model_usage(cov, choice.usage), paths, head)
    shown_steps = () if fw is None else fw.upto(FIRST_STEPS)
    return CoverageView(
        kind=cov.backend_kind,
        path=cov.backend_path,
        profile=cov.profile,
        total=len(cov.ops),
        covered=len(cov.covered),
        gap=len(uncovered),
        by_rule=tuple(cov.by_rule().items()),
        by_bucket=tuple((Safe(b), c, n, t) for b, (c, n, t) in cov.by_bucket().items()),
        change=_change(gap),
        alerts=cov.alerts,
        stale=tuple((op.name, op.path, op.line) for op in cov.stale),
        stale_note=_stale_note(cov.backend_kind),
        other_ops=sum(1 for o in uncovered if o.name in records and not scope(records[o.name]).generic),
        counts=alert_counts(cov.alerts, change),
        alerts_kernel=tuple(a for a in shown if grade(a) == "kernel"),
        alerts_symint=tuple(a for a in shown if grade(a) == "symint"),
        alerts_caller=tuple(a for a in shown if grade(a) == "caller"),
        alerts_cosmetic=tuple(a for a in shown if grade(a) == "cosmetic"),
        old_alerts=0 if change is None else change.old_alerts,
        fallback=cov.fallback or "",
        fails=fails,
        cpu_fallback_at=cov.cpu_fallback_at,
        listed_on_cpu=sum(
            1
            for o in uncovered
            if o.name in cov.cpu_fallback_ops and o.name in records and has_cpu_kernel(records[o.name])
        ),
        roots=cov.roots or (cov.backend_path,),
        stale_removed=tuple(
            (op.name, op.path, op.line, last)
            for op in cov.stale
            if (last := last_registered(op.name)) is not None
        ),
        stale_never=tuple(
            (op.name, op.path, op.line) for op in cov.stale if last_registered(op.name) is None
        ),
        gap_words=gap_words,
        gap_word=gap_word,
        training_words=words(TRAINING_ONLY),
        items=tuple(i for i in items if i.scope.generic),
        items_other=tuple(i for i in items if not i.scope.generic),
        follow="by functionalization and to_out_variant"
        if edge
        else "by functionalization"
        if cov.profile in FUNCTIONALIZED
        else "by structured_delegate",
        unit=("out= kernel to write", "out= kernels to write")
        if edge
        else ("op to lower", "ops to lower")
        if export
        else ("kernel to write", "kernels to write"),
        new_other=tuple(
            (n, Safe(records[n].bucket), new_scopes[n].reason)
            for n in new_ranked
            if not new_scopes[n].generic
        ),
        decompositions=cov.decompositions,
        training_only=tuple((o.name, Safe(o.bucket)) for o in cov.training_only) if export else (),
        rejected=len(cov.rejected),
        rejected_listed=len(cov.extra),
        name=cov.name,
        # Safe: the release is an X.Y.Z of opdrift's own shipped table (`opdrift.usage.models`)
        models_release=Safe("" if choice is None else choice.usage.release),
        models_count=0 if choice is None else len(models_recorded(choice.usage, paths)),
        models_caveat=Safe("" if choice is None else choice.caveat()),
        models_paths=paths,
        first_work=fw,
        first_steps=tuple((s.items, s.unblocks, s.runs) for s in shown_steps),
        first_items=sum(len(s.items) for s in shown_steps),
    )


def model_data_json(view: CoverageView) -> dict[str, object] | None:
    """The coverage JSON's ``model_data``: the table the items' model counts come from, or null."""
    if not view.models_release:
        return None
    return {
        "release": view.models_release,
        "models": view.models_count,
        "paths": list(view.models_paths),
        "caveat": view.models_caveat or None,
    }


def models_json(m: ModelReach | None, note: str) -> dict[str, object] | None:
    """A work item's ``models``: how many models of the corpus use it and break on it, or that the
    table's release is older than its ops (``no_data_yet``, never a count of 0)."""
    if m is None:
        return None
    if m.no_data_yet:
        return {"no_data_yet": True, "release": m.release, "note": note}
    return {
        "used_by": m.used_by,
        "of": m.of,
        "names": list(m.names),
        "breaks": m.breaks,
        "cpu_only": m.cpu_only,
        "release": m.release,
        "through": through_json(m.through),
        "note": note,
    }


def work_items_json(cov: Coverage, head: Snapshot) -> list[dict[str, object]]:
    """The coverage JSON's ``work_items``: every item, ranked as the reports show them (those only some
    backends need included, with their scope); the flat ``uncovered`` list stays beside it."""
    choice = model_choice(head.meta.torch_version)
    note = f"models of the corpus that dispatch its operators on {', '.join(model_paths(cov))}" + (
        f"; {choice.caveat()}" if choice is not None and choice.caveat() else ""
    )
    return [
        {
            "name": i.name,
            "members": list(i.members),
            "bucket": i.bucket,
            "line": i.line,
            "schema": i.schema,
            "form": i.form,
            "signature": i.signature or None,
            "why": i.why,
            # what its operators do today on the device: "fails" or "cpu_fallback"; null unless eager
            "today": i.today,
            "alternative": i.alternative or None,
            "scope": None if i.scope.generic else {"rule": i.scope.rule, "reason": i.scope.reason},
            "models": models_json(i.models, note),
            "rank": {
                "breaks_models": 0 if i.models is None else i.models.breaks,
                "used_by_models": 0 if i.models is None else i.models.used_by,
                "core": i.core,
                "in_degree": i.in_degree,
                "private": i.private,
                "bucket": i.bucket,
            },
        }
        for i in sorted(work_items(cov, head), key=work_item_rank_key)
    ]


def _quote_text(s: str) -> str:
    return f"`{terminal(s)}`"


def _detail_text(d: Detail) -> Safe:
    """The drift report's sentence for `d`, each upstream or backend value in backticks."""
    return Safe(describe(d, _quote_text))


def _detail_markdown(d: Detail) -> Safe:
    """The same sentence with each value an inert code span and the words around them ours."""
    return Safe(describe(d, code))


def _kernel_text(a: SchemaAlert) -> Safe:
    """The drift report's words for what the change does to the alert's kernel signature."""
    return Safe(describe_kernel(a.kernel_changes, _quote_text))


def _kernel_markdown(a: SchemaAlert) -> Safe:
    return Safe(describe_kernel(a.kernel_changes, code))


def _summary_markdown(a: SchemaAlert) -> Safe:
    """A folded alert in one line: its details, or both schemas when there are none to give; then
    since when upstream's schema holds."""
    if a.details:
        text = "; ".join(describe(d, code) for d in a.details)
    else:
        text = f"yours: {code(a.backend_schema)}, upstream: {code(a.upstream_schema)}"
    return Safe(f"{text} ({since_words(a)})")


def since_words(a: SchemaAlert) -> Safe:
    """Since when upstream's schema is what it is: "added upstream in 2.8.0" when the op came with it,
    "upstream's schema dates from 2.2.0" when it changed to it, "upstream's kernel binding dates from
    2.14.0" when only its binding did (it joined a structured group), "upstream's schema unchanged since
    1.12.0 or earlier" at the table's first release, "upstream's schema is in no release yet" without
    one (a change not released yet). The alert only says the backend's schema differs: the change it
    reports may be the op's arrival, not a change of its schema. Safe: the release names are the
    shipped table's, not another project's text."""
    if not a.upstream_since:
        return Safe("upstream's schema is in no release yet")
    if a.upstream_event == "added":
        return Safe(f"added upstream in {a.upstream_since}")
    if a.upstream_event == "earliest":
        return Safe(f"upstream's schema unchanged since {a.upstream_since} or earlier")
    if a.upstream_event == "rebound":
        # the schema is older; what changed is how torchgen binds its kernels (`Binding`)
        return Safe(f"upstream's kernel binding dates from {a.upstream_since}, its schema from before")
    return Safe(f"upstream's schema dates from {a.upstream_since}")


def kernel_words(a: SchemaAlert) -> str:
    """What the change does to the backend's kernel, in the form it is judged in (when that is not
    its own form, the words say so rather than blame it). See Note [SymInt kernels from 1.13].
    A plain str: the templates escape it."""
    if a.kernel == "symint":
        return SYMINT_ONLY
    if a.kernel != "breaking":
        return "kernels: still build"
    if a.judged_in is not None and a.judged_in != a.form:
        whose = f"your {a.form} kernel" if a.form else "every kernel"
        return (
            f"the {a.judged_in} form's C++ signature changed, and before 1.13 the dispatcher accepted"
            f" only the SymInt form, so {whose} had to take it"
        )
    return f"your {a.form} kernel's C++ signature changed" if a.form else "kernels: C++ signature changed"


def _render(
    name: str,
    kind: str,
    views: Sequence[CoverageView],
    detail: Callable[[Detail], Safe],
    kernel: Callable[[SchemaAlert], Safe],
    **values: object,
) -> str:
    from opdrift.render.jinja import render_template

    return render_template(
        name,
        "md" if kind == "md" else "text",
        views=views,
        detail=detail,
        kernel=kernel,
        since=since_words,
        kernel_words=kernel_words,
        symint_only=SYMINT_ONLY,
        **{"list_cap": LIST_CAP, "alert_cap": ALERT_CAP, "item_cap": ITEM_DETAIL_CAP, **values},
    )


def native_url(head: Snapshot) -> str | None:
    """native_functions.yaml of HEAD on GitHub, pinned: at its commit, else at its release tag."""
    url = blob_url(head.meta.commit)
    if url is None and is_final_release(head.meta.torch_version):
        url = f"https://github.com/pytorch/pytorch/blob/v{head.meta.torch_version}/{NATIVE_PATH}"
    return url


def _linker(head: Snapshot) -> Callable[[str], Safe]:
    """An operator name as a code span, linked to its entry's line at HEAD when HEAD is pinned."""
    base = native_url(head)

    def op(name: str) -> Safe:
        rec = head.operators.get(name)
        return link(code(name), None if base is None or rec is None else f"{base}#L{rec.line}")

    return op


def _relative(path: str, roots: Sequence[str]) -> Safe:
    """A path in a backend's list as its maintainer knows it (`relative_path`), for Markdown."""
    return md(relative_path(path, roots))


def _fitting_markdown(views: Sequence[CoverageView], head: Snapshot) -> str:
    """The Markdown report, its lists cut (each backend's alike) until it fits a GitHub comment."""

    def at(cap: int) -> str:
        return _render(
            "coverage.md.j2",
            "md",
            views,
            _detail_markdown,
            _kernel_markdown,
            summary=_summary_markdown,
            op=_linker(head),
            rel=_relative,
            label=root_label,
            list_cap=min(cap, LIST_CAP),
            alert_cap=min(cap, ALERT_CAP),
            item_cap=min(cap, ITEM_DETAIL_CAP),
        )

    full = at(LIST_CAP)
    if len(full) <= MARKDOWN_LIMIT:
        return full
    # Not even empty lists fit (hundreds of backends): the shortest report, over the limit.
    return largest_cap_fitting(LIST_CAP - 1, MARKDOWN_LIMIT, at) or at(0)


def alert_counts_json(counts: AlertCounts) -> dict[str, int | None]:
    """The JSON's ``schema_alert_counts``: the view's counts, as the text and Markdown headers give them."""
    return {**{g: getattr(counts, g) for g in GRADES}, "total": counts.total, "new": counts.new}


def render(results: Sequence[Result], fmt: str, *, head: Snapshot) -> str:
    # One view per backend, whatever the format: the counts every format gives come from it.
    views = [coverage_view(cov, change, head) for cov, change in results]
    if fmt == "json":
        doc = {
            "source": meta_json(head.meta),
            "backends": [
                {
                    **coverage_json(cov, change),
                    "schema_alert_counts": alert_counts_json(view.counts),
                    "work_items": work_items_json(cov, head),
                    "model_data": model_data_json(view),
                    "first_work": first_work_json(view.first_work),
                }
                for (cov, change), view in zip(results, views, strict=True)
            ],
        }
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if fmt == "markdown":
        return _fitting_markdown(views, head)
    # An empty run still prints one (empty) line, as every text output ends with a newline.
    return (
        _render(
            "coverage.txt.j2",
            "text",
            views,
            _detail_text,
            _kernel_text,
            source=head.meta.path,
            rel=relative_path,
            label=root_label,
        )
        or "\n"
    )
