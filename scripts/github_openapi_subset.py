"""Cut GitHub's OpenAPI description to the operations opdrift sends (tests/data/github/SOURCES.md).

    npm pack @octokit/openapi@VERSION && tar xzf octokit-openapi-VERSION.tgz
    python scripts/github_openapi_subset.py package/generated/api.github.com.json \\
        -o tests/data/github/api.github.com.subset.json.xz

Keeps the paths and methods of `OPERATIONS`, the components they reach through ``$ref``, and drops
prose and vendor keys (``description``, ``summary``, ``example(s)``, ``externalDocs``, ``x-github``,
``x-octokit``). Sorted keys, compact separators, xz preset 9: the same input gives the same bytes.
tests/integration/test_openapi_conformity.py checks the fakes' requests and answers against the result.
"""

from __future__ import annotations

import argparse
import json
import lzma
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Every call opdrift makes (bot/publish), and those `opdrift doctor` adds: the rate limit, a
# configured login's account, and deleting the comment it wrote.
OPERATIONS: tuple[tuple[str, str], ...] = (
    ("get", "/rate_limit"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}"),
    ("get", "/repos/{owner}/{repo}/compare/{basehead}"),
    # version.txt at a commit, for a gh: SOURCE's torch version (opdrift.github.ghsource)
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    ("get", "/repos/{owner}/{repo}/git/blobs/{file_sha}"),
    ("get", "/repos/{owner}/{repo}/git/commits/{commit_sha}"),
    ("get", "/repos/{owner}/{repo}/git/trees/{tree_sha}"),
    ("get", "/repos/{owner}/{repo}/issues"),
    ("post", "/repos/{owner}/{repo}/issues"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("delete", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("patch", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("get", "/repos/{owner}/{repo}/labels"),
    ("post", "/repos/{owner}/{repo}/labels"),
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/user"),
    ("get", "/users/{username}"),
)
_DROPPED = {"description", "summary", "example", "examples", "externalDocs", "x-github", "x-octokit"}


def _strip(node: Any, names: bool = False) -> Any:
    """NODE without prose and vendor keys; NAMES: NODE maps names to schemas (``properties``), whose
    keys are kept (a repository's ``description`` is a field, not prose)."""
    if isinstance(node, list):
        return [_strip(v) for v in node]
    if not isinstance(node, dict):
        return node
    return {k: _strip(v, k == "properties") for k, v in node.items() if names or k not in _DROPPED}


def _refs(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
    return found.union(*(_refs(v) for k, v in node.items() if k != "$ref"))


def cut(full: dict[str, Any]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for method, template in OPERATIONS:
        item = full["paths"][template]
        kept = paths.setdefault(template, {k: v for k, v in item.items() if k == "parameters"})
        kept[method] = item[method]
    out: dict[str, Any] = {
        "openapi": full["openapi"],
        "info": {"title": full["info"]["title"], "version": full["info"]["version"]},
        "paths": _strip(paths),
        "components": {},
    }
    todo = _refs(out["paths"])
    seen: set[str] = set()
    while todo:
        ref = todo.pop()
        seen.add(ref)
        _, kind, name = ref.removeprefix("#/").rsplit("/", 2)
        node = _strip(full["components"][kind][name])
        out["components"].setdefault(kind, {})[name] = node
        todo |= _refs(node) - seen
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("description", type=Path, help="package/generated/api.github.com.json")
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "tests" / "data" / "github" / "api.github.com.subset.json.xz")  # fmt: skip
    args = parser.parse_args()
    full = json.loads(args.description.read_text(encoding="utf-8"))
    text = json.dumps(cut(full), sort_keys=True, separators=(",", ":"))
    args.output.write_bytes(lzma.compress(text.encode(), preset=9))


if __name__ == "__main__":
    main()
