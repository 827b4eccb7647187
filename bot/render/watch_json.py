"""`opdrift watch --format json`: the impact per open PR and backend, and the landed breaks
(schemas/watch.schema.json), built from the same `WatchView` as the Markdown, without Jinja2."""

from __future__ import annotations

from typing import TYPE_CHECKING

from opdrift.render.context import GAP_LISTS
from opdrift.render.reach import reach_json

if TYPE_CHECKING:  # opdrift.render.watch re-exports watch_json: its records are only annotations here
    from opdrift.render.watch import BackendImpact, WatchView


def _impact_json(imp: BackendImpact) -> dict[str, object]:
    also = {x.field: x for x in imp.also}
    return {
        "name": imp.label,
        "kind": imp.kind,
        "where": imp.where,
        "who": list(imp.who),
        "needs": list(imp.lacking),
        "needs_models": reach_json(imp.lacking_models),
        "breaks": [
            {
                "op": b.op,
                "form": b.form or None,
                "changes": [{"where": w, "before": x, "after": y} for w, x, y in b.parts],
                "models": reach_json(b.models),
                **(
                    {
                        "declaration_before": b.before.declaration(b.op),
                        "declaration_after": b.after.declaration(b.op),
                        "parameters": [
                            {
                                "change": p.kind,
                                "name": p.name,
                                "before": p.before,
                                "after": p.after,
                                "anchor": p.anchor,
                            }
                            for p in b.before.named_against(b.after)
                        ],
                    }
                    if b.before is not None and b.after is not None
                    else {}
                ),
            }
            for b in imp.broken
        ],
        "removes": list(imp.removed),
        **{g.field: list(also[g.field].ops) if g.field in also else [] for g in GAP_LISTS},
        "more": {
            "needs": imp.more_lacking,
            "breaks": imp.more_broken,
            "removes": imp.more_removed,
            **{g.field: also[g.field].more if g.field in also else 0 for g in GAP_LISTS},
        },
    }


def watch_json(view: WatchView) -> dict[str, object]:
    """The impact per open PR and backend (schemas/watch.json)."""
    news = {r.number: {i.key for i in imps} for r, imps in view.news}
    landed_now = {x.number for x in view.broke_now}
    return {
        "upstream": view.upstream,
        "complete": view.complete,
        "pulls": [
            {
                "number": r.number,
                "title": r.title,
                "author": r.author,
                "draft": r.draft,
                "updated_at": r.updated_at,
                "url": r.url,
                "head_sha": r.head_sha,
                "backends": [
                    {**_impact_json(i), "new": i.key in news.get(r.number, set())} for i in r.impacts
                ],
            }
            for r in view.rows
        ],
        "landed": [{"number": x.number, "title": x.title, "url": x.url} for x in view.landed],
        "landed_breaks": [
            {
                "number": x.number,
                "title": x.title,
                "url": x.url,
                "landed_at": x.landed_at,
                "backends": [{**_impact_json(i), "new": x.number in landed_now} for i in x.impacts],
            }
            for x in view.broke
        ],
    }
