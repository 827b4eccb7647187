"""Downstream backends' own operator lists → one normalised form.

Each backend keeps the ATen operators it implements in a format of its own, maintained by hand.
Every reader (one module per format: `torch_mlir`, `yaml_lists`, `cpp`, and plain text here) is pure
(text in, records out) and normalises names to native_functions.yaml's ``name.overload`` (the bare name for the default overload), so that coverage can compare them with a
snapshot. Reading files and walking source trees happens in the file readers below, at the edge;
`read_backend` picks one by the kind table (`opdrift.coverage.kinds`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from opdrift.coverage.cpp import read_cpp, read_fallback_list
from opdrift.coverage.executorch import CHECKOUT_YAMLS, read_executorch_path
from opdrift.coverage.kinds import BACKEND_KINDS, KIND_BY_ID, BackendKind, parse_kind
from opdrift.coverage.oplist import BackendList, BackendOp, normalise_name
from opdrift.coverage.pyreg import read_python
from opdrift.coverage.stubs import read_backend_stubs
from opdrift.coverage.torch_mlir import FX_DECOMP_PATH, TD_PATH, read_fx_table, read_torch_mlir
from opdrift.coverage.yaml_lists import read_op_plugin, read_torch_npu, read_xpu, torch_version_key
from opdrift.errors import ConfigError, SourceError
from opdrift.sources.read import read_capped, read_text

# What callers of `read_backend` need beside it: the record it returns, the kinds, the version key.
__all__ = [
    "BACKEND_KINDS",
    "BackendKind",
    "BackendList",
    "BackendOp",
    "alone",
    "merge_backends",
    "parse_backend_arg",
    "parse_named_backend_arg",
    "read_backend",
    "read_text_list",
    "reads_in_tree",
    "torch_version_key",
]

# --- plain text -----------------------------------------------------------------------------------


def read_text_list(text: str, path: str) -> BackendList:
    """One operator per line (``aten::`` optional); ``#`` starts a comment; blank lines are ignored."""
    ops: list[BackendOp] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        item = raw.split("#", 1)[0].strip()
        if item:
            ops.append(BackendOp(normalise_name(item, path=path, line=number), number, path, "list"))
    return BackendList("text", path, tuple(ops))


# --- the edge: files and trees -------------------------------------------------------------------

_CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".cu", ".mm", ".h", ".hpp")


def _read_text(path: Path) -> str:
    return read_text(str(path), "backend list")


def _read_cpp_source(path: Path) -> str:
    """A C++ source of the backend's tree. Only ASCII constructs are looked for in it, so bytes that
    are not UTF-8 (an old Latin-1 comment) become U+FFFD instead of stopping the whole run."""
    try:
        return read_capped(path, str(path)).decode("utf-8", "replace")
    except SourceError as err:
        message = err.message.removeprefix("cannot read: ")
        raise ConfigError(f"cannot read the backend list: {message}", path=str(path)) from None


def _cpp_files(root: Path) -> Iterable[Path]:
    return sorted(p for p in root.rglob("*") if is_cpp_source(p.name) and p.is_file())


def is_cpp_source(rel: str) -> bool:
    """Whether a C++ tree's reader reads the file at REL (`opdrift.coverage.kinds.KindRow.reads_in_tree`)."""
    return Path(rel).suffix in _CPP_SUFFIXES


def is_python_source(rel: str) -> bool:
    """Whether a Python tree's reader reads the file at REL (`opdrift.coverage.kinds.KindRow.reads_in_tree`)."""
    return Path(rel).suffix == ".py"


def reads_in_tree(kind: BackendKind, rel: str) -> bool:
    """Whether reading a directory as a backend of KIND reads its file at REL (relative to it): a C++
    tree's sources, a torch-mlir checkout's two files; the other kinds read one file, no directory."""
    return KIND_BY_ID[kind].reads_in_tree(rel)


def parse_backend_arg(arg: str) -> tuple[BackendKind, str]:
    """``KIND=PATH`` of ``--backend``; for kind ``dispatch`` the value is a dispatch key such as MPS."""
    name, kind, value = parse_named_backend_arg(arg)
    if name is not None:
        raise ConfigError(f"--backend expects KIND=PATH here, got {arg!r}")
    return kind, value


