"""The bot's config file: who to @mention for which changes, labels, allow-list and overrides paths.

Reference: docs/config.md. Validation is strict (unknown keys, wrong types, bad handles, unknown
buckets or facets, duplicate keys) and every error names ``file:line`` of the offending node, so the
file is read twice: once through `read_yaml_document` (which reports YAML syntax errors with their
line) and once composed into nodes, whose marks give the lines.

What a subscription matches, the handles to mention and the backend gaps are worked out by
`bot.app.subscriptions`; this module only reads and checks the file (it reads no backend list).
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import yaml

from bot.coverage.oplist import BACKEND_KINDS, BackendKind
from bot.drift.flags import FACETS
from bot.errors import ConfigError, SourceError, YamlError
from bot.publish.backend_names import NAME_MAX, default_name
from bot.publish.ghfiles import PREFIX as GH_PREFIX
from bot.publish.ghfiles import parse_path_spec
from bot.shapes import Kind
from bot.sources.read import read_text
from bot.taxonomy.buckets import BUCKETS
from bot.text import did_you_mean
from bot.yamltext import MAPPING, SEQUENCE, NodeReader, compose_yaml_document, read_yaml_document, tagged

TITLE_FIELDS = ("week", "base", "head")
DEFAULT_TITLE = "Operator drift {week} ({base}..{head})"

# GitHub logins: alphanumerics and single inner hyphens, at most 39; team slugs are looser.
_USER = r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
_HANDLE = re.compile(rf"@?({_USER})(?:/([A-Za-z0-9][A-Za-z0-9._-]{{0,99}}))?")
_DISPATCH_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_TAG = re.compile(r"[a-z][a-z0-9_]*")
_LABEL_MAX = 50  # GitHub's limit on a label name

_SLUG = re.compile(rf"{_USER}/[A-Za-z0-9._-]{{1,100}}")
# The issue links to it: an https URL that `bot.text.link` links (host and path, no query), so what the
# config accepts is what the issue shows.
_SITE_URL = re.compile(r"https://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~%/+-]*)?")
BOT_LOGIN = re.compile(rf"{_USER}(?:\[bot\])?")  # a user, or an app's bot account ("github-actions[bot]")
DEFAULT_UPSTREAM = "pytorch/pytorch"
MAX_CHART_POINTS = 100  # timeline.CHART_MAX_POINTS: more would be sampled anyway

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_BOOL = "tag:yaml.org,2002:bool"


@dataclass(frozen=True)
class BackendSpec:
    """A subscription's backend op list: `kind` as `opdrift coverage --backend` takes it, and `value`
    as written in the config (a path, or a dispatch key for ``dispatch``); `resolved` is the path
    against the config file's directory."""

    kind: BackendKind
    value: str
    resolved: str
    line: int = field(default=0, compare=False)  # the first subscription naming it; not its identity
    value_line: int = field(default=0, compare=False)  # where `value` is written (its `key:` or `path:`)
    # what every report calls the backend (`name:`, else `default_name`): a maintainer reads "dlprim",
    # not "cpp ../src"; not its identity either (the list is)
    name: str = field(default="", compare=False)

    @property
    def label(self) -> str:
        return self.name or default_name(self.kind, self.value, self.resolved)

    def missing(self, config_path: str) -> str | None:
        """One line when the list is not there, saying what `value` was resolved against: a path is
        relative to the config file's directory (.github/ for .github/opdrift.yml), not the repository's
        root, and `path: codegen/x.yaml` there means .github/codegen/x.yaml. None when it is there."""
        if self.kind == "dispatch" or self.value.startswith(GH_PREFIX) or os.path.exists(self.resolved):
            return None
        where = os.path.dirname(config_path) or "."
        hint = ""
        beside = os.path.normpath(os.path.join(where, os.pardir, self.value))
        if where not in (".", "") and os.path.exists(beside):
            hint = f"; {self.value} from the directory above is there: write {os.path.relpath(beside, where)}"
        return (
            f"{self.value}: no such file or directory ({self.resolved}: paths are relative to the config "
            f"file's directory, {where}/){hint}"
        )


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


