"""Pieces several pages share: a bucket's label, the footer's sources, a coverage cell, the model
corpus's paths in words and a "used by N of M models" cell."""

from __future__ import annotations

from collections.abc import Iterable

from opdrift.site.html import Markup, el, escape, join
from opdrift.site.model import OpModels, Site
from opdrift.taxonomy.buckets import LABELS

# The corpus's paths (`opdrift.usage.models.PATHS`) as a page names them.
PATH_WORDS = {
    "eager_inference": "eager inference",
    "eager_training": "eager training",
    "export_core": "export, Core ATen table",
    "export_torch_mlir": "export, torch-mlir's table",
    "functional": "functional (XLA)",
}


def quote(text: str) -> str:
    return f"<code>{escape(text)}</code>"


def label(bucket: str) -> str:
    return LABELS.get(bucket, bucket)


def codes(values: Iterable[str]) -> Markup:
    return join([(el("code", {}, v), " ") for v in values])


def generated(site: Site) -> str:
    labels = [r.label for r in site.releases]
    return labels[0] if len(labels) == 1 else f"{labels[0]} … {labels[-1]} ({len(labels)} sources)"


def coverage_cell(covered: int, total: int) -> Markup:
    if total == 0:  # every overload training-only for an export backend: nothing to serve
        return el("td", {"class": "cov na", "title": "training-only: never in an inference graph"}, "n/a")
    state = "full" if covered == total else "none" if covered == 0 else "part"
    return el(
        "td",
        {"class": f"cov {state}", "title": f"{covered} of {total} overloads covered"},
        f"{covered}/{total}",
    )


def models_cell(models: OpModels | None, release: str) -> Markup:
    """The index's "models" cell: models of the corpus that dispatch the operator on any path."""
    if models is None:
        return el("td", {"class": "num"}, "")
    if models.no_data_yet:
        return el(
            "td", {"class": "num na", "title": f"no model data yet (newer than torch {release})"}, "new"
        )
    return el(
        "td",
        {"class": "num", "title": f"used by {models.used_by} of {models.of} models on any path"},
        models.used_by,
    )


def path_words(paths: Iterable[str]) -> str:
    return ", ".join(PATH_WORDS.get(p, p) for p in paths)
