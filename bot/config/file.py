"""The bot's config file: who to @mention for which changes, labels, allow-list and overrides paths.

Reference: docs/config.md. Validation is strict (unknown keys, wrong types, bad handles, unknown
buckets or facets, duplicate keys) and every error names ``file:line`` of the offending node, so the
file is read twice: once through `read_yaml_document` (which reports YAML syntax errors with their
line) and once composed into nodes, whose marks give the lines.

What a subscription matches, the handles to mention and the backend gaps are worked out by
`opdrift.app.subscriptions`; this module only reads and checks the file (it reads no backend list).
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import yaml

from opdrift.config.backend_specs import (
    DISPATCH_KEY,
    BackendSpec,
    ListedBackend,
    listed_backends,
    subscription_backend,
)
from opdrift.config.nodes import ConfigReader, one_of, pattern
from opdrift.coverage.kinds import KIND_BY_ID
from opdrift.drift.flags import FACETS
from opdrift.errors import ConfigError, YamlError
from opdrift.shapes import Kind
from opdrift.sources.read import read_text
from opdrift.taxonomy.buckets import BUCKETS
from opdrift.text import did_you_mean
from opdrift.yamltext import SEQUENCE, compose_yaml_document, read_yaml_document, tagged

TITLE_FIELDS = ("week", "base", "head")
DEFAULT_TITLE = "Operator drift {week} ({base}..{head})"

# GitHub logins: alphanumerics and single inner hyphens, at most 39; team slugs are looser.
_USER = r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
_HANDLE = re.compile(rf"@?({_USER})(?:/([A-Za-z0-9][A-Za-z0-9._-]{{0,99}}))?")
_TAG = re.compile(r"[a-z][a-z0-9_]*")
_LABEL_MAX = 50  # GitHub's limit on a label name

_SLUG = re.compile(rf"{_USER}/[A-Za-z0-9._-]{{1,100}}")
# The issue links to it: an https URL that `opdrift.text.link` links (host and path, no query), so what the
# config accepts is what the issue shows.
_SITE_URL = re.compile(r"https://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~%/+-]*)?")
BOT_LOGIN = re.compile(rf"{_USER}(?:\[bot\])?")  # a user, or an app's bot account ("github-actions[bot]")
DEFAULT_UPSTREAM = "pytorch/pytorch"
MAX_CHART_POINTS = 100  # timeline.CHART_MAX_POINTS: more would be sampled anyway

_INT = "tag:yaml.org,2002:int"


@dataclass(frozen=True)
class Subscription:
    """Handles to @mention when a change matches every given matcher kind (see the module docstring)."""

    who: tuple[str, ...]  # normalised: "@user" or "@org/team"
    buckets: tuple[str, ...] = ()
    facets: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    dispatch_keys: tuple[str, ...] = ()
    line: int = 0  # where the subscription starts in the config file
    backend: BackendSpec | None = None
    # (matcher, value, line) of each `tags` and `dispatch_keys` item, for errors found once the
    # snapshots are loaded (`check_names`); where a value is written is not part of what it matches.
    value_lines: tuple[tuple[str, str, int], ...] = field(default=(), compare=False)


# What a week with no operator change posts (`weekly.quiet`): nothing, a comment on the open issue, or
# an issue of its own. Fifty-two "no changes" issues a year bury the ones that matter.
QUIET_WEEK = ("skip", "comment", "issue")


@dataclass(frozen=True)
class WeeklyConfig:
    close_previous: bool = True  # the new week's issue closes the last one: one open drift issue at a time
    link_previous: bool = True
    quiet: str = "skip"  # one of QUIET_WEEK
    title_format: str = DEFAULT_TITLE
    upstream: str = DEFAULT_UPSTREAM  # where attributed commits and PRs link to
    chart: int = 0  # embed the Mermaid chart of the last N history points (0: no chart)
    site_url: str | None = None  # the operator catalogue (`opdrift site`, on GitHub Pages) to link to

    def title(self, *, week: str, base: str, head: str) -> str:
        return self.title_format.format(week=week, base=base, head=head)


@dataclass(frozen=True)
class BotConfig:
    subscriptions: tuple[Subscription, ...] = ()
    labels: tuple[str, ...] = ()
    allowlist: str | None = None  # resolved against the config file's directory
    overrides: str | None = None
    weekly: WeeklyConfig = field(default_factory=WeeklyConfig)
    bot_login: str | None = None  # the account the bot posts as; None: ask GET /user
    # Comment on a PR whose only changes are which in-tree backends have kernels (else: the job
    # summary only, since such a PR asks nothing of an out-of-tree backend).
    comment_on_kernel_keys: bool = False
    path: str = ""
    # the downstream backends whose impact the PR comment shows in its own table (`backends:`)
    backends: tuple[ListedBackend, ...] = ()


# --- names that only the snapshots can check -------------------------------------------------------


def check_names(config: BotConfig, *, dispatch_keys: Collection[str], tags: Collection[str]) -> None:
    """Raise ConfigError at the first dispatch key or tag of a subscription that is not in `dispatch_keys`
    / `tags` (what BASE and HEAD know of).

    Parsing can only check that such a name is well formed; a typo (``mps`` for ``MPS``, ``coer``) would
    then match nothing, ever, and so silently turn the subscription off. Hence this second check, once
    the caller has the snapshots.
    """
    problems: list[tuple[int, str]] = []
    for index, sub in enumerate(config.subscriptions):
        what = f"subscription {index + 1}"
        backend = sub.backend
        if backend is not None and KIND_BY_ID[backend.kind].in_pytorch and backend.value not in dispatch_keys:
            problems.append(
                (
                    backend.value_line or backend.line or sub.line,
                    f"{what}: backend: no operator of BASE or HEAD has a kernel under dispatch key "
                    f"{backend.value!r}{did_you_mean(backend.value, dispatch_keys)}",
                )
            )
        lines = {(k, v): n for k, v, n in sub.value_lines}
        for key in sub.dispatch_keys:
            if key not in dispatch_keys:
                problems.append(
                    (
                        lines.get(("dispatch_keys", key), sub.line),
                        f"{what}: no operator of BASE or HEAD has a kernel under dispatch key "
                        f"{key!r}{did_you_mean(key, dispatch_keys)}",
                    )
                )
        for tag in sub.tags:
            if tag not in tags:
                problems.append(
                    (
                        lines.get(("tags", tag), sub.line),
                        f"{what}: unknown tag {tag!r}: neither BASE nor HEAD knows it{did_you_mean(tag, tags)}",
                    )
                )
    if problems:
        line, message = min(problems)
        raise ConfigError(message, path=config.path or None, line=line or None)


# --- parsing ---------------------------------------------------------------------------------------


# YAML 1.1 ints include 0x10, 0o17, 1_000 and 1:30 (base 60): build it as YAML does
_POINTS: Kind[int] = Kind(
    "a number of points (0 for no chart)",
    tagged(_INT),
    lambda n: int(yaml.constructor.SafeConstructor().construct_yaml_int(n)),
)


def _handle(reader: ConfigReader) -> Callable[[yaml.Node, str], str]:
    def check(node: yaml.Node, value: str) -> str:
        m = _HANDLE.fullmatch(value.strip())
        if m is None:
            raise reader.error(
                node,
                f'{value!r} is not a GitHub handle: use "@user" or "@org/team" (quoted: YAML reserves @)',
            )
        return "@" + m.group(0).lstrip("@")

    return check


def _label(reader: ConfigReader) -> Callable[[yaml.Node, str], str]:
    def check(node: yaml.Node, value: str) -> str:
        if len(value) > _LABEL_MAX or "," in value:
            raise reader.error(node, f"label {value!r}: at most {_LABEL_MAX} characters and no commas")
        return value

    return check


_SUB_KEYS = ("who", "buckets", "facets", "tags", "dispatch_keys", "backend")
_MATCHERS = _SUB_KEYS[1:]


def _subscription(reader: ConfigReader, node: yaml.Node, index: int, base_dir: str = "") -> Subscription:
    what = f"subscription {index + 1}"
    keys = reader.mapping(node, what, _SUB_KEYS)
    if "who" not in keys:
        raise reader.error(node, f"{what} has no `who:` (the handles to mention)")
    who = reader.strings(keys["who"][1], f"{what}: who", _handle(reader))
    if not who:
        raise reader.error(keys["who"][1], f"{what}: `who:` is empty")
    if not any(k in keys for k in _MATCHERS):
        raise reader.error(node, f"{what} matches nothing: give at least one of {', '.join(_MATCHERS)}")
    checks = {
        "buckets": one_of(reader, BUCKETS, "bucket"),
        "facets": one_of(reader, FACETS, "facet"),
        "tags": pattern(reader, _TAG, "tag name"),
        "dispatch_keys": pattern(reader, DISPATCH_KEY, "dispatch key"),
    }
    values: dict[str, tuple[str, ...]] = {}
    value_lines: list[tuple[str, str, int]] = []
    backend = subscription_backend(reader, keys["backend"][1], what, base_dir) if "backend" in keys else None
    for key in _MATCHERS:
        if key == "backend":
            continue
        if key in keys:
            values[key] = reader.strings(
                keys[key][1], f"{what}: {key}", _noting(checks[key], key, value_lines)
            )
            if not values[key]:
                raise reader.error(keys[key][1], f"{what}: `{key}:` is empty (leave it out to match any)")
    kept = tuple(t for t in value_lines if t[0] in ("tags", "dispatch_keys"))
    return Subscription(who=who, line=node.start_mark.line + 1, backend=backend, value_lines=kept, **values)


def _noting(
    check: Callable[[yaml.Node, str], str], key: str, sink: list[tuple[str, str, int]]
) -> Callable[[yaml.Node, str], str]:
    """`check`, also noting the line of each value it passes (the first, for a repeated value)."""

    seen: set[str] = set()  # a set, not a scan of `sink`: a generated config can list 40,000 values

    def noted(node: yaml.Node, value: str) -> str:
        checked = check(node, value)
        if checked not in seen:
            seen.add(checked)
            sink.append((key, checked, node.start_mark.line + 1))
        return checked

    return noted


def _title_format(reader: ConfigReader, node: yaml.Node) -> str:
    value = reader.string(node, "weekly: title_format")
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(value) if f is not None]
    except ValueError as err:
        raise reader.error(node, f"weekly: title_format: {err}") from None
    for f, spec, conv in fields:
        if f not in TITLE_FIELDS:
            raise reader.error(
                node, f"weekly: title_format: unknown field {{{f}}} (use {{week}}, {{base}}, {{head}})"
            )
        if spec or conv:
            # {week:d} fails at format time, {week:>99999999999} exhausts memory: plain fields only
            raise reader.error(node, f"weekly: title_format: write {{{f}}} plainly, without ':' or '!'")
    return value


def _chart(reader: ConfigReader, node: yaml.Node) -> int:
    value = reader.read(_POINTS, node, "weekly: chart", node)
    if not 0 <= value <= MAX_CHART_POINTS:
        raise reader.error(node, f"weekly: chart must be between 0 and {MAX_CHART_POINTS}, got {value}")
    return value


def _weekly(reader: ConfigReader, node: yaml.Node) -> WeeklyConfig:
    keys = reader.mapping(
        node,
        "weekly",
        ("close_previous", "link_previous", "quiet", "title_format", "upstream", "chart", "site_url"),
    )
    kwargs: dict[str, object] = {}
    for key in ("close_previous", "link_previous"):
        if key in keys:
            kwargs[key] = reader.boolean(keys[key][1], f"weekly: {key}")
    if "quiet" in keys:
        quiet = reader.string(keys["quiet"][1], "weekly: quiet")
        if quiet not in QUIET_WEEK:
            raise reader.error(
                keys["quiet"][1], f"weekly: quiet must be one of {', '.join(QUIET_WEEK)}, got {quiet!r}"
            )
        kwargs["quiet"] = quiet
    if "title_format" in keys:
        kwargs["title_format"] = _title_format(reader, keys["title_format"][1])
    if "upstream" in keys:
        kwargs["upstream"] = pattern(reader, _SLUG, "repository (OWNER/NAME)")(
            keys["upstream"][1], reader.string(keys["upstream"][1], "weekly: upstream")
        )
    if "chart" in keys:
        kwargs["chart"] = _chart(reader, keys["chart"][1])
    if "site_url" in keys:
        kwargs["site_url"] = pattern(
            reader, _SITE_URL, "https:// URL (a host and a path, no query or fragment)"
        )(keys["site_url"][1], reader.string(keys["site_url"][1], "weekly: site_url"))
    return WeeklyConfig(**kwargs)  # type: ignore[arg-type]


_TOP_KEYS = (
    "subscriptions",
    "labels",
    "allowlist",
    "overrides",
    "weekly",
    "bot_login",
    "comment_on_kernel_keys",
    "backends",
)


# `@` is a YAML indicator: a plain scalar cannot start with it, so `who: @team` stops the parser with
# "found character that cannot start any token", which never says why. An unquoted handle is found on
# the line the error names (outside quotes) and the error says what to write instead.
_BARE_HANDLE = re.compile(r"(?:^|[\s\[{,:-])(@[^\s,\[\]{}#'\"]+)")


def _bare_handle(text: str, line: int | None) -> str | None:
    if line is None:
        return None
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    row = lines[line - 1]
    for m in _BARE_HANDLE.finditer(row):
        before = row[: m.start(1)]
        if before.count('"') % 2 == 0 and before.count("'") % 2 == 0 and "#" not in before:
            return m.group(1)
    return None


def _check_yaml(text: str, display: str) -> None:
    """YAML syntax errors, with their line; an unquoted @handle said as such."""
    try:
        read_yaml_document(text, display)
    except YamlError as err:
        handle = _bare_handle(text, err.line)
        if handle is None:
            raise
        raise ConfigError(f'quote handles: "{handle}"', path=display, line=err.line) from None


def parse_config(text: str, display: str, *, base_dir: str = "") -> BotConfig:
    """Parse and validate a config file's text; `allowlist`/`overrides` paths resolve against `base_dir`."""
    _check_yaml(text, display)
    node = compose_yaml_document(text, display)
    if node is None:
        return BotConfig(path=display)
    reader = ConfigReader(display)
    keys = reader.mapping(node, "the config", _TOP_KEYS)
    subs: tuple[Subscription, ...] = ()
    if "subscriptions" in keys:
        sub_node = keys["subscriptions"][1]
        items = reader.read(SEQUENCE, sub_node, "subscriptions", sub_node)
        subs = tuple(_subscription(reader, n, i, base_dir) for i, n in enumerate(items))
    labels = reader.strings(keys["labels"][1], "labels", _label(reader)) if "labels" in keys else ()
    paths: dict[str, str | None] = {}
    for key in ("allowlist", "overrides"):
        if key in keys:
            value = reader.string(keys[key][1], key)
            paths[key] = os.path.normpath(os.path.join(base_dir, value))
        else:
            paths[key] = None
    weekly = _weekly(reader, keys["weekly"][1]) if "weekly" in keys else WeeklyConfig()
    bot_login = None
    if "bot_login" in keys:
        node = keys["bot_login"][1]
        value = reader.string(node, "bot_login").strip().removeprefix("@")
        bot_login = pattern(reader, BOT_LOGIN, "GitHub login (e.g. github-actions[bot])")(node, value)
    on_keys = "comment_on_kernel_keys" in keys and reader.boolean(
        keys["comment_on_kernel_keys"][1], "comment_on_kernel_keys"
    )
    listed = listed_backends(reader, keys["backends"][1], base_dir) if "backends" in keys else ()
    return BotConfig(
        subscriptions=subs,
        backends=listed,
        labels=labels,
        allowlist=paths["allowlist"],
        overrides=paths["overrides"],
        weekly=weekly,
        bot_login=bot_login,
        comment_on_kernel_keys=on_keys,
        path=display,
    )


def load_config(path: str) -> BotConfig:
    """Read and parse the config file at `path` (the one I/O step here, called by the CLI)."""
    return parse_config(read_text(path, "config", ConfigError), path, base_dir=os.path.dirname(path))
