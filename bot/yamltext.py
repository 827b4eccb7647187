"""YAML reading every stage shares: one document at a time, errors with file:line.

libyaml's ``CSafeLoader`` when present (about ten times faster than the pure-Python loader; both give
the same objects). A line number here is the one YAML itself counts, so it agrees with its marks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import yaml

from opdrift.errors import OpdriftError, YamlError
from opdrift.shapes import Kind, Reader, must_be

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
    one until the failing one is found. Each node is visited once: through aliases a 500-byte document
    reaches 10^9 nodes, but holds only a few dozen distinct ones.
    """
    line = None
    try:
        root = yaml.compose(text, Loader=Loader)
    except yaml.YAMLError:
        root = None
    constructor = yaml.constructor.SafeConstructor()
    for node in _distinct_nodes(root):
        if isinstance(node, yaml.ScalarNode):
            build = constructor.yaml_constructors.get(node.tag)
            try:
                if build is not None:
                    build(constructor, node)
            except BUILD_ERRORS:
                line = node.start_mark.line + 1
                break
    what = (
        str(err) if isinstance(err, ValueError) else f"cannot build the tagged value ({type(err).__name__})"
    )
    return YamlError(f"invalid YAML value: {what}", path=display, line=line)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _distinct_nodes(root: yaml.Node | None) -> list[yaml.Node]:
    """Every node of the tree once, in document order, however often aliases repeat it."""
    seen: set[int] = set()
    order: list[yaml.Node] = []
    pending = [root] if root is not None else []
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        pending.extend(reversed(_children(node)))
    return order


def refuse_aliases(root: yaml.Node | None, display: str) -> None:
    """Refuse a document that uses a node twice (``&a`` then ``*a``, or a ``<<: *a`` merge).

    None of the files opdrift reads has a use for aliases, and every walk of the constructed value
    (validation, a message quoting it, a reader of nodes) would follow them: nine levels of
    ``&a [*a, *a, ...]`` in 500 bytes make 10^9 nodes. The line is that of the key or list holding the
    repeat (the composed tree keeps no mark for the alias itself).
    """
    seen: set[int] = set()
    pending: list[tuple[yaml.Node, yaml.Node | None]] = [(root, None)] if root is not None else []
    while pending:
        node, holder = pending.pop()
        if id(node) in seen:
            where = holder if holder is not None else node
            raise YamlError(
                "YAML anchors and aliases are not allowed in this file "
                f"(the value anchored at line {node.start_mark.line + 1} is used again)",
                path=display,
                line=where.start_mark.line + 1,
            )
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            pending.extend((child, node) for child in reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                pending.append((value, key))
                pending.append((key, node))


@contextmanager
def loading(text: str, display: str) -> Iterator[yaml.SafeLoader]:
    """A loader of TEXT, disposed of after use; what PyYAML raises inside becomes one `YamlError`
    naming DISPLAY and the line (a scalar it cannot build, too: `value_error`)."""
    loader = Loader(text)
    try:
        yield loader
    except yaml.YAMLError as err:
        raise yaml_error(err, display) from None
    except BUILD_ERRORS as err:
        raise value_error(err, text, display) from None
    finally:
        loader.dispose()


def read_yaml_document(text: str, display: str) -> object:
    """Load one small YAML document (tags.yaml, derivatives.yaml, configs); `YamlError` names path:line.
    Aliases are refused (`refuse_aliases`)."""
    with loading(text, display) as loader:
        root = loader.get_single_node()
        refuse_aliases(root, display)
        return None if root is None else loader.construct_document(root)


def compose_yaml_document(text: str, display: str) -> yaml.Node | None:
    """The node tree of a small YAML document, for readers that report file:line per item. Aliases are
    refused (`refuse_aliases`), so that a reader walking the tree visits each node once."""
    try:
        root = yaml.compose(text, Loader=Loader)
    except yaml.YAMLError as err:
        raise yaml_error(err, display) from None
    refuse_aliases(root, display)
    return root


def check_unique_keys(node: yaml.Node | None, display: str) -> None:
    """Refuse a mapping that repeats a key. YAML keeps the last silently: an allow-list entry's second
    ``expires:`` would extend it unseen, an overrides file's second ``relu:`` replace the first."""
    for current in _distinct_nodes(node):
        if isinstance(current, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, _value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    line = key.start_mark.line + 1
                    if key.value in seen:
                        raise YamlError(
                            f"duplicate key {key.value!r} (first at line {seen[key.value]})",
                            path=display,
                            line=line,
                        )
                    seen[key.value] = line


def split_lines(text: str) -> list[str]:
    """The text's lines as YAML counts them (``\\r\\n``, ``\\r``, NEL, LS and PS all end a line)."""
    return _LINE_BREAK.split(text)


# --- reading a composed document's nodes ------------------------------------------------------------
# The one way opdrift validates a hand-written YAML file (config, overrides, allow-list): compose it once
# (`compose_yaml_document`), then read the node tree with a `NodeReader`, which raises the file's own
# error at the offending node's line. A node's tag, not its text, says what YAML read: `"1"` is a
# string, `1` an int, `yes` a bool, `2026-01-01` a date.

STR_TAG = "tag:yaml.org,2002:str"
NULL_TAG = "tag:yaml.org,2002:null"
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"

MAPPING: Kind[list[tuple[yaml.Node, yaml.Node]]] = Kind(
    "a mapping", lambda n: isinstance(n, yaml.MappingNode), lambda n: n.value
)
SEQUENCE: Kind[list[yaml.Node]] = Kind(
    "a list", lambda n: isinstance(n, yaml.SequenceNode), lambda n: n.value
)


def tagged(tag: str) -> Callable[[object], bool]:
    """A kind's test: a scalar node of TAG."""
    return lambda n: isinstance(n, yaml.ScalarNode) and n.tag == tag


NODE_STRING: Kind[str] = Kind("a string", tagged(STR_TAG), lambda n: str(n.value))


def is_null(node: yaml.Node | None) -> bool:
    """An empty document, or a value written as nothing, ``~`` or ``null``."""
    return node is None or tagged(NULL_TAG)(node)


def key_text(node: yaml.Node) -> str | None:
    """A mapping key's text when YAML reads it as a string, else None (``1:``, ``null:``, ``[a]:``)."""
    return str(node.value) if tagged(STR_TAG)(node) else None


def build(node: yaml.Node) -> object:
    """The value YAML builds from NODE, for a message that quotes it (``unknown bucket 1``); a scalar
    it cannot build (``2026-02-30``) is quoted as written. Safe on any composed tree: aliases are
    refused, so the tree is as small as its text."""
    try:
        return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    except (yaml.YAMLError, *BUILD_ERRORS):
        return node.value if isinstance(node, yaml.ScalarNode) else node.tag


class NodeReader(Reader[yaml.Node]):
    """`opdrift.shapes.Reader` over composed YAML nodes: a mismatch raises ``raises(message, path=display,
    line=the node's line)``, worded by `message` (``must_be`` by default), or by the caller's own
    sentence through `error`. Each file keeps its own error class and wording."""

    def __init__(
        self,
        display: str,
        raises: Callable[..., OpdriftError],
        message: Callable[[str, Kind[Any], object], str] = must_be,
    ) -> None:
        super().__init__(self.error, message)
        self.display = display
        self.raises = raises

    def error(self, node: yaml.Node, message: str) -> OpdriftError:
        return self.raises(message, path=self.display, line=node.start_mark.line + 1)
