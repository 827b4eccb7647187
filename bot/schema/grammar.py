"""The function-schema grammar of native_functions.yaml: parse, lossless (printing: `opdrift.schema.model`).

    schema      := name "(" [arg (", " arg)*] ") -> " returns
    name        := IDENT ["." OVERLOAD]
    arg         := "*" | type " " IDENT ["=" default]
    type        := BASE ["(" annotation ")"] ("?" | "[" [SIZE] "]")*
    annotation  := alias ("|" alias)* ["!"] [" -> " (alias ("|" alias)* | "*")]
    default     := "..." | '...' | "[" ... "]" | WORD        (kept as text, not interpreted)
    returns     := "()" | ret | "(" ret (", " ret)+ ")"
    ret         := type [" " IDENT]

The accepted language is exactly torchgen's canonical form (one space after commas, one around
``->``, a single return without parentheses, ``*`` only when keyword arguments follow, out arguments
last): torchgen rejects any schema that does not print back to itself, so PyTorch never merges one.
Because only canonical text is accepted, printing the structure reproduces the input byte for byte.

Base type names are the closed set torchgen knows (plus ``Dimname`` and the other names older
releases used, and ``__torch__.torch.classes.*`` custom classes). An unknown name is a SchemaError
rather than a silent pass, so a typo such as ``Tensr`` is reported; a genuinely new ATen type means
adding it to BASE_TYPES.

Speed: the file is scanned with a few precompiled, backtracking-free regexes matched at a moving
position, and type and annotation objects are interned, because the bot parses ~3000 schemas per
snapshot and benchmarks the whole parse.
"""

from __future__ import annotations

import re
from typing import TypeVar

from opdrift.errors import SchemaError
from opdrift.schema.model import (
    Annotation,
    Argument,
    Arguments,
    BaseType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    Type,
    make_function_schema,
    make_operator_name,
)

BASE_TYPES = frozenset(
    {
        # torchgen.model.BaseTy (2.14.1)
        "Generator",
        "ScalarType",
        "Tensor",
        "int",
        "DimVector",
        "float",
        "str",
        "bool",
        "Layout",
        "Device",
        "DeviceIndex",
        "Scalar",
        "MemoryFormat",
        "QScheme",
        "Storage",
        "Stream",
        "SymInt",
        "SymBool",
        "GraphModule",
        # removed from torchgen with named tensors (2.13), used by 1.12.0-2.12.0
        "Dimname",
        # older torchgen names, kept so historical commits parse
        "ConstQuantizerPtr",
        "ISize",
        "Any",
    }
)
CUSTOM_CLASS_PREFIX = "__torch__.torch.classes."

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_TYPE = (
    rf"(?P<base>{_IDENT}(?:\.{_IDENT})*)"
    r"(?:\((?P<ann>[^()]*)\))?"
    r"(?P<suffix>(?:\?|\[(?:[1-9][0-9]*)?\])*)"
)
# Each alternative starts with a different character, so the match never backtracks across them.
_DEFAULT = r"""(?P<default>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\[[^\[\]]*\]|[A-Za-z0-9_.+-]+)"""
_NAME_RE = re.compile(rf"(?P<base>{_IDENT})(?:\.(?P<overload>[A-Za-z0-9_]+))?\(")
_ARG_RE = re.compile(rf"{_TYPE} (?P<name>{_IDENT})(?:={_DEFAULT})?")
_RET_RE = re.compile(rf"{_TYPE}(?: (?P<name>{_IDENT}))?")
_SUFFIX_RE = re.compile(r"\?|\[([0-9]*)\]")
_ALIAS = r"[a-z][a-z0-9_]*"
_ANN_RE = re.compile(
    rf"(?P<before>{_ALIAS}(?:\|{_ALIAS})*)(?P<write>!)?(?: -> (?P<after>\*|{_ALIAS}(?:\|{_ALIAS})*))?"
)


# How many ``?`` and ``[]`` one type may stack. PyTorch's schemas use at most two (``Tensor?[]``,
# ``int[]?``); the type objects nest one level per suffix and are walked recursively (printing, `base`),
# so a thousand of them would end in a RecursionError rather than an error naming the line.
MAX_TYPE_DEPTH = 16

# --- parsing -----------------------------------------------------------------------------------

# Memo tables of the parse: interning pays (bench/bench_devices.py: without them `opdrift stats`
# runs 1.38x the instructions; a file repeats most argument lists, arguments and types, and a history
# walk repeats whole schemas). A history walk meets new texts forever, so each table is bounded:
# `_remember` empties a full table rather than track recency, which costs nothing on the hit path.
_CACHE_LIMIT = 1 << 16
_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


_type_cache: dict[tuple[str, str], Type] = {}
_ann_cache: dict[str, Annotation] = {}
_schema_cache: dict[str, FunctionSchema] = {}
_arg_cache: dict[str, Argument] = {}
_arguments_cache: dict[str, Arguments] = {}
_returns_cache: dict[str, tuple[Return, ...]] = {}


