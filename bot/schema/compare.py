"""Two function schemas of one operator → the classified differences between them.

The rules follow what breaks a caller. Python and TorchScript callers pass arguments by name or by
position; C++ callers (``at::foo``) pass every argument by position, keyword-only ones included. So:

- BC-breaking: an argument removed, renamed or retyped; a default removed or changed (compared as
  values, as PyTorch parses them: `opdrift.schema.defaults`; a respelled one is only `info`); a new argument
  without a default; positions shifted (an argument inserted before an old one, or old arguments
  reordered, keyword-only ones included); a positional argument made keyword-only; an alias
  annotation changed (mutation and aliasing are part of the contract that functionalization and
  backends rely on); a return changed.
- compatible: a new argument with a default after every old (non-out) argument, a default added, a
  keyword-only argument made positional in the same place, an argument widened (made optional, or
  int → SymInt; inside a list only the latter: ``Tensor[]`` → ``Tensor?[]`` is another C++ type).

This is PyTorch's own check (``FunctionSchema::isBackwardCompatibleWith``): it compares the non-out
arguments slot by slot, keyword-only ones included, and also treats a changed default as a break,
since old call sites silently get a different value.
"""

from __future__ import annotations

from typing import Literal

from opdrift.schema.codes import Code, Detail
from opdrift.schema.defaults import same_default
from opdrift.schema.model import Argument, BaseType, FunctionSchema, ListType, OptionalType, Type

Section = Literal["positional", "kwarg_only", "out"]


# Every value of the old type is a value of the new one, and the C++ API keeps an overload for it
# (torchgen emits both ``foo(IntArrayRef)`` and ``foo_symint(SymIntArrayRef)``).
_WIDER_BASE = {("int", "SymInt"), ("bool", "SymBool"), ("float", "SymFloat")}
# Widenings that hold for one value but not inside a list (lists are invariant): int and float are
# subtypes of Scalar (c10's NumberType), and the schema parser reads DeviceIndex as int. PyTorch's
# isBackwardCompatibleWith accepts them, and C++ callers still compile (Scalar converts from both).
_WIDER_VALUE = {("int", "Scalar"), ("float", "Scalar"), ("int", "DeviceIndex"), ("DeviceIndex", "int")}


def widens(old: Type, new: Type, *, in_list: bool = False) -> bool:
    """`new` accepts everything `old` did: made optional, int → SymInt (also inside lists), or
    int/float → Scalar and int ↔ DeviceIndex (not inside lists).

    Lists are invariant (as in TorchScript): ``Tensor[]`` is a ``TensorList`` in C++, ``Tensor?[]`` a
    ``List<optional<Tensor>>``, so inside a list only the SymInt-style widening counts.
    """
    if isinstance(new, OptionalType) and not in_list:
        if isinstance(old, OptionalType):
            return old.elem == new.elem or widens(old.elem, new.elem)
        return old == new.elem or widens(old, new.elem)
    if isinstance(old, OptionalType) and isinstance(
        new, OptionalType
    ):  # in a list: Optional[T] → Optional[U]
        return widens(old.elem, new.elem, in_list=True)
    if isinstance(old, ListType) and isinstance(new, ListType):
        return old.size == new.size and (old.elem == new.elem or widens(old.elem, new.elem, in_list=True))
    if isinstance(old, BaseType) and isinstance(new, BaseType):
        pair = (old.name, new.name)
        return pair in _WIDER_BASE or (not in_list and pair in _WIDER_VALUE)
    return False


def _sections(schema: FunctionSchema) -> dict[str, tuple[Section, int, Argument]]:
    out: dict[str, tuple[Section, int, Argument]] = {}
    args = schema.arguments
    for section, items in (
        ("positional", args.positional),
        ("kwarg_only", args.kwarg_only),
        ("out", args.out),
    ):
        for i, a in enumerate(items):
            out[a.name] = (section, i, a)  # type: ignore[assignment]
    return out


def _typ(a: Argument) -> str:
    """The argument's type without its alias annotation (``Tensor[]``), compared separately."""
    return str(a.type)


def _ann(a: Argument) -> str:
    return "" if a.annotation is None else str(a.annotation)


def argument_types(schema: FunctionSchema) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str]:
    """The signature without names or defaults: what a probable rename must keep."""
    args = schema.arguments
    return (
        tuple(a.type.render(a.annotation) for a in args.positional),
        tuple(a.type.render(a.annotation) for a in args.kwarg_only),
        tuple(a.type.render(a.annotation) for a in args.out),
        ", ".join(r.type.render(r.annotation) for r in schema.returns),
    )


