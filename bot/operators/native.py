"""native_functions.yaml entries → the registered operators, as PyTorch's codegen (torchgen) sees them.

Three things happen, one module each:

1. Each `RawEntry` is validated key by key and its schema parsed (`opdrift.operators.validate`): wrong
   value types are an `EntryError` naming file:line; a key the bot does not model is kept on the
   operator and warned about.
2. Dispatch is resolved per operator (`opdrift.operators.dispatch`): an entry without a dispatch table
   (and not structured) is CompositeImplicitAutograd, and a ``structured_delegate`` op inherits its
   delegate's structured kernels.
3. ``autogen`` is expanded the way torchgen's ``add_generated_native_functions`` does it
   (`opdrift.operators.autogen`).

The result equals ``torchgen.gen.parse_native_yaml(...).native_functions`` (names and schemas) for
every release 2.0.0-2.15.0; tests/unit/operators/test_native.py checks that against vendored torchgen output. This
module puts the three together and reads the side files (tags.yaml, derivatives.yaml).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from opdrift.errors import EntryError, YamlError
from opdrift.model import Operator, OperatorSet, RawEntry, SourceMeta, TextFile
from opdrift.operators.autogen import generated_operators
from opdrift.operators.codegen import NEWEST, CodegenRules
from opdrift.operators.dispatch import make_operator
from opdrift.operators.validate import Entry, short_repr, validate_entry
from opdrift.schema.grammar import parse_schema
from opdrift.yamlplain import ASCII_LINES, Untyped, plain_scalar

_NAME_KEY = "- name:"
_COMMENT_START = re.compile(r"[ \t]#")  # YAML ends a plain scalar at " #"; two fixed characters: linear


def build_operators(
    entries: Sequence[RawEntry],
    *,
    meta: SourceMeta,
    native_display: str,
    tags: TextFile | None = None,
    derivatives: TextFile | None = None,
    codegen: CodegenRules = NEWEST,
) -> OperatorSet:
    """The registered operators of one native_functions.yaml (entries plus what the codegen of
    CODEGEN's release adds)."""
    known_tags = read_tags(tags) if tags is not None else None
    parsed = [validate_entry(raw, native_display, known_tags) for raw in entries]
    by_name: dict[str, Entry] = {}
    for e in parsed:
        first = by_name.get(e.name)
        if first is not None:
            raise EntryError(
                f"duplicate operator {e.name!r} (first defined at line {first.raw.line})",
                path=native_display,
                line=e.raw.line,
            )
        by_name[e.name] = e

    operators = [make_operator(e, by_name, native_display) for e in parsed]
    warnings = [w for e in parsed for w in e.warnings]
    clashes: list[tuple[Entry, Operator]] = []
    for op in generated_operators(parsed, codegen):
        clash = by_name.get(op.name)
        if clash is None:
            operators.append(op)
        else:
            clashes.append((clash, op))
    # An entry fell out of step with its family (a PR changed one schema of add/add_/add.out), or, in
    # 1.12, the codegen grouped differently. torchgen 2.x would keep both, and PyTorch then fails to
    # register the name twice; the report keeps the entry, whose change is the news. One warning per
    # clash, with no other line in its text, so that a report can tell a new clash from an old one.
    warnings.extend(
        f"{native_display}:{entry.raw.line}: {op.name} does not group with {op.autogen_from} and its "
        f"overloads, so the codegen would generate a second {op.name}; the entry is kept: change the "
        "schemas of a functional/in-place/out family together"
        for entry, op in clashes
    )
    operators.sort(key=lambda op: op.name)
    return OperatorSet(
        meta=meta,
        operators=tuple(operators),
        entries=len(parsed),
        native_display=native_display,
        derivatives=read_derivatives(derivatives) if derivatives is not None else None,
        warnings=tuple(warnings),
    )


# --- side files ----------------------------------------------------------------------------------


def read_tags(tags: TextFile) -> frozenset[str]:
    """The tag names tags.yaml defines (``- tag: NAME`` items): read as PyTorch writes the file
    (`_tag_names`), else by PyYAML."""
    names = _tag_names(tags.text)
    if names is not None:
        return names
    # Imported here: PyYAML reads only a tags.yaml written in another shape than PyTorch's.
    from opdrift.yamltext import read_yaml_document

    data = read_yaml_document(tags.text, tags.display)
    if data is None:
        return frozenset()
    if not isinstance(data, list):
        raise YamlError("tags.yaml must be a list of `- tag:` items", path=tags.display)
    found = set()
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("tag"), str):
            raise YamlError(f"tags.yaml item without a `tag:` name: {short_repr(item)}", path=tags.display)
        found.add(item["tag"])
    return frozenset(found)


