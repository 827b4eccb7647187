"""``autogen`` expanded the way torchgen's ``add_generated_native_functions`` does it, by the rules of
the release in question (`opdrift.operators.codegen`).

torchgen does not read the names in ``autogen:``; it groups entries by their normalised signature and
generates the missing out= and functional members of a group. ``autogen:`` matters only through one
test ("does any listed name contain 'out'?"), and some groups get nothing at all: views, manual C++
bindings, non-core CompositeImplicitAutograd groups, lone out= ops, ``polygamma_``. 1.12's codegen
read none of it: it generated every missing out= and functional member it could, and registered no
kernel for the out= ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from opdrift.dispatchkeys import CEA
from opdrift.errors import SchemaError
from opdrift.model import Operator
from opdrift.operators.codegen import NEWEST, CodegenRules
from opdrift.operators.validate import Entry
from opdrift.schema.model import (
    Annotation,
    Argument,
    Arguments,
    BaseType,
    FunctionSchema,
    OperatorName,
    Return,
)

# torchgen's hand-kept exception: an in-place op whose schema cannot be grouped (pre-self argument).
_UNGROUPABLE_INPLACE = frozenset({"polygamma_"})

_TENSOR_OPTIONS = (
    ("dtype", "ScalarType"),
    ("layout", "Layout"),
    ("device", "Device"),
    ("pin_memory", "bool"),
)

_TgKind = str  # "functional" | "inplace" | "out" | "mutable" | "scratch"

_LETTERS = "abcdefghijklmnopqrstuvwxyz"  # string.ascii_lowercase, without importing string


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


def _plain_base(name: OperatorName, strip_functional: bool = True) -> str:
    """torchgen's BaseOperatorName.base: without the in-place marker (``add_`` → add, ``__iand__`` →
    __and__) or, with STRIP_FUNCTIONAL (1.13 on), the ``_functional`` suffix (``normal_functional``
    is the functional member of ``normal_``'s group, see torchgen's Note [Overload Ambiguity With
    Functional Variants])."""
    base = name.base
    if name.is_dunder:
        return f"__{base[3:]}" if name.is_inplace else base
    if base.endswith("_"):
        return base[:-1]
    return base.removesuffix("_functional") if strip_functional else base


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


def group_key(s: FunctionSchema, *, strip_functional: bool = True) -> tuple[str, ...]:
    """The text of torchgen's signature() without building it, as one tuple per group.

    Arguments and returns are interned by the parser, so their texts are computed once per file.
    """
    args = s.arguments
    positional = _arg_signature(s).positional if s.name.name == "bernoulli.p" else args.positional
    kwargs = _drop_tensor_options(args.kwarg_only) if len(args.kwarg_only) >= 4 else args.kwarg_only
    return (
        _plain_base(s.name, strip_functional),
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


def _out_args(s: FunctionSchema, rules: CodegenRules) -> tuple[tuple[Return, ...], tuple[Argument, ...]]:
    """torchgen's generate_out_args_from_schema: one out argument per tensor-like return."""
    used = {x for a in s.arguments.flat_all if a.annotation is not None for x in a.annotation.alias_set}
    free = [c for c in _LETTERS if c not in used] if used else _LETTERS
    all_tensors = all(r.type == BaseType("Tensor") for r in s.returns)
    outs: list[Argument] = []
    returns: list[Return] = []
    for i, r in enumerate(s.returns):
        if r.type.is_tensor_like():
            out = Argument(
                "out" if len(s.returns) == 1 and rules.lone_out_named_out else f"out{i}",
                r.type,
                None,
                Annotation((free[i],), True, ()),
            )
            outs.append(out)
            if all_tensors:
                returns.append(Return(None, out.type, out.annotation))
        else:
            returns.append(r)
    return tuple(returns), tuple(outs)


def _out_schema(s: FunctionSchema, kind: _TgKind, rules: CodegenRules) -> FunctionSchema:
    strip = rules.functional_naming == "base"
    name = OperatorName(_plain_base(s.name, strip), _out_overload(s.name.overload))
    args = s.arguments
    if kind == "inplace":
        self_arg = args.self_arg
        if self_arg is None:  # torchgen requires it; no release has such an in-place op
            raise SchemaError(f"in-place op {s.name.name} has no self argument")
        positional = tuple(_strip(a) if a is self_arg else a for a in args.positional)
        out = Argument("out", self_arg.type, None, self_arg.annotation)
        return FunctionSchema(name, Arguments(positional, args.kwarg_only, (out,)), s.returns)
    returns, outs = _out_args(s, rules)
    if kind == "mutable":
        return FunctionSchema(name, Arguments(args.positional, args.kwarg_only, outs), returns)
    sig = _arg_signature(s)
    return FunctionSchema(name, Arguments(sig.positional, sig.kwarg_only, outs), returns)


def _functional_schema(s: FunctionSchema, kind: _TgKind, rules: CodegenRules) -> FunctionSchema:
    arguments, returns = _signature(s)
    if rules.functional_naming == "overload":
        overload = s.name.overload
        name = OperatorName(
            _plain_base(s.name, False), f"{overload}_functional" if overload else "functional"
        )
        return FunctionSchema(name, arguments, returns)
    base = _plain_base(s.name)
    if kind == "mutable":
        base += "_functional"  # torchgen's Note [Overload Ambiguity With Functional Variants]
    return FunctionSchema(OperatorName(base, s.name.overload), arguments, returns)


