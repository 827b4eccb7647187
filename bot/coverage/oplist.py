"""A backend's operator list, normalised: what every backend-format reader produces.

Names are normalised to native_functions.yaml's ``name.overload`` (the bare name for the default
overload), so that coverage can compare any backend with a snapshot.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from opdrift.coverage.kinds import BACKEND_KINDS, BackendKind
from opdrift.errors import ConfigError
from opdrift.schema.kernel import KernelForm

# The kinds are `opdrift.coverage.kinds`' table; readers and the config name them from here too.
__all__ = [
    "BACKEND_KINDS",
    "BackendKind",
    "BackendList",
    "BackendOp",
    "SchemaKind",
    "relative_path",
    "root_label",
]

# What a backend recorded about an operator's signature, when it recorded one.
SchemaKind = Literal["full", "types"]

# An ATen operator name as backends write it: optional namespace, base, optional overload.
_NAME = re.compile(r"^(?:aten::)?([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z0-9_]+))?$")


@dataclass(frozen=True)
class BackendOp:
    """One operator a backend says it implements."""

    name: str  # "add.Tensor", or "relu" for the default overload
    line: int  # where the backend lists it (1-based), for messages
    path: str  # the file that lists it
    origin: (
        str  # the list or construct it came from: "full_codegen", "m.impl", "emit_with_mutating_variants"...
    )
    schema: str | None = None  # what the backend recorded of the signature
    schema_kind: SchemaKind | None = (
        None  # "full": a native schema; "types": torch-mlir's "(Tensor, int) -> (Tensor)"
    )
    dispatch_key: str | None = None  # for C++ registrations: the TORCH_LIBRARY_IMPL key
    # the form the backend's C++ kernel for it is written in (`opdrift.schema.kernel`), which it is judged
    # in (see Note [SymInt kernels from 1.13]). None: the backend
    # writes no C++ kernel of this signature (torch-mlir lowers by types), or its reader cannot tell
    kernel_form: KernelForm | None = None
    # `own_binding`: a torchgen of the backend's own reads the list as native_functions.yaml and binds
    # the kernel by the entry's keys below, not upstream's (op-plugin's torchnpugen: `structured:`,
    # `structured_delegate:`, `use_const_ref_for_mutable_tensors:`; `opdrift.operators.codegen.kernel_binding`).
    # False: the list does not say, and the kernel is bound as upstream binds it
    own_binding: bool = False
    structured: bool = False
    structured_delegate: str | None = None
    const_ref_mutable: bool | None = None
    # the backend's codegen binds the op's Tensor[] as `const at::ITensorListRef &` whatever its keys say,
    # and the kernel, written so, builds whichever way upstream binds them: the wrapper's at::TensorList
    # converts to it (IListRef's implicit constructor from ArrayRef). op-plugin's `FORCED_ILISTREF`
    ilistref_either: bool = False


@dataclass(frozen=True)
class BackendList:
    """A backend's list, normalised. Whether its backend derives the out and in-place variants of the
    functional ops it lists is its profile's matter (`opdrift.coverage.kinds`), not the list's."""

    kind: BackendKind
    path: str
    ops: tuple[BackendOp, ...]
    dispatch_key: str | None = None  # for kind "dispatch": the native_functions.yaml key
    # op-plugin entries whose version gates went unchecked because no torch version was known
    ungated: int = 0
    # what the reader skipped, one line each with path:line (a malformed schema comment, say)
    warnings: tuple[str, ...] = ()
    # where the backend registers a boxed fallback (``m.fallback(...)`` in ``TORCH_LIBRARY_IMPL(_, KEY,
    # m)``), "path:line (KEY)": an op it lacks then runs there (often on the CPU) instead of failing
    fallback: str | None = None
    # the files or trees a list was read from, when it is several lists of one backend (their paths
    # are shown relative to them); empty: `path` itself
    roots: tuple[str, ...] = ()
    # the decomposition table the backend's compiler passes to run_decompositions ("base.overload",
    # "base" or "base.*"), and the file it was read from (relative to the checkout); None: PyTorch's
    # default Core-ATen table
    decompositions: frozenset[str] | None = None
    decompositions_path: str = ""
    # torch-mlir's form from llvm/torch-mlir#4733: PyTorch's Core-ATen table of the release judged,
    # less every overload of these base operators, plus `decompositions`; None: `decompositions` alone
    decompositions_core_except: frozenset[str] | None = None
    decompositions_form: str = ""  # how the table was read ("the hand list DEFAULT_DECOMPOSITIONS")
    name: str = ""  # the backend's NAME, when its lists were given one (`--backend NAME:KIND=PATH`)
    # operators the backend registers one by one to a boxed CPU fallback (torch-xpu-ops'
    # `fallback_list`, `opdrift.coverage.cpp.read_fallback_list`): no kernel of its own, they run on CPU;
    # and where that list is, "path:line (KEY)"
    cpu_fallback_ops: tuple[BackendOp, ...] = ()
    cpu_fallback_at: str = ""

    @property
    def names(self) -> frozenset[str]:
        return frozenset(op.name for op in self.ops)

    @property
    def decompositions_origin(self) -> str:
        """The table's file and the form read from it, as reports name the table."""
        path = self.decompositions_path
        return f"{path} ({self.decompositions_form})" if path and self.decompositions_form else path


def root_label(root: str) -> str:
    """A file or tree a backend was read from as the reports show it: its last component (`src`,
    `xla_native_functions.yaml`), never the machine's path to it."""
    return PurePath(root).name or root


def relative_path(path: str, roots: Sequence[str]) -> str:
    """PATH of a backend's list as its maintainer knows it: relative to the tree it was read from
    (`pointwise_ops.cpp`, `python/torch_mlir/extras/fx_decomp_util.py`), or the file's own name when
    it is the file given. PATH may be followed by ":line (KEY)", as a fallback's place is; a path under
    no root (a dispatch key, a table's description) is returned as it is."""
    for root in roots:
        top = root.rstrip("/")
        if top and path.startswith(top + "/"):
            return path[len(top) + 1 :]
        if path == root or path.startswith(root + ":"):
            return root_label(root) + path[len(root) :]
    return path


def normalise_name(raw: str, *, path: str, line: int) -> str:
    """``aten::add.Tensor`` → ``add.Tensor``; ``aten::relu`` or ``relu.default`` → ``relu``."""
    m = _NAME.match(raw.strip())
    if m is None:
        raise ConfigError(f"not an ATen operator name: {raw.strip()!r}", path=path, line=line)
    base, overload = m.group(1), m.group(2)
    # torch.ops spells the default overload "default"; native_functions.yaml leaves it out.
    return base if overload in (None, "default") else f"{base}.{overload}"


def inplace_variant(name: str) -> str:
    """The in-place twin that torch-mlir's ``emit_with_mutating_variants`` also emits: add.Tensor → add_.Tensor."""
    base, dot, overload = name.partition(".")
    return f"{base}_{dot}{overload}"


def line_finder(text: str) -> Callable[[int], int]:
    """offset → 1-based line. The newline offsets are found once and bisected, so that a .td file of
    60,000 ops costs one pass, not a count from the start for every match."""
    breaks = [m.start() for m in re.finditer("\n", text)]

    def line_at(offset: int) -> int:
        return bisect_right(breaks, offset - 1) + 1

    return line_at
