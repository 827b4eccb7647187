"""HTML built from parts, where every plain `str` is escaped and only `Markup` passes through.

Everything a page shows that came from a source (names, schemas, tags, reasons, comments) is a plain
`str`, so it can only ever become text: the builder escapes it, and a page has no other way in. This
is the site's whole defence against a hostile yaml, together with the Content-Security-Policy of
`page`, which forbids inline script and any script not served by the site itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

# Script only from the site's own files; no inline script, no inline event handlers, no plugins, no
# network beyond the site. Styles likewise. The SVG charts are inline markup, not script.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'"
)

_NAME = re.compile(r"[a-z][a-z0-9]*")
_ATTR = re.compile(r"[a-z][a-z0-9-]*")
_VOID = frozenset({"br", "img", "input", "link", "meta"})


class Markup(str):
    """HTML that this package built: passed through the builder unchanged."""

    __slots__ = ()


def escape(text: object) -> str:
    """Text for an element or a quoted attribute: the five characters that could end either."""
    return (
        str(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def _children(parts: Iterable[object], out: list[str]) -> None:
    for part in parts:
        if part is None or part is False:
            continue
        if isinstance(part, Markup):
            out.append(part)
        elif isinstance(part, str | int | float):
            out.append(escape(part))
        else:
            _children(part, out)  # type: ignore[arg-type]


def join(*parts: object) -> Markup:
    """Parts concatenated, plain strings escaped."""
    out: list[str] = []
    _children(parts, out)
    return Markup("".join(out))


def el(name: str, attrs: dict[str, object] | None = None, *children: object) -> Markup:
    """``<name attrs>children</name>``; attribute values escaped, names checked against a fixed shape.

    An attribute whose value is None or False is left out, True writes it bare. ``href`` must be a
    link this package made (relative, or https), never one taken from a source unchecked.
    """
    if _NAME.fullmatch(name) is None:
        raise ValueError(f"bad element name {name!r}")
    parts = [f"<{name}"]
    for key, value in (attrs or {}).items():
        key = key.rstrip("_").replace("_", "-")
        if _ATTR.fullmatch(key) is None or key.startswith("on"):
            raise ValueError(f"bad attribute {key!r}")
        if value is None or value is False:
            continue
        if key in ("href", "src") and not safe_url(str(value)):
            raise ValueError(f"unsafe {key} {value!r}")
        parts.append(f" {key}" if value is True else f' {key}="{escape(value)}"')
    parts.append(">")
    if name in _VOID:
        return Markup("".join(parts))
    out = ["".join(parts)]
    _children(children, out)
    out.append(f"</{name}>")
    return Markup("".join(out))


def safe_url(url: str) -> bool:
    """A relative link inside the site, a fragment, or https: nothing that runs (javascript:, data:)."""
    if url.startswith(("https://", "#")):
        return True
    return re.fullmatch(r"[A-Za-z0-9_.~/%-]+(?:#[A-Za-z0-9_.-]*)?", url) is not None and "//" not in url


def json_block(element_id: str, value: object) -> Markup:
    """Data for the site's script inside the page (``type="application/json"`` is never run, so the CSP
    allows it). ``<``, ``>`` and ``&`` are written as escapes, so no text in the data can close the
    element; `file://` pages cannot fetch, and this keeps the site working without a server."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(f'<script type="application/json" id="{escape(element_id)}">{text}</script>')


NAV = (("index.html", "Operators"), ("coverage.html", "Coverage"), ("growth.html", "Growth"))


def page(title: str, body: Markup, *, root: str, script: bool = False, generated: str = "") -> str:
    """A whole document: CSP, the shared stylesheet, the navigation; `root` is the way back to the site's
    top ("" or "../"). `script` loads the site's one script file."""
    nav = el(
        "nav",
        {},
        el("span", {"class": "brand"}, "opdrift operator catalogue"),
        [el("a", {"href": f"{root}{href}"}, label) for href, label in NAV],
    )
    head = join(
        Markup('<meta charset="utf-8">'),
        Markup(f'<meta http-equiv="Content-Security-Policy" content="{escape(CSP)}">'),
        Markup('<meta name="viewport" content="width=device-width, initial-scale=1">'),
        Markup('<meta name="referrer" content="no-referrer">'),
        el("title", {}, title),
        el("link", {"rel": "stylesheet", "href": f"{root}assets/site.css"}),
        el("script", {"src": f"{root}assets/site.js", "defer": True}) if script else None,
    )
    footer = el("footer", {}, "Built by opdrift", f" from {generated}" if generated else "", ".")
    return "<!doctype html>\n" + join(
        Markup('<html lang="en">'),
        el("head", {}, head),
        el("body", {}, nav, el("main", {}, body), footer),
        Markup("</html>\n"),
    )
