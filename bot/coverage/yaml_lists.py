"""The YAML op lists: torch_xla's, Intel XPU's and Ascend op-plugin's (with its torch-version gates)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import yaml

from opdrift.coverage.oplist import BackendList, BackendOp, normalise_name
from opdrift.errors import ConfigError
from opdrift.schema.kernel import KernelForm
from opdrift.versions import parse_user_version
from opdrift.yamltext import compose_yaml_document


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _mapping(node: yaml.Node | None, path: str, what: str) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        line = None if node is None else _line(node)
        raise ConfigError(f"expected a mapping at the top of {what}", path=path, line=line)
    out: dict[str, yaml.Node] = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            raise ConfigError("expected a plain key", path=path, line=_line(key))
        out[str(key.value)] = value
    return out


def _scalar_items(node: yaml.Node, path: str, key: str) -> Iterator[tuple[str, int]]:
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return  # an empty list written as `key:` with nothing under it
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(f"'{key}' must be a list of operator names", path=path, line=_line(node))
    for item in node.value:
        if not isinstance(item, yaml.ScalarNode):
            raise ConfigError(f"'{key}' items must be operator names", path=path, line=_line(item))
        yield str(item.value), _line(item)


def _backend_items(node: yaml.Node, path: str, key: str) -> Iterator[tuple[str, int]]:
    """The operator names of one list of torchgen's backend yaml: plain names, or entries with a
    ``func:`` name and settings (torch_npu's ``- func: clone`` / ``op_api: True``)."""
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(f"'{key}' must be a list of operator names", path=path, line=_line(node))
    for item in node.value:
        if isinstance(item, yaml.MappingNode):
            func = _mapping(item, path, f"a '{key}' entry").get("func")
            if not isinstance(func, yaml.ScalarNode):
                raise ConfigError(f"'{key}' entry without a 'func:' name", path=path, line=_line(item))
            yield str(func.value), _line(func)
        elif isinstance(item, yaml.ScalarNode):
            yield str(item.value), _line(item)
        else:
            raise ConfigError(f"'{key}' items must be operator names", path=path, line=_line(item))


def _read_backend_yaml(text: str, path: str, what: str, lists: tuple[str, ...]) -> list[BackendOp]:
    """torchgen's backend yaml (``backend:``, ``cpp_namespace:``, then lists of ATen operator names):
    every name of LISTS, in file order, with its list as origin (``symint:`` repeats names of
    ``supported:``); ``autograd:`` names are registered at the backend's Autograd key."""
    top = _mapping(compose_yaml_document(text, path), path, what)
    # torchgen's gen_backend_stubs names the kernel of an op in `symint:` NAME_symint, and a kernel
    # whose name has `_symint` takes the SymInt form (BackendMetadata.supports_symint); every other
    # kernel is declared in the int64_t form. The yaml says so too: `symint` "overloads operations to
    # take SymInts rather than plain integers".
    symint = _symint_names(top, path)
    ops: list[BackendOp] = []
    for key in lists:
        if key in top:
            for raw, line in _backend_items(top[key], path, key):
                name = normalise_name(raw, path=path, line=line)
                ops.append(BackendOp(name, line, path, key, kernel_form=_form(name in symint)))
    if not ops:
        raise ConfigError(f"no operators in any of {', '.join(lists)}", path=path)
    return ops


# The lists of xla_native_functions.yaml that name ATen operators the backend implements.
_XLA_LISTS = ("full_codegen", "ir_gen", "supported", "symint", "autograd")
# torch_xla's boxed CPU fallback, where what it lacks runs: the kind table's (`opdrift.coverage.kinds`).


def read_xla(text: str, path: str) -> BackendList:
    """torch_xla's xla_native_functions.yaml. Its codegen runs under functionalization, so the out and
    in-place variants of a lowered functional op need no kernel of their own; what it lacks runs on
    its CPU fallback."""
    ops = _read_backend_yaml(text, path, "xla_native_functions.yaml", _XLA_LISTS)
    return BackendList("xla", path, tuple(ops))


# The lists of torch_npu's npu_native_functions.yaml that name ATen operators (`custom:` holds
# torch_npu's own operators, such as npu_format_cast).
_TORCH_NPU_LISTS = ("supported", "symint", "autograd")


def read_torch_npu(text: str, path: str) -> BackendList:
    """torch_npu's own npu_native_functions.yaml: the ATen operators it registers itself (``resize_``,
    ``view``, ``empty.memory_format``...) beside op-plugin's list."""
    ops = _read_backend_yaml(text, path, "npu_native_functions.yaml", _TORCH_NPU_LISTS)
    return BackendList("torch-npu", path, tuple(ops))


def _form(symint: bool) -> KernelForm:
    return "SymInt" if symint else "int64_t"


def _symint_names(top: dict[str, yaml.Node], path: str) -> frozenset[str]:
    """The names in torchgen's backend-yaml `symint:` list (absent or empty: none)."""
    if "symint" not in top:
        return frozenset()
    return frozenset(
        normalise_name(raw, path=path, line=line)
        for raw, line in _backend_items(top["symint"], path, "symint")
    )


def read_xpu(text: str, path: str) -> BackendList:
    """Intel's xpu_functions.yaml: ``backend: XPU`` and a ``supported:`` list."""
    top = _mapping(compose_yaml_document(text, path), path, "xpu_functions.yaml")
    if "supported" not in top:
        raise ConfigError("no 'supported:' list", path=path)
    # The file was gen_backend_stubs' input too, so an op in a `symint:` list would take the SymInt
    # form; Intel's file has no such list, so every kernel is in the int64_t form.
    symint = _symint_names(top, path)
    names = [
        (normalise_name(raw, path=path, line=line), line)
        for raw, line in _scalar_items(top["supported"], path, "supported")
    ]
    ops = [
        BackendOp(name, line, path, "supported", kernel_form=_form(name in symint)) for name, line in names
    ]
    return BackendList("xpu", path, tuple(ops), warnings=(XPU_MOVED.format(path=path),))


# torch-xpu-ops generated its registrations from this yaml until 229a887 (2024-09-26) and deleted its
# yaml/ folder in 08c2910 (2026-06-17): XPU's kernels are PyTorch's own `XPU:` entries since, and what
# XPU lacks runs on CPU by the `fallback_list` of its XPUFallback.cpp (`opdrift.coverage.cpp`).
XPU_MOVED = (
    "{path}: torch-xpu-ops deleted xpu_functions.yaml in June 2026 (08c2910); XPU's kernels now live in "
    "PyTorch's own XPU: entries: use --backend xpu:dispatch=XPU, and "
    "--backend xpu:xpu-fallback=src/ATen/native/xpu/XPUFallback.cpp for the ops it runs on CPU"
)


def _version_key(text: str, *, path: str, line: int) -> tuple[int, ...]:
    version = parse_user_version(text)
    if version is None:
        raise ConfigError(f"bad version {text!r} (expected like v2.1)", path=path, line=line)
    return version.minor_key


def torch_version_key(text: str) -> tuple[int, int]:
    """(major, minor) of a torch version as torch spells it: ``2.6.0a0``, ``2.1.0+cpu``, ``v2.7``.

    Gates name minor releases only, and a main-branch checkout's version.txt (``2.6.0a0``) or a CPU
    wheel's (``2.1.0+cpu``) belongs to the release it leads to.
    """
    version = parse_user_version(text)
    if version is None:
        raise ConfigError(f"torch version {text!r} is not like 2.6 or 2.6.0a0 (give --torch-version X.Y)")
    return version.minor_key


def gate_applies(node: yaml.Node, version: tuple[int, ...], *, path: str) -> bool:
    """op-plugin's version gates: ``all_version``, ``v2.7`` (that version only), ``v2.1, v2.2, v2.3``
    (those versions: how Ascend's own file writes most gates) or ``[v2.1, newest]`` (a range)."""
    line = _line(node)
    if isinstance(node, yaml.ScalarNode):
        value = str(node.value).strip()
        if value == "all_version":
            return True
        if "," not in value:
            return _version_key(value, path=path, line=line) == version
        try:
            listed = [_version_key(v, path=path, line=line) for v in value.split(",")]
        except ConfigError:
            raise ConfigError(
                f"bad version list {value!r} (expected like v2.1, v2.2)", path=path, line=line
            ) from None
        return version in listed
    if isinstance(node, yaml.SequenceNode) and len(node.value) == 2:
        low_node, high_node = node.value
        if isinstance(low_node, yaml.ScalarNode) and isinstance(high_node, yaml.ScalarNode):
            low = _version_key(str(low_node.value), path=path, line=line)
            if str(high_node.value).strip() == "newest":
                return low <= version
            return low <= version <= _version_key(str(high_node.value), path=path, line=line)
    raise ConfigError(
        "version gate must be all_version, vX.Y, a list vX.Y, vX.Y or a range [vX.Y, vX.Y|newest]",
        path=path,
        line=line,
    )


# Keys of an op-plugin entry that gate it by torch version, as torchnpugen reads them: the ACL-op and
# aclnn implementations, and the sparse kernel (Ascend's `_coalesce` has only that gate).
_GATES = ("acl_op", "op_api", "sparse")
# The lists of ATen operators: torchnpugen generates `quant` (int_repr, dequantize.self...) with
# `official`; `custom` holds torch_npu's own operators. `autograd` names ATen operators registered at
# AutogradPrivateUse1 (`_thnn_fused_gru_cell`, forward and backward in one): op-plugin's
# torchnpugen/gen_op_plugin_functions.py gates it per version like `official`, and torch_npu's
# torchnpugen/gen_backend_stubs.py reads it as torchgen's backend `autograd:` list (Ascend/op-plugin
# at 517f2e7, Ascend/pytorch at 9e73e70).
_OP_PLUGIN_LISTS = ("official", "quant", "autograd")
_FUNC_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?)\(")


def _op_plugin_entries(top: dict[str, yaml.Node], path: str) -> Iterator[tuple[str, yaml.Node]]:
    """(list name, entry) of every ATen entry, in file order within each list."""
    for key in _OP_PLUGIN_LISTS:
        entries = top.get(key)
        if entries is None or (isinstance(entries, yaml.ScalarNode) and entries.value in ("", "~", "null")):
            continue  # torchnpugen skips a missing or empty list too
        if not isinstance(entries, yaml.SequenceNode):
            raise ConfigError(f"'{key}' must be a list of entries", path=path, line=_line(entries))
        for entry in entries.value:
            yield key, entry


@dataclass(frozen=True)
class ForcedBinding:
    """An operator whose kernel op-plugin's codegen binds with its ``Tensor[]`` as ``const
    at::ITensorListRef &`` whatever its entry says, as of an op-plugin commit, and the release whose
    registration in the yaml's top-level ``all_version`` tells a list that holds it (the reader sees
    the yaml alone, not the commit it comes from)."""

    base: str  # torchnpugen compares the base name (`str(f.func.name.name)`): every overload
    commit: str  # the Ascend/op-plugin commit that added it to the list
    registered: str  # a yaml whose all_version names this release is that commit's or later


# torchnpugen/context.py's `_FORCE_ILISTREF_TENSOR_LIST_OPS` (Ascend/op-plugin at 517f2e7):
# native_function_manager sets `use_ilistref_for_tensor_lists` to `f.part_of_structured_group or` the
# op's base name is in that set, for ops upstream made structured while op_plugin_functions.yaml still
# declares them plain; "Since IListRef has an implicit constructor from ArrayRef, this signature is also
# accepted from older wrappers that still pass TensorList -- so no version gating is needed". So the
# kernel builds against a torch that binds them either way (`BackendOp.ilistref_either`).
# - `_scaled_mm_v2`: 49c8366e (2026-07-07, following pytorch#185272), the commit that appended v2.14
#   to all_version: a yaml naming v2.14 holds it.
# - `_scaled_grouped_mm_v2`: f2d45694 (2026-08-03, following pytorch#187357), which changed no yaml;
#   the first commit after it to register a release is 99a1df2e (2026-08-12, v2.15). A yaml naming
#   v2.14 but not v2.15 may be older than f2d45694, when torch_npu's 2.14 build broke on this kernel
#   (f2d45694's description): it is judged by its entry, as breaking, rather than said to build.
FORCED_ILISTREF: tuple[ForcedBinding, ...] = (
    ForcedBinding("_scaled_mm_v2", "49c8366e", "v2.14"),
    ForcedBinding("_scaled_grouped_mm_v2", "f2d45694", "v2.15"),
)


def _forced_ilistref(top: dict[str, yaml.Node]) -> frozenset[str]:
    """The base names of `FORCED_ILISTREF` whose commit the yaml's top-level ``all_version`` shows it
    has (a list without one, or with an item that is no version, shows none: its entries alone bind)."""
    node = top.get("all_version")
    if not isinstance(node, yaml.SequenceNode):
        return frozenset()
    named = set()
    for item in node.value:
        version = parse_user_version(str(item.value)) if isinstance(item, yaml.ScalarNode) else None
        if version is None:
            return frozenset()
        named.add(version.minor_key)
    return frozenset(
        f.base for f in FORCED_ILISTREF if (v := parse_user_version(f.registered)) and v.minor_key in named
    )


def read_op_plugin(text: str, path: str, torch_version: str | None) -> BackendList:
    """Ascend's op_plugin_functions.yaml. Only the ATen entries (``official``, ``quant`` and
    ``autograd``, the last at the Autograd key) whose gate admits the torch version being compared
    count; ``custom`` ones are torch_npu's own operators."""
    top = _mapping(compose_yaml_document(text, path), path, "op_plugin_functions.yaml")
    if "official" not in top:
        raise ConfigError("no 'official:' list of ATen operators", path=path)
    version = None if torch_version is None else torch_version_key(torch_version)
    symint = _op_plugin_symint(top, path)
    forced = _forced_ilistref(top)
    ops: list[BackendOp] = []
    ungated = 0
    for key, entry in _op_plugin_entries(top, path):
        fields = _mapping(entry, path, "an op-plugin entry")
        func = fields.get("func")
        if not isinstance(func, yaml.ScalarNode):
            raise ConfigError("entry without 'func:'", path=path, line=_line(entry))
        line = _line(func)
        schema = str(func.value).strip()
        m = _FUNC_NAME.match(schema)
        if m is None:
            raise ConfigError(f"'func' is not a schema: {schema[:80]!r}", path=path, line=line)
        gates = [fields[g] for g in _GATES if g in fields]
        if version is None:
            ungated += bool(gates)
        elif gates and not any(gate_applies(g, version, path=path) for g in gates):
            continue
        form = _form(m.group(1) in symint)
        name = normalise_name(m.group(1), path=path, line=line)
        structured, delegate, const_ref = _binding_keys(fields, path)
        ops.append(
            BackendOp(
                name,
                line,
                path,
                key,
                schema,
                "full",
                kernel_form=form,
                own_binding=True,
                structured=structured,
                structured_delegate=delegate,
                const_ref_mutable=const_ref,
                ilistref_either=name.split(".", 1)[0] in forced,
            )
        )
    return BackendList("op-plugin", path, tuple(ops), ungated=ungated)


def _binding_keys(fields: dict[str, yaml.Node], path: str) -> tuple[bool, str | None, bool]:
    """An op-plugin entry's own keys that bind its kernel: torchnpugen reads the file with torchgen's
    NativeFunction.from_yaml and binds each kernel by the entry's ``structured: True``,
    ``structured_delegate:`` and ``use_const_ref_for_mutable_tensors:`` (its context.py's
    native_function_manager), so an absent key is False whatever upstream's entry says (but for the
    ops that file's own list forces, `FORCED_ILISTREF`)."""
    node = fields.get("structured_delegate")
    delegate = str(node.value).strip() if isinstance(node, yaml.ScalarNode) else ""
    return (
        _flag(fields.get("structured"), path),
        delegate or None,
        _flag(fields.get("use_const_ref_for_mutable_tensors"), path),
    )


def _flag(node: yaml.Node | None, path: str) -> bool:
    """A boolean key of an entry (absent: False), as YAML reads ``True``, ``true`` or ``False``."""
    if node is None:
        return False
    if isinstance(node, yaml.ScalarNode) and str(node.value).lower() in ("true", "false"):
        return str(node.value).lower() == "true"
    raise ConfigError("expected True or False", path=path, line=_line(node))


def _op_plugin_symint(top: dict[str, yaml.Node], path: str) -> frozenset[str]:
    """The names of op-plugin's `symint:` entries, as torchnpugen reads them (gen.py's SYMINT_SET:
    each entry's func up to its "(", ungated): it declares an op's kernel with
    ``NativeSignature(symint=True)`` (NAME_symint) when its name is in that set, and in the int64_t
    form otherwise."""
    entries = top.get("symint")
    if entries is None or not isinstance(entries, yaml.SequenceNode):
        return frozenset()
    names = set()
    for entry in entries.value:
        func = _mapping(entry, path, "an op-plugin entry").get("func")
        if isinstance(func, yaml.ScalarNode):
            names.add(str(func.value).split("(", 1)[0].strip())
    return frozenset(names)
