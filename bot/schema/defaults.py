"""A schema argument's default read as a value, the way PyTorch's schema parser reads it.

Defaults are kept as source text (`opdrift.schema.model.Argument.default`), but two texts can spell one
value: ``eps=1e-05`` and ``eps=1.0e-05``, ``int[2] stride=1`` and ``int[2] stride=[1,1]``, ``'fro'`` and
``"fro"``. PyTorch's own BC check (``Argument::isBackwardCompatibleWith``) compares the parsed defaults
(IValues), so a respelling breaks no caller; comparing text would call it a changed default.

The reading follows ``torch/csrc/jit/frontend/function_schema_parser.cpp`` (``parseDefaultValue``,
``parseSingleConstant``, ``convertToList``) and the type parser's "fake" types, in which SymInt,
ScalarType, Layout, MemoryFormat and DeviceIndex are ``int``:

- ``True``/``False`` are bools, ``None`` is None, a quoted string is a string (either quote, with
  ``parseStringLiteral``'s escapes); ``float``, ``long``, ``complex``, ``strided``, ``Mean`` and
  ``contiguous_format`` are the ints of the enum values they name.
- a number is a float when the argument's type is ``float`` or the text has ``.`` or ``e``, else an
  int; an int and a float are different values (IValue equality compares tags), so ``Scalar alpha=1``
  → ``alpha=1.0`` stays a changed default, while ``float eps=1`` → ``eps=1.0`` does not.
- a list type takes ``[a, b]`` of its element's kind (int, float or bool lists only), ``None``, or, for
  a fixed size ``T[N]``, one constant repeated N times; an optional type (``int[1]? dim``) takes one
  constant or None, never a list.
- ``Tensor`` and ``Generator`` take only ``None``; ``Device`` a string.

What PyTorch's parser rejects (``inf``, ``+1``, ``\\r`` in a string, ``[1,]``), and what this reader
does not model (a dtype name other than ``float``/``long``/``complex``, which PyTorch accepts for
ScalarType arguments only; a number with an upper-case ``E``), reads as None: the caller then compares
the texts, as before.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from opdrift.schema.model import BaseType, ListType, OptionalType, Type

ValueKind = Literal["none", "bool", "int", "float", "complex", "str", "device", "list"]
Item = bool | int | float | complex | str | tuple["DefaultValue", ...] | None


@dataclass(frozen=True, slots=True)
class DefaultValue:
    """A parsed default: its IValue kind and its Python value (a tuple of values for a list).

    Equality is IValue equality for the kinds schemas use: an int never equals a float or a bool,
    lists compare element by element."""

    kind: ValueKind
    value: Item = None


NONE = DefaultValue("none")

# How parseDefaultValue treats an argument, by the type parser's fake type of its base.
_Kind = Literal["tensor", "int", "float", "bool", "str", "number", "device", "optional"]
_BASE_KIND: dict[str, _Kind] = {
    "Tensor": "tensor",
    "Generator": "tensor",
    "int": "int",
    "SymInt": "int",
    "ScalarType": "int",
    "Layout": "int",
    "MemoryFormat": "int",
    "DeviceIndex": "int",
    "ConstQuantizerPtr": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "Dimname": "str",
    "Scalar": "number",
    "Device": "device",
}

# parseSingleConstant's identifiers, as the ints of c10's enums: ScalarType::Float, ComplexFloat and
# Long, Layout::Strided, Reduction::Mean, MemoryFormat::Contiguous.
_NAMED_INTS = {"float": 6, "complex": 9, "long": 4, "strided": 0, "Mean": 1, "contiguous_format": 0}

# What the lexer takes as one number (strtod's decimal forms; it never starts a number with a sign
# or a letter), with an optional imaginary `j`.
_NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?j?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT64 = range(-(2**63), 2**63)
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "\n": "\n", "a": "\a", "b": "\b", "f": "\f", "n": "\n"}
_ESCAPES |= {"v": "\v", "t": "\t"}


def _string(text: str) -> str | None:
    """The string a quoted literal spells (parseStringLiteral's escapes), or None if PyTorch rejects it."""
    quote = text[0]
    if len(text) < 2 or quote not in "'\"" or text[-1] != quote:
        return None
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]) and int(body[i + 1 : i + 4], 8) < 256:
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
        else:
            return None
    return "".join(out)


