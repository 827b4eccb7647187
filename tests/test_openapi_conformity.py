"""The fake GitHub API answers like GitHub, checked against GitHub's own OpenAPI description
(tests/data/github/SOURCES.md): every request the session's fakes received is an operation of that
description (method, path template, query parameters), and the answers they gave (a few per request
shape, `fake_github.Recorder`) follow the operation's response schema. A scenario of its own (the
sticky comment, the weekly issue, a `gh:` source, the watch's listing) runs first, so the check
never depends on which other tests this process ran before it."""

from __future__ import annotations

import json
import lzma
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import fake_github
import jsonschema
import pytest
from datafiles import DATA, release_text
from fake_github import FakeGitHub
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from bot.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH
from bot.publish.ghsource import ApiSettings, read_github_source
from bot.publish.github import RepoClient, RetryPolicy, Settings
from bot.publish.pr_comment import publish_pr_comment
from bot.publish.pulls import PullsClient
from bot.publish.weekly_issue import publish_weekly_issue

SPEC = DATA / "github" / "api.github.com.subset.json.xz"
URI = "urn:github-openapi"
REPO = "pytorch/pytorch"
TOKEN = "ghs_conformity000000000000000000000000"
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}
# A path parameter that may hold slashes: a file's path, and the tree form ``COMMIT:DIR`` opdrift
# sends although the description names a tree sha (bot/publish/ghsource.py falls back when refused).
_SLASHED = {"path", "tree_sha"}


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
    template = template_of(shape.replace("N", "1"))
    if template is None or not 200 <= status < 300:
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
        return
    pointer = f"/paths/{template.replace('~', '~0').replace('/', '~1')}/{method.lower()}/responses/{status}"
    if "$ref" in responses[str(status)]:
        pointer = f"/components/responses/{responses[str(status)]['$ref'].rsplit('/', 1)[1]}"
    validator = jsonschema.Draft7Validator(
        {"$ref": f"{URI}#{pointer}/content/application~1json/schema"}, registry=_registry()
    )
    for error in list(validator.iter_errors(json.loads(body)))[:3]:
        where = "/".join(str(p) for p in error.absolute_path)
        yield f"{method} {template} {status} at {where or '.'}: {error.message[:200]}"


@pytest.fixture
def fake(github_server: FakeGitHub) -> FakeGitHub:
    github_server.add_token(TOKEN, "opdrift-bot")
    github_server.add_repo(REPO)
    main = github_server.add_commit(
        REPO, {p: release_text("2.14.1", n).encode() for p, n in NAMES.items()}, refs=("main", "v2.14.1")
    )
    head = github_server.add_commit(
        REPO,
        {**{p: release_text("2.14.1", n).encode() for p, n in NAMES.items()},
         NATIVE_PATH: release_text("2.15.0").encode()},
        parent=main,
    )  # fmt: skip
    github_server.add_pull(REPO, sha=head, base=main)
    return github_server


def _scenario(fake: FakeGitHub, tmp_path: Path) -> fake_github.Recorder:
    retry = RetryPolicy(total_seconds=30, first_delay=0.01, max_delay=0.02)
    settings = Settings(REPO, TOKEN, api_url=fake.api_url, retry=retry, seconds_between_writes=None)
    client = RepoClient(settings)
    publish_pr_comment(client, 1, "report", has_drift=True, clean_body="clean", dry_run=False)
    publish_weekly_issue(client, title="t", body=lambda _: "b", window_key="2026-W48", dry_run=False)
    api = ApiSettings(api_url=fake.api_url, token=TOKEN, cache_dir=tmp_path, retry=retry)
    read_github_source(f"gh:{REPO}#1:merge-base", api)
    pulls = PullsClient(api, REPO)
    try:
        (pull,) = pulls.scan(None).pulls
        pulls.touched(pull)
    finally:
        pulls.close()
    recorder = fake_github.RECORDER
    assert recorder is not None, "tests/conftest.py turns the recorder on for the session"
    return recorder


def test_every_request_the_fakes_received_is_an_operation_of_github_s(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    recorder = _scenario(fake, tmp_path)
    problems = sorted({p for method, path in recorder.requests for p in request_problems(method, path)})
    assert problems == [], "\n".join(problems[:40])


@pytest.mark.xfail(
    strict=True,
    reason="not yet: the fake's users, repositories, commits and issues lack fields GitHub's schemas "
    "require (avatar_url and the other *_url of a user, a commit's tree and comment_count...)",
)
def test_every_answer_the_fakes_gave_follows_github_s_schema(fake: FakeGitHub, tmp_path: Path) -> None:
    recorder = _scenario(fake, tmp_path)
    problems = sorted(
        {
            p
            for (method, shape, status), bodies in recorder.answers.items()
            for body in bodies
            for p in answer_problems(method, shape, status, body)
        }
    )
    assert problems == [], "\n".join(problems[:40])


def test_the_check_finds_what_github_would_not_send() -> None:
    """The checker is not vacuous: a list without `direction`'s own values, an issue without its
    number, a pull request whose author is no object, an unknown query parameter."""
    assert list(request_problems("GET", "/repos/a/b/pulls?sort=updated&order=desc"))
    assert list(request_problems("DELETE", "/repos/a/b"))
    assert not list(request_problems("GET", "/repos/a/b/git/trees/abc:aten/src"))
    issue = {"id": 1, "number": "1", "title": "t"}
    assert list(answer_problems("GET", "/repos/a/b/issues/N", 200, json.dumps(issue).encode()))
    assert list(answer_problems("GET", "/repos/a/b/pulls", 200, b'[{"user": 3}]'))
