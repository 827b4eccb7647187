"""The `Site` → every file of the site, by its relative path (pure: nothing is written here)."""

from __future__ import annotations

import importlib.resources
import json

from opdrift.site.coverage_page import coverage_page
from opdrift.site.export import index_json, op_json
from opdrift.site.growth import growth_page
from opdrift.site.model import Site
from opdrift.site.pages import index_page, op_page

ASSETS = ("site.js", "site.css")


def _json(value: object) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode("utf-8")


def asset(name: str) -> bytes:
    return importlib.resources.files("opdrift.site").joinpath("assets").joinpath(name).read_bytes()


def site_files(site: Site) -> dict[str, bytes]:
    """Relative path → content. The paths are the stable ones links rely on: ``index.html``,
    ``ops/NAME.html``, ``coverage.html``, ``growth.html``, ``data/ops.json``, ``data/ops/NAME.json``."""
    files: dict[str, bytes] = {
        "index.html": index_page(site).encode("utf-8"),
        "coverage.html": coverage_page(site).encode("utf-8"),
        "growth.html": growth_page(site).encode("utf-8"),
        "data/ops.json": _json(index_json(site)),
    }
    for op in site.ops:
        files[f"ops/{op.file}.html"] = op_page(site, op).encode("utf-8")
        files[f"data/ops/{op.file}.json"] = _json(op_json(op))
    for name in ASSETS:
        files[f"assets/{name}"] = asset(name)
    # GitHub Pages would run Jekyll over the site without it (and drop files starting with "_").
    files[".nojekyll"] = b""
    return files
