"""Drift → the documented JSON report (docs/drift.md, "The JSON report"): everything, never truncated.

Built from the same view model as the Markdown and text reports (`opdrift.render.view`), so the figures a
reader sees in the comment and the JSON a tool reads agree; no Jinja2 on the way, since
``opdrift diff --format json`` must start without loading it.
"""

from __future__ import annotations

import json

from opdrift.drift.allowlist import NO_ACKNOWLEDGEMENTS, Acknowledgements
from opdrift.drift.changes import Change, Drift
from opdrift.drift.flags import FLAG_TABLE, SUMMARY_ORDER
from opdrift.operators.kernels import PROFILES
from opdrift.render.context import ReportContext
from opdrift.render.view import build_view
from opdrift.snapshot import meta_json

JSON_VERSION = 1


def _change_json(c: Change, acks: Acknowledgements) -> dict[str, object]:
    rec = c.record
    a = acks.get(c)
    item: dict[str, object] = {
        "name": c.name,
        "kind": c.kind,
        "category": c.category,
        "fingerprint": c.fingerprint,
        "line": rec.line,
        "schema": rec.schema,
        **{f.id: f(c) for f in FLAG_TABLE if f.per_change},
        "kernel": c.kernel,
        "profiles": list(c.profiles),
        "needs_kernel_for": list(c.needs_kernel_for),
        "dispatch": list(rec.facets.dispatch),
        "tags": list(rec.facets.tags),
        "acknowledged": None
        if a is None
        else {"reason": a.reason, "expires": a.expires.isoformat(), "where": a.where},
    }
    if c.kind == "renamed":
        item["old_name"] = c.old_name
    if c.kind in ("changed", "renamed"):
        item["before_schema"] = c.before.schema if c.before else None
        item["changes"] = [d.as_json() for d in c.details]
    return item


def to_json(drift: Drift, acks: Acknowledgements = NO_ACKNOWLEDGEMENTS) -> dict[str, object]:
    """The documented JSON report (docs/drift.md, "The JSON report"): everything, never truncated."""
    view = build_view(drift, acks)
    return {
        "version": JSON_VERSION,
        "base": meta_json(drift.base),
        "head": meta_json(drift.head),
        "summary": {
            "added": len(drift.added),
            "removed": len(drift.removed),
            "renamed": len(drift.renamed),
            "changed": len(drift.changed),
            **{f.id: view.counts[f.id] for f in SUMMARY_ORDER},
            "acknowledged": len(view.acknowledged),
            # changes each backend profile must act on (`profiles` of each item)
            "profiles": {p: sum(1 for c in drift.changes if p in c.profiles) for p in PROFILES},
            "operators": {"before": drift.base_operators, "after": drift.head_operators},
            "entries": {"before": drift.base_entries, "after": drift.head_entries},
        },
        "buckets": [{"bucket": b.bucket, "before": b.before, "after": b.after} for b in drift.buckets],
        "added": [_change_json(c, acks) for c in drift.added],
        "removed": [_change_json(c, acks) for c in drift.removed],
        "renamed": [_change_json(c, acks) for c in drift.renamed],
        "changed": [_change_json(c, acks) for c in drift.changed],
    }


def render_json(drift: Drift, context: ReportContext) -> str:
    data = to_json(drift, context.acknowledgements)
    data["warnings"] = [{"line": w.line, "message": w.message, "more": w.more} for w in context.warnings]
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
