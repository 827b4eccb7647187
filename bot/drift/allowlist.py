"""Acknowledged changes: an allow-list with an expiry date per entry, like PyTorch's FC/BC allow-list.

The file is a YAML list::

    - name: "aten::_foreach_*"        # glob on the operator name; "aten::" is optional
      reason: "new foreach overloads, kernels tracked in #123"
      expires: 2026-12-31
    - fingerprint: 3f9c0a1b2d4e       # a change's fingerprint, from any report
      name: "linalg_*"                # both given: both must match
      reason: "planned removal"
      expires: 2026-06-30

An entry needs `name` and/or `fingerprint`, a `reason`, and an `expires` date (YYYY-MM-DD). An entry
whose date has passed is ignored with a warning, so acknowledgements lapse instead of piling up.
An acknowledged change still shows in reports, collapsed, and never counts toward ``--fail-on``.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from opdrift.drift.changes import FINGERPRINT_LEN, Change, Drift
from opdrift.errors import ConfigError, YamlError
from opdrift.sources.read import read_text
from opdrift.yamltext import (
    BUILD_ERRORS,
    MAPPING,
    NODE_STRING,
    SEQUENCE,
    TIMESTAMP_TAG,
    NodeReader,
    build,
    check_unique_keys,
    compose_yaml_document,
    is_null,
    key_text,
)

_KEYS = frozenset({"name", "fingerprint", "reason", "expires"})
_FINGERPRINT = re.compile(rf"[0-9a-f]{{{FINGERPRINT_LEN}}}")
_PREFIX = "aten::"


@dataclass(frozen=True)
class AllowEntry:
    """One acknowledgement: what it matches, why, until when, and where it is written."""

    reason: str
    expires: dt.date
    name: str | None = None  # glob, without the "aten::" prefix
    fingerprint: str | None = None
    line: int = 0

    def matches(self, change: Change) -> bool:
        if self.fingerprint is not None and change.fingerprint != self.fingerprint:
            return False
        if self.name is not None:
            names = [change.name] + ([change.old_name] if change.old_name else [])
            if not any(fnmatch.fnmatchcase(n, self.name) for n in names):
                return False
        return True

    def describe(self) -> str:
        parts = []
        if self.name is not None:
            parts.append(f"name {self.name!r}")
        if self.fingerprint is not None:
            parts.append(f"fingerprint {self.fingerprint}")
        return " and ".join(parts)


@dataclass(frozen=True)
class AllowList:
    entries: tuple[AllowEntry, ...] = ()
    path: str = ""


@dataclass(frozen=True)
class Acknowledgement:
    """Why a change is acknowledged: the entry's reason and where the entry is written."""

    reason: str
    expires: dt.date
    where: str  # "allowlist.yaml:12"


@dataclass(frozen=True)
class Acknowledgements:
    """The result of applying an allow-list to a drift on a given day."""

    by_fingerprint: Mapping[str, Acknowledgement]
    warnings: tuple[str, ...] = ()

    def get(self, change: Change) -> Acknowledgement | None:
        return self.by_fingerprint.get(change.fingerprint)

    def __contains__(self, change: object) -> bool:
        return isinstance(change, Change) and change.fingerprint in self.by_fingerprint


NO_ACKNOWLEDGEMENTS = Acknowledgements(by_fingerprint={})


def parse_allowlist(text: str, display: str) -> AllowList:
    """Parse an allow-list file's text; any problem raises ConfigError naming display:line. The file is
    composed once and read node by node: each error is at the line of the entry or key it is about."""
    try:
        root = compose_yaml_document(text, display)
        check_unique_keys(root, display)
    except YamlError as err:
        raise ConfigError(err.message, path=err.path, line=err.line) from None
    if root is None or is_null(root):
        return AllowList((), display)
    reader = NodeReader(display, ConfigError)
    if not SEQUENCE.accepts(root):
        raise reader.error(root, "an allow-list is a YAML list of entries")
    return AllowList(tuple(_entry(reader, item) for item in SEQUENCE.convert(root)), display)


