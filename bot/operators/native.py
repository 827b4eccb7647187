"""native_functions.yaml entries → the registered operators, as PyTorch's codegen (torchgen) sees them.

Three things happen here:

1. Each `RawEntry` is validated key by key (wrong value types are an `EntryError` naming file:line)
   and its schema parsed. A key the bot does not model is kept on the operator and warned about.
2. Dispatch is resolved per operator: comma-joined keys expand, an entry without a dispatch table
   (and not structured) is CompositeImplicitAutograd, ufunc entries get their CPU/CUDA kernels, and a
   ``structured_delegate`` op inherits its delegate's structured kernels (see `_resolve_delegate`).
3. ``autogen`` is expanded the way torchgen's ``add_generated_native_functions`` does it. torchgen
   does not read the names in ``autogen:``; it groups entries by their normalised signature and
   generates the missing out= and functional members of a group. ``autogen:`` matters only through
   one test ("does any listed name contain 'out'?"), and some groups get nothing at all: views,
   manual C++ bindings, non-core CompositeImplicitAutograd groups, lone out= ops, ``polygamma_``.
   The result equals ``torchgen.gen.parse_native_yaml(...).native_functions`` (names and schemas)
   for every release 2.0.0-2.15.0; tests/test_native.py checks that against vendored torchgen output.
"""

from __future__ import annotations

import re
import reprlib
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from bot.errors import EntryError, SchemaError, YamlError
from bot.gcpause import gc_paused
from bot.model import COMPOSITE_KEYS, Operator, OperatorSet, RawEntry, SourceMeta, TextFile, new_operator
from bot.schema.grammar import (
    Annotation,
    Argument,
    Arguments,
    BaseType,
    FunctionSchema,
    OperatorName,
    Return,
    parse_schema,
)
from bot.yamltext import read_yaml_document

# Backend keys whose kernels a structured out= op shares with its functional/in-place delegators
# (torchgen.model.STRUCTURED_DISPATCH_KEYS), and the keys a ufunc_inner_loop fills in.
STRUCTURED_KEYS = frozenset({"CPU", "CUDA", "MPS", "XPU", "MTIA"})
UFUNC_KEYS = ("CPU", "CUDA")
CIA = "CompositeImplicitAutograd"
CEA = "CompositeExplicitAutograd"

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
KNOWN_KEYS = frozenset(_KEY_TYPES)
_DEVICE_CHECKS = frozenset({"NoCheck", "ExactSame"})

# torchgen's hand-kept exception: an in-place op whose schema cannot be grouped (pre-self argument).
_UNGROUPABLE_INPLACE = frozenset({"polygamma_"})
# Tags torchgen copies from an entry onto the operators generated from it.
_INHERITED_TAGS = frozenset({"nondeterministic_seeded", "view_copy", "pt2_compliant_tag"})

_TENSOR_OPTIONS = (
    ("dtype", "ScalarType"),
    ("layout", "Layout"),
    ("device", "Device"),
    ("pin_memory", "bool"),
)
_OPERATOR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?")
_DERIVATIVE_RE = re.compile(r"^- name:[ \t]+(.*?)[ \t\r]*$", re.MULTILINE)
_TRAILING_COMMENT = re.compile(r"[ \t]+#.*$")  # YAML ends a plain scalar at " #"


class _Entry(NamedTuple):
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
    unknown_keys: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    implicit: bool  # torchgen's has_composite_implicit_autograd_kernel

    @property
    def name(self) -> str:
        return self.schema.name.name


def build_operators(
    entries: Sequence[RawEntry],
    *,
    meta: SourceMeta,
    native_display: str,
    tags: TextFile | None = None,
    derivatives: TextFile | None = None,
) -> OperatorSet:
    """The registered operators of one native_functions.yaml (entries plus what autogen adds)."""
    with gc_paused():
        return _build_operators(entries, meta, native_display, tags, derivatives)


