"""PyTorch's Python side → `Signals`: which operators it writes in terms of others, its primitives, its aliases.

Read as text with `ast` (torch is never imported). What each file says:

- ``torch/_prims/__init__.py``: the primitives (``tan = _make_elementwise_unary_prim("tan", ...)``);
- ``torch/_refs/**``: reference implementations, decorated with elementwise wrappers when pointwise
  (``@_make_elementwise_unary_reference(...) def sigmoid(a): return true_divide(1, add(1, exp(neg(a))))``;
  1.12 wrote ``tan = _make_elementwise_unary_reference(prims.tan, ...)``), and aliases
  (``expit = _make_alias(torch.sigmoid, "expit")``, ``swap_axes = transpose``);
- ``torch/_decomp/decompositions.py``: ``@register_decomposition(aten.elu) def elu(...)``;
- ``torch/_torch_docs.py``: ``add_docstr(torch.arccos, "...Alias for :func:`torch.acos`.")``;
- ``torch/overrides.py``: ``torch.concat: lambda ...: -1,  # alias for torch.cat``;
- ``torch/csrc/jit/passes/normalize_ops.cpp``: ``{aten::absolute, aten::abs},``.

The facts name operators as the Python side spells them, turned into ATen base names
(``torch.special.i1`` → ``special_i1``); `opdrift.taxonomy` keeps those the source has. A file that does not
parse is a warning, not a failed run: its facts are missing, nothing else.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from opdrift.model import AliasSignal, OpSignal, Signals
from opdrift.pyast import dotted

PRIMS = "torch/_prims/__init__.py"
DECOMPOSITIONS = "torch/_decomp/decompositions.py"
TORCH_DOCS = "torch/_torch_docs.py"
OVERRIDES = "torch/overrides.py"
NORMALIZE_OPS = "torch/csrc/jit/passes/normalize_ops.cpp"
# torch/_refs file → the prefix its functions' ATen names carry (torch._refs.special.i1 is special_i1)
REFS = {
    "torch/_refs/__init__.py": "",
    "torch/_refs/nn/functional/__init__.py": "",
    "torch/_refs/special/__init__.py": "special_",
    "torch/_refs/linalg/__init__.py": "linalg_",
    "torch/_refs/fft.py": "fft_",
}
# The files that say how operators are built; without them a source's facts come from the shipped table.
DECOMPOSITION_FILES = (PRIMS, DECOMPOSITIONS, "torch/_refs/__init__.py")

# Wrappers that make a reference or decomposition elementwise: the structure of a pointwise op.
_POINTWISE_WRAPPERS = frozenset(
    {
        "_make_elementwise_unary_reference",
        "_make_elementwise_binary_reference",
        "elementwise_unary_scalar_wrapper",
    }
)
_REF_MAKERS = frozenset({"_make_elementwise_unary_reference", "_make_elementwise_binary_reference"})
# Module names whose attributes are operators (torch.add, aten.add.Tensor, prims.tan, refs.add, F.relu).
_OP_MODULES = frozenset(
    {"torch", "aten", "prims", "refs", "F", "ops", "functional", "special", "linalg", "fft"}
)
_NAMESPACES = {"special": "special_", "linalg": "linalg_", "fft": "fft_"}
# Names that a decomposition calls as Python functions (max(dims)), never operators.
_BUILTINS = frozenset(dir(builtins))
# Matched against one line at a time, its indentation stripped first: ``^\s*`` under MULTILINE lets
# every line start run over all the blank lines below it (60,000 newlines took 32 s).
_DOC_ALIAS = re.compile(r"Alias (?:for|of) :func:`torch\.([\w.]+)`")
_OVERRIDE_ALIAS = re.compile(r"torch\.([\w.]+): lambda.*#\s*alias (?:for|of) torch\.([\w.]+)", re.I)
_JIT_ALIAS = re.compile(r"\{\s*aten::(\w+)\s*,\s*aten::(\w+)\s*\}")


def aten_name(dotted: str) -> str:
    """``torch.special.i1`` / ``special.i1`` → ``special_i1``; ``torch.Tensor.add`` → ``add``."""
    parts = [p for p in dotted.split(".") if p not in ("torch", "Tensor", "nn", "functional", "")]
    return "_".join(parts)


@dataclass
class _Op:
    """The facts gathered about one operator while the files are read (frozen into an OpSignal)."""

    targets: set[str] = field(default_factory=set)
    where: str = ""
    has_ref: bool = False
    pointwise: bool = False


@dataclass
class _Reading:
    ops: dict[str, _Op] = field(default_factory=dict)
    prims: set[str] = field(default_factory=set)
    aliases: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def op(self, name: str) -> _Op:
        return self.ops.setdefault(name, _Op())

    def alias(self, name: str, target: str, where: str) -> None:
        if not name or not target or name == target:
            return
        known = self.aliases.get(name)
        if known is None:
            self.aliases[name] = (target, {where})
        elif known[0] == target:
            known[1].add(where)


def read_python_side(
    files: Iterable[tuple[str, str, str]], origin: str, skipped: set[str] | None = None
) -> tuple[Signals, tuple[str, ...]]:
    """FILES as (in-tree path, display name, text) → the facts they state, and one warning per file that
    does not parse (its in-tree path is added to SKIPPED, when given)."""
    reading = _Reading()
    for path, display, text in files:
        try:
            _read_one(path, display, text, reading)
        except _Unparsable as err:
            reading.warnings.append(str(err))
            if skipped is not None:
                skipped.add(path)
        except (RecursionError, MemoryError):
            # CPython's parser and ast give up on deep nesting this way (``x = 1+1+...`` of 3,000 terms:
            # RecursionError; 10,000 ``-`` in a row: MemoryError), and so does a reader walking such a
            # tree. The file is skipped like one that does not parse.
            reading.warnings.append(
                f"{display}:1: nested too deeply for this reader to parse; its facts are skipped"
            )
            if skipped is not None:
                skipped.add(path)
    return freeze(reading, origin), tuple(reading.warnings)


def _read_one(path: str, display: str, text: str, reading: _Reading) -> None:
    if path == PRIMS:
        _read_prims(_parse(text, display), reading)
    elif path in REFS:
        _read_refs(_parse(text, display), path, REFS[path], reading)
    elif path == DECOMPOSITIONS:
        _read_decompositions(_parse(text, display), path, reading)
    elif path == TORCH_DOCS:
        _read_docs(_parse(text, display), path, reading)
    elif path == OVERRIDES:
        for m in _line_matches(_OVERRIDE_ALIAS, text):
            reading.alias(aten_name(m.group(1)), aten_name(m.group(2)), path)
    elif path == NORMALIZE_OPS:
        for m in _JIT_ALIAS.finditer(text):
            reading.alias(m.group(1), m.group(2), path)


def _line_matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """PATTERN matched at the start of each line of TEXT once its leading whitespace is stripped."""
    for line in text.split("\n"):
        m = pattern.match(line.lstrip())
        if m is not None:
            yield m


def freeze(reading: _Reading, origin: str) -> Signals:
    ops: dict[str, OpSignal] = {}
    for name in sorted(set(reading.ops) | reading.prims):
        got = reading.ops.get(name, _Op())
        ops[name] = OpSignal(
            decomposes_to=tuple(sorted(got.targets - {name})),
            where=got.where,
            has_ref=got.has_ref,
            pointwise_ref=got.pointwise,
            prim=name in reading.prims,
        )
    aliases = {
        name: AliasSignal(target, tuple(sorted(where)))
        for name, (target, where) in sorted(reading.aliases.items())
    }
    return Signals(origin=origin, ops=ops, aliases=aliases)


class _Unparsable(Exception):
    pass


def _parse(text: str, display: str) -> ast.Module:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError) as err:
        line = getattr(err, "lineno", None) or 1
        raise _Unparsable(
            f"{display}:{line}: not Python this reader can parse ({err.__class__.__name__}); its facts are skipped"
        ) from None


# --- the pieces of the files ----------------------------------------------------------------------


def _op_of_chain(parts: list[str]) -> str | None:
    """The operator an attribute chain names, or None when it names no operator."""
    if len(parts) < 2 or parts[0] not in _OP_MODULES:
        return None
    if "aten" in parts:  # aten.add.Tensor, torch.ops.aten.add.default: the overload is dropped
        i = parts.index("aten")
        return parts[i + 1] if i + 1 < len(parts) else None
    if parts[0] == "prims":
        return "prims." + parts[1]
    rest = [p for p in parts[1:] if p not in ("nn", "functional", "Tensor", "_refs", "refs")]
    if not rest or rest[0].startswith("_"):
        return None
    prefix = _NAMESPACES.get(rest[0], "") if len(rest) > 1 else ""
    return prefix + rest[-1] if prefix else rest[0] if len(rest) == 1 else None


# Python's operators on tensors are ATen operators (``a * b`` is mul): a reference written with them
# is written in terms of those.
_OPERATORS: dict[type[ast.AST], str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "remainder",
    ast.Pow: "pow",
    ast.BitAnd: "bitwise_and",
    ast.BitOr: "bitwise_or",
    ast.BitXor: "bitwise_xor",
    ast.USub: "neg",
    ast.Invert: "bitwise_not",
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
}


def _targets(body: Iterable[ast.AST], *, bare_builtins: bool) -> set[str]:
    """Operators a body calls: module attributes (torch.exp, prims.tan), methods (a.exp()), bare names,
    and Python's operators (``a * b``)."""
    found: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.BinOp, ast.UnaryOp)):
                word = _OPERATORS.get(type(node.op))
                if word is not None:
                    found.add(word)
                continue
            if isinstance(node, ast.Compare):
                found.update(w for o in node.ops if (w := _OPERATORS.get(type(o))) is not None)
                continue
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name):
                name = func.id
                if not name.startswith("_") and (bare_builtins or name not in _BUILTINS):
                    found.add(name)
                continue
            parts = dotted(func)
            op = _op_of_chain(parts)
            if op is not None:
                found.add(op)
            elif (
                isinstance(func, ast.Attribute)
                and not func.attr.startswith("_")
                and parts[:1]
                not in (
                    ["utils"],
                    ["math"],
                    ["functools"],
                    ["itertools"],
                    ["operator"],
                )
            ):
                found.add(func.attr)  # a method of a tensor: a.exp(), self.new_zeros(...)
    return found


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    parts = dotted(target)
    return parts[-1] if parts else ""