@dataclass(frozen=True)
class ListedBackend:
    """An item of `backends:`: a downstream backend whose impact the PR comment shows (no one is
    mentioned). Its `spec.value` is a local path or a ``gh:OWNER/NAME@REF:PATH`` spec, which
    `spec.resolved` keeps as written (`bot.publish.ghfiles` reads it)."""

    name: str
    spec: BackendSpec
    line: int = field(default=0, compare=False)

    @property
    def remote(self) -> bool:
        return self.spec.value.startswith(GH_PREFIX)


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
        if backend is not None and backend.kind == "dispatch" and backend.value not in dispatch_keys:
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


# What the config's values must be, as kinds over composed nodes (the node gives the error its line);
# the tag, not the text, decides: `"1"` is a string, `1` an int, `yes` a bool.
_LIST = SEQUENCE
_STRING: Kind[str] = Kind(
    "a string (quote it if YAML reads it as another type)", tagged(_STR), lambda n: str(n.value)
)
_BOOLEAN: Kind[bool] = Kind(
    "true or false", tagged(_BOOL), lambda n: str(n.value).lower() in ("true", "yes", "on", "y")
)
# YAML 1.1 ints include 0x10, 0o17, 1_000 and 1:30 (base 60): build it as YAML does
_POINTS: Kind[int] = Kind(
    "a number of points (0 for no chart)",
    tagged(_INT),
    lambda n: int(yaml.constructor.SafeConstructor().construct_yaml_int(n)),
)


