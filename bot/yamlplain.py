"""Plain YAML scalars typed as PyYAML types them, without importing PyYAML.

The purpose-built readers (`opdrift.operators.entries`, `opdrift.operators.native.read_tags`) read the
files of every release without PyYAML, whose import alone is a tenth of an `opdrift stats` run. They
type a plain scalar here. PyYAML's implicit resolvers (YAML 1.1, yaml/resolver.py) are indexed by a
scalar's first character, and a scalar starting with any other character is a string. Of the ones
that may match, the bool and null words and plain decimal integers (``3``) are typed here; any other
scalar that could be a number, a timestamp, ``<<`` or ``=`` is `Untyped`, and the reader then declines the file so that PyYAML reads it (no
release has one). tests/unit/test_yamlplain.py checks every answer against PyYAML's resolver and safe
constructor.
"""

from __future__ import annotations

# Printable ASCII and the line feed: the characters both readers read themselves. Any other (a tab,
# CR, NEL, LS, PS, a BOM, a control character) makes them decline, since YAML gives some of them a
# meaning of their own (a line break) and forbids others.
ASCII_LINES = bytes(range(0x20, 0x7F)) + b"\n"

_BOOLS = dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True) | dict.fromkeys(
    ("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False
)
_NULLS = frozenset(("~", "null", "Null", "NULL"))
TYPED_START = frozenset("yYnNtTfFoO~-+0123456789.<=")  # the first characters some resolver looks at
_UNTYPED_START = frozenset("-+0123456789.<=")  # numbers, timestamps, merge and value keys


class Untyped(Exception):
    """A plain scalar that PyYAML may read as a number, a timestamp or a key of its own: let it."""


def plain_scalar(text: str) -> object:
    """TEXT (a non-empty plain scalar, as it stands on its line) as PyYAML reads it: a bool, None, an
    int or the string itself; `Untyped` when only PyYAML can say."""
    if text[0] not in TYPED_START:
        return text
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _NULLS:
        return None
    if text.isascii() and text.isdigit() and (text[0] != "0" or text == "0"):
        return int(text)  # PyYAML's int resolver, the decimal case (no sign, no `_`, no leading 0)
    if text[0] in _UNTYPED_START:
        raise Untyped(text)
    return text
