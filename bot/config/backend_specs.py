"""A backend's list as the config names it: a subscription's `backend:` and the items of `backends:`,
read and checked (`opdrift.config.file` reads the rest of the file). A path is resolved against the
config file's directory; a ``gh:OWNER/NAME@REF:PATH`` spec is checked here and read by
`opdrift.github.ghfiles`; no list is read here."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import yaml

from opdrift.config.backend_names import NAME_MAX, default_name
from opdrift.config.nodes import ConfigReader, pattern
from opdrift.coverage.kinds import BACKEND_KINDS, KIND_BY_ID, BackendKind, backend_key, parse_kind
from opdrift.errors import SourceError
from opdrift.github.ghfiles import PREFIX as GH_PREFIX
from opdrift.github.ghfiles import parse_path_spec
from opdrift.yamltext import SEQUENCE

DISPATCH_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


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

    @property
    def key(self) -> str:
        """The list's key across runs and reports (`opdrift.coverage.kinds.backend_key`)."""
        return backend_key(self.kind, self.value)

    def missing(self, config_path: str) -> str | None:
        """One line when the list is not there, saying what `value` was resolved against: a path is
        relative to the config file's directory (.github/ for .github/opdrift.yml), not the repository's
        root, and `path: codegen/x.yaml` there means .github/codegen/x.yaml. None when it is there."""
        if (
            KIND_BY_ID[self.kind].in_pytorch
            or self.value.startswith(GH_PREFIX)
            or os.path.exists(self.resolved)
        ):
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
class ListedBackend:
    """An item of `backends:`: a downstream backend whose impact the PR comment shows (no one is
    mentioned). Its `spec.value` is a local path or a ``gh:OWNER/NAME@REF:PATH`` spec, which
    `spec.resolved` keeps as written (`opdrift.github.ghfiles` reads it)."""

    name: str
    spec: BackendSpec
    line: int = field(default=0, compare=False)

    @property
    def remote(self) -> bool:
        return self.spec.value.startswith(GH_PREFIX)


def read_name(reader: ConfigReader, node: yaml.Node, what: str) -> str:
    name = reader.string(node, f"{what}: name").strip()
    if len(name) > NAME_MAX or "\n" in name:
        raise reader.error(node, f"{what}: name: one line of at most {NAME_MAX} characters")
    return name


def subscription_backend(reader: ConfigReader, node: yaml.Node, what: str, base_dir: str) -> BackendSpec:
    what = f"{what}: backend"
    keys = reader.mapping(node, what, ("name", "kind", "path", "key"))
    name = read_name(reader, keys["name"][1], what) if "name" in keys else ""
    if "kind" not in keys:
        raise reader.error(node, f"{what} has no `kind:` (one of: {', '.join(BACKEND_KINDS)})")
    kind_node = keys["kind"][1]
    raw = reader.string(kind_node, f"{what}: kind")
    kind = parse_kind(raw)
    if kind is None:
        raise reader.error(
            kind_node, f"unknown backend kind {raw!r} (expected one of: {', '.join(BACKEND_KINDS)})"
        )
    line = node.start_mark.line + 1
    if KIND_BY_ID[kind].in_pytorch:
        if "path" in keys:
            raise reader.error(keys["path"][0], f"{what}: kind {kind} takes `key:` (e.g. MPS), not `path:`")
        if "key" not in keys:
            raise reader.error(node, f"{what}: kind {kind} needs `key:`, a dispatch key such as MPS")
        key = pattern(reader, DISPATCH_KEY, "dispatch key")(
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


def _listed_backend(reader: ConfigReader, node: yaml.Node, index: int, base_dir: str) -> ListedBackend:
    """One item of `backends:`: name, kind and path; the path is local (against the config file's
    directory, as a subscription's) or a ``gh:OWNER/NAME@REF:PATH`` spec, checked here."""
    what = f"backends: item {index + 1}"
    keys = reader.mapping(node, what, _BACKENDS_KEYS)
    for key in _BACKENDS_KEYS:
        if key not in keys:
            raise reader.error(node, f"{what} has no `{key}:`")
    name = read_name(reader, keys["name"][1], what)
    kind_node = keys["kind"][1]
    raw = reader.string(kind_node, f"{what}: kind")
    kind = parse_kind(raw)
    # A dispatch key's kernels live in native_functions.yaml itself: the PR changes them, and the
    # drift's own sections show it; this table is for backends built outside PyTorch.
    listed = tuple(k for k in BACKEND_KINDS if not KIND_BY_ID[k].in_pytorch)
    if kind is None or KIND_BY_ID[kind].in_pytorch:
        said = (
            f"kind {kind}: an in-tree dispatch key is not a downstream backend"
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


def listed_backends(reader: ConfigReader, node: yaml.Node, base_dir: str) -> tuple[ListedBackend, ...]:
    out: list[ListedBackend] = []
    seen: dict[str, int] = {}
    items = reader.read(SEQUENCE, node, "backends", node)
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