def _is_view(e: Entry) -> bool:
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


def generated_operators(entries: Sequence[Entry], rules: CodegenRules = NEWEST) -> list[Operator]:
    """The operators the codegen of RULES' release adds to ENTRIES."""
    # A group makes something only when it has an `autogen:` request (or, in 1.12, any in-place or
    # mutable member), or an out= member beside an in-place, mutable or scratch one (tests below).
    # Its members share torchgen's plain base name, so a base name whose entries meet neither
    # condition holds no such group, and its entries (over half the file) need no group key, the
    # costly part.
    strip = rules.functional_naming == "base"
    kinds = [_tg_kind(e.schema) for e in entries]
    bases = [_plain_base(e.schema.name, strip) for e in entries]
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
    candidates = requests | (outs & others) if rules.out_on_request else others
    groups: dict[tuple[str, ...], dict[_TgKind, Entry]] = {}
    for e, kind, plain in zip(entries, kinds, bases, strict=True):
        if plain in candidates:
            groups.setdefault(group_key(e.schema, strip_functional=strip), {})[kind] = e

    made: list[Operator] = []
    for d in groups.values():
        # Every test below only skips the group, so the cheap ones go first. A group generates its
        # functional member when it has an out= one, and its out= member when `autogen:` asks for
        # it, so most groups (complete, or never asking) are done with at the first test.
        has_out = "out" in d
        if has_out:
            if len(d) == 1 or "functional" in d:
                continue
        elif rules.out_on_request:
            if not any(m.autogen for m in d.values()):
                continue  # nothing asked for
        elif set(d) <= {"functional"}:
            continue  # 1.12 generated from in-place and mutable members only
        members = list(d.values())
        if all(m.implicit for m in members) and not (
            rules.core_composite_generates and any("core" in m.tags for m in members)
        ):
            continue
        if all(m.manual_cpp_binding for m in members):
            continue
        if any(
            _is_view(m) and not (rules.set_is_not_a_view and m.schema.name.base == "set_") for m in members
        ):
            continue
        if "inplace" in d and d["inplace"].name in _UNGROUPABLE_INPLACE:
            continue
        order = _BASE_ORDER_MUTABLE_FIRST if rules.base_prefers_mutable else _BASE_ORDER_INPLACE_FIRST
        base_kind = next(k for k in order if k in d)
        base = d[base_kind]
        valid = base_kind == "inplace" or any(r.type.is_tensor_like() for r in base.schema.returns)
        asked = not rules.out_on_request or any("out" in a for a in base.autogen)
        gets_out = not has_out and valid and asked
        if gets_out:
            made.append(_generated_operator(_out_schema(base.schema, base_kind, rules), base, members, rules))
        if "functional" not in d and (has_out or gets_out):
            functional = _functional_schema(base.schema, base_kind, rules)
            made.append(_generated_operator(functional, base, members, rules))
    return made


# The member a group's generated operators are made from, by kind, first present wins.
_BASE_ORDER_MUTABLE_FIRST = ("mutable", "inplace", "out", "functional")
_BASE_ORDER_INPLACE_FIRST = ("inplace", "mutable", "out", "functional")


def _generated_operator(
    schema: FunctionSchema, base: Entry, members: Sequence[Entry], rules: CodegenRules
) -> Operator:
    name = schema.name
    # The entry that asked for it: the group member whose autogen lists the name, else the one
    # torchgen generated it from.
    source = next((m for m in members if name.name in m.autogen), base)
    tags = ("generated", *sorted(rules.inherited_tags.intersection(base.tags)))
    dispatch: tuple[tuple[str, str], ...] = ()
    composite: str | None = None
    kernels: tuple[tuple[str, str], ...] = ()  # a dispatcher entry with no kernel at any key
    if rules.generated_out_has_kernel or not schema.arguments.out:
        dispatch = ((CEA, _kernel_name(schema, base)),)
        composite, kernels = CEA, _GENERATED_KERNELS
    return Operator(
        name=name.name,
        base=name.base,
        overload=name.overload,
        schema=str(schema),
        kind=schema.kind(),
        line=source.raw.line,
        dispatch=dispatch,
        composite=composite,
        tags=tags,
        autogen_from=source.name,
        kernels=kernels,
        # torchgen copies the key onto what it generates from the entry
        const_ref_mutable=base.const_ref_mutable,
    )


# A generated operator has one kernel, torchgen's CompositeExplicitAutograd one (but for 1.12's out=
# operators, `CodegenRules.generated_out_has_kernel`).
_GENERATED_KERNELS = ((CEA, CEA),)


def _kernel_name(schema: FunctionSchema, base: Entry) -> str:
    """torchgen's name for the generated CompositeExplicitAutograd kernel (``op_overload`` for out=)."""
    name = schema.name
    kernel = f"{name.base}_{name.overload}" if schema.arguments.out else name.base
    return kernel + ("_symint" if base.schema.has_symint() else "")