def _registered(node: ast.expr) -> list[str]:
    """The ATen base names a ``register_decomposition(...)`` argument (or a list of them) names."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [name for elt in node.elts for name in _registered(elt)]
    parts = dotted(node)
    if "aten" in parts:
        i = parts.index("aten")
        if i + 1 < len(parts):
            return [parts[i + 1]]
    return []


def _read_prims(module: ast.Module, reading: _Reading) -> None:
    for stmt in module.body:
        if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
            continue
        maker = _decorator_name(stmt.value)
        if "prim" not in maker or not maker.startswith("_make"):
            continue
        for target in stmt.targets:
            if isinstance(target, ast.Name) and not target.id.startswith("_"):
                reading.prims.add(target.id)


def _function_facts(
    fn: ast.FunctionDef, path: str, reading: _Reading, names: list[str], *, is_ref: bool, pointwise: bool
) -> None:
    targets = _targets(fn.body, bare_builtins=is_ref)
    for name in names:
        op = reading.op(name)
        # A reference says more than a decomposition about what an op is built from: it is written on
        # top of the primitives, so it wins when both exist.
        if is_ref or not op.where:
            op.targets = set(targets)
            op.where = path
        op.has_ref = op.has_ref or is_ref
        op.pointwise = op.pointwise or pointwise


def _read_refs(module: ast.Module, path: str, prefix: str, reading: _Reading) -> None:
    for stmt in module.body:
        if isinstance(stmt, ast.FunctionDef) and not stmt.name.startswith("_"):
            names = {prefix + stmt.name}
            pointwise = False
            for deco in stmt.decorator_list:
                word = _decorator_name(deco)
                pointwise = pointwise or word in _POINTWISE_WRAPPERS
                if word == "register_decomposition" and isinstance(deco, ast.Call) and deco.args:
                    names.update(_registered(deco.args[0]))
                if word in _REF_MAKERS and isinstance(deco, ast.Call):
                    for kw in deco.keywords:
                        if kw.arg == "aten_op":
                            names.update(_registered(kw.value))
            _function_facts(stmt, path, reading, sorted(names), is_ref=True, pointwise=pointwise)
        elif (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            name = stmt.targets[0].id
            if name.startswith("_"):
                continue
            value = stmt.value
            if isinstance(value, ast.Call) and _decorator_name(value) in _REF_MAKERS and value.args:
                # 1.12: tan = _make_elementwise_unary_reference(prims.tan, ...)
                op = reading.op(prefix + name)
                op.has_ref, op.pointwise, op.where = True, True, path
                op.targets = {t for a in value.args if (t := _op_of_chain(dotted(a))) is not None}
            elif isinstance(value, ast.Call) and _decorator_name(value) == "_make_alias" and value.args:
                target = _op_of_chain(dotted(value.args[0]))
                if target is not None:
                    reading.alias(prefix + name, target, path)
            elif (
                isinstance(value, ast.Name)
                and not value.id.startswith("_")
                and prefix + value.id in reading.ops
            ):
                reading.alias(prefix + name, prefix + value.id, path)  # swap_axes = transpose


def _read_decompositions(module: ast.Module, path: str, reading: _Reading) -> None:
    for stmt in module.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        names: list[str] = []
        pointwise = False
        for deco in stmt.decorator_list:
            word = _decorator_name(deco)
            pointwise = pointwise or word in _POINTWISE_WRAPPERS
            if word == "register_decomposition" and isinstance(deco, ast.Call) and deco.args:
                names.extend(_registered(deco.args[0]))
        if names:
            _function_facts(stmt, path, reading, sorted(set(names)), is_ref=False, pointwise=pointwise)


def _read_docs(module: ast.Module, path: str, reading: _Reading) -> None:
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and _decorator_name(node) == "add_docstr" and len(node.args) >= 2):
            continue
        doc = node.args[1]
        text = _string_of(doc)
        if text is None or "lias" not in text:
            continue
        m = next(_line_matches(_DOC_ALIAS, text), None)
        parts = dotted(node.args[0])
        if m is not None and parts[:1] == ["torch"]:
            reading.alias(aten_name(".".join(parts)), aten_name(m.group(1)), path)


def _string_of(node: ast.expr) -> str | None:
    """The text of a docstring argument: a literal, an f-string's literal parts, or a ``.format(...)`` call."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _string_of(node.func.value)
    if isinstance(node, ast.BinOp):
        left, right = _string_of(node.left), _string_of(node.right)
        return (left or "") + (right or "")
    return None
