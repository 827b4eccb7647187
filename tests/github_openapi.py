"""The fakes' requests and answers checked against GitHub's OpenAPI description (tests/data/github/
SOURCES.md): every request is an operation of it (method, path template, query parameters), and
every answer kept (`fake_github.Recorder`) follows the operation's response schema.

tests/integration/test_openapi_conformity.py runs a scenario of its own through it; tests/conftest.py checks
everything the session's fakes saw, in every xdist worker (`worker_records` hands a worker's records
to the controller, `session_problems` checks them all once the workers are done).
"""

from __future__ import annotations

import json
import lzma
import re
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jsonschema
from fake_github import Recorder
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

SPEC = Path(__file__).parent / "data" / "github" / "api.github.com.subset.json.xz"
URI = "urn:github-openapi"
# A path parameter that may hold slashes: a file's path, and the tree form ``COMMIT:DIR`` opdrift
# sends although the description names a tree sha (bot/github/ghsource.py falls back when refused).
_SLASHED = {"path", "tree_sha"}
_METHODS = ("get", "post", "patch", "put", "delete")


def _nullable(node: Any) -> Any:
    """OpenAPI 3.0's ``nullable: true`` in JSON Schema's words (``type: [T, "null"]``)."""
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        if "$ref" in out or "allOf" in out or "anyOf" in out or "oneOf" in out:
            out = {"anyOf": [{"type": "null"}, out]}
    return out


@cache
def spec() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(lzma.decompress(SPEC.read_bytes()))
    return doc


def operations() -> set[tuple[str, str]]:
    """Every (METHOD, path template) of the description: the calls opdrift makes."""
    return {(m.upper(), t) for t, item in spec()["paths"].items() for m in item if m in _METHODS}


@cache
def _registry() -> Registry[Any]:
    registry: Registry[Any] = Registry()
    resource: Resource[Any] = Resource.from_contents(_nullable(spec()), default_specification=DRAFT7)
    full: Registry[Any] = registry.with_resource(URI, resource)
    return full


@cache
def _templates() -> tuple[tuple[re.Pattern[str], str], ...]:
    out = []
    for template in spec()["paths"]:
        pattern = re.sub(
            r"\\\{(\w+)\\\}",
            lambda m: "(.+)" if m.group(1) in _SLASHED else "([^/]+)",
            re.escape(template),
        )
        out.append((re.compile(pattern), template))
    # The most specific first: /issues/comments/{id} before /issues/{issue_number}/...
    return tuple(sorted(out, key=lambda t: (t[1].count("{"), -len(t[1]))))


def template_of(path: str) -> str | None:
    return next((t for pattern, t in _templates() if pattern.fullmatch(path)), None)


def shape_template(shape: str) -> str | None:
    """The template of a recorded request shape (numbers and shas made ``N``)."""
    return template_of(shape.replace("N", "1"))


def _parameters(template: str, method: str) -> list[dict[str, Any]]:
    item = spec()["paths"][template]
    found = []
    for param in [*item.get("parameters", []), *item[method].get("parameters", [])]:
        if "$ref" in param:
            param = spec()["components"]["parameters"][param["$ref"].rsplit("/", 1)[1]]
        found.append(param)
    return found


def request_problems(method: str, path: str) -> Iterator[str]:
    split = urlsplit(path)
    template = template_of(split.path)
    if template is None or method.lower() not in spec()["paths"][template]:
        yield f"{method} {split.path}: no such operation in GitHub's description"
        return
    allowed = {p["name"] for p in _parameters(template, method.lower()) if p["in"] == "query"}
    for name, _ in parse_qsl(split.query):
        if name not in allowed:
            yield f"{method} {template}: no query parameter {name!r} (GitHub's: {sorted(allowed)})"


def answer_problems(method: str, shape: str, status: int, body: bytes) -> Iterator[str]:
    template = shape_template(shape)
    if template is None or method.lower() not in spec()["paths"][template] or not 200 <= status < 300:
        return
    responses = spec()["paths"][template][method.lower()]["responses"]
    if str(status) not in responses:
        yield f"{method} {template}: GitHub never answers {status} (it answers {sorted(responses)})"
        return
    response = responses[str(status)]
    if "$ref" in response:
        response = spec()["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    media = response.get("content", {}).get("application/json")
    if media is None:
        if body:
            yield f"{method} {template} {status}: GitHub's answer has no body"
        return
    pointer = f"/paths/{template.replace('~', '~0').replace('/', '~1')}/{method.lower()}/responses/{status}"
    if "$ref" in responses[str(status)]:
        pointer = f"/components/responses/{responses[str(status)]['$ref'].rsplit('/', 1)[1]}"
    validator = jsonschema.Draft7Validator(
        {"$ref": f"{URI}#{pointer}/content/application~1json/schema"}, registry=_registry()
    )
    for error in validator.iter_errors(json.loads(body)):
        where = "/".join(str(p) for p in error.absolute_path)
        yield f"{method} {template} {status} at {where or '.'}: {error.message[:200]}"


def problems(recorder: Recorder) -> list[str]:
    """Every request RECORDER saw that GitHub's description lacks, and every answer it kept that
    breaks its operation's schema."""
    found = {p for method, path in recorder.requests for p in request_problems(method, path)}
    for (method, shape, status), bodies in recorder.answers.items():
        for body in bodies:
            found.update(answer_problems(method, shape, status, body))
    return sorted(found)


def unchecked(recorder: Recorder, wanted: Iterable[tuple[str, str]]) -> list[str]:
    """The operations of WANTED (METHOD, template) of which RECORDER kept no 2xx answer to check
    (a raw media type's answer counts: it has no JSON schema)."""
    checked = {
        (method, shape_template(shape))
        for (method, shape, status), bodies in recorder.answers.items()
        if 200 <= status < 300 and (bodies or (method, shape, status) in recorder.raw)
    }
    return sorted(f"{m} {t}" for m, t in wanted if (m, t) not in checked)


def requested(recorder: Recorder) -> set[tuple[str, str]]:
    """The operations RECORDER saw requested (those of the description)."""
    out = set()
    for method, path in recorder.requests:
        template = template_of(urlsplit(path).path)
        if template is not None:
            out.add((method, template))
    return out