class _Reader(NodeReader):
    """Typed access to composed YAML nodes, raising ConfigError at the node's line."""

    def __init__(self, display: str) -> None:
        super().__init__(display, ConfigError)

    def mapping(
        self, node: yaml.Node, what: str, keys: tuple[str, ...]
    ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in self.read(MAPPING, node, what, node):
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _STR else None
            if key is None:
                raise self.error(key_node, f"{what}: keys must be strings")
            if key not in keys:
                raise self.error(
                    key_node, f"{what}: unknown key {key!r} (expected one of: {', '.join(keys)})"
                )
            if key in out:
                raise self.error(key_node, f"{what}: duplicate key {key!r}")
            out[key] = (key_node, value_node)
        return out

    def string(self, node: yaml.Node, what: str) -> str:
        value = self.read(_STRING, node, what, node)
        if not value.strip():
            raise self.error(node, f"{what} must not be empty")
        return value

    def boolean(self, node: yaml.Node, what: str) -> bool:
        return self.read(_BOOLEAN, node, what, node)

    def strings(
        self, node: yaml.Node, what: str, check: Callable[[yaml.Node, str], str] | None = None
    ) -> tuple[str, ...]:
        out: list[str] = []
        for item in self.read(SEQUENCE, node, what, node):
            value = self.string(item, f"each item of {what}")
            out.append(check(item, value) if check else value)
        return tuple(dict.fromkeys(out))


def _handle(reader: _Reader) -> Callable[[yaml.Node, str], str]:
    def check(node: yaml.Node, value: str) -> str:
        m = _HANDLE.fullmatch(value.strip())
        if m is None:
            raise reader.error(
                node,
                f'{value!r} is not a GitHub handle: use "@user" or "@org/team" (quoted: YAML reserves @)',
            )
        return "@" + m.group(0).lstrip("@")

    return check


def _one_of(reader: _Reader, allowed: tuple[str, ...], kind: str) -> Callable[[yaml.Node, str], str]:
    def check(node: yaml.Node, value: str) -> str:
        if value not in allowed:
            raise reader.error(node, f"unknown {kind} {value!r} (expected one of: {', '.join(allowed)})")
        return value

    return check


def _pattern(reader: _Reader, regex: re.Pattern[str], kind: str) -> Callable[[yaml.Node, str], str]:
    def check(node: yaml.Node, value: str) -> str:
        if regex.fullmatch(value) is None:
            raise reader.error(node, f"{value!r} is not a valid {kind}")
        return value

    return check


def _label(reader: _Reader) -> Callable[[yaml.Node, str], str]:
    def check(node: yaml.Node, value: str) -> str:
        if len(value) > _LABEL_MAX or "," in value:
            raise reader.error(node, f"label {value!r}: at most {_LABEL_MAX} characters and no commas")
        return value

    return check


_SUB_KEYS = ("who", "buckets", "facets", "tags", "dispatch_keys", "backend")
_MATCHERS = _SUB_KEYS[1:]


def _name(reader: _Reader, node: yaml.Node, what: str) -> str:
    name = reader.string(node, f"{what}: name").strip()
    if len(name) > NAME_MAX or "\n" in name:
        raise reader.error(node, f"{what}: name: one line of at most {NAME_MAX} characters")
    return name


def _backend(reader: _Reader, node: yaml.Node, what: str, base_dir: str) -> BackendSpec:
    what = f"{what}: backend"
    keys = reader.mapping(node, what, ("name", "kind", "path", "key"))
    name = _name(reader, keys["name"][1], what) if "name" in keys else ""
    if "kind" not in keys:
        raise reader.error(node, f"{what} has no `kind:` (one of: {', '.join(BACKEND_KINDS)})")
    kind_node = keys["kind"][1]
    raw = reader.string(kind_node, f"{what}: kind")
    kind = next((k for k in BACKEND_KINDS if k == raw), None)
    if kind is None:
        raise reader.error(
            kind_node, f"unknown backend kind {raw!r} (expected one of: {', '.join(BACKEND_KINDS)})"
        )
    line = node.start_mark.line + 1
    if kind == "dispatch":
        if "path" in keys:
            raise reader.error(keys["path"][0], f"{what}: kind dispatch takes `key:` (e.g. MPS), not `path:`")
        if "key" not in keys:
            raise reader.error(node, f"{what}: kind dispatch needs `key:`, a dispatch key such as MPS")
        key = _pattern(reader, _DISPATCH_KEY, "dispatch key")(
            keys["key"][1], reader.string(keys["key"][1], f"{what}: key")
        )
        return BackendSpec(kind, key, key, line, keys["key"][1].start_mark.line + 1, name)
    if "key" in keys:
        raise reader.error(
            keys["key"][0], f"{what}: `key:` is only for kind dispatch; kind {kind} takes `path:`"
        )
    if "path" not in keys:
        raise reader.error(node, f"{what}: kind {kind} needs `path:`, the backend's op list")
    path = reader.string(keys["path"][1], f"{what}: path")
    value_line = keys["path"][1].start_mark.line + 1
    return BackendSpec(kind, path, os.path.normpath(os.path.join(base_dir, path)), line, value_line, name)


# Each list is read before the comment is posted (a gh: one costs a few requests) and has its row: a
# table for the backends a PyTorch author should weigh, not a registry of every fork.
MAX_BACKENDS = 20
_BACKENDS_KEYS = ("name", "kind", "path")


def _listed_backend(reader: _Reader, node: yaml.Node, index: int, base_dir: str) -> ListedBackend:
    """One item of `backends:`: name, kind and path; the path is local (against the config file's
    directory, as a subscription's) or a ``gh:OWNER/NAME@REF:PATH`` spec, checked here."""
    what = f"backends: item {index + 1}"
    keys = reader.mapping(node, what, _BACKENDS_KEYS)
    for key in _BACKENDS_KEYS:
        if key not in keys:
            raise reader.error(node, f"{what} has no `{key}:`")
    name = _name(reader, keys["name"][1], what)
    kind_node = keys["kind"][1]
    raw = reader.string(kind_node, f"{what}: kind")
    kind = next((k for k in BACKEND_KINDS if k == raw), None)
    # A dispatch key's kernels live in native_functions.yaml itself: the PR changes them, and the
    # drift's own sections show it; this table is for backends built outside PyTorch.
    listed = tuple(k for k in BACKEND_KINDS if k != "dispatch")
    if kind is None or kind == "dispatch":
        said = (
            "kind dispatch: an in-tree dispatch key is not a downstream backend"
            if kind
            else f"unknown backend kind {raw!r}"
        )
        raise reader.error(kind_node, f"{what}: {said} (expected one of: {', '.join(listed)})")
    path_node = keys["path"][1]
    path = reader.string(path_node, f"{what}: path").strip()
    line, value_line = node.start_mark.line + 1, path_node.start_mark.line + 1
    if path.startswith(GH_PREFIX):
        try:
            parse_path_spec(path)
        except SourceError as err:
            raise reader.error(path_node, f"{what}: path: {err.message}") from None
        resolved = path
    else:
        resolved = os.path.normpath(os.path.join(base_dir, path))
    return ListedBackend(name, BackendSpec(kind, path, resolved, line, value_line, name), line)


def _backends(reader: _Reader, node: yaml.Node, base_dir: str) -> tuple[ListedBackend, ...]:
    out: list[ListedBackend] = []
    seen: dict[str, int] = {}
    items = reader.read(_LIST, node, "backends", node)
    if len(items) > MAX_BACKENDS:
        raise reader.error(node, f"backends: {len(items)} items, at most {MAX_BACKENDS}")
    for index, item in enumerate(items):
        backend = _listed_backend(reader, item, index, base_dir)
        if backend.name.lower() in seen:
            raise reader.error(
                item,
                f"backends: item {index + 1}: name {backend.name!r} is item {seen[backend.name.lower()]}'s too",
            )
        seen[backend.name.lower()] = index + 1
        out.append(backend)
    return tuple(out)


def _subscription(reader: _Reader, node: yaml.Node, index: int, base_dir: str = "") -> Subscription:
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
        "buckets": _one_of(reader, BUCKETS, "bucket"),
        "facets": _one_of(reader, FACETS, "facet"),
        "tags": _pattern(reader, _TAG, "tag name"),
        "dispatch_keys": _pattern(reader, _DISPATCH_KEY, "dispatch key"),
    }
    values: dict[str, tuple[str, ...]] = {}
    value_lines: list[tuple[str, str, int]] = []
    backend = _backend(reader, keys["backend"][1], what, base_dir) if "backend" in keys else None
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


