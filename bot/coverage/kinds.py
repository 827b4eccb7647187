"""The kinds of backend list: the one place a kind is defined.

Everything else derives from `KIND_TABLE`: `BACKEND_KINDS` (what ``--backend KIND=PATH`` and the
config's ``kind:`` accept), `PROFILE_OF_KIND` (the profile a kind's backend is judged as, unless
``--profile`` says otherwise), `read_backend`'s dispatch (`bot.coverage.backends`), the CLI's help and
docs/coverage.md's table of kinds (a test checks it). Adding a kind means adding a row here and its reader.

This module imports nothing at run time, so that building the CLI's parser can list the kinds
without loading a stage: a reader is named as "module:function", taking (PATH, torch version) and
returning a `BackendList`, and is imported only when a list of that kind is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.operators.kernels import Profile
    from bot.schema.kernel import KernelForm

BackendKind = str  # one of BACKEND_KINDS

_READERS = "bot.coverage.backends"

XLA_FALLBACK = "torch_xla/csrc/aten_fallback.cpp:68 (XLA)"
# torch_npu (the runtime op-plugin's kernels are built into) registers `npu_cpu_fallback` for every
# operator at PrivateUse1, which warns and calls `at::native::cpu_fallback` unless
# TORCH_NPU_FALLBACK_CPU_DISABLE=1 (Ascend/pytorch, torch_npu/csrc/aten/VariableFallbackKernel.cpp at
# f2e1583, 2026-08-20; framework/utils/CpuFallbackUtils.h)
NPU_FALLBACK = "torch_npu/csrc/aten/VariableFallbackKernel.cpp:242 (PrivateUse1)"


@dataclass(frozen=True)
class KindRow:
    """One kind of backend list."""

    id: str  # what --backend KIND=PATH and the config's `kind:` say
    # "module:function" reading PATH (and the torch version compared, for version gates) → BackendList
    reader: str
    # how operators reach a backend of this kind (`bot.operators.kernels`): C++ registrations,
    # op-plugin and torch_npu's own list, XPU and a native dispatch key are eager backends; torch-mlir
    # compiles exported graphs; XLA runs under functionalization; a plain list could be anything, and
    # eager is the common case
    profile: Profile
    # the form its C++ kernels are written in where its list says nothing per operator (judged as
    # Note [SymInt kernels from 1.13] says); None: judged in every
    # form (torch-mlir lowers by types; a C++ tree's reader reads each function's own; a plain list)
    kernel_form: KernelForm | None
    path: str  # what PATH is, for the help
    help: str  # what is read, one line
    # whether its backend writes C++ kernels at all (torch-mlir lowers ops by their schema in its own
    # dialect): a work item shows a C++ declaration only then
    writes_kernels: bool = True
    # where every backend of this kind registers a boxed CPU fallback ("file:line (KEY)" in its own
    # repository), which runs an op it has no kernel for on CPU when PyTorch has a CPU kernel for it;
    # "" when the kind has none, or when its reader finds one in the sources read (a C++ tree's own
    # `m.fallback`, `bot.coverage.cpp`: pytorch_dlprim's src/tensor_ops.cpp:440 at 30e27c8, whose
    # `ptdlprim::fallback` calls `native::cpu_fallback`)
    fallback: str = ""
    # without one for the kind: the fallback its reader finds in the sources read, in a few words
    fallback_found: str = ""
    # an export backend that runs ExecuTorch's edge dialect (`bot.operators.edge`): views become their
    # view_copy ops, a listed out= variant covers its functional op, the verifier's refusals are apart
    edge: bool = False
    # a real list of this kind the tests read (tests/data/backends/real/, sources in its SOURCES.md),
    # for the README's table of kinds
    example: str = ""


KIND_TABLE: tuple[KindRow, ...] = (
    KindRow(
        "torch-mlir",
        f"{_READERS}:read_torch_mlir_source",
        "export",
        None,
        "a torch-mlir checkout, GeneratedTorchOps.td or torch_ods_gen.py",
        "the ops it generates, and its FX importer's decomposition table",
        writes_kernels=False,
        example="llvm/torch-mlir's GeneratedTorchOps.td and fx_decomp_util.py (`torch-mlir.checkout.tar.xz`)",
    ),
    KindRow(
        "xla",
        f"{_READERS}:read_xla_file",
        "functional",
        "int64_t",
        "xla_native_functions.yaml",
        "a gen_backend_stubs yaml (backend-stubs' reader), judged as XLA: functional, CPU fallback",
        # `TORCH_LIBRARY_IMPL(_, XLA, m) { m.fallback(...&xla_fallback) }`, whose `xla_fallback` ends in
        # `at::native::cpu_fallback` (pytorch/xla, torch_xla/csrc/aten_fallback.cpp at 1815bb9)
        fallback=XLA_FALLBACK,
        example="pytorch/xla's codegen/xla_native_functions.yaml (`pytorch-xla.xla_native_functions.yaml.xz`)",
    ),
    KindRow(
        "backend-stubs",
        f"{_READERS}:read_backend_stubs_file",
        "eager",
        "int64_t",
        "a gen_backend_stubs yaml (OpenReg's, a vendor's)",
        "supported (per-op structured: true), autograd, symint, full_codegen and ir_gen lists",
        example="OpenReg's openreg_native_functions.yaml in pytorch/pytorch (`openreg.openreg_native_functions.yaml.xz`)",
    ),
    KindRow(
        "cpp",
        f"{_READERS}:read_cpp_tree",
        "eager",
        None,
        "a C++ source tree or file",
        'm.impl("aten::…") inside TORCH_LIBRARY_IMPL(aten, KEY, m)',
        fallback_found="when the tree registers one: m.fallback in TORCH_LIBRARY_IMPL(_, KEY, m)",
        example="pytorch_dlprim's src/ (`pytorch_dlprim.src.tar.xz`)",
    ),
    KindRow(
        "python",
        f"{_READERS}:read_python_tree",
        "eager",
        None,
        "Python files (torchax's ops/)",
        "torch.library impl and register_kernel, decorators handed torch.ops.aten ops (read with ast)",
        # a Python kernel has no C++ signature
        writes_kernels=False,
        example="torchax's ops/jaten.py (`torchax.jaten.py.xz`)",
    ),
    KindRow(
        "op-plugin",
        f"{_READERS}:read_op_plugin_file",
        "eager",
        "int64_t",
        "op_plugin_functions.yaml",
        "official: and quant: entries whose version gate admits the torch version",
        fallback=NPU_FALLBACK,
        example="Ascend/op-plugin's op_plugin_functions.yaml (`op-plugin.op_plugin_functions.yaml.xz`)",
    ),
    KindRow(
        "torch-npu",
        f"{_READERS}:read_torch_npu_file",
        "eager",
        "int64_t",
        "torch_npu's npu_native_functions.yaml",
        "the ATen ops torch_npu registers itself (supported, symint, autograd)",
        fallback=NPU_FALLBACK,
        example="Ascend/pytorch's npu_native_functions.yaml (`torch_npu.npu_native_functions.yaml.xz`)",
    ),
    KindRow(
        "xpu",
        f"{_READERS}:read_xpu_file",
        "eager",
        "int64_t",
        "xpu_functions.yaml (torch-xpu-ops before 2026-06)",
        "the supported: list; XPU's kernels now live in PyTorch's XPU: entries (dispatch=XPU)",
        example="torch-xpu-ops' last yaml/xpu_functions.yaml, 2024-11 (`torch-xpu-ops.xpu_functions.yaml.xz`)",
    ),
    KindRow(
        "xpu-fallback",
        f"{_READERS}:read_fallback_list_file",
        "eager",
        None,
        "src/ATen/native/xpu/XPUFallback.cpp of Intel's torch-xpu-ops",
        "its fallback_list: ops with no kernel that run on CPU; one backend with dispatch=XPU",
        fallback_found="for the listed ops only; the others fail unless PYTORCH_ENABLE_XPU_FALLBACK=1",
        # the list names no kernel: it only tells which ops of the backend it is given with run on CPU.
        # Every other op lacking an XPU kernel fails: torch-xpu-ops' catch-all `m.fallback` raises
        # NotImplementedError unless PYTORCH_ENABLE_XPU_FALLBACK=1 (XPUFallback.cpp:298 at 9061f28)
        example="torch-xpu-ops' XPUFallback.cpp (`torch-xpu-ops.XPUFallback.cpp.xz`), with `dispatch=XPU`",
    ),
    KindRow(
        "executorch",
        f"{_READERS}:read_executorch_file",
        "export",
        None,
        "an ExecuTorch checkout or kernel yaml (functions.yaml)",
        "- op: and - func: entries (ATen ones); out= variants cover their functional op",
        # its C++ kernels take ExecuTorch's own types (KernelRuntimeContext&, executorch Tensor&), not
        # a dispatcher signature of ATen's
        writes_kernels=False,
        edge=True,
        example="ExecuTorch's kernels/portable/functions.yaml (`executorch.portable.functions.yaml.xz`)",
    ),
    KindRow(
        "dispatch",
        f"{_READERS}:read_dispatch_key",
        "eager",
        None,
        "a dispatch key of native_functions.yaml such as MPS",
        "the ops with a kernel under that key in native_functions.yaml itself",
        example="`XPU` or `MPS` against snapshots/v2.15.0.json",
    ),
    KindRow(
        "text",
        f"{_READERS}:read_text_file",
        "eager",
        None,
        "a text file",
        "one operator per line, # comments",
    ),
)

BACKEND_KINDS: tuple[BackendKind, ...] = tuple(k.id for k in KIND_TABLE)
KIND_BY_ID: Mapping[BackendKind, KindRow] = {k.id: k for k in KIND_TABLE}
EDGE_KINDS: frozenset[BackendKind] = frozenset(k.id for k in KIND_TABLE if k.edge)
PROFILE_OF_KIND: Mapping[BackendKind, Profile] = {k.id: k.profile for k in KIND_TABLE}
FALLBACK_OF_KIND: Mapping[BackendKind, str] = {k.id: k.fallback for k in KIND_TABLE}


def kinds_help() -> str:
    """The kinds for the CLI's help: "torch-mlir (a torch-mlir checkout, …), xla (…), …"."""
    return "; ".join(f"{k.id} ({k.path})" for k in KIND_TABLE)


def profiles_help() -> str:
    """The kinds' default profiles for the CLI's help: "torch-mlir: export, xla: functional, the
    others: eager" (the most common profile is "the others")."""
    counts: dict[str, int] = {}
    for k in KIND_TABLE:
        counts[k.profile] = counts.get(k.profile, 0) + 1
    common = max(counts, key=lambda p: counts[p])
    named = [f"{k.id}: {k.profile}" for k in KIND_TABLE if k.profile != common]
    return ", ".join([*named, f"the others: {common}"])