def diff_schemas(before: FunctionSchema, after: FunctionSchema) -> tuple[Detail, ...]:
    """The differences from `before` to `after`, ignoring the operator name itself."""
    details: list[Detail] = []
    old = _sections(before)
    new = _sections(after)
    removed = [n for n in old if n not in new]
    added = [n for n in new if n not in old]

    # A removed and an added argument at the same place with the same type is a rename.
    renamed: dict[str, str] = {}
    for r in removed:
        rs, ri, ra = old[r]
        for a in added:
            if a in renamed.values():
                continue
            as_, ai, aa = new[a]
            if (rs, ri) == (as_, ai) and ra.type.render(ra.annotation) == aa.type.render(aa.annotation):
                renamed[r] = a
                break
    for r, a in renamed.items():
        details.append(Code.ARGUMENT_RENAMED(r, r, a))
    for r in removed:
        if r not in renamed:
            details.append(Code.ARGUMENT_REMOVED(r, str(old[r][2]), ""))
    # C++ passes the non-out arguments by position, keyword-only ones included: one flat list.
    new_flat = [x.name for x in after.arguments.flat_non_out]
    old_flat = [x.name for x in before.arguments.flat_non_out]
    for a in added:
        if a in renamed.values():
            continue
        section, _, arg = new[a]
        # Appending with a default keeps every old call valid; inserting shifts later positions.
        at = new_flat.index(a) if section != "out" else -1
        appended = not any(n in old for n in new_flat[at + 1 :])
        if section == "out":
            details.append(Code.OUT_ARGUMENT_ADDED(a, "", str(arg)))
        elif arg.default is not None and appended:
            details.append(Code.ARGUMENT_ADDED_WITH_DEFAULT(a, "", str(arg)))
        elif arg.default is None:
            details.append(Code.ARGUMENT_ADDED_REQUIRED(a, "", str(arg)))
        else:
            details.append(Code.ARGUMENT_INSERTED(a, "", str(arg)))

    for name, (osec, _, oa) in old.items():
        if name not in new:
            continue
        nsec, _, na = new[name]
        if osec != nsec:
            if osec == "kwarg_only" and nsec == "positional":
                # Callers by keyword and by position both still work; a moved slot is caught below.
                details.append(Code.KWARG_ONLY_MADE_POSITIONAL(name, osec, nsec))
            else:
                code = Code.POSITIONAL_MADE_KWARG_ONLY if nsec == "kwarg_only" else Code.ARGUMENT_MOVED
                details.append(code(name, osec, nsec))
        if _typ(oa) != _typ(na):
            if widens(oa.type, na.type):
                details.append(Code.ARGUMENT_WIDENED(name, _typ(oa), _typ(na)))
            else:
                details.append(Code.ARGUMENT_RETYPED(name, _typ(oa), _typ(na)))
        if _ann(oa) != _ann(na):
            details.append(Code.ALIAS_ANNOTATION_CHANGED(name, _ann(oa), _ann(na)))
        if oa.default != na.default:
            if na.default is None:
                details.append(Code.DEFAULT_REMOVED(name, oa.default or "", ""))
            elif oa.default is None:
                details.append(Code.DEFAULT_ADDED(name, "", na.default))
            elif same_default(oa.default, oa.type, na.default, na.type):
                # Another spelling of the same value (1e-05 → 1.0e-05): no caller sees a difference.
                details.append(Code.DEFAULT_RESPELLED(name, oa.default, na.default))
            else:
                details.append(Code.DEFAULT_CHANGED(name, oa.default, na.default))

    # Common arguments must keep their relative order: the non-out ones as one list, and the outs.
    for old_names, new_names in (
        (old_flat, new_flat),
        ([x.name for x in before.arguments.out], [x.name for x in after.arguments.out]),
    ):
        common_old = [n for n in old_names if n in new_names]
        common_new = [n for n in new_names if n in old_names]
        if common_old != common_new:
            details.append(Code.ARGUMENTS_REORDERED("", ", ".join(common_old), ", ".join(common_new)))

    ret_before = [str(r) for r in before.returns]
    ret_after = [str(r) for r in after.returns]
    if ret_before != ret_after:
        before_types = [r.type.render(None) for r in before.returns]
        after_types = [r.type.render(None) for r in after.returns]
        only_alias = before_types == after_types and [r.name for r in before.returns] == [
            r.name for r in after.returns
        ]
        code = Code.RETURN_ALIAS_ANNOTATION_CHANGED if only_alias else Code.RETURN_CHANGED
        details.append(code("", _returns(before), _returns(after)))
    return tuple(details)


def _returns(schema: FunctionSchema) -> str:
    if len(schema.returns) == 1:
        return str(schema.returns[0])
    return "(" + ", ".join(str(r) for r in schema.returns) + ")"