# tags.yaml as PyTorch writes it (1.12.0-2.15.0): comment lines, then items of a tag name and a block
# scalar describing it:
#
#     - tag: inplace_view
#       desc: |
#               This tag indicates if an operator *only* modifies the tensor metadata
#
# `_tag_names` reads exactly that shape and says None on anything else (then PyYAML reads the file).
_TAG_ITEM = re.compile(r"- tag: ([A-Za-z_][A-Za-z0-9_]*)")
_DESC_LINES = frozenset(("  desc: |", "  desc: >"))


def _tag_names(text: str) -> frozenset[str] | None:
    if not text.isascii() or text.encode("ascii").translate(None, ASCII_LINES):
        return None  # another line break (CR, NEL, LS, PS), a tab or a character YAML forbids
    names: set[str] = set()
    described = True  # whether the current item has its desc: (no item yet: nothing may follow)
    in_desc = False
    indent = 0  # the description's indentation, from its first line; 0 before it
    for line in text.split("\n"):
        if not line:
            continue  # empty lines belong to a description, or to nothing
        if not line.strip(" "):
            return None  # spaces alone: YAML weighs them against the description's indentation
        if in_desc:
            at = len(line) - len(line.lstrip(" "))
            if indent == 0 and at > 2:
                indent = at
            if indent and at >= indent:
                continue
            in_desc = False  # a line indented less ends the description
        if line[0] == "#":
            continue
        item = _TAG_ITEM.fullmatch(line)
        if item is not None:
            try:
                name = plain_scalar(item[1])
            except Untyped:
                return None
            if not isinstance(name, str):
                return None  # ``true`` or ``null``: PyYAML says what is wrong with it
            names.add(name)
            described = in_desc = False
        elif line in _DESC_LINES and not described:
            described = in_desc = True
            indent = 0
        else:
            return None
    return frozenset(names) if names else None


def read_derivatives(derivatives: TextFile) -> frozenset[str]:
    """Names of the operators derivatives.yaml gives a formula for.

    Every item starts with a ``- name: SCHEMA`` line, so a line scan finds them without building the
    whole (large) YAML document; each schema still goes through the grammar, with its line.
    """
    names = set()
    # Plain string operations, no backtracking pattern: a 50 KB run of spaces on one line must cost a
    # pass over it, not one per space (``(.*?)[ \t]*$`` did, 45 s).
    for index, raw in enumerate(derivatives.text.split("\n")):
        if not raw.startswith(_NAME_KEY):
            continue
        rest = raw[len(_NAME_KEY) :]
        if rest[:1] not in (" ", "\t"):
            continue
        value = rest.lstrip(" \t").rstrip(" \t\r")
        if value[:1] not in ("'", '"'):
            comment = _COMMENT_START.search(value)
            if comment is not None:
                value = value[: comment.start()].rstrip(" \t")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        names.add(parse_schema(value, path=derivatives.display, line=index + 1).name.name)
    if not names and derivatives.text.strip():
        raise YamlError("no `- name:` items found", path=derivatives.display)
    return frozenset(names)
