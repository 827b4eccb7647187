"""The overrides file: a user's corrections to the taxonomy, one base operator → one bucket.

    reason: sorted by hand for our backend      # optional: the default reason for every entry
    overrides:
      arccos: alias                              # base name: bucket id
      glu:
        bucket: composite_pointwise
        reason: gated linear unit is elementwise on two halves

An override beats every rule; the snapshot records it as rule ``override`` with the reason. Bucket ids
are those of `bot.taxonomy.rules.BUCKETS`. A malformed file is a `ConfigError` naming file:line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from bot.errors import ConfigError, YamlError
from bot.model import Decision
from bot.sources.read import read_text
from bot.taxonomy.buckets import BUCKETS
from bot.yamltext import check_unique_keys, compose_yaml_document, read_yaml_document, split_lines

# The rule id an override records in place of the taxonomy rule it beats.
OVERRIDE_RULE = "override"

DEFAULT_REASON = "set in the overrides file"
_TOP_KEYS = frozenset({"overrides", "reason"})
_ENTRY_KEYS = frozenset({"bucket", "reason"})


@dataclass(frozen=True)
class Override:
    """One base operator's hand-chosen bucket and the reason given for it."""

    bucket: str
    reason: str


@dataclass(frozen=True)
class Overrides:
    """Base name → the bucket the user wants, with why. `display` names the file in messages."""

    entries: Mapping[str, Override] = field(default_factory=dict)
    display: str = ""
    lines: Mapping[str, int] = field(default_factory=dict)  # name → its line in the file, for messages

    def unmatched(self, bases: Iterable[str], source: str) -> list[str]:
        """One warning line per override whose name is no base operator of `bases` (a typo, or an
        operator that is gone): an override that matches nothing silently changes nothing."""
        import difflib  # here: only a stale or mistyped override needs it

        known = set(bases)
        out = []
        for name in self.entries:
            if name in known:
                continue
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            where = f"{self.display}:{self.lines[name]}" if name in self.lines else self.display
            out.append(f"{where}: override {name!r} matches no base operator of {source}{hint}")
        return out

    def decision(self, base: str) -> Decision | None:
        """The user's decision for `base`, recorded as rule "override", or None when it has none."""
        entry = self.entries.get(base)
        if entry is None:
            return None
        where = f" ({self.display})" if self.display else ""
        return Decision(bucket=entry.bucket, rule=OVERRIDE_RULE, reason=f"{entry.reason}{where}")


def _line_of(lines: list[str], key: str) -> int | None:
    """1-based line where `key:` is written (top level or nested), for error messages."""
    pattern = re.compile(rf"^\s*['\"]?{re.escape(key)}['\"]?\s*:")
    for i, line in enumerate(lines):
        if pattern.match(line):
            return i + 1
    return None


def parse_overrides(text: str, display: str) -> Overrides:
    """Read an overrides file's text (pure); `display` is the path used in errors."""
    data = read_yaml_document(text, display)
    try:
        check_unique_keys(compose_yaml_document(text, display), display)
    except YamlError as err:
        raise ConfigError(err.message, path=err.path, line=err.line) from None
    lines = split_lines(text)
    if data is None:
        return Overrides(display=display)
    if not isinstance(data, dict):
        raise ConfigError(
            "an overrides file must be a mapping with an `overrides:` key", path=display, line=1
        )
    for key in data:
        if key not in _TOP_KEYS:
            raise ConfigError(
                f"unknown key {key!r} (expected: overrides, reason)",
                path=display,
                line=_line_of(lines, str(key)),
            )
    default_reason = data.get("reason", DEFAULT_REASON)
    if not isinstance(default_reason, str):
        raise ConfigError("`reason:` must be a string", path=display, line=_line_of(lines, "reason"))
    table = data.get("overrides")
    if table is None:
        return Overrides(display=display)
    if not isinstance(table, dict):
        raise ConfigError(
            "`overrides:` must map base operator names to bucket ids",
            path=display,
            line=_line_of(lines, "overrides"),
        )
    entries: dict[str, Override] = {}
    name_lines: dict[str, int] = {}
    for raw_name, value in table.items():
        line = _line_of(lines, str(raw_name))
        if not isinstance(raw_name, str) or not raw_name:
            raise ConfigError(f"operator name must be a string, not {raw_name!r}", path=display, line=line)
        name = raw_name.removeprefix("aten::")  # written as the allow-list and PyTorch spell it
        if not name:
            raise ConfigError(f"operator name {raw_name!r} names no operator", path=display, line=line)
        if "." in name:
            raise ConfigError(
                f"{name!r}: overrides apply to base operators; write {name.split('.')[0]!r}",
                path=display,
                line=line,
            )
        reason = default_reason
        if isinstance(value, dict):
            extra = sorted(str(k) for k in value if k not in _ENTRY_KEYS)
            if extra:
                raise ConfigError(
                    f"{name}: unknown key {extra[0]!r} (expected: bucket, reason)", path=display, line=line
                )
            bucket = value.get("bucket")
            reason = value.get("reason", default_reason)
            if not isinstance(reason, str):
                raise ConfigError(f"{name}: `reason:` must be a string", path=display, line=line)
        else:
            bucket = value
        if not isinstance(bucket, str) or bucket not in BUCKETS:
            raise ConfigError(
                f"{name}: unknown bucket {bucket!r} (expected one of: {', '.join(BUCKETS)})",
                path=display,
                line=line,
            )
        if name in entries:
            first = name_lines.get(name)
            where = f" (first at line {first})" if first is not None else ""
            raise ConfigError(f"{name}: overridden twice{where}", path=display, line=line)
        entries[name] = Override(bucket=bucket, reason=reason)
        if line is not None:
            name_lines[name] = line
    return Overrides(entries=MappingProxyType(entries), display=display, lines=MappingProxyType(name_lines))


def load_overrides(path: str) -> Overrides:
    """Read and parse an overrides file; a missing or unreadable file is a ConfigError."""
    return parse_overrides(read_text(path, "overrides file", ConfigError), path)
