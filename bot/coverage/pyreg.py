"""A tree of Python files that registers ATen kernels, read with `ast` and never imported.

Python backends register kernels for ATen operators in a few ways, each read here:

- ``lib = torch.library.Library("aten", "IMPL")`` then ``lib.impl("add.Tensor", fn, "PrivateUse1")``
  (or ``torch.library.impl(lib, "add.Tensor", "PrivateUse1")``);
- ``@torch.library.impl("aten::add.Tensor", "PrivateUse1")``;
- ``torch.library.register_kernel(torch.ops.aten.add.Tensor, ["cpu"])`` or with ``"aten::add.Tensor"``;
- any decorator handed ATen operators, one by one or in lists: torchax's ``@op(torch.ops.aten.add.Tensor,
  torch.ops.aten.add.Scalar)`` (torchax/ops/jaten.py, whose ``op`` calls
  ``ops_registry.register_torch_dispatch_op`` for each), ``@register_fallback([aten.sin.default, ...])``,
  where ``aten`` is ``torch.ops.aten`` by an assignment or ``from torch.ops import aten``.

``torch.ops.aten.add.Tensor`` names one overload, ``.default`` the default one, and a packet
(``torch.ops.aten.view``) every overload of its base (origin ``packet``: coverage expands it over the
snapshot judged). Fake and meta registrations (``register_fake``, ``impl_abstract``, a ``Meta`` key)
are no kernels. What a registration names that the reader cannot resolve (a variable, a computed
name) is a warning with its file:line, never a guess. Other namespaces (``mylib::foo``) are not ATen.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from opdrift.coverage.oplist import BackendOp, normalise_name
from opdrift.errors import ConfigError
from opdrift.pyast import dotted

# Calls that register a kernel by their name's last part.
_IMPL_CALLS = frozenset({"impl", "register_kernel"})
# Registrations that are no kernel: shape functions and fake tensors.
_NOT_KERNELS = ("fake", "abstract", "meta")
_NOT_KERNEL_KEYS = frozenset({"Meta"})


@dataclass(frozen=True)
class PyRegistrations:
    """One file's registrations: the ops, and what could not be resolved (path:line: why)."""

    ops: tuple[BackendOp, ...]
    warnings: tuple[str, ...]