def _build_operators(
    entries: Sequence[RawEntry],
    meta: SourceMeta,
    native_display: str,
    tags: TextFile | None,
    derivatives: TextFile | None,
) -> OperatorSet:
    known_tags = read_tags(tags) if tags is not None else None
    parsed = [_validate(raw, native_display, known_tags) for raw in entries]
    by_name: dict[str, _Entry] = {}
    for e in parsed:
        first = by_name.get(e.name)
        if first is not None:
            raise EntryError(
                f"duplicate operator {e.name!r} (first defined at line {first.raw.line})",
                path=native_display,
                line=e.raw.line,
            )
        by_name[e.name] = e

    operators = [_operator(e, by_name, native_display) for e in parsed]
    warnings = [w for e in parsed for w in e.warnings]
    clashes: list[tuple[_Entry, Operator]] = []
    for op in _generated(parsed):
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
    """The tag names tags.yaml defines (``- tag: NAME`` items)."""
    data = read_yaml_document(tags.text, tags.display)
    if data is None:
        return frozenset()
    if not isinstance(data, list):
        raise YamlError("tags.yaml must be a list of `- tag:` items", path=tags.display)
    names = set()
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("tag"), str):
            raise YamlError(f"tags.yaml item without a `tag:` name: {_render(item)}", path=tags.display)
        names.add(item["tag"])
    return frozenset(names)


def read_derivatives(derivatives: TextFile) -> frozenset[str]:
    """Names of the operators derivatives.yaml gives a formula for.

    Every item starts with a ``- name: SCHEMA`` line, so a line scan finds them without building the
    whole (large) YAML document; each schema still goes through the grammar, with its line.
    """
    text = derivatives.text
    names = set()
    line, counted = 1, 0
    for m in _DERIVATIVE_RE.finditer(text):
        value = m.group(1)
        if value[:1] not in ("'", '"'):
            value = _TRAILING_COMMENT.sub("", value)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        line += text.count("\n", counted, m.start())
        counted = m.start()
        names.add(parse_schema(value, path=derivatives.display, line=line).name.name)
    if not names and text.strip():
        raise YamlError("no `- name:` items found", path=derivatives.display)
    return frozenset(names)


# --- validation ----------------------------------------------------------------------------------


# YAML aliases share objects: ten levels of `&l [*k, *k, ...]` are 643 bytes of text and 10**10 items
# once repr() expands them. A value quoted in a message or kept as an unknown key's text is cut short.
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxtuple = 3, 8, 8, 8
_SHORT.maxstring = _SHORT.maxother = 200


def _render(value: object) -> str:
    return value if isinstance(value, str) else _SHORT.repr(value)


def _validate(raw: RawEntry, path: str, known_tags: frozenset[str] | None) -> _Entry:
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
        raise fail(f"`func:` must be a schema string, got {_render(func)}")
    schema = parse_schema(func, path=path, line=line)

    variants: tuple[str, ...] = ("function",)
    dispatch: dict[str, str] = {}
    has_dispatch_table = structured = manual_cpp_binding = False
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
            unknown.append((key, _render(value)))
            continue
        if expected is bool:
            if not isinstance(value, bool):
                raise fail(f"`{key}:` must be True or False, got {_render(value)}")
            if key == "structured":
                structured = value
            elif key == "manual_cpp_binding":
                manual_cpp_binding = value
            continue
        if expected is str and not isinstance(value, str):
            raise fail(f"`{key}:` must be a string, got {_render(value)}")
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
                raise fail(f"`structured_delegate:` must be an operator name, got {_render(value)}")
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
                raise fail(f"`{key}:` must be a list of strings, got {_render(value)}")
        elif key == "ufunc_inner_loop":
            if not isinstance(value, str | Mapping):
                raise fail(f"`ufunc_inner_loop:` must be a string or a mapping, got {_render(value)}")
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
    return _Entry(
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
        tuple(unknown),
        warnings,
        # explicit, or by omitting the table (structured ops get kernels elsewhere)
        CIA in dispatch or (not has_dispatch_table and not structured and delegate is None),
    )


_Fail = Callable[[str], EntryError]
_variants_cache: dict[str, tuple[str, ...]] = {}


def clear_caches() -> None:
    """Forget the interned `variants:` values (benchmarks time cold runs)."""
    _variants_cache.clear()


def _variants(value: str, fail: _Fail) -> tuple[str, ...]:
    variants = _variants_cache.get(value)
    if variants is None:
        variants = tuple(v.strip() for v in value.split(","))
        for v in variants:
            if v not in _VARIANTS:
                raise fail(f"unknown variant {v!r} in `variants: {value}`")
        _variants_cache[value] = variants
    return variants


def _dispatch(value: object, fail: _Fail) -> dict[str, str]:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise fail(f"`dispatch:` must be a mapping of dispatch keys to kernels, got {_render(value)}")
    dispatch: dict[str, str] = {}
    for keys, kernel in value.items():
        if not isinstance(keys, str) or not isinstance(kernel, str):
            raise fail(f"bad dispatch line {_render(keys)}: {_render(kernel)} (both must be names)")
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
    raise fail(f"`tags:` must be a tag name or a list of them, got {_render(value)}")