def _fail(text: str, pos: int, what: str, path: str | None, line: int | None) -> SchemaError:
    return SchemaError(f"malformed schema {_quoted(text)}: {what} at column {pos + 1}", path=path, line=line)


_QUOTE_LIMIT = 300  # a hostile schema may be 50 KB long; the error is one line a person reads


def _quoted(text: str) -> str:
    if len(text) <= _QUOTE_LIMIT:
        return repr(text)
    return f"{text[:_QUOTE_LIMIT]!r}... ({len(text)} characters)"


def _make_type(base: str, suffix: str) -> Type | None:
    key = (base, suffix)
    t = _type_cache.get(key)
    if t is not None:
        return t
    if base not in BASE_TYPES and not (
        base.startswith(CUSTOM_CLASS_PREFIX) and len(base) > len(CUSTOM_CLASS_PREFIX)
    ):
        return None
    t = BaseType(base)
    for m in _SUFFIX_RE.finditer(suffix):
        size = m.group(1)
        t = OptionalType(t) if size is None else ListType(t, int(size) if size else None)
    return _remember(_type_cache, key, t)


def _make_annotation(text: str) -> Annotation | None:
    ann = _ann_cache.get(text)
    if ann is not None:
        return ann
    m = _ANN_RE.fullmatch(text)
    if m is None:
        return None
    after = m.group("after")
    ann = Annotation(
        alias_set=tuple(m.group("before").split("|")),
        is_write=m.group("write") is not None,
        alias_set_after=tuple(after.split("|")) if after else (),
    )
    return _remember(_ann_cache, text, ann)


def _too_deep(suffix: str) -> bool:
    return suffix.count("?") + suffix.count("[") > MAX_TYPE_DEPTH


def _typed(m: re.Match[str], text: str, path: str | None, line: int | None) -> tuple[Type, Annotation | None]:
    if _too_deep(m.group("suffix")):
        raise _fail(text, m.start("suffix"), f"type nested more than {MAX_TYPE_DEPTH} deep", path, line)
    t = _make_type(m.group("base"), m.group("suffix"))
    if t is None:
        raise _fail(text, m.start("base"), f"unknown type {m.group('base')!r}", path, line)
    ann_text = m.group("ann")
    if ann_text is None:
        return t, None
    if m.group("base") != "Tensor":
        raise _fail(text, m.start("ann"), "alias annotation on a non-Tensor type", path, line)
    ann = _make_annotation(ann_text)
    if ann is None:
        raise _fail(text, m.start("ann"), f"bad alias annotation {ann_text!r}", path, line)
    return t, ann


_TYPE_RE = re.compile(_TYPE)


def parse_type(text: str) -> Type:
    """One type without an alias annotation (``int[]?``, ``Tensor?[]``), as a schema would spell it;
    other text (an unknown base type, an annotation) raises SchemaError quoting it."""
    m = _TYPE_RE.fullmatch(text)
    t = (
        None
        if m is None or m.group("ann") is not None or _too_deep(m.group("suffix"))
        else _make_type(m.group("base"), m.group("suffix"))
    )
    if t is None:
        raise SchemaError(f"malformed type {_quoted(text)}")
    return t


def parse_schema(text: str, *, path: str | None = None, line: int | None = None) -> FunctionSchema:
    """Parse one function schema; bad text raises SchemaError quoting it, with path and line."""
    if not isinstance(text, str):
        raise SchemaError(f"schema must be a string, got {type(text).__name__}", path=path, line=line)
    # The schemas are immutable, so one parse serves every stage that asks (the operator builder,
    # the rules, drift) and every later release of a history walk that kept the line.
    schema = _schema_cache.get(text)
    if schema is not None:
        return schema
    # Without quotes, ", " can only separate arguments, so split and reuse interned arguments;
    # anything the fast path does not accept goes through the scanner, which owns the errors.
    fast = _parse_fast(text) if '"' not in text and "'" not in text else None
    schema = fast if fast is not None else _parse_scan(text, path, line)
    return _remember(_schema_cache, text, schema)


def clear_caches() -> None:
    """Forget every interned schema, argument, return and type (benchmarks time cold parses)."""
    for cache in (_schema_cache, _arguments_cache, _arg_cache, _returns_cache, _type_cache, _ann_cache):
        cache.clear()


