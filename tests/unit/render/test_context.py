"""The drift report's plumbing: one context passed whole, no template branch on a
value nobody sets, and every list of the view capped by construction."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path

import jinja2
import jinja2.meta
import jinja2.nodes
import pytest
from driftcases import many_added, realistic_pair

from opdrift.drift.allowlist import NO_ACKNOWLEDGEMENTS
from opdrift.drift.changes import Change, compute_drift
from opdrift.render.context import ReportContext
from opdrift.render.fit import caps, largest_fitting, sections_of, truncated
from opdrift.render.jinja import environment
from opdrift.render.report import _TEMPLATES, render
from opdrift.render.view import BUCKET, View, build_view

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = ROOT / "templates"
DRIFT_TEMPLATES = sorted(
    {*_TEMPLATES.values(), "_body.md.j2", "_gap.md.j2", "_lead.md.j2", "_warnings.md.j2"}
)


# --- no dead branch --------------------------------------------------------------------------------


def _parse(text: str) -> jinja2.nodes.Template:
    return environment("md").parse(text)  # the filters are the same in both environments


def ctx_fields_read(template: jinja2.nodes.Template) -> set[str]:
    """The ``ctx.X`` a template reads."""
    return {
        n.attr
        for n in template.find_all(jinja2.nodes.Getattr)
        if isinstance(n.node, jinja2.nodes.Name) and n.node.name == "ctx"
    }


def _python_files() -> Iterator[Path]:
    yield from sorted((ROOT / "bot").rglob("*.py"))


def ctx_fields_read_by_helpers() -> set[str]:
    """The ``self.ctx.X`` the template helpers read (bot/render/helpers.py)."""
    tree = ast.parse((ROOT / "bot/render/helpers.py").read_text(encoding="utf-8"))
    return {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Attribute)
        and n.value.attr == "ctx"
        and isinstance(n.value.value, ast.Name)
        and n.value.value.id == "self"
    }


def ctx_fields_set(files: Iterable[Path]) -> set[str]:
    """The context fields the code sets: keywords of ``ReportContext(...)`` and of ``replace(...)`` in
    modules that use ReportContext (``replace(context, previous_issue=...)``, `ReportContext.linked`)."""
    names: set[str] = set()
    for path in files:
        text = path.read_text(encoding="utf-8")
        if "ReportContext" not in text:
            continue
        for n in ast.walk(ast.parse(text)):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute):
                called = n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                if called in ("ReportContext", "replace"):
                    names |= {k.arg for k in n.keywords if k.arg is not None}
    return names


def unset_fields_read(templates: dict[str, str]) -> dict[str, set[str]]:
    """Per template, the context fields it reads that no caller in bot/ sets: each one a dead branch."""
    context_fields = {f.name for f in fields(ReportContext)}
    settable = ctx_fields_set(_python_files())
    out = {}
    for name, text in templates.items():
        read = ctx_fields_read(_parse(text))
        unknown = read - context_fields
        dead = (read & context_fields) - settable
        if unknown or dead:
            out[name] = unknown | dead
    return out


def _drift_templates() -> dict[str, str]:
    return {name: (TEMPLATES / name).read_text(encoding="utf-8") for name in DRIFT_TEMPLATES}


def test_every_context_field_a_template_reads_is_set_by_some_caller() -> None:
    assert unset_fields_read(_drift_templates()) == {}
    # ... and the helpers' too: each is a branch of what they print
    helpers_dead = ctx_fields_read_by_helpers() - ctx_fields_set(_python_files())
    assert helpers_dead == set()


def test_a_branch_on_a_field_nobody_sets_is_caught() -> None:
    """`limit` is set by tests only (no command overrides the size limit): a template branching on it
    would be dead, as `previous_url`, `full_report_url` and `generated` were. So would a name the
    context does not have."""
    templates = _drift_templates()
    templates["weekly_issue.md.j2"] += (
        "{% if ctx.limit %}capped at {{ ctx.limit }}{% endif %}{{ ctx.nope }}\n"
    )
    assert unset_fields_read(templates) == {"weekly_issue.md.j2": {"limit", "nope"}}


def test_the_templates_read_only_what_the_renderer_passes() -> None:
    """The drift templates' free variables are the renderer's keyword arguments: the context goes whole
    as ``ctx``, so no field of it is restated as a variable of its own."""
    tree = ast.parse((ROOT / "bot/render/report.py").read_text(encoding="utf-8"))
    (call,) = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "render_template"
    ]
    passed = {k.arg for k in call.keywords if k.arg is not None}
    used: set[str] = set()
    templates = [_parse(text) for text in _drift_templates().values()]
    # a name a `{% set %}` or loop stores is the templates' own, whatever scope meta gives it: a partial
    # included in a loop (_gap.md.j2) reads the loop's variable
    stored = {n.name for t in templates for n in t.find_all(jinja2.nodes.Name) if n.ctx == "store"}
    for template in templates:
        used |= jinja2.meta.find_undeclared_variables(template) - stored
    assert used <= passed, used - passed
    context_fields = {f.name for f in fields(ReportContext)}
    # `marker` is derived, not restated: the context's marker, else the format's (markers.marker_for)
    assert passed & context_fields == {"marker"}, "a context field restated as a template variable"
    assert passed - used == set(), "a variable passed that no template reads"


# --- the previous weekly issue ---------------------------------------------------------------------


def test_the_weekly_issue_links_the_previous_one_in_its_template() -> None:
    drift = compute_drift(*realistic_pair())
    context = ReportContext(title="2026-W48").linked(drift)
    plain = render(drift, "weekly-issue", context=context)
    linked = render(
        drift, "weekly-issue", context=ReportContext(title="2026-W48", previous_issue=41).linked(drift)
    )
    assert "Previous drift issue" not in plain
    assert linked == plain + "\n---\nPrevious drift issue: #41\n"


def test_a_capped_weekly_issue_keeps_the_previous_link() -> None:
    """The link is inside the rendered body, so the size fit counts it (appending it after the fit
    could push a body just under the limit over it)."""
    drift = compute_drift(*many_added(300))
    body = render(drift, "weekly-issue", context=ReportContext(limit=12_000, previous_issue=7))
    assert len(body) <= 12_000
    assert "… and" in body  # capped
    assert body.endswith("\n---\nPrevious drift issue: #7\n")


# --- every list capped by construction -------------------------------------------------------------


@dataclass(frozen=True)
class WiderView(View):
    """The view with one more list, declared the way every list of the view is."""

    extra: tuple[Change, ...] = field(default=(), metadata=BUCKET)


@dataclass(frozen=True)
class SloppyView(View):
    extra: tuple[Change, ...] = ()


def _view() -> View:
    drift = compute_drift(*many_added(120))
    return build_view(drift, NO_ACKNOWLEDGEMENTS)


def test_a_new_list_is_capped_without_touching_fit() -> None:
    view = _view()
    longest = max(len(items) for items, _ in sections_of(view, None))
    extra = view.drift.changes * 3  # longer than any list the view already has
    wider = WiderView(**{f.name: getattr(view, f.name) for f in fields(view)}, extra=extra)
    cap = 5
    (extra_cap,) = [c for items, c in sections_of(wider, cap) if items is extra]
    assert extra_cap == caps(wider, cap)["bucket"]
    # A cap that shows every list the old view has in full (the bucket cap is the cap less the longest
    # lead list) cuts the new one: truncated says so.
    room = 2 * longest
    assert not truncated(view, room)
    assert truncated(wider, room)
    # ... and the bisection's upper bound reaches it
    seen: list[int] = []

    def render_at(c: int) -> str:
        seen.append(c)
        return "x"

    largest_fitting(wider, 10**9, render_at)
    assert max(seen) >= len(extra)


def test_an_undeclared_list_fails_every_render() -> None:
    view = _view()
    sloppy = SloppyView(**{f.name: getattr(view, f.name) for f in fields(view)})
    with pytest.raises(
        TypeError, match=r"SloppyView\.extra: a list the view shows must declare how it is capped"
    ):
        sections_of(sloppy, 5)


# --- one record of what a change asks of a backend -------------------------------------------------


def test_one_record_says_what_a_change_asks_of_a_backend() -> None:
    """The weekly issue, the PR comment's impact table and the watch say what a change asks of one
    backend with one record, `BackendGap`, and one key: no class of bot/ but it and the config's
    `BackendSpec` (what a subscription names) keys a backend list with `backend_key`, and none but it
    holds broken kernels."""
    keyed, holding = set(), set()
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            calls = {
                n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            }
            if "backend_key" in calls:
                keyed.add(node.name)
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and "BrokenKernel" in ast.unparse(stmt.annotation):
                    holding.add(node.name)
    assert keyed == {"BackendSpec", "BackendGap"}
    assert holding == {"BackendGap"}