def _title_format(reader: _Reader, node: yaml.Node) -> str:
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


def _chart(reader: _Reader, node: yaml.Node) -> int:
    value = reader.read(_POINTS, node, "weekly: chart", node)
    if not 0 <= value <= MAX_CHART_POINTS:
        raise reader.error(node, f"weekly: chart must be between 0 and {MAX_CHART_POINTS}, got {value}")
    return value


def _weekly(reader: _Reader, node: yaml.Node) -> WeeklyConfig:
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
        kwargs["upstream"] = _pattern(reader, _SLUG, "repository (OWNER/NAME)")(
            keys["upstream"][1], reader.string(keys["upstream"][1], "weekly: upstream")
        )
    if "chart" in keys:
        kwargs["chart"] = _chart(reader, keys["chart"][1])
    if "site_url" in keys:
        kwargs["site_url"] = _pattern(
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
    reader = _Reader(display)
    keys = reader.mapping(node, "the config", _TOP_KEYS)
    subs: tuple[Subscription, ...] = ()
    if "subscriptions" in keys:
        sub_node = keys["subscriptions"][1]
        items = reader.read(_LIST, sub_node, "subscriptions", sub_node)
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
        bot_login = _pattern(reader, BOT_LOGIN, "GitHub login (e.g. github-actions[bot])")(node, value)
    on_keys = "comment_on_kernel_keys" in keys and reader.boolean(
        keys["comment_on_kernel_keys"][1], "comment_on_kernel_keys"
    )
    listed = _backends(reader, keys["backends"][1], base_dir) if "backends" in keys else ()
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
