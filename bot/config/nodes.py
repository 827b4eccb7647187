"""Typed access to the config file's composed YAML nodes (`opdrift.config.file`, `opdrift.config.backend_specs`):
each value read by a kind whose tag decides, each error a ConfigError at the offending node's line."""

from __future__ import annotations

import re
from collections.abc import Callable

import yaml

from opdrift.errors import ConfigError
from opdrift.shapes import Kind
from opdrift.yamltext import MAPPING, SEQUENCE, NodeReader, tagged

_STR = "tag:yaml.org,2002:str"
_BOOL = "tag:yaml.org,2002:bool"

# What the config's values must be, as kinds over composed nodes (the node gives the error its line);
# the tag, not the text, decides: `"1"` is a string, `1` an int, `yes` a bool.
STRING: Kind[str] = Kind(
    "a string (quote it if YAML reads it as another type)", tagged(_STR), lambda n: str(n.value)
)
BOOLEAN: Kind[bool] = Kind(
    "true or false", tagged(_BOOL), lambda n: str(n.value).lower() in ("true", "yes", "on", "y")
)


class ConfigReader(NodeReader):
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
        value = self.read(STRING, node, what, node)
        if not value.strip():
            raise self.error(node, f"{what} must not be empty")
        return value

    def boolean(self, node: yaml.Node, what: str) -> bool:
        return self.read(BOOLEAN, node, what, node)

    def strings(
        self, node: yaml.Node, what: str, check: Callable[[yaml.Node, str], str] | None = None
    ) -> tuple[str, ...]:
        out: list[str] = []
        for item in self.read(SEQUENCE, node, what, node):
            value = self.string(item, f"each item of {what}")
            out.append(check(item, value) if check else value)
        return tuple(dict.fromkeys(out))


def one_of(reader: ConfigReader, allowed: tuple[str, ...], kind: str) -> Callable[[yaml.Node, str], str]:
    def check(node: yaml.Node, value: str) -> str:
        if value not in allowed:
            raise reader.error(node, f"unknown {kind} {value!r} (expected one of: {', '.join(allowed)})")
        return value

    return check


def pattern(reader: ConfigReader, regex: re.Pattern[str], kind: str) -> Callable[[yaml.Node, str], str]:
    def check(node: yaml.Node, value: str) -> str:
        if regex.fullmatch(value) is None:
            raise reader.error(node, f"{value!r} is not a valid {kind}")
        return value

    return check