def _entry(reader: NodeReader, item: yaml.Node) -> AllowEntry:
    if not MAPPING.accepts(item):
        raise reader.error(item, "an allow-list entry is a mapping with name/fingerprint, reason and expires")
    keys: dict[str, yaml.Node] = {}  # key → its key node (an error points at the key's line)
    values: dict[str, yaml.Node] = {}  # key → its value; a null value counts as absent
    for key, value in MAPPING.convert(item):
        name = key_text(key)
        if name not in _KEYS:
            raise reader.error(
                key, f"unknown key {build(key)!r} (expected name, fingerprint, reason, expires)"
            )
        keys[name] = key
        if not is_null(value):
            values[name] = value

    def at(key: str) -> yaml.Node:
        return keys.get(key, item)

    if "name" not in values and "fingerprint" not in values:
        raise reader.error(item, "an allow-list entry needs a name pattern or a fingerprint (or both)")
    pattern = None
    if "name" in values:
        written = values["name"]
        if not NODE_STRING.accepts(written) or not str(written.value).strip():
            raise reader.error(at("name"), "name must be a non-empty string (a glob such as 'aten::foo*')")
        pattern = str(written.value).strip().removeprefix(_PREFIX)
    fp = None
    if "fingerprint" in values:
        # as written: YAML would read 012345678901 as an octal int
        node = values["fingerprint"]
        fp = str(node.value).strip().lower() if isinstance(node, yaml.ScalarNode) else ""
        if _FINGERPRINT.fullmatch(fp) is None:
            raise reader.error(
                at("fingerprint"), f"fingerprint must be {FINGERPRINT_LEN} hex digits, as reports print it"
            )
    reason = values.get("reason")
    if reason is None or not NODE_STRING.accepts(reason) or not str(reason.value).strip():
        raise reader.error(at("reason"), "every allow-list entry needs a reason")
    return AllowEntry(
        reason=str(reason.value).strip(),
        expires=_expires(reader, values.get("expires"), at("expires")),
        name=pattern,
        fingerprint=fp,
        line=item.start_mark.line + 1,
    )


def _expires(reader: NodeReader, node: yaml.Node | None, at: yaml.Node) -> dt.date:
    """A date YAML read as one (``2026-12-31``, or with a time) or a quoted ``"2026-12-31"``."""
    if isinstance(node, yaml.ScalarNode) and node.tag == TIMESTAMP_TAG:
        try:
            value = yaml.constructor.SafeConstructor().construct_yaml_timestamp(node)
        except BUILD_ERRORS as err:  # 2026-02-30: a timestamp with no such day
            raise reader.error(at, f"expires must be a date YYYY-MM-DD, got {node.value!r} ({err})") from None
        return value.date() if isinstance(value, dt.datetime) else value
    if node is not None and NODE_STRING.accepts(node):
        try:
            return dt.date.fromisoformat(str(node.value).strip())
        except ValueError:
            raise reader.error(at, f"expires must be a date YYYY-MM-DD, got {node.value!r}") from None
    raise reader.error(at, "every allow-list entry needs an expiry date 'expires: YYYY-MM-DD'")


def acknowledge(drift: Drift, allowlist: AllowList, *, today: dt.date) -> Acknowledgements:
    """Which changes of `drift` the allow-list acknowledges on `today`; expired entries only warn.

    An entry is valid through its `expires` day and lapses the day after.
    """
    warnings: list[str] = []
    live: list[AllowEntry] = []
    for e in allowlist.entries:
        if e.expires < today:
            warnings.append(
                f"{allowlist.path}:{e.line}: warning: allow-list entry ({e.describe()}) expired on "
                f"{e.expires.isoformat()} and is ignored"
            )
        else:
            live.append(e)
    acks: dict[str, Acknowledgement] = {}
    for change in drift.changes:
        for e in live:
            if e.matches(change):
                acks[change.fingerprint] = Acknowledgement(e.reason, e.expires, f"{allowlist.path}:{e.line}")
                break
    return Acknowledgements(acks, tuple(warnings))


def load_allowlist(path: str) -> AllowList:
    """Read and parse an allow-list file (the one I/O step here, called by the CLI)."""
    return parse_allowlist(read_text(path, "allow-list", ConfigError), path)
