"""One `RawEntry` of native_functions.yaml → a validated `Entry`: key by key, with its schema parsed.

A wrong value type is an `EntryError` naming file:line; a key the bot does not model is kept (as short
text) and warned about. Dispatch resolution (`opdrift.operators.dispatch`) and autogen
(`opdrift.operators.autogen`) work on the `Entry` tuples made here.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from opdrift.dispatchkeys import CIA, UFUNC_KEYS
from opdrift.errors import EntryError
from opdrift.model import RawEntry
from opdrift.schema.grammar import parse_schema
from opdrift.schema.model import FunctionSchema

# The value type each known key must have (object: checked by its own rule below).
_KEY_TYPES: dict[str, type] = {
    "func": str,
    "variants": str,
    "dispatch": object,
    "structured": bool,
    "structured_delegate": str,
    "structured_inherits": str,
    "precomputed": object,
    "autogen": str,
    "tags": object,
    "python_module": str,
    "category_override": str,
    "cpp_no_default_args": object,
    "device_check": str,
    "device_guard": bool,
    "manual_cpp_binding": bool,
    "manual_kernel_registration": bool,
    "use_const_ref_for_mutable_tensors": bool,
    "ufunc_inner_loop": object,
}
_VARIANTS = frozenset({"function", "method"})
_DEVICE_CHECKS = frozenset({"NoCheck", "ExactSame"})

_OPERATOR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?")


class Entry(NamedTuple):
    """One validated entry, before dispatch resolution and autogen (a tuple: built ~3000 times)."""

    raw: RawEntry
    schema: FunctionSchema
    dispatch: dict[str, str]  # key -> kernel, as written (comma-joined keys expanded)
    has_dispatch_table: bool
    variants: tuple[str, ...]
    structured: bool
    structured_delegate: str | None
    autogen: tuple[str, ...]
    tags: tuple[str, ...]
    python_module: str | None
    category_override: str | None
    manual_cpp_binding: bool
    const_ref_mutable: bool  # use_const_ref_for_mutable_tensors
    unknown_keys: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    implicit: bool  # torchgen's has_composite_implicit_autograd_kernel

    @property
    def name(self) -> str:
        return self.schema.name.name


# --- validation -----------------------------------------------------------------------------------


# YAML aliases share objects: ten levels of `&l [*k, *k, ...]` are 643 bytes of text and 10**10 items
# once repr() expands them. A value quoted in a message or kept as an unknown key's text is cut short.
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxtuple = 3, 8, 8, 8
_SHORT.maxstring = _SHORT.maxother = 200


def short_repr(value: object) -> str:
    return value if isinstance(value, str) else _SHORT.repr(value)


def validate_entry(raw: RawEntry, path: str, known_tags: frozenset[str] | None) -> Entry:
    data = raw.data
    line = raw.line

    def fail(message: str) -> EntryError:
        return EntryError(message, path=path, line=line)

    if type(data) is not dict and not isinstance(data, Mapping):  # the ABC check only off the usual path
        raise fail("an entry must be a mapping with a `func:` key")
    func = data.get("func")
    if func is None:
        raise fail("entry has no `func:` key")
    if not isinstance(func, str):
        raise fail(f"`func:` must be a schema string, got {short_repr(func)}")
    schema = parse_schema(func, path=path, line=line)

    variants: tuple[str, ...] = ("function",)
    dispatch: dict[str, str] = {}
    has_dispatch_table = structured = manual_cpp_binding = const_ref = False
    delegate: str | None = None
    python_module: str | None = None
    category_override: str | None = None
    autogen: tuple[str, ...] = ()
    entry_tags: tuple[str, ...] = ()
    unknown: list[tuple[str, str]] = []
    ufunc: object = None
    # One pass over the entry's keys: this runs ~3000 times per snapshot.
    for key, value in data.items():
        expected = _KEY_TYPES.get(key)
        if expected is None:
            unknown.append((key, short_repr(value)))
            continue
        if expected is bool:
            if not isinstance(value, bool):
                raise fail(f"`{key}:` must be True or False, got {short_repr(value)}")
            if key == "structured":
                structured = value
            elif key == "manual_cpp_binding":
                manual_cpp_binding = value
            elif key == "use_const_ref_for_mutable_tensors":
                const_ref = value
            continue
        if expected is str and not isinstance(value, str):
            raise fail(f"`{key}:` must be a string, got {short_repr(value)}")
        if key == "func":
            continue
        if key == "variants":
            variants = _variants(value, fail)  # type: ignore[arg-type]  # a str, checked above
        elif key == "dispatch":
            has_dispatch_table = True
            dispatch = _dispatch(value, fail)
        elif key == "tags":
            entry_tags = _tags(value, fail)
        elif key == "structured_delegate":
            if not isinstance(value, str) or _OPERATOR_NAME_RE.fullmatch(value) is None:
                raise fail(f"`structured_delegate:` must be an operator name, got {short_repr(value)}")
            delegate = value
        elif key == "autogen":
            autogen = _autogen(value, fail)  # type: ignore[arg-type]  # a str, checked above
        elif key == "python_module":
            python_module = value  # type: ignore[assignment]  # a str, checked above
        elif key == "category_override":
            category_override = value  # type: ignore[assignment]  # a str, checked above
        elif key == "device_check":
            if value not in _DEVICE_CHECKS:
                raise fail(f"unknown `device_check: {value}`")
        elif key in ("cpp_no_default_args", "precomputed"):
            if (
                isinstance(value, str)
                or not isinstance(value, Sequence)
                or not all(isinstance(x, str) for x in value)
            ):
                raise fail(f"`{key}:` must be a list of strings, got {short_repr(value)}")
        elif key == "ufunc_inner_loop":
            if not isinstance(value, str | Mapping):
                raise fail(f"`ufunc_inner_loop:` must be a string or a mapping, got {short_repr(value)}")
            ufunc = value

    if ufunc:
        if not structured:
            raise fail("`ufunc_inner_loop:` needs `structured: True`")
        # torchgen fills the ufunc keys with generated kernels named after the operator.
        for k in UFUNC_KEYS:
            dispatch.setdefault(k, f"ufunc_{schema.name.base}_{k}")

    warnings: tuple[str, ...] = ()
    if unknown or (known_tags is not None and not known_tags.issuperset(entry_tags)):
        warnings = tuple(f"{path}:{line}: unknown key {k!r} kept" for k, _ in unknown)
        if known_tags is not None:
            warnings += tuple(
                f"{path}:{line}: tag {t!r} is not defined in tags.yaml"
                for t in entry_tags
                if t not in known_tags
            )
    return Entry(
        raw,
        schema,
        dispatch,
        has_dispatch_table,
        variants,
        structured,
        delegate,
        autogen,
        entry_tags,
        python_module,
        category_override,
        manual_cpp_binding,
        const_ref,
        tuple(unknown),
        warnings,
        # explicit, or by omitting the table (structured ops get kernels elsewhere)
        CIA in dispatch or (not has_dispatch_table and not structured and delegate is None),
    )


_Fail = Callable[[str], EntryError]


def _variants(value: str, fail: _Fail) -> tuple[str, ...]:
    variants = tuple(v.strip() for v in value.split(","))
    for v in variants:
        if v not in _VARIANTS:
            raise fail(f"unknown variant {v!r} in `variants: {value}`")
    return variants


def _dispatch(value: object, fail: _Fail) -> dict[str, str]:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise fail(f"`dispatch:` must be a mapping of dispatch keys to kernels, got {short_repr(value)}")
    dispatch: dict[str, str] = {}
    for keys, kernel in value.items():
        if not isinstance(keys, str) or not isinstance(kernel, str):
            raise fail(f"bad dispatch line {short_repr(keys)}: {short_repr(kernel)} (both must be names)")
        if "," not in keys and keys.isidentifier():
            dispatch[keys] = kernel
            continue
        for key in keys.split(","):
            k = key.strip()
            if not k.isidentifier():
                raise fail(f"bad dispatch key {k!r} in {keys!r}")
            dispatch[k] = kernel
    return dispatch


def _tags(value: object, fail: _Fail) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if (type(value) is list or isinstance(value, Sequence)) and all(isinstance(t, str) for t in value):
        return tuple(value)
    raise fail(f"`tags:` must be a tag name or a list of them, got {short_repr(value)}")


def _autogen(value: str, fail: _Fail) -> tuple[str, ...]:
    names = tuple(a for a in (x.strip() for x in value.split(",")) if a)
    for a in names:
        if not _OPERATOR_NAME_RE.fullmatch(a):
            raise fail(f"bad operator name {a!r} in `autogen: {value}`")
    return names
