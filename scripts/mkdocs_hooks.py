"""MkDocs hooks (mkdocs.yml `hooks:`): links to the repository's own files, and the JSON Schemas.

The pages under docs/ link to source files (`../bot/taxonomy/rules.py`) as they do on GitHub. MkDocs
only knows docs/, so under `--strict` such a link would fail even when the file exists. Here a link that
leaves docs/ is checked against the repository instead: an existing file becomes a link to it on the
repository's web view (`repo_url`; without one, plain text), and a missing one fails the build, as a
broken link between pages does. The schemas in schemas/ are published beside the pages, at
`schemas/NAME.schema.json`, so that a tool can fetch the contract from the site.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"

# [text](target) and ![alt](target); a target with a scheme or only a fragment is left alone.
_LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)


def _repository_path(page: Page, target: str) -> str | None:
    """The repository path TARGET names from PAGE when it leaves docs/, else None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return None
    path = target.split("#", 1)[0]
    inside_docs = posixpath.normpath(posixpath.join(posixpath.dirname(page.file.src_uri), path))
    if not inside_docs.startswith("../"):
        return None
    return posixpath.normpath(posixpath.join("docs", inside_docs))


def _rewrite(markdown: str, page: Page, config: MkDocsConfig) -> str:
    repo_url = (config.repo_url or "").rstrip("/")

    def link(match: re.Match[str]) -> str:
        target = match["target"]
        path = _repository_path(page, target)
        if path is None:
            return match[0]
        file = ROOT / path
        if not file.exists():
            raise PluginError(
                f"{page.file.src_uri}: the link to '{target}' names {path}, which does not exist"
            )
        if not repo_url:
            return match["text"]
        view = "tree" if file.is_dir() else "blob"
        fragment = target[len(target.split("#", 1)[0]) :]
        return f"{match['bang']}[{match['text']}]({repo_url}/{view}/HEAD/{path}{fragment})"

    # Fenced code is shown as written: only the prose between fences is rewritten.
    parts = re.split(r"(^(?:```|~~~).*?^(?:```|~~~)[^\n]*$)", markdown, flags=re.MULTILINE | re.DOTALL)
    return "".join(part if _FENCE.match(part) else _LINK.sub(link, part) for part in parts)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _rewrite(markdown, page, config)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for schema in sorted(SCHEMAS.glob("*.schema.json")):
        files.append(
            File.generated(config, f"schemas/{schema.name}", content=schema.read_bytes()),
        )
    return files