def parse_named_backend_arg(arg: str) -> tuple[str | None, BackendKind, str]:
    """``[NAME:]KIND=PATH`` of ``opdrift coverage --backend``: several lists with one NAME are one
    backend (op-plugin's yaml plus torch_npu's npu_native_functions.yaml, or a text list)."""
    left, sep, value = arg.partition("=")
    if not sep or not value:
        raise ConfigError(
            f"--backend expects [NAME:]KIND=PATH, got {arg!r} (kinds: {', '.join(BACKEND_KINDS)})"
        )
    name, colon, kind = left.rpartition(":")
    if colon and not name:
        raise ConfigError(f"--backend {arg!r}: empty NAME before ':'")
    known = parse_kind(kind)
    if known is not None:
        return (name or None), known, value
    raise ConfigError(f"unknown backend kind {kind!r} (kinds: {', '.join(BACKEND_KINDS)})")


def fallback_only(backend: BackendList) -> bool:
    """Whether BACKEND names only ops that run on CPU (an ``xpu-fallback`` list), no kernel."""
    return not backend.ops and backend.dispatch_key is None and bool(backend.cpu_fallback_at)


def _fallback_only_error(backend: BackendList) -> ConfigError:
    return ConfigError(
        f"the {backend.kind} list names the ops that run on CPU, not kernels: give it with the backend's "
        f"kernels under one NAME (--backend xpu:dispatch=XPU --backend xpu:{backend.kind}=PATH)",
        path=backend.path,
    )


def alone(backend: BackendList) -> BackendList:
    """BACKEND judged on its own; ConfigError for a list that names no kernel, only ops that run on
    CPU: it says nothing without the backend's kernels."""
    if fallback_only(backend):
        raise _fallback_only_error(backend)
    return backend


def merge_backends(name: str, lists: list[BackendList]) -> BackendList:
    """One backend from several of its lists: every op any of them names, the first kernel list's kind
    (which picks the profile, `--profile` overrides), and every list's warnings and fallbacks. A list
    of ops that run on CPU (`fallback_only`) joins any; a dispatch key joins no other kernel list."""
    kernels = [b for b in lists if not fallback_only(b)]
    if not kernels:
        raise _fallback_only_error(lists[0])
    if any(KIND_BY_ID[b.kind].in_pytorch for b in kernels) and len(kernels) > 1:
        raise ConfigError(f"backend {name!r}: a dispatch key cannot be combined with other lists")
    first = kernels[0]
    return BackendList(
        first.kind,
        f"{name} ({' + '.join(b.path for b in lists)})",
        tuple(op for b in lists for op in b.ops),
        dispatch_key=first.dispatch_key,
        ungated=sum(b.ungated for b in lists),
        warnings=tuple(w for b in lists for w in b.warnings),
        fallback=next((b.fallback for b in lists if b.fallback), None),
        # a checkout's root, not the file its reader names the list by: paths show relative to it
        roots=tuple(r for b in lists for r in (b.roots or (b.path,))),
        decompositions=next((b.decompositions for b in lists if b.decompositions is not None), None),
        decompositions_path=next((b.decompositions_path for b in lists if b.decompositions_path), ""),
        decompositions_core_except=next(
            (b.decompositions_core_except for b in lists if b.decompositions_core_except is not None), None
        ),
        decompositions_form=next((b.decompositions_form for b in lists if b.decompositions_form), ""),
        name=name,
        cpu_fallback_ops=tuple(op for b in lists for op in b.cpu_fallback_ops),
        cpu_fallback_at=next((b.cpu_fallback_at for b in lists if b.cpu_fallback_at), ""),
    )


def _read_torch_mlir_checkout(root: Path, value: str) -> BackendList:
    """A torch-mlir checkout: its GeneratedTorchOps.td, and the decomposition table of its FX importer
    in either form (`read_fx_table`); without fx_decomp_util.py (an older checkout), or with a table in
    neither form (a warning), PyTorch's default Core-ATen table stands."""
    td = root / TD_PATH
    if not td.is_file():
        raise ConfigError(f"not a torch-mlir checkout: no {TD_PATH}", path=value)
    found = read_torch_mlir(_read_text(td), str(td))
    fx = root / FX_DECOMP_PATH
    if not fx.is_file():
        return replace(found, roots=(value,))
    table = read_fx_table(_read_text(fx), str(fx))
    if table.named is None:
        return replace(found, roots=(value,), warnings=found.warnings + table.warnings)
    return replace(
        found,
        roots=(value,),
        warnings=found.warnings + table.warnings,
        decompositions=table.named,
        # relative to the checkout: what its maintainers call the file, never this machine's path to it
        decompositions_path=FX_DECOMP_PATH,
        decompositions_core_except=table.core_except,
        decompositions_form=table.form,
    )