def _number(text: str, kind: _Kind) -> DefaultValue | None:
    if _NUMBER.fullmatch(text) is None:
        return None
    if text.endswith("j"):
        return DefaultValue("complex", complex(0, float(text[:-1])))
    if kind == "float" or "." in text or "e" in text:
        value = float(text)
        mantissa = text.lower().partition("e")[0]
        if math.isinf(value) or (value == 0 and mantissa.strip("-.0")):
            return None  # out of a double's range: std::stod throws
        return DefaultValue("float", value)
    if "E" in text:
        return None  # PyTorch's stoll would read only the digits before it: not modelled
    value = int(text)
    return DefaultValue("int", value) if value in _INT64 else None


def _constant(text: str, kind: _Kind) -> DefaultValue | None:
    """parseSingleConstant: one constant, typed by the text and, for numbers, by the argument."""
    if text == "True":
        return DefaultValue("bool", True)
    if text == "False":
        return DefaultValue("bool", False)
    if text == "None":
        return NONE
    if text[:1] in ("'", '"'):
        s = _string(text)
        return None if s is None else DefaultValue("str", s)
    if _IDENT.fullmatch(text):
        named = _NAMED_INTS.get(text)
        return None if named is None else DefaultValue("int", named)
    return _number(text, kind)


def _list_kind(elem: Type) -> _Kind | None:
    """convertToList's element kinds: int, float and bool lists only."""
    kind = _BASE_KIND.get(elem.name) if isinstance(elem, BaseType) else None
    return kind if kind in ("int", "float", "bool") else None


def _as_list(items: list[DefaultValue | None], kind: _Kind) -> DefaultValue | None:
    # An element of the wrong kind fails convertToList's toInt/toDouble/toBool.
    if any(v is None or v.kind != kind for v in items):
        return None
    return DefaultValue("list", tuple(v for v in items if v is not None))


def _list(text: str, t: ListType) -> DefaultValue | None:
    kind = _list_kind(t.elem)
    if _IDENT.fullmatch(text):
        return NONE if text == "None" else None
    if kind is None:
        return None
    if not text.startswith("["):
        if t.size is None:
            return None
        one = _constant(text, kind)
        return _as_list([one] * t.size, kind)
    if not text.endswith("]"):
        return None
    inner = text[1:-1].strip()
    if not inner:
        return DefaultValue("list", ())
    return _as_list([_constant(part.strip(), kind) for part in inner.split(",")], kind)


def read_default(text: str, t: Type) -> DefaultValue | None:
    """The value PyTorch's schema parser gives the default TEXT of an argument of type T, or None when
    it would reject the text or this reader does not model it."""
    text = text.strip()
    if not text:
        return None
    if isinstance(t, OptionalType):
        return _constant(text, "optional")
    if isinstance(t, ListType):
        return _list(text, t)
    kind = _BASE_KIND.get(t.name) if isinstance(t, BaseType) else None
    if kind is None:
        return None
    if kind == "tensor":
        return NONE if text == "None" else None
    if kind == "device":
        s = _string(text) if text[:1] in ("'", '"') else None
        return None if s is None else DefaultValue("device", s)
    return _constant(text, kind)


def same_default(before: str, before_type: Type, after: str, after_type: Type) -> bool:
    """The two defaults are one value (each read with its own argument's type), or, when either
    cannot be read, the same text."""
    if before == after:
        return True
    old, new = read_default(before, before_type), read_default(after, after_type)
    if old is None or new is None:
        return False
    return old == new
