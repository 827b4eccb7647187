"""The bot's config file: who to @mention for which changes, labels, allow-list and overrides paths.

Reference: docs/config.md. Validation is strict (unknown keys, wrong types, bad handles, unknown
buckets or facets, duplicate keys) and every error names ``file:line`` of the offending node, so the
file is read twice: once through `read_yaml_document` (which reports YAML syntax errors with their
line) and once composed into nodes, whose marks give the lines.

Matching: within one subscription, each given matcher kind must match (AND across `buckets`,
`facets`, `tags`, `dispatch_keys`), and within a kind any listed value may match (OR). So
``facets: [new_core, needs_kernel]`` means either, and ``buckets: [primitive_pointwise]`` plus
``facets: [needs_kernel]`` means both.

A subscription may also name its backend's op list (``backend: {kind: xla, path: ...}``). It then
matches only new or changed operators that the backend lacks at HEAD, and the operators it
implements whose kernel no longer builds in the form the backend writes it (`BackendSpec.breaks`).
The caller works those out with `bot.coverage.check` and passes them in as `lacking` and
`implemented` (this module reads no backend list: it stays pure).
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

import yaml

from bot.coverage.check import judge_in_form, judged_form
from bot.coverage.oplist import BACKEND_KINDS, BackendKind
from bot.drift.changes import Change
from bot.drift.flags import FACETS, FLAGS
from bot.errors import ConfigError, YamlError
from bot.render.context import BackendGap
from bot.schema.kernel import KernelForm
from bot.shapes import Kind
from bot.sources.read import read_text
from bot.taxonomy.buckets import BUCKETS
from bot.taxonomy.scope import scope_of
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


# Kinds whose list feeds a codegen that refuses an operator name upstream no longer has, so an op
# upstream removes breaks the build while the backend still lists it: torchgen's gen_backend_stubs
# (`create_backend_index` raises "Found an invalid operator name", torchgen of 2.14.0), which builds
# torch_xla's kernels from its yaml, and torch_npu's own codegen/gen_backend_stubs.py (the same
# assert), which reads its npu_native_functions.yaml and op-plugin's yaml. A C++ `m.impl` of a name no
# schema defines still compiles (the dispatcher takes an impl without a def), and torch-xpu-ops
# generates its registrations from its own native_functions.yaml, not xpu_functions.yaml: not these.
REMOVAL_BREAKS: frozenset[BackendKind] = frozenset({"xla", "op-plugin", "torch-npu"})


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

    def concerns(self, change: Change) -> bool:
        """Whether a change is work for a backend that lacks the op: a new (or renamed) op, one whose
        kernel's C++ signature changed, or one that lost the kernel PyTorch gave some kind of backend.

        A removed op cannot be lacked; a tag or bucket change asks nothing of a kernel; an op only
        some backends need (a cuDNN or CUDA-only one: `bot.taxonomy.scope`) is not another backend's
        gap. A change that only moved in-tree kernels of *other* dispatch keys says nothing new to
        this backend; for a ``dispatch`` backend, a change to its own key's kernel does.
        """
        if change.kind == "removed":
            return False
        if change.kernels_only:
            return self.kind == "dispatch" and any(d.subject == self.value for d in change.details)
        if not scope_of(change.record).generic:
            return False
        return change.kind in ("added", "renamed") or change.kernel == "breaking" or change.needs_kernel

    def breaks(self, change: Change, form: KernelForm | None, torch_version: str | None) -> bool:
        """Whether a change breaks the build of the kernel this backend implements for the op, written
        in FORM (None: not known, so judged as every form would be), against torch TORCH_VERSION
        (HEAD's). A SymInt-only change leaves an int64_t kernel building from 1.13 on, and before it
        every kernel is judged in the SymInt form (`bot.coverage.check.judged_form`, as coverage's
        alerts are). An op upstream removes breaks the build of a backend whose codegen refuses the
        name (`REMOVAL_BREAKS`). An in-tree ``dispatch`` key's kernels are changed by the same PR, and
        torch-mlir writes no C++ kernel (it lowers by types)."""
        if change.kind == "removed":
            return self.kind in REMOVAL_BREAKS
        if self.kind in ("dispatch", "torch-mlir") or change.kind != "changed":
            return False
        if not change.kernel_changes:
            return change.kernel == "breaking"  # a schema that does not parse: no signature to judge
        return judge_in_form(change.kernel_changes, judged_form(form, torch_version)) == "breaking"

    def removes(self, change: Change) -> bool:
        """A change removes an op this backend's build refuses to lose (see `breaks`)."""
        return change.kind == "removed" and self.kind in REMOVAL_BREAKS


@dataclass(frozen=True)
class Kernels:
    """The operators a backend lists, each with the form its kernel is written in (None: not known),
    and the torch version they are built against (HEAD's): before 1.13 that decides the form they are
    judged in (`BackendSpec.breaks`)."""

    forms: Mapping[str, KernelForm | None]
    torch_version: str | None


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

    def matches(
        self,
        change: Change,
        lacking: frozenset[str] | None = None,
        implemented: Kernels | None = None,
    ) -> bool:
        """`lacking`: the operators this subscription's backend needs a kernel for at HEAD (required
        when it names a backend); `implemented`: the operators it lists, each with the form its kernel
        is written in, and HEAD's torch version."""
        if self.backend is not None:
            if lacking is None:
                raise ValueError(f"subscription at line {self.line} names a backend: pass what it lacks")
            if not (
                (self.backend.concerns(change) and change.name in lacking)
                or self.breaks_kernel(change, implemented)
            ):
                return False
        records = [r for r in (change.before, change.after) if r is not None]
        if self.buckets and not ({change.category} | {r.bucket for r in records}) & set(self.buckets):
            return False
        if self.facets and not any(FLAGS[f](change) for f in self.facets):
            return False
        if self.tags and not {t for r in records for t in r.facets.tags} & set(self.tags):
            return False
        keys = {k for r in records for k in r.facets.dispatch}
        return not self.dispatch_keys or bool(keys & set(self.dispatch_keys))

    def breaks_kernel(self, change: Change, implemented: Kernels | None) -> bool:
        """The subscription's backend implements the op, and the change breaks its kernel's build."""
        if self.backend is None or implemented is None or change.name not in implemented.forms:
            return False
        return self.backend.breaks(change, implemented.forms[change.name], implemented.torch_version)


@dataclass(frozen=True)
class WeeklyConfig:
    close_previous: bool = False
    link_previous: bool = True
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


Lacking = Mapping[BackendSpec, frozenset[str]]
# Each backend → the operators it lists (`Kernels`).
Implemented = Mapping[BackendSpec, "Kernels"]


def backend_specs(config: BotConfig) -> tuple[BackendSpec, ...]:
    """The distinct backend lists the subscriptions name, in config order (each read once)."""
    return tuple(dict.fromkeys(s.backend for s in config.subscriptions if s.backend is not None))


def _lacking_for(sub: Subscription, lacking: Lacking | None) -> frozenset[str] | None:
    if sub.backend is None:
        return None
    if lacking is None or sub.backend not in lacking:
        raise ValueError(f"no coverage given for the backend of the subscription at line {sub.line}")
    return lacking[sub.backend]


def _implemented_for(sub: Subscription, implemented: Implemented | None) -> Kernels | None:
    if sub.backend is None or implemented is None:
        return None
    return implemented.get(sub.backend)


def mentions_for(
    config: BotConfig,
    changes: Iterable[Change],
    lacking: Lacking | None = None,
    implemented: Implemented | None = None,
) -> tuple[str, ...]:
    """The handles whose subscriptions matched at least one change, in config order, each once.

    `lacking` maps each backend of `backend_specs(config)` to the operators it needs a kernel for at
    HEAD; `implemented` to the operators it lists, with their kernel forms.
    """
    pending = list(changes)
    seen: dict[str, str] = {}  # GitHub handles are case-insensitive: lower-cased → as first written
    for sub in config.subscriptions:
        gap = _lacking_for(sub, lacking)
        listed = _implemented_for(sub, implemented)
        if any(sub.matches(c, gap, listed) for c in pending):
            for handle in sub.who:
                seen.setdefault(handle.lower(), handle)
    return tuple(seen.values())


def backend_gaps(
    config: BotConfig, changes: Iterable[Change], lacking: Lacking, implemented: Implemented | None = None
) -> tuple[BackendGap, ...]:
    """One gap per backend subscription that matched something, in config order: the ops it lacks,
    and apart the ops it implements whose kernel no longer builds in its form, and those upstream
    removed that its list still names (its codegen refuses them)."""
    pending = list(changes)
    out = []
    for sub in config.subscriptions:
        if sub.backend is None:
            continue
        gap = _lacking_for(sub, lacking)
        listed = _implemented_for(sub, implemented)
        matched = [c for c in pending if sub.matches(c, gap, listed)]
        broken = {c.name for c in matched if sub.breaks_kernel(c, listed)}
        removed = {c.name for c in matched if c.name in broken and sub.backend.removes(c)}
        names = sorted({c.name for c in matched} - broken)
        if names or broken:
            out.append(
                BackendGap(
                    sub.who,
                    sub.backend.kind,
                    sub.backend.value,
                    tuple(names),
                    tuple(sorted(broken - removed)),
                    tuple(sorted(removed)),
                )
            )
    return tuple(out)


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


def _backend(reader: _Reader, node: yaml.Node, what: str, base_dir: str) -> BackendSpec:
    what = f"{what}: backend"
    keys = reader.mapping(node, what, ("kind", "path", "key"))
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
        return BackendSpec(kind, key, key, line, keys["key"][1].start_mark.line + 1)
    if "key" in keys:
        raise reader.error(
            keys["key"][0], f"{what}: `key:` is only for kind dispatch; kind {kind} takes `path:`"
        )
    if "path" not in keys:
        raise reader.error(node, f"{what}: kind {kind} needs `path:`, the backend's op list")
    path = reader.string(keys["path"][1], f"{what}: path")
    value_line = keys["path"][1].start_mark.line + 1
    return BackendSpec(kind, path, os.path.normpath(os.path.join(base_dir, path)), line, value_line)


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
        node, "weekly", ("close_previous", "link_previous", "title_format", "upstream", "chart", "site_url")
    )
    kwargs: dict[str, object] = {}
    for key in ("close_previous", "link_previous"):
        if key in keys:
            kwargs[key] = reader.boolean(keys[key][1], f"weekly: {key}")
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
    return BotConfig(
        subscriptions=subs,
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
