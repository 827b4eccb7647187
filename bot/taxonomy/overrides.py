"""The overrides file: a user's corrections to the taxonomy, one base operator → one bucket.

    reason: sorted by hand for our backend      # optional: the default reason for every entry
    overrides:
      arccos: alias                              # base name: bucket id
      glu:
        bucket: composite_pointwise
        reason: gated linear unit is elementwise on two halves

An override beats every rule; the snapshot records it as rule ``override`` with the reason. Bucket ids
are those of `opdrift.taxonomy.buckets.BUCKETS`. A malformed file is a `ConfigError` naming file:line.

Classification reads no files: the edge (`opdrift.app.overrides.load_overrides`) reads this one and
hands its text to `parse_overrides`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import yaml

from opdrift.errors import ConfigError, YamlError
from opdrift.model import Decision
from opdrift.taxonomy.buckets import BUCKETS
from opdrift.yamltext import (
    MAPPING,
    NODE_STRING,
    NodeReader,
    build,
    check_unique_keys,
    compose_yaml_document,
    is_null,
    key_text,
)

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


def parse_overrides(text: str, display: str) -> Overrides:
    """Read an overrides file's text (pure); `display` is the path used in errors, each at the line of
    the node it is about (the file is composed once and read node by node)."""
    root = compose_yaml_document(text, display)  # broken YAML stays a YamlError, as every reader's is
    try:
        check_unique_keys(root, display)
    except YamlError as err:
        raise ConfigError(err.message, path=err.path, line=err.line) from None
    if root is None or is_null(root):
        return Overrides(display=display)
    reader = NodeReader(display, ConfigError)
    if not MAPPING.accepts(root):
        raise reader.error(root, "an overrides file must be a mapping with an `overrides:` key")
    top: dict[str, yaml.Node] = {}
    for key, value in reader.read(MAPPING, root, "the file", root):
        name = key_text(key)
        if name not in _TOP_KEYS:
            raise reader.error(key, f"unknown key {build(key)!r} (expected: overrides, reason)")
        top[name] = value
    default_reason = DEFAULT_REASON
    if "reason" in top:
        default_reason = reader.read(NODE_STRING, top["reason"], "`reason:`", top["reason"])
    table = top.get("overrides")
    if table is None or is_null(table):
        return Overrides(display=display)
    if not MAPPING.accepts(table):
        raise reader.error(table, "`overrides:` must map base operator names to bucket ids")
    entries: dict[str, Override] = {}
    name_lines: dict[str, int] = {}
    for key, value in reader.read(MAPPING, table, "`overrides:`", table):
        line = key.start_mark.line + 1
        raw_name = key_text(key)
        if not raw_name:
            shown = build(key) if raw_name is None else raw_name
            raise reader.error(key, f"operator name must be a string, not {shown!r}")
        name = raw_name.removeprefix("aten::")  # written as the allow-list and PyTorch spell it
        if not name:
            raise reader.error(key, f"operator name {raw_name!r} names no operator")
        if "." in name:
            raise reader.error(
                key, f"{name!r}: overrides apply to base operators; write {name.split('.')[0]!r}"
            )
        reason = default_reason
        bucket_node: yaml.Node | None = value
        if MAPPING.accepts(value):
            fields: dict[str, yaml.Node] = {}
            for field_key, field_value in value.value:
                field_name = key_text(field_key)
                if field_name not in _ENTRY_KEYS:
                    raise reader.error(
                        field_key, f"{name}: unknown key {build(field_key)!r} (expected: bucket, reason)"
                    )
                fields[field_name] = field_value
            bucket_node = fields.get("bucket")
            if "reason" in fields:
                reason = reader.read(NODE_STRING, fields["reason"], f"{name}: `reason:`", fields["reason"])
        bucket = None if bucket_node is None else build(bucket_node)
        if not isinstance(bucket, str) or bucket not in BUCKETS:
            raise reader.error(
                key if bucket_node is None else bucket_node,
                f"{name}: unknown bucket {bucket!r} (expected one of: {', '.join(BUCKETS)})",
            )
        if name in entries:
            raise reader.error(key, f"{name}: overridden twice (first at line {name_lines[name]})")
        entries[name] = Override(bucket=bucket, reason=reason)
        name_lines[name] = line
    return Overrides(entries=MappingProxyType(entries), display=display, lines=MappingProxyType(name_lines))