def read_backend(kind: BackendKind, value: str, *, torch_version: str | None = None) -> BackendList:
    """Read one backend list of KIND from VALUE (a path, or a dispatch key) with the reader the kind
    table names (`opdrift.coverage.kinds`); the list is of KIND whatever format its reader shares, and an
    operator whose reader could not tell its kernel form gets the kind's."""
    row = KIND_BY_ID.get(kind)
    if row is None:
        raise ConfigError(f"unknown backend kind {kind!r} (kinds: {', '.join(BACKEND_KINDS)})")
    found = row.reader(value, torch_version)
    form = row.kernel_form
    if form is not None and any(op.kernel_form is None for op in found.ops):
        ops = tuple(op if op.kernel_form is not None else replace(op, kernel_form=form) for op in found.ops)
        found = replace(found, ops=ops)
    return found if found.kind == kind else replace(found, kind=kind)


# The readers the kind table names: (PATH or key, torch version) → BackendList.


def read_dispatch_key(value: str, torch_version: str | None) -> BackendList:
    """A native dispatch key: its operators are derived from the snapshot by coverage."""
    return BackendList("dispatch", value, (), dispatch_key=value)


def read_cpp_tree(value: str, torch_version: str | None) -> BackendList:
    path = Path(value)
    if path.exists() and not (path.is_dir() or path.is_file()):
        raise ConfigError("not a regular file or directory (a FIFO would block the read)", path=value)
    files = _cpp_files(path) if path.is_dir() else [path]
    ops: list[BackendOp] = []
    warnings: list[str] = []
    fallback: str | None = None
    for file in files:
        one = read_cpp(_read_cpp_source(file), str(file))
        ops.extend(one.ops)
        warnings.extend(one.warnings)
        fallback = fallback or one.fallback
    if not ops:
        raise ConfigError("no m.impl(...) registrations inside TORCH_LIBRARY_IMPL(aten, ...)", path=value)
    return BackendList("cpp", value, tuple(ops), warnings=tuple(warnings), fallback=fallback)


def read_fallback_list_file(value: str, torch_version: str | None) -> BackendList:
    """torch-xpu-ops' XPUFallback.cpp: the ops its `fallback_list` runs on CPU (`read_fallback_list`)."""
    return read_fallback_list(_read_cpp_source(Path(value)), value)


def read_torch_mlir_source(value: str, torch_version: str | None) -> BackendList:
    path = Path(value)
    if path.is_dir():
        return _read_torch_mlir_checkout(path, value)
    return read_torch_mlir(_read_text(path), value)


def read_xla_file(value: str, torch_version: str | None) -> BackendList:
    """torch_xla's xla_native_functions.yaml: a gen_backend_stubs yaml, read as every other one."""
    return read_backend_stubs(_read_text(Path(value)), value, "xla")


def read_backend_stubs_file(value: str, torch_version: str | None) -> BackendList:
    return read_backend_stubs(_read_text(Path(value)), value)


def read_xpu_file(value: str, torch_version: str | None) -> BackendList:
    return read_xpu(_read_text(Path(value)), value)


def read_op_plugin_file(value: str, torch_version: str | None) -> BackendList:
    return read_op_plugin(_read_text(Path(value)), value, torch_version)


def read_torch_npu_file(value: str, torch_version: str | None) -> BackendList:
    return read_torch_npu(_read_text(Path(value)), value)


def read_text_file(value: str, torch_version: str | None) -> BackendList:
    return read_text_list(_read_text(Path(value)), value)


def read_executorch_file(value: str, torch_version: str | None) -> BackendList:
    """An ExecuTorch kernel yaml, or a checkout: the yamls of its lean-mode libraries that it has."""
    path = Path(value)
    if path.is_dir():
        files = [path / rel for rel in CHECKOUT_YAMLS if (path / rel).is_file()]
        if not files:
            raise ConfigError(f"not an ExecuTorch checkout: no {CHECKOUT_YAMLS[0]}", path=value)
    else:
        files = [path]
    return read_executorch_path(value, {str(f): _read_text(f) for f in files})


def read_python_tree(value: str, torch_version: str | None) -> BackendList:
    """A tree of Python files (or one) registering ATen kernels, read with `ast` (`opdrift.coverage.pyreg`)."""
    path = Path(value)
    if path.exists() and not (path.is_dir() or path.is_file()):
        raise ConfigError("not a regular file or directory (a FIFO would block the read)", path=value)
    files = sorted(p for p in path.rglob("*.py") if p.is_file()) if path.is_dir() else [path]
    ops: list[BackendOp] = []
    warnings: list[str] = []
    for file in files:
        found = read_python(_read_cpp_source(file), str(file))
        ops.extend(found.ops)
        warnings.extend(found.warnings)
    if not ops:
        raise ConfigError("no ATen kernel registration in any Python file", path=value)
    return BackendList(
        "python", value, tuple(ops), warnings=tuple(warnings), roots=(value,) if path.is_dir() else ()
    )