def _call_name(call: ast.Call) -> str:
    parts = dotted(call.func)
    return parts[-1] if parts else ""


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.aten_aliases: set[str] = set()  # names bound to torch.ops.aten
        self.aten_libs: set[str] = set()  # names bound to Library("aten", "IMPL")
        self.ops: list[BackendOp] = []
        self.warnings: list[tuple[int, str]] = []

    def warn(self, node: ast.AST, why: str) -> None:
        line = getattr(node, "lineno", 0)
        self.warnings.append((line, f"{self.path}:{line}: {why}"))

    def aten_ref(self, node: ast.expr) -> tuple[str, bool] | None:
        """(op name, is a packet) of an expression naming an ATen operator, or None."""
        parts = dotted(node)
        if not parts:
            return None
        if parts[:3] == ["torch", "ops", "aten"]:
            rest = parts[3:]
        elif parts[0] in self.aten_aliases:
            rest = parts[1:]
        else:
            return None
        if len(rest) == 1:
            return rest[0], True
        if len(rest) == 2:
            return (rest[0] if rest[1] == "default" else f"{rest[0]}.{rest[1]}"), False
        return None

    def add(self, raw: str, node: ast.AST, origin: str, key: str | None = None) -> None:
        line = getattr(node, "lineno", 0)
        namespace, sep, name = raw.rpartition("::")
        if sep and namespace != "aten":
            return  # another namespace's operator
        try:
            self.ops.append(
                BackendOp(
                    normalise_name(name, path=self.path, line=line), line, self.path, origin, dispatch_key=key
                )
            )
        except ConfigError:
            self.warn(node, f"not an ATen operator name: {raw!r}")

    def scan_assign(self, node: ast.Assign) -> None:
        value = node.value
        targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if dotted(value) == ["torch", "ops", "aten"]:
            self.aten_aliases.update(targets)
        elif isinstance(value, ast.Call) and _call_name(value) == "Library":
            args = [a.value for a in value.args if isinstance(a, ast.Constant)]
            if len(args) >= 2 and args[0] == "aten" and args[1] in ("IMPL", "FRAGMENT"):
                self.aten_libs.update(targets)

    def key_of(self, args: list[ast.expr], at: int) -> str | None:
        node = args[at] if len(args) > at else None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return None

    def scan_impl(self, call: ast.Call) -> None:
        """lib.impl("op", fn, KEY), torch.library.impl(lib | "aten::op", ...), register_kernel(op, ...)."""
        func = call.func
        args = list(call.args)
        receiver = dotted(func.value) if isinstance(func, ast.Attribute) else []
        if len(receiver) == 1 and receiver[0] in self.aten_libs:
            target, key = (args[0] if args else None), self.key_of(args, 2)
            lib_bound = True
        elif args and isinstance(args[0], ast.Name) and args[0].id in self.aten_libs:
            target, key = (args[1] if len(args) > 1 else None), self.key_of(args, 2)
            lib_bound = True
        elif len(args) > 1 and isinstance(args[0], ast.Name) and isinstance(args[1], ast.Constant):
            # torch.library.impl(other_lib, "name", ...): another library's, unless it says aten::
            target, key = args[1], self.key_of(args, 2)
            lib_bound = False
        else:
            target, key = (args[0] if args else None), self.key_of(args, 1)
            lib_bound = False
        if key in _NOT_KERNEL_KEYS:
            return
        if target is None:
            return
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            text = target.value
            if lib_bound or text.startswith("aten::"):
                self.add(text, call, _call_name(call), key)
            return
        ref = self.aten_ref(target)
        if ref is not None:
            self.add(ref[0], call, "packet" if ref[1] else _call_name(call), key)
        elif lib_bound or receiver is None or receiver[:2] == ["torch", "library"]:
            self.warn(
                call,
                f"{_call_name(call)}(...) registers an operator it names by an expression, not a literal",
            )

    def scan_decorator_args(self, call: ast.Call) -> None:
        """A decorator handed ATen operators (torchax's @op, a list to @register_fallback)."""
        found: list[tuple[ast.expr, tuple[str, bool]]] = []
        unresolved: list[ast.expr] = []
        for arg in call.args:
            items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
            for item in items:
                ref = self.aten_ref(item)
                if ref is not None:
                    found.append((item, ref))
                elif not isinstance(item, ast.Constant):
                    unresolved.append(item)
        for item, (name, packet) in found:
            self.add(name, item, "packet" if packet else f"@{_call_name(call)}")
        if found and unresolved:
            for item in unresolved:
                self.warn(
                    item,
                    f"@{_call_name(call)}(...) is handed {ast.unparse(item)[:60]}, which names no ATen operator it can read",
                )
        elif not found and any(isinstance(a, ast.Starred) for a in call.args):
            self.warn(call, f"@{_call_name(call)}(*...) hands operators it cannot read")


def _is_not_kernel(name: str) -> bool:
    return any(word in name.lower() for word in _NOT_KERNELS)


def read_python(text: str, path: str) -> PyRegistrations:
    """The ATen registrations of one Python file (see the module docstring)."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as err:
        raise ConfigError(f"not Python: {err.msg}", path=path, line=err.lineno) from None
    reader = _Reader(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            reader.scan_assign(node)
        elif isinstance(node, ast.ImportFrom) and node.module == "torch.ops":
            reader.aten_aliases.update(a.asname or a.name for a in node.names if a.name == "aten")
    decorators: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and not _is_not_kernel(_call_name(deco)):
                    decorators.add(id(deco))
                    if _call_name(deco) in _IMPL_CALLS:
                        reader.scan_impl(deco)
                    else:
                        reader.scan_decorator_args(deco)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in decorators and _call_name(node) in _IMPL_CALLS:
            reader.scan_impl(node)
    ops = sorted(reader.ops, key=lambda o: o.line)
    return PyRegistrations(tuple(ops), tuple(text for _, text in sorted(reader.warnings)))
