"""YAML reading every stage shares: one document at a time, errors with file:line.

libyaml's ``CSafeLoader`` when present (about ten times faster than the pure-Python loader; both give
the same objects). A line number here is the one YAML itself counts, so it agrees with its marks.
"""

from __future__ import annotations

import re

import yaml

from bot.errors import YamlError

# libyaml is about ten times faster than the pure-Python loader; both give the same objects.
Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# The characters YAML counts as line breaks, so that our line numbers agree with its marks.
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def yaml_error(err: yaml.YAMLError, display: str) -> YamlError:
    """One line for a PyYAML error: its problem (and context) at the 1-based line of the problem."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        parts = [p for p in (err.context, err.problem) if p]
        message = "invalid YAML: " + ("; ".join(parts) if parts else "parse error")
        return YamlError(message, path=display, line=None if mark is None else mark.line + 1)
    return YamlError(f"invalid YAML: {err}", path=display)


# What PyYAML's safe constructors raise, unmarked, for a scalar they cannot build: a date with no such
# day (ValueError), or an explicit tag on text that does not fit it (``!!bool foo``: KeyError,
# ``!!timestamp bar``: AttributeError).
BUILD_ERRORS = (ValueError, KeyError, TypeError, AttributeError, IndexError)  # !!int "-": IndexError


def value_error(err: Exception, text: str, display: str) -> YamlError:
    """A scalar YAML types but cannot build (``2026-02-30`` is a timestamp with no such day): its line.

    PyYAML raises these as plain ValueErrors without a mark, so the document's scalars are built one by
    one until the failing one is found.
    """
    line = None
    try:
        root = yaml.compose(text, Loader=Loader)
    except yaml.YAMLError:
        root = None
    pending = [root] if root is not None else []
    constructor = yaml.constructor.SafeConstructor()
    while pending and line is None:
        node = pending.pop()
        if isinstance(node, yaml.ScalarNode):
            build = constructor.yaml_constructors.get(node.tag)
            try:
                if build is not None:
                    build(constructor, node)
            except BUILD_ERRORS:
                line = node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            pending.extend(n for pair in reversed(node.value) for n in reversed(pair))
    what = (
        str(err) if isinstance(err, ValueError) else f"cannot build the tagged value ({type(err).__name__})"
    )
    return YamlError(f"invalid YAML value: {what}", path=display, line=line)


def read_yaml_document(text: str, display: str) -> object:
    """Load one small YAML document (tags.yaml, derivatives.yaml, configs); `YamlError` names path:line."""
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise yaml_error(err, display) from None
    except BUILD_ERRORS as err:
        raise value_error(err, text, display) from None


def compose_yaml_document(text: str, display: str) -> yaml.Node | None:
    """The node tree of a small YAML document, for readers that report file:line per item."""
    try:
        return yaml.compose(text, Loader=Loader)
    except yaml.YAMLError as err:
        raise yaml_error(err, display) from None


def check_unique_keys(node: yaml.Node | None, display: str) -> None:
    """Refuse a mapping that repeats a key. YAML keeps the last silently: an allow-list entry's second
    ``expires:`` would extend it unseen, an overrides file's second ``relu:`` replace the first."""
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    line = key.start_mark.line + 1
                    if key.value in seen:
                        raise YamlError(
                            f"duplicate key {key.value!r} (first at line {seen[key.value]})",
                            path=display,
                            line=line,
                        )
                    seen[key.value] = line
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


def split_lines(text: str) -> list[str]:
    """The text's lines as YAML counts them (``\\r\\n``, ``\\r``, NEL, LS and PS all end a line)."""
    return _LINE_BREAK.split(text)
