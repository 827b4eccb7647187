"""The Jinja2 side of rendering: where the templates are, the two environments, their filters.

Every Markdown output (and the drift and coverage text) is a template in ``templates/``. Only this
module imports jinja2, and the renderers import it inside their template paths, so that a command
printing JSON (``opdrift diff --format json``) or plain text never loads Jinja2.

Safety: source-derived strings reach the output only through the escaping helpers of `opdrift.text`
(code spans, entity-escaped text). The Markdown environment's `finalize` escapes any plain `str` a
template forgets to filter, so a template bug shows escaped text instead of live Markdown; the text
environment's makes every plain value one line without control characters.
"""

from __future__ import annotations

import importlib.resources
import re
import sys
from functools import cache
from pathlib import Path
from typing import Literal

import jinja2

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable
else:  # pragma: no cover - Python 3.10
    from importlib.abc import Traversable

from opdrift.text import Safe, code, html, md, terminal

Flavour = Literal["md", "text"]


def templates_root() -> Traversable:
    """The templates: the ``opdrift.templates`` package of an installed wheel, else ``templates/`` of a checkout."""
    try:
        root = importlib.resources.files("opdrift.templates")
        if root.joinpath("pr_comment.md.j2").is_file():
            return root
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent.parent / "templates"


def templates_loader() -> jinja2.BaseLoader:
    root = templates_root()

    def load(name: str) -> str:
        text: str = root.joinpath(name).read_text(encoding="utf-8")
        return text

    return jinja2.FunctionLoader(load)


def _finalize_md(value: object) -> object:
    if isinstance(value, Safe | int):
        return value
    return md(value)


def _finalize_text(value: object) -> object:
    if isinstance(value, Safe | int):
        return value
    return terminal(value)


@cache
def environment(kind: Flavour) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=templates_loader(),
        autoescape=False,  # noqa: S701 - Markdown, not HTML: escaping is done by the filters and finalize
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize_md if kind == "md" else _finalize_text,
    )
    env.filters["code"] = code
    env.filters["md"] = md
    env.filters["html"] = html
    env.filters["cell"] = lambda s: code(s, in_table=True)
    env.filters["t"] = terminal
    return env


def render_template(name: str, kind: Flavour, /, **values: object) -> str:
    """Template `name` rendered in the `kind` environment with `values`."""
    return environment(kind).get_template(name).render(**values)


def squeeze(text: str) -> str:
    """Runs of blank lines (left by optional sections) squeezed to one; no source text holds a newline."""
    return re.sub(r"\n{3,}", "\n\n", text)
