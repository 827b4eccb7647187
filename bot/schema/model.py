"""The structure of a parsed function schema: types, annotations, arguments, returns, names.

Printing is here too (each class's ``__str__``): `opdrift.schema.grammar` only accepts torchgen's canonical
text, so printing the structure gives the parsed text back byte for byte. Every stage that looks at a
schema's parts (the taxonomy, the drift, coverage, autogen) works on these frozen classes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opdrift.model import OpKind

# Augmented-assignment dunders (PEP 203) that torchgen treats as in-place (``__iand__``...).
_AUGMENTED = frozenset(
    f"__i{n}__" for n in ("add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or")
)
_DUNDER_RE = re.compile(r"__[^_]+__")


# --- types -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Type:
    """A schema type; one of BaseType, OptionalType, ListType."""

    # Types are interned and printed for every comparison key, so the text is kept on the instance
    # (equality and hashing ignore it).
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = self.render(None)
            object.__setattr__(self, "_text", text)
        return text

    def render(self, annotation: Annotation | None) -> str:
        """The type's text with an alias annotation bound to its base type (``Tensor(a!)[]``)."""
        raise NotImplementedError

    @property
    def base(self) -> str:
        """The innermost base type name: ``Tensor`` for ``Tensor?[]``."""
        raise NotImplementedError

    def is_tensor_like(self) -> bool:
        return self.base == "Tensor"

    def is_optional(self) -> bool:
        return False

    def is_list(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class BaseType(Type):
    """A named type: ``Tensor``, ``int``, ``Scalar``, ``SymInt``..."""

    name: str

    def render(self, annotation: Annotation | None) -> str:
        return self.name if annotation is None else f"{self.name}({annotation})"

    @property
    def base(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class OptionalType(Type):
    """``T?``: the type or None."""

    elem: Type

    def render(self, annotation: Annotation | None) -> str:
        return f"{self.elem.render(annotation)}?"

    @property
    def base(self) -> str:
        return self.elem.base

    def is_optional(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class ListType(Type):
    """``T[]`` or ``T[N]``: a list of the element type, of a fixed size or any."""

    elem: Type
    size: int | None  # fixed size of ``int[2]``; None for ``int[]``

    def render(self, annotation: Annotation | None) -> str:
        size = "" if self.size is None else str(self.size)
        return f"{self.elem.render(annotation)}[{size}]"

    @property
    def base(self) -> str:
        return self.elem.base

    def is_list(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Annotation:
    """An alias annotation: ``a``, ``a!``, ``a -> *``, ``a|b``."""

    alias_set: tuple[str, ...]
    is_write: bool
    alias_set_after: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = "|".join(self.alias_set) + ("!" if self.is_write else "")
        if self.alias_set_after:
            text += " -> " + "|".join(self.alias_set_after)
        return text


# --- arguments and returns ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of a schema: name, type, default text and alias annotation."""

    name: str
    type: Type
    default: str | None = None  # the default's source text, e.g. "[-2,-1]", "None", "'fro'"
    annotation: Annotation | None = None
    _plain: str | None = field(default=None, init=False, repr=False, compare=False)
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        if self.annotation is None:
            return self.plain()
        text = self._text
        if text is None:
            text = f"{self.type.render(self.annotation)} {self.name}"
            if self.default is not None:
                text = f"{text}={self.default}"
            object.__setattr__(self, "_text", text)
        return text

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    def plain(self) -> str:
        """The argument's text without its alias annotation (cached, as for Type)."""
        text = self._plain
        if text is None:
            text = f"{self.type} {self.name}"
            if self.default is not None:
                text = f"{text}={self.default}"
            object.__setattr__(self, "_plain", text)
        return text


@dataclass(frozen=True, slots=True)
class Return:
    """One return of a schema: its type, optional name and alias annotation."""

    name: str | None
    type: Type
    annotation: Annotation | None = None

    def __str__(self) -> str:
        text = self.type.render(self.annotation)
        return text if self.name is None else f"{text} {self.name}"

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write


@dataclass(frozen=True, slots=True)
class Arguments:
    """Arguments in schema order. `*` is printed exactly when kwarg_only or out is non-empty.

    out holds the trailing keyword-only arguments with a write annotation, as torchgen defines them.
    """

    positional: tuple[Argument, ...] = ()
    kwarg_only: tuple[Argument, ...] = ()
    out: tuple[Argument, ...] = ()

    def __str__(self) -> str:
        parts = [str(a) for a in self.positional]
        if self.kwarg_only or self.out:
            parts.append("*")
            parts.extend(str(a) for a in self.kwarg_only)
            parts.extend(str(a) for a in self.out)
        return ", ".join(parts)

    @property
    def flat_non_out(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only

    @property
    def flat_all(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only + self.out

    @property
    def self_arg(self) -> Argument | None:
        """The positional argument named ``self`` (torchgen's method receiver), if any."""
        for a in self.positional:
            if a.name == "self":
                return a
        return None

    def get(self, name: str) -> Argument | None:
        for a in self.flat_all:
            if a.name == name:
                return a
        return None


@dataclass(frozen=True, slots=True)
class OperatorName:
    """An operator's name: the base (``add``) and the overload (``Tensor``, or "")."""

    base: str
    overload: str = ""
    # Derived once: every stage asks for them, several times per operator (equality ignores them).
    name: str = field(init=False, repr=False, compare=False)  # "add.Tensor", or "relu"
    is_dunder: bool = field(init=False, repr=False, compare=False)
    # torchgen's rule: ``relu_`` and the augmented dunders ``__iand__``... are in-place.
    is_inplace: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        base = self.base
        dunder = base.startswith("__") and _DUNDER_RE.fullmatch(base) is not None
        object.__setattr__(self, "name", f"{base}.{self.overload}" if self.overload else base)
        object.__setattr__(self, "is_dunder", dunder)
        object.__setattr__(self, "is_inplace", base in _AUGMENTED if dunder else base.endswith("_"))

    def __str__(self) -> str:
        return self.name


# The parser builds one OperatorName and one FunctionSchema per schema, ~3000 per file. A frozen
# dataclass's __init__ stores each field through object.__setattr__ (and OperatorName's derived fields
# through a __post_init__ call); these constructors set the slots directly through their member
# descriptors, with the same values, so the instances are equal to and hash like the usual ones
# (tests/unit/schema/test_grammar.py compares every field, on the schemas of three releases and the dunder cases).
_new = object.__new__


def _setter(cls: type, slot: str) -> Callable[[object, object], None]:
    descriptor: Any = cls.__dict__[slot]  # a member descriptor: its __set__ skips the frozen guard
    setter: Callable[[object, object], None] = descriptor.__set__
    return setter


_set_op_base, _set_op_overload, _set_op_name, _set_op_dunder, _set_op_inplace = (
    _setter(OperatorName, s) for s in ("base", "overload", "name", "is_dunder", "is_inplace")
)


def make_operator_name(base: str, overload: str = "") -> OperatorName:
    """`OperatorName(base, overload)`, in about half the time."""
    obj = _new(OperatorName)
    _set_op_base(obj, base)
    _set_op_overload(obj, overload)
    _set_op_name(obj, f"{base}.{overload}" if overload else base)
    if base[:2] == "__" and _DUNDER_RE.fullmatch(base) is not None:
        _set_op_dunder(obj, True)
        _set_op_inplace(obj, base in _AUGMENTED)
    else:
        _set_op_dunder(obj, False)
        _set_op_inplace(obj, base[-1:] == "_")
    return obj


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """A parsed ``func:`` schema: name, arguments and returns."""

    name: OperatorName
    arguments: Arguments
    returns: tuple[Return, ...] = ()

    def __str__(self) -> str:
        if len(self.returns) == 1:
            returns = str(self.returns[0])
        else:
            returns = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{self.name.name}({self.arguments}) -> {returns}"

    def kind(self) -> OpKind:
        """The taxonomy's kind facet.

        Follows torchgen's SchemaKind: the name decides "inplace" first (so ``__iand__`` is in-place,
        like torchgen, even though the taxonomy's *bucket* rule leaves dunders out of `inplace`),
        then out arguments decide "out" (torchgen's "scratch" ops are out ops here). "other" is any
        remaining op that writes to an argument: torchgen's "mutable" kind, plus the rare op that
        mutates ``self`` without an in-place name, which torchgen would call functional.
        """
        if self.name.is_inplace:
            return "inplace"
        if self.arguments.out:
            return "out"
        for a in self.arguments.positional:
            if a.annotation is not None and a.annotation.is_write:
                return "other"
        return "functional"

    def is_mutable(self) -> bool:
        """Writes to any argument, out arguments included (c10's FunctionSchema::is_mutable)."""
        return any(a.is_write for a in self.arguments.flat_all)

    def tensor_inputs(self) -> tuple[Argument, ...]:
        """Non-out arguments whose type is a Tensor, optional Tensor or list of them."""
        return tuple(a for a in self.arguments.flat_non_out if a.type.is_tensor_like())

    def returns_tensor(self) -> bool:
        return any(r.type.is_tensor_like() for r in self.returns)

    def aliased_returns(self) -> tuple[tuple[Return, Argument], ...]:
        """(return, input) pairs where a read-only return shares a read-only input's alias set."""
        pairs: list[tuple[Return, Argument]] = []
        for r in self.returns:
            if r.annotation is None or r.annotation.is_write:
                continue
            for a in self.arguments.flat_non_out:
                if (
                    a.annotation is not None
                    and not a.annotation.is_write
                    and a.annotation.alias_set == r.annotation.alias_set
                ):
                    pairs.append((r, a))
                    break
        return tuple(pairs)

    def returns_alias_of_input(self) -> bool:
        """A view: some return is ``Tensor(a)`` (not written) aliasing an input ``Tensor(a)``."""
        return bool(self.aliased_returns())

    def has_dimname(self) -> bool:
        return any(a.type.base == "Dimname" for a in self.arguments.flat_all)

    def has_symint(self) -> bool:
        return any(a.type.base in ("SymInt", "SymBool") for a in self.arguments.flat_all)


_set_fs_name, _set_fs_arguments, _set_fs_returns = (
    _setter(FunctionSchema, s) for s in ("name", "arguments", "returns")
)


def make_function_schema(
    name: OperatorName, arguments: Arguments, returns: tuple[Return, ...]
) -> FunctionSchema:
    """`FunctionSchema(name, arguments, returns)`, cheaper (see `make_operator_name`)."""
    obj = _new(FunctionSchema)
    _set_fs_name(obj, name)
    _set_fs_arguments(obj, arguments)
    _set_fs_returns(obj, returns)
    return obj
