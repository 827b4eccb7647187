"""`opdrift watch --format json`: the impact per open PR and backend, and the landed breaks
(schemas/watch.schema.json), built from the same `WatchView` as the Markdown, without Jinja2."""

from __future__ import annotations

from typing import TYPE_CHECKING

from opdrift.render.context import GAP_LISTS, BackendGap
from opdrift.render.reach import reach_json

if TYPE_CHECKING:  # opdrift.render.watch re-exports watch_json: its view is only an annotation here
    from opdrift.render.watch import WatchView


def _impact_json(imp: BackendGap) -> dict[str, object]:
    return {
        "name": imp.label,
        "kind": imp.kind,
        "where": imp.where,
        "who": list(imp.who),
        "needs": list(imp.ops),
        "needs_models": reach_json(imp.ops_models),
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
        **{g.field: list(getattr(imp, g.field)) for g in GAP_LISTS},
        "more": {
            "needs": imp.more_of("ops"),
            "breaks": imp.more_of("broken"),
            "removes": imp.more_of("removed"),
            **{g.field: imp.more_of(g.field) for g in GAP_LISTS},
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
