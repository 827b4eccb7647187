"""The JSON export at stable paths: ``data/ops.json`` (the index the search runs on) and
``data/ops/NAME.json`` (one base operator, everything its page shows)."""

from __future__ import annotations

from opdrift.site.model import Event, ModelSource, OpModels, OpPage, Overload, Site

FORMAT_VERSION = 1


def index_row(op: OpPage) -> dict[str, object]:
    """One row of the index: short keys, since the index page carries ~1,600 of them."""
    return {
        "n": op.name,
        "f": op.file,
        "b": op.bucket,
        "t": list(op.tags),
        "c": list(op.composites),
        "k": list(op.keys),
        "p": list(op.profiles),
        "o": len(op.overloads),
        "g": 0 if op.present else 1,
        "v": {s.backend: [s.covered, s.total] for s in op.coverage},
        "m": None if op.models is None or op.models.no_data_yet else op.models.used_by,
    }


def index_json(site: Site) -> dict[str, object]:
    return {
        "format_version": FORMAT_VERSION,
        "releases": [r.label for r in site.releases],
        "backends": [
            {"name": b.name, "kind": b.kind, "list": b.label, "profile": b.profile} for b in site.backends
        ],
        "keys": {
            "n": "name",
            "f": "file",
            "b": "bucket",
            "t": "tags",
            "c": "composite kinds",
            "k": "backend dispatch keys",
            "p": "profiles that must write a kernel",
            "o": "overloads",
            "g": "1 when gone from the last release",
            "v": "backend → [covered, overloads]",
            "m": "models of the corpus that dispatch it on any path; null: no model data (gone, newer than "
            "the model table, or no table)",
        },
        "models": _source(site.models),
        "ops": [index_row(op) for op in site.ops],
    }


def _source(m: ModelSource | None) -> dict[str, object] | None:
    return None if m is None else {"release": m.release, "caveat": m.caveat or None, "models": m.of}


def _models(m: OpModels | None) -> dict[str, object] | None:
    if m is None:
        return None
    return {
        "release": m.release,
        "used_by": m.used_by,
        "of": m.of,
        "no_data_yet": m.no_data_yet,
        "paths": {
            p.path: {
                "used_by": p.used_by,
                "of": p.of,
                "no_data_yet": p.no_data_yet,
                "models": list(p.names),
                "overloads": dict(p.overloads),
            }
            for p in m.paths
        },
    }


def _overload(o: Overload) -> dict[str, object]:
    f = o.facets
    return {
        "name": o.name,
        "overload": o.overload,
        "schema": o.schema,
        "kind": o.kind,
        "line": o.line,
        "url": o.url,
        "facets": {
            "composite": f.composite,
            "dispatch": list(f.dispatch),
            "kernels": dict(f.kernels),
            "tags": list(f.tags),
            "python_module": f.python_module,
            "structured": f.structured,
            "structured_delegate": f.structured_delegate,
            "alias_of": f.alias_of,
            "has_derivative": f.has_derivative,
            "foreach": f.foreach,
            "autogen": f.autogen,
            "variants": list(f.variants),
        },
        "profiles_needing_kernel": list(o.profiles),
        "coverage": {c.backend: {"covered": c.covered, "rule": c.rule, "via": c.via} for c in o.coverage},
    }


def _event(e: Event) -> dict[str, object]:
    return {
        "release": e.release,
        "kind": e.kind,
        "name": e.name,
        "old_name": e.old_name or None,
        "callers": e.callers or None,
        "kernel": e.kernel,
        "details": [d.as_json() for d in e.details],
        "kernel_keys_gained": list(e.keys_gained),
        "kernel_keys_lost": list(e.keys_lost),
        "tags_gained": list(e.tags_gained),
        "tags_lost": list(e.tags_lost),
        "url": e.url,
        "commit": None
        if e.commit is None
        else {
            "sha": e.commit.sha,
            "subject": e.commit.subject,
            "pr": e.commit.pr,
            "url": e.commit.commit_url,
        },
    }


def op_json(op: OpPage) -> dict[str, object]:
    return {
        "format_version": FORMAT_VERSION,
        "name": op.name,
        "bucket": op.bucket,
        "rule": op.rule,
        "reason": op.reason,
        "first_release": op.first_release,
        "last_release": op.last_release,
        "present": op.present,
        "overloads": [_overload(o) for o in op.overloads],
        "history": [_event(e) for e in op.events],
        "coverage": {s.backend: {"covered": s.covered, "overloads": s.total} for s in op.coverage},
        # which models of the corpus dispatch it, per path (`opdrift.usage.models`); null when not in the
        # last release or no model table answers for it (index.json's "models" names the table)
        "models": _models(op.models),
        "commits": [
            {"sha": c.sha, "date": c.date, "subject": c.subject, "pr": c.pr, "tag": c.tag} for c in op.commits
        ],
    }
