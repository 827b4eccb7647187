"""The kinds of backend list: the one place a kind is defined.

Everything else derives from `KIND_TABLE`: `BACKEND_KINDS` (what ``--backend KIND=PATH`` and the
config's ``kind:`` accept, through `parse_kind`), `PROFILE_OF_KIND` (the profile a kind's backend is
judged as, unless ``--profile`` says otherwise), `read_backend`'s dispatch (`opdrift.coverage.backends`),
the CLI's help and docs/coverage.md's table of kinds (a test checks it). Every property of a kind a
module asks is a column here: no module compares a kind with a string of its own
(`tests/unit/coverage/test_kinds.py` scans for one), and `BackendKind` lets mypy check each row and each
parse. Adding a kind means adding its id to `BackendKind`, a row here, and its reader.

This module imports nothing at run time, so that building the CLI's parser can list the kinds
without loading a stage: a reader is a small function below that imports the stage's reader only
when a list of that kind is read, taking (PATH, torch version) and returning a `BackendList`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from opdrift.coverage.oplist import BackendList
    from opdrift.operators.kernels import Profile
    from opdrift.schema.kernel import KernelForm

# The ids of KIND_TABLE's rows, in its order (a test checks they agree).
BackendKind: TypeAlias = Literal[
    "torch-mlir",
    "xla",
    "backend-stubs",
    "cpp",
    "python",
    "op-plugin",
    "torch-npu",
    "xpu",
    "xpu-fallback",
    "executorch",
    "dispatch",
    "text",
]
# (PATH, or a dispatch key; the torch version compared, for version gates) → the list read
Reader: TypeAlias = "Callable[[str, str | None], BackendList]"
# How a kind's C++ kernels are written where its list says nothing per operator: "int64_t", the form
# torchgen's gen_backend_stubs declares unless the op is in the file's `symint:` list; "each", in
# whatever form each op's own registration has (a C++ tree's reader reads it; a dispatch key's kernels
# are PyTorch's, a plain list says nothing), else judged in every form (Note [SymInt kernels from
# 1.13]); "none", no C++ kernel of a dispatcher signature at all (torch-mlir lowers ops by their schema
# in its own dialect; Python kernels; ExecuTorch's take its own types)
Kernels: TypeAlias = Literal["int64_t", "each", "none"]
# What removing an op upstream does to a backend that still lists it (`opdrift.app.subscriptions`):
# "breaks" its build, leaves a "dead" registration that still builds, or "" nothing known
Removal: TypeAlias = Literal["breaks", "dead", ""]

XLA_FALLBACK = "torch_xla/csrc/aten_fallback.cpp:68 (XLA)"
# torch_npu (the runtime op-plugin's kernels are built into) registers `npu_cpu_fallback` for every
# operator at PrivateUse1, which warns and calls `at::native::cpu_fallback` unless
# TORCH_NPU_FALLBACK_CPU_DISABLE=1 (Ascend/pytorch, torch_npu/csrc/aten/VariableFallbackKernel.cpp at
# f2e1583, 2026-08-20; framework/utils/CpuFallbackUtils.h)
NPU_FALLBACK = "torch_npu/csrc/aten/VariableFallbackKernel.cpp:242 (PrivateUse1)"

# --- the readers: each imports its stage only when a list of its kind is read --------------------


def _read_torch_mlir(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_torch_mlir_source

    return read_torch_mlir_source(value, torch_version)


def _read_xla(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_xla_file

    return read_xla_file(value, torch_version)


def _read_backend_stubs(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_backend_stubs_file

    return read_backend_stubs_file(value, torch_version)


def _read_cpp(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_cpp_tree

    return read_cpp_tree(value, torch_version)


def _read_python(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_python_tree

    return read_python_tree(value, torch_version)


def _read_op_plugin(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_op_plugin_file

    return read_op_plugin_file(value, torch_version)


def _read_torch_npu(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_torch_npu_file

    return read_torch_npu_file(value, torch_version)


def _read_xpu(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_xpu_file

    return read_xpu_file(value, torch_version)


def _read_xpu_fallback(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_fallback_list_file

    return read_fallback_list_file(value, torch_version)


def _read_executorch(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_executorch_file

    return read_executorch_file(value, torch_version)


def _read_dispatch(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_dispatch_key

    return read_dispatch_key(value, torch_version)


def _read_text(value: str, torch_version: str | None) -> BackendList:
    from opdrift.coverage.backends import read_text_file

    return read_text_file(value, torch_version)


# --- which files of a directory a kind's reader reads (a gh: tree is fetched for those only) -------


def _no_tree(rel: str) -> bool:
    return False


def _cpp_in_tree(rel: str) -> bool:
    from opdrift.coverage.backends import is_cpp_source

    return is_cpp_source(rel)


def _torch_mlir_in_tree(rel: str) -> bool:
    from opdrift.coverage.torch_mlir import FX_DECOMP_PATH, TD_PATH

    return rel in (TD_PATH, FX_DECOMP_PATH)


def _executorch_in_tree(rel: str) -> bool:
    from opdrift.coverage.executorch import CHECKOUT_YAMLS

    return rel in CHECKOUT_YAMLS


def _python_in_tree(rel: str) -> bool:
    from opdrift.coverage.backends import is_python_source

    return is_python_source(rel)


@dataclass(frozen=True)
class KindRow:
    """One kind of backend list."""

    id: BackendKind  # what --backend KIND=PATH and the config's `kind:` say
    reader: Reader
    # how operators reach a backend of this kind (`opdrift.operators.kernels`): C++ registrations,
    # op-plugin and torch_npu's own list, XPU and a native dispatch key are eager backends; torch-mlir
    # compiles exported graphs; XLA runs under functionalization; a plain list could be anything, and
    # eager is the common case
    profile: Profile
    kernels: Kernels  # how its C++ kernels are written (`Kernels`)
    path: str  # what PATH is, for the help
    help: str  # what is read, one line
    # where every backend of this kind registers a boxed CPU fallback ("file:line (KEY)" in its own
    # repository), which runs an op it has no kernel for on CPU when PyTorch has a CPU kernel for it;
    # "" when the kind has none, or when its reader finds one in the sources read (a C++ tree's own
    # `m.fallback`, `opdrift.coverage.cpp`: pytorch_dlprim's src/tensor_ops.cpp:440 at 30e27c8, whose
    # `ptdlprim::fallback` calls `native::cpu_fallback`)
    fallback: str = ""
    # without one for the kind: the fallback its reader finds in the sources read, in a few words
    fallback_found: str = ""
    # an export backend that runs ExecuTorch's edge dialect (`opdrift.operators.edge`): views become their
    # view_copy ops, a listed out= variant covers its functional op, the verifier's refusals are apart
    edge: bool = False
    # a real list of this kind the tests read (tests/data/backends/real/, sources in its SOURCES.md),
    # for the README's table of kinds
    example: str = ""
    # its kernels are PyTorch's own, under a dispatch key of native_functions.yaml (MPS, XPU): PATH is
    # that key, not a file; the ops it lists are those with a kernel under the key; the PR that changes
    # an op changes them too (no break of theirs to tell), and the PR comment's table of downstream
    # backends has no row for it
    in_pytorch: bool = False
    # its entries carry version gates its reader reads against the torch version, which
    # `opdrift gates` edits (op-plugin's yaml)
    gated: bool = False
    # the dispatch key its device's kernels are registered under, where the models dispatch what
    # `opdrift.usage.device` substitutes (`opdrift.coverage.workitems.device_key`); "" when it is PATH itself
    # (`in_pytorch`)
    device_key: str = "PrivateUse1"
    # what removing an op upstream does to its backend while its list still names it (`Removal`).
    # "breaks": its list feeds a codegen that refuses an operator name upstream no longer has:
    # torchgen's gen_backend_stubs (`create_backend_index` raises "Found an invalid operator name",
    # torchgen of 2.14.0), which builds torch_xla's kernels from its yaml, and torch_npu's own
    # codegen/gen_backend_stubs.py (the same assert), which reads its npu_native_functions.yaml and
    # op-plugin's yaml. "dead": a C++ `m.impl` of a name no schema defines still compiles (the
    # dispatcher takes an impl without a def), but nothing reaches it, and callers reach whatever
    # replaced the op. torch-xpu-ops generates its registrations from its own native_functions.yaml,
    # not xpu_functions.yaml: neither
    on_removal: Removal = ""
    # it lowers each op by its schema into its own dialect (torch-mlir's ODS ops are generated from
    # the registry): a changed C++ signature breaks no kernel of its (`opdrift.app.subscriptions.breaks`);
    # a kind that writes no C++ kernel has what it records of the schema judged instead
    # (`schema_changed`)
    lowers: bool = False
    # its exported graphs decompose by its own table (torch-mlir's FX importer), which the model corpus
    # has a path of its own for (`opdrift.usage.models.paths_for`)
    own_decompositions: bool = False
    # what its lists name beyond native functions, said beside their stale entries in its coverage
    also_lists: str = ""
    # the product a kind is made for, which a backend without a `name:` is called when its list has
    # one of the product's own file names (`opdrift.publish.backend_names.default_name`)
    product: str = ""
    product_files: frozenset[str] = frozenset()
    # which file (relative to it) reading a directory as a list of this kind reads: a C++ tree's
    # sources, a Python tree's modules, a checkout's few files; the other kinds read one file
    reads_in_tree: Callable[[str], bool] = _no_tree

    @property
    def kernel_form(self) -> KernelForm | None:
        """The form its C++ kernels are written in where its list says nothing per operator (judged as
        Note [SymInt kernels from 1.13] says); None: judged in every form, or no C++ kernel."""
        return "int64_t" if self.kernels == "int64_t" else None

    @property
    def writes_kernels(self) -> bool:
        """Whether its backend writes C++ kernels at all: a work item shows a C++ declaration only then."""
        return self.kernels != "none"


KIND_TABLE: tuple[KindRow, ...] = (
    KindRow(
        "torch-mlir",
        _read_torch_mlir,
        "export",
        "none",
        "a torch-mlir checkout, GeneratedTorchOps.td or torch_ods_gen.py",
        "the ops it generates, and its FX importer's decomposition table",
        example="llvm/torch-mlir's GeneratedTorchOps.td and fx_decomp_util.py (`torch-mlir.checkout.tar.xz`)",
        lowers=True,
        own_decompositions=True,
        # its list comes from the TorchScript registry, which holds built-ins that are not ATen native
        # functions (aten::size, aten::add.t, aten::Int.Tensor): those show up as stale too
        also_lists="TorchScript built-ins such as size, add.t or Int.Tensor",
        product="torch-mlir",
        product_files=frozenset({"GeneratedTorchOps.td", "torch_ods_gen.py", "torch-mlir", "."}),
        reads_in_tree=_torch_mlir_in_tree,
    ),
    KindRow(
        "xla",
        _read_xla,
        "functional",
        "int64_t",
        "xla_native_functions.yaml",
        "a gen_backend_stubs yaml (backend-stubs' reader), judged as XLA: functional, CPU fallback",
        # `TORCH_LIBRARY_IMPL(_, XLA, m) { m.fallback(...&xla_fallback) }`, whose `xla_fallback` ends in
        # `at::native::cpu_fallback` (pytorch/xla, torch_xla/csrc/aten_fallback.cpp at 1815bb9)
        fallback=XLA_FALLBACK,
        example="pytorch/xla's codegen/xla_native_functions.yaml (`pytorch-xla.xla_native_functions.yaml.xz`)",
        on_removal="breaks",
        product="xla",
        product_files=frozenset({"xla_native_functions.yaml"}),
    ),
    KindRow(
        "backend-stubs",
        _read_backend_stubs,
        "eager",
        "int64_t",
        "a gen_backend_stubs yaml (OpenReg's, a vendor's)",
        "supported (per-op structured: true), autograd, symint, full_codegen and ir_gen lists",
        example="OpenReg's openreg_native_functions.yaml in pytorch/pytorch (`openreg.openreg_native_functions.yaml.xz`)",
    ),
    KindRow(
        "cpp",
        _read_cpp,
        "eager",
        "each",
        "a C++ source tree or file",
        'm.impl("aten::…") inside TORCH_LIBRARY_IMPL(aten, KEY, m)',
        fallback_found="when the tree registers one: m.fallback in TORCH_LIBRARY_IMPL(_, KEY, m)",
        example="pytorch_dlprim's src/ (`pytorch_dlprim.src.tar.xz`)",
        on_removal="dead",
        reads_in_tree=_cpp_in_tree,
    ),
    KindRow(
        "python",
        _read_python,
        "eager",
        "none",
        "Python files (torchax's ops/)",
        "torch.library impl and register_kernel, decorators handed torch.ops.aten ops (read with ast)",
        # a Python kernel has no C++ signature
        example="torchax's ops/jaten.py (`torchax.jaten.py.xz`)",
        reads_in_tree=_python_in_tree,
    ),
    KindRow(
        "op-plugin",
        _read_op_plugin,
        "eager",
        "int64_t",
        "op_plugin_functions.yaml",
        "official: and quant: entries whose version gate admits the torch version",
        fallback=NPU_FALLBACK,
        example="Ascend/op-plugin's op_plugin_functions.yaml (`op-plugin.op_plugin_functions.yaml.xz`)",
        gated=True,
        on_removal="breaks",
        product="op-plugin",
        product_files=frozenset({"op_plugin_functions.yaml"}),
    ),
    KindRow(
        "torch-npu",
        _read_torch_npu,
        "eager",
        "int64_t",
        "torch_npu's npu_native_functions.yaml",
        "the ATen ops torch_npu registers itself (supported, symint, autograd)",
        fallback=NPU_FALLBACK,
        example="Ascend/pytorch's npu_native_functions.yaml (`torch_npu.npu_native_functions.yaml.xz`)",
        on_removal="breaks",
        product="torch_npu",
        product_files=frozenset({"npu_native_functions.yaml"}),
    ),
    KindRow(
        "xpu",
        _read_xpu,
        "eager",
        "int64_t",
        "xpu_functions.yaml (torch-xpu-ops before 2026-06)",
        "the supported: list; XPU's kernels now live in PyTorch's XPU: entries (dispatch=XPU)",
        example="torch-xpu-ops' last yaml/xpu_functions.yaml, 2024-11 (`torch-xpu-ops.xpu_functions.yaml.xz`)",
        device_key="XPU",
        product="torch-xpu-ops",
        product_files=frozenset({"xpu_functions.yaml"}),
    ),
    KindRow(
        "xpu-fallback",
        _read_xpu_fallback,
        "eager",
        "each",
        "src/ATen/native/xpu/XPUFallback.cpp of Intel's torch-xpu-ops",
        "its fallback_list: ops with no kernel that run on CPU; one backend with dispatch=XPU",
        fallback_found="for the listed ops only; the others fail unless PYTORCH_ENABLE_XPU_FALLBACK=1",
        # the list names no kernel: it only tells which ops of the backend it is given with run on CPU.
        # Every other op lacking an XPU kernel fails: torch-xpu-ops' catch-all `m.fallback` raises
        # NotImplementedError unless PYTORCH_ENABLE_XPU_FALLBACK=1 (XPUFallback.cpp:298 at 9061f28)
        example="torch-xpu-ops' XPUFallback.cpp (`torch-xpu-ops.XPUFallback.cpp.xz`), with `dispatch=XPU`",
        device_key="XPU",
    ),
    KindRow(
        "executorch",
        _read_executorch,
        "export",
        "none",
        "an ExecuTorch checkout or kernel yaml (functions.yaml)",
        "- op: and - func: entries (ATen ones); out= variants cover their functional op",
        # its C++ kernels take ExecuTorch's own types (KernelRuntimeContext&, executorch Tensor&), not
        # a dispatcher signature of ATen's
        edge=True,
        example="ExecuTorch's kernels/portable/functions.yaml (`executorch.portable.functions.yaml.xz`)",
        reads_in_tree=_executorch_in_tree,
    ),
    KindRow(
        "dispatch",
        _read_dispatch,
        "eager",
        "each",
        "a dispatch key of native_functions.yaml such as MPS",
        "the ops with a kernel under that key in native_functions.yaml itself",
        example="`XPU` or `MPS` against snapshots/v2.15.0.json",
        in_pytorch=True,
        device_key="",
    ),
    KindRow(
        "text",
        _read_text,
        "eager",
        "each",
        "a text file",
        "one operator per line, # comments",
    ),
)

BACKEND_KINDS: tuple[BackendKind, ...] = tuple(k.id for k in KIND_TABLE)
KIND_BY_ID: Mapping[BackendKind, KindRow] = {k.id: k for k in KIND_TABLE}
EDGE_KINDS: frozenset[BackendKind] = frozenset(k.id for k in KIND_TABLE if k.edge)
PROFILE_OF_KIND: Mapping[BackendKind, Profile] = {k.id: k.profile for k in KIND_TABLE}
FALLBACK_OF_KIND: Mapping[BackendKind, str] = {k.id: k.fallback for k in KIND_TABLE}


def parse_kind(text: str) -> BackendKind | None:
    """TEXT as a kind of the table (what ``--backend KIND=PATH``, the config and the watch's state say),
    None when it names none: the one place a string becomes a `BackendKind`."""
    return next((k for k in BACKEND_KINDS if k == text), None)


def backend_key(kind: BackendKind, where: str) -> str:
    """The one key of a backend list across runs and reports: its kind and WHERE (its path as the
    config writes it, or its dispatch key), "xla:codegen/xla_native_functions.yaml"."""
    return f"{kind}:{where}"


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