def _parse_fast(text: str) -> FunctionSchema | None:
    m = _NAME_RE.match(text)
    if m is None:
        return None
    start = m.end()
    close = text.find(") -> ", start - 1)
    if close < 0:
        return None
    rtext = text[close + 5 :]
    returns = _returns_cache.get(rtext)
    if returns is None:
        try:
            returns = _parse_returns(rtext, 0, None, None)
        except SchemaError:
            return None
        _remember(_returns_cache, rtext, returns)

    # Half the schemas of a file repeat another's argument list (add.Tensor and sub.Tensor, the
    # out= overloads of a family), so whole argument lists are interned as well.
    atext = text[start:close]
    arguments = _arguments_cache.get(atext)
    if arguments is None:
        arguments = _parse_arguments(atext)
        if arguments is None:
            return None
        _remember(_arguments_cache, atext, arguments)
    return make_function_schema(
        make_operator_name(m.group("base"), m.group("overload") or ""), arguments, returns
    )


def _parse_arguments(text: str) -> Arguments | None:
    """The text between a schema's parentheses, quote-free; None when the scanner must look."""
    positional: list[Argument] = []
    kwarg_only: list[Argument] = []
    out: list[Argument] = []
    if text:
        seen_star = False
        for piece in text.split(", "):
            if piece == "*":
                if seen_star:
                    return None
                seen_star = True
                continue
            arg = _arg_cache.get(piece)
            if arg is None:
                am = _ARG_RE.fullmatch(piece)
                if am is None:
                    return None
                try:
                    typ, ann = _typed(am, piece, None, None)
                except SchemaError:
                    return None
                arg = Argument(am.group("name"), typ, am.group("default"), ann)
                _remember(_arg_cache, piece, arg)
            if not seen_star:
                positional.append(arg)
            elif arg.annotation is not None and arg.annotation.is_write:
                out.append(arg)
            elif out:
                return None
            else:
                kwarg_only.append(arg)
        if seen_star and not kwarg_only and not out:
            return None
    return Arguments(tuple(positional), tuple(kwarg_only), tuple(out))


def _parse_returns(text: str, pos: int, path: str | None, line: int | None) -> tuple[Return, ...]:
    end = len(text)
    returns: list[Return] = []
    if text.startswith("()", pos) and pos + 2 == end:
        return ()
    if text.startswith("(", pos):
        pos += 1
        while True:
            rm = _RET_RE.match(text, pos)
            if rm is None:
                raise _fail(text, pos, "expected a return 'Type [name]'", path, line)
            typ, ann = _typed(rm, text, path, line)
            returns.append(Return(rm.group("name"), typ, ann))
            pos = rm.end()
            if text.startswith(", ", pos):
                pos += 2
                continue
            if text.startswith(")", pos) and pos + 1 == end:
                break
            raise _fail(text, pos, "expected ', ' or ')' closing the returns", path, line)
        if len(returns) == 1:
            raise _fail(text, pos, "a single return is written without parentheses", path, line)
        return tuple(returns)
    rm = _RET_RE.match(text, pos)
    if rm is None or rm.end() != end:
        where = pos if rm is None else rm.end()
        raise _fail(text, where, "expected one return 'Type [name]' ending the schema", path, line)
    typ, ann = _typed(rm, text, path, line)
    return (Return(rm.group("name"), typ, ann),)


def _parse_scan(text: str, path: str | None, line: int | None) -> FunctionSchema:
    m = _NAME_RE.match(text)
    if m is None:
        raise _fail(text, 0, "expected 'name(' or 'name.overload('", path, line)
    name = OperatorName(m.group("base"), m.group("overload") or "")
    pos = m.end()

    positional: list[Argument] = []
    kwarg_only: list[Argument] = []
    out: list[Argument] = []
    seen_star = False
    if text.startswith(")", pos):
        pos += 1
    else:
        while True:
            if text.startswith("*", pos):
                if seen_star:
                    raise _fail(text, pos, "second '*'", path, line)
                seen_star = True
                pos += 1
            else:
                am = _ARG_RE.match(text, pos)
                if am is None:
                    raise _fail(text, pos, "expected an argument 'Type name[=default]'", path, line)
                typ, ann = _typed(am, text, path, line)
                arg = Argument(am.group("name"), typ, am.group("default"), ann)
                if not seen_star:
                    positional.append(arg)
                elif ann is not None and ann.is_write:
                    out.append(arg)
                elif out:
                    raise _fail(text, pos, "non-mutable keyword argument after out arguments", path, line)
                else:
                    kwarg_only.append(arg)
                pos = am.end()
            if text.startswith(", ", pos):
                pos += 2
                continue
            if text.startswith(")", pos):
                pos += 1
                break
            raise _fail(text, pos, "expected ', ' or ')'", path, line)
        if seen_star and not kwarg_only and not out:
            raise _fail(text, pos - 1, "'*' with no keyword arguments after it", path, line)
    if not text.startswith(" -> ", pos):
        raise _fail(text, pos, "expected ' -> '", path, line)
    returns = _parse_returns(text, pos + 4, path, line)
    return FunctionSchema(
        name=name,
        arguments=Arguments(tuple(positional), tuple(kwarg_only), tuple(out)),
        returns=returns,
    )