def _autogen(value: str, fail: _Fail) -> tuple[str, ...]:
    names = tuple(a for a in (x.strip() for x in value.split(",")) if a)
    for a in names:
        if not _OPERATOR_NAME_RE.fullmatch(a):
            raise fail(f"bad operator name {a!r} in `autogen: {value}`")
    return names


# --- dispatch ------------------------------------------------------------------------------------


def _composite(dispatch: Mapping[str, str], implicit: bool) -> str | None:
    if implicit:
        return CIA
    for key in COMPOSITE_KEYS:
        if key in dispatch:
            return key
    return None


def _resolve_delegate(e: _Entry, by_name: Mapping[str, _Entry], path: str) -> dict[str, str]:
    """The dispatch table of a structured_delegate op, with the delegate's kernels merged in.

    The functional and in-place members of a structured group register no kernel of their own for
    the structured backends: the codegen wraps the out= op's structured kernel for them. So the
    operator *runs* the delegate's kernels on exactly the delegate's structured keys (CPU, CUDA,
    MPS, XPU, MTIA); other keys (Sparse*, Quantized*, ...) it names itself, and those stay. The
    inherited entries carry the delegate's kernel name, so a reader sees where the code lives.
    Recording them (instead of leaving the keys out, as torchgen's backend index does) is what the
    taxonomy needs: "has backend kernels" must be true for ``add.Tensor``, not only for ``add.out``.
    """
    target = by_name.get(e.structured_delegate or "")
    if target is None:
        raise EntryError(
            f"structured_delegate {e.structured_delegate!r} names no entry", path=path, line=e.raw.line
        )
    if not target.structured:
        raise EntryError(
            f"structured_delegate {e.structured_delegate!r} is not marked `structured: True`",
            path=path,
            line=e.raw.line,
        )
    merged = dict(e.dispatch)
    for key, kernel in target.dispatch.items():
        if key in STRUCTURED_KEYS:
            merged.setdefault(key, kernel)
    return merged


def _operator(e: _Entry, by_name: Mapping[str, _Entry], path: str) -> Operator:
    dispatch = _resolve_delegate(e, by_name, path) if e.structured_delegate else e.dispatch
    implicit = e.implicit
    name = e.schema.name
    return new_operator(
        name=name.name,
        base=name.base,
        overload=name.overload,
        schema=e.raw.data["func"],  # type: ignore[arg-type]  # a str, checked in _validate
        kind=e.schema.kind(),
        line=e.raw.line,
        comments=e.raw.comments,
        dispatch=tuple(sorted(dispatch.items())) if len(dispatch) > 1 else tuple(dispatch.items()),
        composite=_composite(dispatch, implicit),
        structured=e.structured,
        structured_delegate=e.structured_delegate,
        tags=e.tags,
        python_module=e.python_module,
        variants=e.variants,
        category_override=e.category_override,
        unknown_keys=e.unknown_keys,
    )


# --- autogen: torchgen's add_generated_native_functions ------------------------------------------

_TgKind = str  # "functional" | "inplace" | "out" | "mutable" | "scratch"


def _tg_kind(s: FunctionSchema) -> _TgKind:
    """torchgen's SchemaKind; differs from FunctionSchema.kind() on mutated args before ``self``."""
    if s.name.is_inplace:
        return "inplace"
    out = s.arguments.out
    if out:
        for a in out:
            if a.name.startswith("_scratch_"):
                return "scratch"
        return "out"
    for a in _post_self(s.arguments):
        if a.annotation is not None and a.annotation.is_write:
            return "mutable"
    return "functional"


def _post_self(args: Arguments) -> tuple[Argument, ...]:
    for i, a in enumerate(args.positional):
        if a.name == "self":
            return args.positional[i + 1 :]
    return args.positional


def _plain_base(name: OperatorName) -> str:
    """torchgen's BaseOperatorName.base: without the in-place marker (``add_`` → add, ``__iand__`` →
    __and__) or the ``_functional`` suffix (``normal_functional`` is the functional member of
    ``normal_``'s group, see torchgen's Note [Overload Ambiguity With Functional Variants])."""
    base = name.base
    if name.is_dunder:
        return f"__{base[3:]}" if name.is_inplace else base
    if base.endswith("_"):
        return base[:-1]
    return base.removesuffix("_functional")


def _strip(a: Argument) -> Argument:
    return a if a.annotation is None else Argument(a.name, a.type, a.default)


