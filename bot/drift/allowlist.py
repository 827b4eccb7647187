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

from bot.drift.changes import FINGERPRINT_LEN, Change, Drift
from bot.errors import ConfigError, YamlError
from bot.sources.read import read_text
from bot.yamltext import check_unique_keys, compose_yaml_document, read_yaml_document

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


@dataclass(frozen=True)
class _ItemMarks:
    line: int
    key_lines: Mapping[str, int]
    raw: Mapping[str, str]  # scalar values as written: YAML would read 012345678901 as an octal int


def _item_marks(text: str, display: str) -> list[_ItemMarks]:
    """For each list item: its 1-based line, the line of each of its keys and their raw scalars."""
    node = compose_yaml_document(text, display)
    check_unique_keys(node, display)
    out: list[_ItemMarks] = []
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            keys: dict[str, int] = {}
            raw: dict[str, str] = {}
            if isinstance(item, yaml.MappingNode):
                for k, v in item.value:
                    keys[str(k.value)] = k.start_mark.line + 1
                    if isinstance(v, yaml.ScalarNode):
                        raw[str(k.value)] = str(v.value)
            out.append(_ItemMarks(item.start_mark.line + 1, keys, raw))
    return out


def parse_allowlist(text: str, display: str) -> AllowList:
    """Parse an allow-list file's text; any problem raises ConfigError naming display:line."""
    try:
        data = read_yaml_document(text, display)
    except YamlError as err:
        raise ConfigError(err.message, path=err.path, line=err.line) from None
    if data is None:
        return AllowList((), display)
    if not isinstance(data, list):
        raise ConfigError("an allow-list is a YAML list of entries", path=display, line=1)
    try:
        marks = _item_marks(text, display)
    except YamlError as err:
        raise ConfigError(err.message, path=err.path, line=err.line) from None
    entries: list[AllowEntry] = []
    for i, item in enumerate(data):
        mark = marks[i] if i < len(marks) else _ItemMarks(0, {}, {})
        line = mark.line

        def fail(message: str, key: str | None = None, mark: _ItemMarks = mark) -> ConfigError:
            return ConfigError(message, path=display, line=mark.key_lines.get(key or "", mark.line) or None)

        if not isinstance(item, dict):
            raise fail("an allow-list entry is a mapping with name/fingerprint, reason and expires")
        unknown = sorted(str(k) for k in item if k not in _KEYS)
        if unknown:
            raise fail(
                f"unknown key {unknown[0]!r} (expected name, fingerprint, reason, expires)", unknown[0]
            )
        name, fp, reason, expires = (
            item.get("name"),
            item.get("fingerprint"),
            item.get("reason"),
            item.get("expires"),
        )
        if name is None and fp is None:
            raise fail("an allow-list entry needs a name pattern or a fingerprint (or both)")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise fail("name must be a non-empty string (a glob such as 'aten::foo*')", "name")
        if fp is not None:
            fp = mark.raw.get("fingerprint", str(fp)).strip().lower()
            if _FINGERPRINT.fullmatch(fp) is None:
                raise fail(
                    f"fingerprint must be {FINGERPRINT_LEN} hex digits, as reports print it", "fingerprint"
                )
        if not isinstance(reason, str) or not reason.strip():
            raise fail("every allow-list entry needs a reason", "reason" if "reason" in item else None)
        if isinstance(expires, dt.datetime):
            expires = expires.date()
        elif isinstance(expires, str):
            try:
                expires = dt.date.fromisoformat(expires.strip())
            except ValueError:
                raise fail(f"expires must be a date YYYY-MM-DD, got {expires!r}", "expires") from None
        if not isinstance(expires, dt.date):
            raise fail(
                "every allow-list entry needs an expiry date 'expires: YYYY-MM-DD'",
                "expires" if "expires" in item else None,
            )
        pattern = name.strip() if isinstance(name, str) else None
        if pattern is not None and pattern.startswith(_PREFIX):
            pattern = pattern[len(_PREFIX) :]
        entries.append(
            AllowEntry(reason=reason.strip(), expires=expires, name=pattern, fingerprint=fp, line=line)
        )
    return AllowList(tuple(entries), display)


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
