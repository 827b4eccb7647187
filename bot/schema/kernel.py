"""The C++ signature a backend's kernel is compiled against, and whether a schema change breaks it.

A caller's compatibility (`opdrift.schema.compare`) and a kernel's are different questions. An out-of-tree
backend registers C++ functions for an operator (``m.impl("std.correction", &my_std)``), and those must
have the dispatcher's signature: every argument in schema order, out arguments last, no names and no
defaults, each schema type as torchgen's C++ API spells it. So a renamed argument or a changed default
breaks no kernel, while ``int[1] dim`` → ``int[1]? dim`` (``IntArrayRef`` → ``OptionalIntArrayRef``),
``int?`` → ``Scalar?`` or a new argument with a default breaks every kernel of the operator.

A kernel may be written in either of two forms, and PyTorch accepts both: the SymInt form
(``c10::SymInt``, ``c10::SymIntArrayRef``) and the plain one, where a SymInt is an ``int64_t``. A
change that keeps one form and alters the other (``int`` → ``SymInt``) breaks the backends that
register that form, so both are compared. Which form a kernel is judged in at a release: see
Note [SymInt kernels from 1.13].

The mapping is torchgen's ``cpp.argumenttype_type`` / ``returntype_type``, and returns always keep the
SymInt form (the dispatcher converts only parameters for an int64_t kernel). Beside the schema, two
per-operator switches of torchgen decide the signature, a `Binding`: an operator that is part of a
structured group takes its tensor lists as ``const at::ITensorListRef &`` (torchgen's
``use_ilistref_for_tensor_lists``, from 1.13 on), and an entry's ``use_const_ref_for_mutable_tensors``
makes a mutable Tensor argument or return ``const at::Tensor &``. So joining a structured group, or
adding or dropping that key, breaks the kernels with no schema change (``_scaled_mm_v2`` joined one in
2.14.0). `opdrift.operators.codegen.kernel_binding` is the one rule that reads an entry's binding at a
release; the drift, coverage and work items all ask it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Literal

from opdrift.schema.model import BaseType, FunctionSchema, ListType, OptionalType, Type
from opdrift.versions import since

KernelForm = Literal["SymInt", "int64_t"]
KERNEL_FORMS: tuple[KernelForm, ...] = ("SymInt", "int64_t")

# torchgen's BaseTypeToCppMapping, for the types passed by value.
_VALUE = {
    "int": "int64_t",
    "float": "double",
    "bool": "bool",
    "str": "c10::string_view",
    "Generator": "at::Generator",
    "ScalarType": "at::ScalarType",
    "Layout": "at::Layout",
    "Device": "at::Device",
    "DeviceIndex": "at::DeviceIndex",
    "MemoryFormat": "at::MemoryFormat",
    "QScheme": "at::QScheme",
    "Storage": "at::Storage",
    "Stream": "at::Stream",
    "Dimname": "at::Dimname",
    "SymFloat": "c10::SymFloat",
    "SymBool": "c10::SymBool",
    "GraphModule": "c10::GraphModule",
}


def _symint(form: KernelForm) -> str:
    return "c10::SymInt" if form == "SymInt" else "int64_t"


def _value_type(t: Type, form: KernelForm) -> str | None:
    """A type passed by value, or None for one passed by reference (torchgen's valuetype_type)."""
    if isinstance(t, BaseType):
        if t.name in ("Tensor", "Scalar"):
            return None
        if t.name == "SymInt":
            return _symint(form)
        return _VALUE.get(t.name, t.name)
    if isinstance(t, OptionalType):
        elem = _value_type(t.elem, form)
        return None if elem is None else f"::std::optional<{elem}>"
    if isinstance(t, ListType) and str(t.elem) == "bool" and t.size is not None:
        return f"::std::array<bool,{t.size}>"
    return None


@dataclass(frozen=True)
class Binding:
    """How torchgen binds an operator's kernel beyond its schema: its two per-operator switches."""

    ilistref: bool = False  # Tensor[] as `const at::ITensorListRef &` (a structured group's, 1.13 on)
    const_ref: bool = False  # use_const_ref_for_mutable_tensors: a mutable Tensor as `const at::Tensor &`

    @property
    def label(self) -> str:
        """The switches that are on, comma-separated ("" for none): the schema table's binding field."""
        return ",".join(f.name for f in fields(self) if getattr(self, f.name))

    @classmethod
    def from_label(cls, label: str) -> Binding:
        """The inverse of `label`; ValueError for a name that is no switch."""
        names = {f.name for f in fields(cls)}
        on = [n for n in label.split(",") if n]
        if any(n not in names for n in on):
            raise ValueError(f"not a binding: {label!r}")
        return cls(**dict.fromkeys(on, True))


PLAIN = Binding()


def argument_type(
    t: Type, *, mutable: bool, form: KernelForm, ilistref: bool = False, const_ref: bool = False
) -> str:
    """The C++ parameter type of one schema argument (torchgen's argumenttype_type). `const_ref`: the
    entry's use_const_ref_for_mutable_tensors, which takes a mutable tensor as a const reference."""
    mutable = mutable and not const_ref
    by_value = _value_type(t, form)
    if by_value is not None:
        return by_value
    if isinstance(t, BaseType):
        if t.name == "Tensor":
            return "at::Tensor &" if mutable else "const at::Tensor &"
        return "const at::Scalar &"  # the one other by-reference base type
    if isinstance(t, OptionalType):
        elem = str(t.elem)
        if elem == "Tensor":
            # torchgen's own spelling of a mutable optional tensor (its "fix this discrepancy" TODO)
            return "at::Tensor &" if mutable else "const ::std::optional<at::Tensor> &"
        if elem == "Scalar":
            return "const ::std::optional<at::Scalar> &"
        if isinstance(t.elem, ListType) and str(t.elem.elem) == "int":
            return "at::OptionalIntArrayRef"
        if isinstance(t.elem, ListType) and str(t.elem.elem) == "SymInt":
            return "at::OptionalSymIntArrayRef" if form == "SymInt" else "at::OptionalIntArrayRef"
        return f"::std::optional<{argument_type(t.elem, mutable=mutable, form=form, ilistref=ilistref)}>"
    if isinstance(t, ListType):
        elem = str(t.elem)
        if elem == "int":
            return "at::IntArrayRef"
        if elem == "SymInt":
            return "c10::SymIntArrayRef" if form == "SymInt" else "at::IntArrayRef"
        if elem == "Tensor":
            return "const at::ITensorListRef &" if ilistref else "at::TensorList"
        if elem == "Scalar":
            return "at::ArrayRef<at::Scalar>"
        if elem == "Dimname":
            return "at::DimnameList"
        if elem == "Tensor?":
            return "const c10::List<::std::optional<at::Tensor>> &"
        return f"at::ArrayRef<{argument_type(t.elem, mutable=mutable, form=form, ilistref=ilistref)}>"
    raise TypeError(f"not a schema type: {t!r}")


def _return_type(t: Type, *, mutable: bool, const_ref: bool = False) -> str:
    by_value = _value_type(t, "SymInt")  # torchgen: "symint is ALWAYS respected for return types"
    if by_value is not None:
        return by_value
    if isinstance(t, BaseType):
        if t.name == "Tensor":
            if mutable:
                return "const at::Tensor &" if const_ref else "at::Tensor &"
            return "at::Tensor"
        return "at::Scalar"
    if isinstance(t, ListType):
        elem = "at::Tensor" if str(t.elem) == "Tensor" else _return_type(t.elem, mutable=False)
        return f"::std::vector<{elem}>"
    if isinstance(t, OptionalType):
        return f"::std::optional<{_return_type(t.elem, mutable=mutable, const_ref=const_ref)}>"
    raise TypeError(f"not a schema type: {t!r}")


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's C++ signature in one form: its return type and its parameter types, in order."""

    form: KernelForm
    returns: str
    parameters: tuple[str, ...]
    # each parameter's name as the schema names it: a kernel's parameters have no names the
    # dispatcher checks, so two signatures that differ only by them are the same signature
    names: tuple[str, ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        return f"{self.returns}({', '.join(self.parameters)})"

    def declaration(self, op: str) -> str:
        """The C++ function a backend registers for OP, its parameters named as the schema names them
        and the function named after the operator (``acos.out`` → ``acos_out``, as torchgen names
        out= kernels)."""
        named = zip(self.parameters, self.names, strict=True) if self.names else ()
        params = ", ".join(f"{t} {n}" for t, n in named) if self.names else ", ".join(self.parameters)
        return f"{self.returns} {op.replace('.', '_')}({params})"

    def named_against(self, after: KernelSignature) -> tuple[ParamChange, ...]:
        """`named_changes` from this signature to AFTER."""
        return named_changes(self, after)


def kernel_signature(schema: FunctionSchema, form: KernelForm, binding: Binding = PLAIN) -> KernelSignature:
    """The dispatcher's C++ signature of SCHEMA bound by BINDING (`opdrift.operators.codegen.kernel_binding`):
    arguments in schema order, out arguments last."""
    lists, const_ref = binding.ilistref, binding.const_ref
    params = tuple(
        argument_type(a.type, mutable=a.is_write, form=form, ilistref=lists, const_ref=const_ref)
        for a in schema.arguments.flat_all
    )
    rets = [_return_type(r.type, mutable=r.is_write, const_ref=const_ref) for r in schema.returns]
    returns = "void" if not rets else rets[0] if len(rets) == 1 else f"::std::tuple<{','.join(rets)}>"
    return KernelSignature(form, returns, params, tuple(a.name for a in schema.arguments.flat_all))


# What happened to a kernel's parameter, told by its name (`named_changes`): a parameter whose name
# is on one side only was added or removed; one kept by name got another type ("retyped"); one in the
# same place with another name and another type was "replaced"; the return type is "return".
ParamChangeKind = Literal["added", "removed", "retyped", "replaced", "return"]


@dataclass(frozen=True)
class ParamChange:
    """One named change of a kernel's signature, as a maintainer reads it: ``bool fast`` added after
    ``keepdim``. `before`/`after` are the C++ parameter (type and name; the type alone for
    "retyped" and "return"); `anchor` is the parameter an added one follows ("" when it comes first)."""

    kind: ParamChangeKind
    name: str
    before: str = ""
    after: str = ""
    anchor: str = ""


def bound(binding: Binding, schema: FunctionSchema) -> Binding:
    """BINDING less the switches that change nothing in SCHEMA's signature (ilistref without a Tensor[],
    const_ref without a mutable tensor): two operators bound alike in effect compare equal."""
    for f in fields(binding):
        if getattr(binding, f.name):
            off = replace(binding, **{f.name: False})
            if kernel_signature(schema, "SymInt", off) == kernel_signature(schema, "SymInt", binding):
                binding = off
    return binding


# What a schema change does to out-of-tree kernels, judged per form:
# - "breaking": the plain (int64_t) form changed, so every out-of-tree kernel stops compiling;
# - "symint": only the SymInt form changed, so only kernels written in the SymInt form break (see
#   Note [SymInt kernels from 1.13]);
# - "compatible": neither form changed; "none": the change is not about a schema.
KernelVerdict = Literal["breaking", "symint", "compatible", "none"]


@dataclass(frozen=True)
class KernelChange:
    """One form of an operator's kernel signature, before and after a schema change."""

    form: KernelForm
    before: KernelSignature
    after: KernelSignature

    def differences(self) -> tuple[tuple[str, str, str], ...]:
        """(what, before, after) for each part that differs: ``return``, ``parameter 3`` (1-based), or
        ``parameters`` (their count) when the list grew or shrank."""
        found: list[tuple[str, str, str]] = []
        if self.before.returns != self.after.returns:
            found.append(("return", self.before.returns, self.after.returns))
        old, new = self.before.parameters, self.after.parameters
        for i, (a, b) in enumerate(zip(old, new, strict=False), start=1):
            if a != b:
                found.append((f"parameter {i}", a, b))
        if len(new) > len(old):
            found.append(("parameters added", "", ", ".join(new[len(old) :])))
        elif len(old) > len(new):
            found.append(("parameters removed", ", ".join(old[len(new) :]), ""))
        return tuple(found)

    def named(self) -> tuple[ParamChange, ...]:
        """`named_changes` of this form's two signatures."""
        return named_changes(self.before, self.after)


def named_changes(before: KernelSignature, after: KernelSignature) -> tuple[ParamChange, ...]:
    """What changed between two signatures, by parameter name: the names are aligned (difflib's
    longest matching runs), so ``bool fast`` inserted before ``dtype`` is one addition, not "parameter
    4 changed, parameter 5 added". A rename that keeps the type breaks no kernel and is not told.
    Signatures without names (a hand-built one) are aligned by position."""
    out: list[ParamChange] = []
    if before.returns != after.returns:
        out.append(ParamChange("return", "", before.returns, after.returns))
    old_names = before.names or tuple(f"#{i}" for i in range(1, len(before.parameters) + 1))
    new_names = after.names or tuple(f"#{i}" for i in range(1, len(after.parameters) + 1))
    old = list(zip(old_names, before.parameters, strict=True))
    new = list(zip(new_names, after.parameters, strict=True))
    import difflib  # only for a break's summary: `stats` and the other quick commands never load it

    matcher = difflib.SequenceMatcher(a=old_names, b=new_names, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(
                ParamChange("retyped", n, t, u)
                for (n, t), (_, u) in zip(old[i1:i2], new[j1:j2], strict=True)
                if t != u
            )
        elif tag == "replace" and i2 - i1 == j2 - j1:
            out.extend(
                ParamChange("replaced", n, f"{t} {n}", f"{u} {m}")
                for (n, t), (m, u) in zip(old[i1:i2], new[j1:j2], strict=True)
                if t != u
            )
        else:
            out.extend(ParamChange("removed", n, f"{t} {n}") for n, t in old[i1:i2])
            anchor = new_names[j1 - 1] if j1 else ""
            for n, t in new[j1:j2]:
                out.append(ParamChange("added", n, "", f"{t} {n}", anchor))
                anchor = n
    return tuple(out)


def kernel_changes(
    before: FunctionSchema,
    after: FunctionSchema,
    *,
    binding_before: Binding = PLAIN,
    binding_after: Binding = PLAIN,
) -> tuple[KernelChange, ...]:
    """The forms whose C++ signature the change from BEFORE to AFTER alters (empty: kernels still build).
    `binding_*`: how each side binds beyond its schema (`opdrift.operators.codegen.kernel_binding`)."""
    found = []
    for form in KERNEL_FORMS:
        old = kernel_signature(before, form, binding_before)
        new = kernel_signature(after, form, binding_after)
        if old != new:
            found.append(KernelChange(form, old, new))
    return tuple(found)


# The form a kernel whose form is not known is judged in (`verdict_of`): the plain one, which every
# kernel may be written in from 1.13 on and which torchgen's gen_backend_stubs declares by default. Its
# signature is a function of the SymInt form's (each SymInt type printed as its int64_t one), so when it
# changed, a SymInt kernel breaks too; the reports show a backend of no known form this form's change.
FORM_IF_UNKNOWN: KernelForm = "int64_t"


def verdict_of(changes: tuple[KernelChange, ...]) -> KernelVerdict:
    """The verdict for every out-of-tree backend at once: "breaking" when the int64_t form changed
    (`FORM_IF_UNKNOWN`), "symint" when only the SymInt form did, "compatible" when neither did."""
    forms = {c.form for c in changes}
    if FORM_IF_UNKNOWN in forms:
        return "breaking"
    return "symint" if forms else "compatible"


def breaks_form(changes: tuple[KernelChange, ...], form: KernelForm) -> bool:
    """Whether a kernel written in FORM stops compiling (the verdict for one backend's own kernel)."""
    return any(c.form == form for c in changes)


# Note [SymInt kernels from 1.13]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# From 1.13.0 the dispatcher accepts a kernel written in the plain form (int64_t, IntArrayRef) for a
# schema with SymInts, and unpacks the SymInts when it calls it; before, a kernel had to take its
# schema's own types, the SymInt form, whatever it was written in. So a change to the SymInt form alone
# leaves an int64_t kernel building from 1.13 on ("symint", not "breaking"), and against an earlier
# release every kernel is judged in the SymInt form (`judged_form`, the one rule: the drift's
# `verdict_at`, coverage's alerts, subscriptions, the watch and the work items' declarations ask it).
# Read in the release wheels' c10 headers:
# - 1.13.0 (and 2.0.0): ATen/core/boxing/KernelFunction.h adds `has_symint` / `remove_symint` and a
#   second pointer, `sym_unboxed_kernel_func_`; KernelFunction_impl.h's `makeFromUnboxedFunctor`
#   stores a kernel under the one its signature fits (`fn_has_symint`), and `KernelFunction::call`
#   calls a plain kernel with `unpackSymInt<Args>(args)...` when no SymInt one is registered;
#   dispatch/OperatorEntry.h keeps `cpp_signature_` and `sym_cpp_signature_` apart, and
#   `assertSignatureIsCorrect(..., has_symint)` checks a caller against the one of its own form.
# - 1.12.0: KernelFunction has one unboxed pointer, `call` forwards the caller's arguments unchanged,
#   and OperatorEntry has one `cpp_signature_`, which every kernel must match: the SymInt form was
#   the only form (its RegistrationDeclarations.h spells `expand.SymInt` with c10::SymIntArrayRef).
# Observed on torch 2.13.0 (tests/data/observed/symint_kernels.py and .json): an int64_t kernel for
# `(Tensor self, SymInt[] size, SymInt n) -> Tensor` registers and is called boxed and unboxed with
# the right values; a SymInt kernel for the `int[]` / `int` schema is refused at registration
# ("Inferred operator schema for a C++ kernel function doesn't match the expected function schema").
PLAIN_KERNELS_FOR_SYMINT_SINCE = "1.13"


def judged_form(form: KernelForm | None, torch_version: str | None) -> KernelForm | None:
    """The form a kernel written in FORM (None: not known) is judged in against torch TORCH_VERSION
    ("2.14.1", "1.13.0a0+git…"; None, a recent one): its own, or "SymInt" before
    `PLAIN_KERNELS_FOR_SYMINT_SINCE`. See Note [SymInt kernels from 1.13]."""
    return form if since(PLAIN_KERNELS_FOR_SYMINT_SINCE, torch_version) else "SymInt"


def verdict_at(changes: tuple[KernelChange, ...], torch_version: str | None) -> KernelVerdict:
    """`verdict_of` by the rule of the release the kernels are built against: before 1.13 a change to
    either form breaks every out-of-tree kernel. See Note [SymInt kernels from 1.13]."""
    if changes and judged_form("int64_t", torch_version) == "SymInt":  # no int64_t kernel at that release
        return "breaking"
    return verdict_of(changes)