def _drop_tensor_options(kwargs: tuple[Argument, ...]) -> tuple[Argument, ...]:
    """Remove the first dtype/layout/device/pin_memory run, as torchgen's signature() does."""
    n = len(_TENSOR_OPTIONS)
    for i in range(len(kwargs) - n + 1):
        if all(
            kwargs[i + j].name == name and str(kwargs[i + j].type) in (base, base + "?")
            for j, (name, base) in enumerate(_TENSOR_OPTIONS)
        ):
            return kwargs[:i] + kwargs[i + n :]
    return kwargs


def _arg_signature(s: FunctionSchema) -> Arguments:
    args = s.arguments
    positional = tuple(_strip(a) for a in args.positional)
    if s.name.name == "bernoulli.p":
        # torchgen's Note [bernoulli.p schema]: the default is added so it groups with bernoulli_.float
        positional = tuple(replace(a, default="0.5") if a.name == "p" else a for a in positional)
    kwargs = tuple(_strip(a) for a in _drop_tensor_options(args.kwarg_only))
    return Arguments(positional, kwargs, ())


def _mutated_not_returned(s: FunctionSchema) -> list[Argument]:
    """Written arguments that no return aliases (self, out, then post-self), as signature() orders them."""
    args = s.arguments
    if not args.out and not any(a.is_write for a in args.positional):
        return []  # most schemas write nothing
    self_arg = args.self_arg
    candidates = [self_arg] if self_arg is not None else []
    candidates.extend(args.out)
    candidates.extend(_post_self(args))
    written = [a for a in candidates if a.annotation is not None and a.annotation.is_write]
    if not written:
        return written
    ret_annotations = [r.annotation for r in s.returns]
    return [a for a in written if a.annotation not in ret_annotations]


def _group_key(s: FunctionSchema) -> tuple[str, ...]:
    """The text of torchgen's signature() without building it, as one tuple per group.

    Arguments and returns are interned by the parser, so their texts are computed once per file.
    """
    args = s.arguments
    positional = _arg_signature(s).positional if s.name.name == "bernoulli.p" else args.positional
    kwargs = _drop_tensor_options(args.kwarg_only) if len(args.kwarg_only) >= 4 else args.kwarg_only
    return (
        _plain_base(s.name),
        *[a.plain() for a in positional],
        "*",
        *[a.plain() for a in kwargs],
        "->",
        *[str(r.type) for r in s.returns],
        *[str(a.type) for a in _mutated_not_returned(s)],
    )


def _signature(s: FunctionSchema) -> tuple[Arguments, tuple[Return, ...]]:
    """torchgen's FunctionSchema.signature(keep_return_names=True), without the name (the caller
    names the result): the arguments and returns shared by a group's members."""
    extra = tuple(Return(f"{a.name}_out", a.type, None) for a in _mutated_not_returned(s))
    returns = tuple(Return(r.name, r.type, None) for r in s.returns)
    return _arg_signature(s), returns + extra


def _out_overload(overload: str) -> str:
    return f"{overload}_out" if overload else "out"


def _out_args(s: FunctionSchema) -> tuple[tuple[Return, ...], tuple[Argument, ...]]:
    """torchgen's generate_out_args_from_schema: one out argument per tensor-like return."""
    used = {x for a in s.arguments.flat_all if a.annotation is not None for x in a.annotation.alias_set}
    free = [c for c in string.ascii_lowercase if c not in used] if used else string.ascii_lowercase
    all_tensors = all(r.type == BaseType("Tensor") for r in s.returns)
    outs: list[Argument] = []
    returns: list[Return] = []
    for i, r in enumerate(s.returns):
        if r.type.is_tensor_like():
            out = Argument(
                "out" if len(s.returns) == 1 else f"out{i}", r.type, None, Annotation((free[i],), True, ())
            )
            outs.append(out)
            if all_tensors:
                returns.append(Return(None, out.type, out.annotation))
        else:
            returns.append(r)
    return tuple(returns), tuple(outs)


def _out_schema(s: FunctionSchema, kind: _TgKind) -> FunctionSchema:
    name = OperatorName(_plain_base(s.name), _out_overload(s.name.overload))
    args = s.arguments
    if kind == "inplace":
        self_arg = args.self_arg
        if self_arg is None:  # torchgen requires it; no release has such an in-place op
            raise SchemaError(f"in-place op {s.name.name} has no self argument")
        positional = tuple(_strip(a) if a is self_arg else a for a in args.positional)
        out = Argument("out", self_arg.type, None, self_arg.annotation)
        return FunctionSchema(name, Arguments(positional, args.kwarg_only, (out,)), s.returns)
    returns, outs = _out_args(s)
    if kind == "mutable":
        return FunctionSchema(name, Arguments(args.positional, args.kwarg_only, outs), returns)
    sig = _arg_signature(s)
    return FunctionSchema(name, Arguments(sig.positional, sig.kwarg_only, outs), returns)


def _functional_schema(s: FunctionSchema, kind: _TgKind) -> FunctionSchema:
    arguments, returns = _signature(s)
    base = _plain_base(s.name)
    if kind == "mutable":
        base += "_functional"  # torchgen's Note [Overload Ambiguity With Functional Variants]
    return FunctionSchema(OperatorName(base, s.name.overload), arguments, returns)


def _is_view(e: _Entry) -> bool:
    """torchgen's NativeFunction.is_view_op."""
    s = e.schema
    for r in s.returns:
        if r.annotation is not None and not r.annotation.is_write:
            return True
    if "inplace_view" in e.tags and s.name.name not in ("resize_", "resize_as_"):
        return True
    for args in (s.arguments.positional, s.arguments.kwarg_only, s.arguments.out):
        for a in args:
            if a.annotation is not None and "*" in a.annotation.alias_set_after:
                return True
    return False


def _generated(entries: Sequence[_Entry]) -> list[Operator]:
    # A group makes something only when it has an `autogen:` request, or an out= member beside an
    # in-place, mutable or scratch one (tests below). Its members share torchgen's plain base name,
    # so a base name whose entries meet neither condition holds no such group, and its entries
    # (over half the file) need no group key, the costly part.
    kinds = [_tg_kind(e.schema) for e in entries]
    bases = [_plain_base(e.schema.name) for e in entries]
    requests: set[str] = set()
    outs: set[str] = set()
    others: set[str] = set()
    for e, kind, plain in zip(entries, kinds, bases, strict=True):
        if e.autogen:
            requests.add(plain)
        if kind == "out":
            outs.add(plain)
        elif kind != "functional":
            others.add(plain)
    candidates = requests | (outs & others)
    groups: dict[tuple[str, ...], dict[_TgKind, _Entry]] = {}
    for e, kind, plain in zip(entries, kinds, bases, strict=True):
        if plain in candidates:
            groups.setdefault(_group_key(e.schema), {})[kind] = e

    made: list[Operator] = []
    for d in groups.values():
        # Every test below only skips the group, so the cheap ones go first. A group generates its
        # functional member when it has an out= one, and its out= member when `autogen:` asks for
        # it, so most groups (complete, or never asking) are done with at the first test.
        has_out = "out" in d
        if has_out:
            if len(d) == 1 or "functional" in d:
                continue
        elif not any(m.autogen for m in d.values()):
            continue
        members = list(d.values())
        if all(m.implicit for m in members) and not any("core" in m.tags for m in members):
            continue
        if all(m.manual_cpp_binding for m in members):
            continue
        if any(_is_view(m) and m.schema.name.base != "set_" for m in members):
            continue
        if "inplace" in d and d["inplace"].name in _UNGROUPABLE_INPLACE:
            continue
        base_kind = next(k for k in ("mutable", "inplace", "out", "functional") if k in d)
        base = d[base_kind]
        valid = base_kind == "inplace" or any(r.type.is_tensor_like() for r in base.schema.returns)
        gets_out = not has_out and valid and any("out" in a for a in base.autogen)
        if gets_out:
            made.append(_generated_operator(_out_schema(base.schema, base_kind), base, members))
        if "functional" not in d and (has_out or gets_out):
            made.append(_generated_operator(_functional_schema(base.schema, base_kind), base, members))
    return made


def _generated_operator(schema: FunctionSchema, base: _Entry, members: Sequence[_Entry]) -> Operator:
    name = schema.name
    # The entry that asked for it: the group member whose autogen lists the name, else the one
    # torchgen generated it from.
    source = next((m for m in members if name.name in m.autogen), base)
    tags = ("generated", *sorted(_INHERITED_TAGS.intersection(base.tags)))
    return new_operator(
        name=name.name,
        base=name.base,
        overload=name.overload,
        schema=str(schema),
        kind=schema.kind(),
        line=source.raw.line,
        dispatch=((CEA, _kernel_name(schema, base)),),
        composite=CEA,
        tags=tags,
        autogen_from=source.name,
    )


def _kernel_name(schema: FunctionSchema, base: _Entry) -> str:
    """torchgen's name for the generated CompositeExplicitAutograd kernel (``op_overload`` for out=)."""
    name = schema.name
    kernel = f"{name.base}_{name.overload}" if schema.arguments.out else name.base
    return kernel + ("_symint" if base.schema.has_symint() else "")
