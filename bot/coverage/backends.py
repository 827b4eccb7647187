"""Downstream backends' own operator lists → one normalised form.

Each backend keeps the ATen operators it implements in a format of its own, maintained by hand.
Every reader here is pure (text in, records out) and normalises names to native_functions.yaml's
``name.overload`` (the bare name for the default overload), so that coverage can compare them with a
snapshot. Reading files and walking source trees happens in `read_backend`, at the edge.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from bot.errors import ConfigError, SourceError
from bot.sources.read import read_capped, read_text
from bot.yamltext import compose_yaml_document

BackendKind = Literal["torch-mlir", "xla", "cpp", "op-plugin", "xpu", "dispatch", "text"]
BACKEND_KINDS: tuple[BackendKind, ...] = ("torch-mlir", "xla", "cpp", "op-plugin", "xpu", "dispatch", "text")

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


@dataclass(frozen=True)
class BackendList:
    """A backend's list, normalised. `wraps_variants`: the backend's codegen derives the out and in-place
    variants of each functional op it lowers (XLA does, through functionalization)."""

    kind: BackendKind
    path: str
    ops: tuple[BackendOp, ...]
    wraps_variants: bool = False
    dispatch_key: str | None = None  # for kind "dispatch": the native_functions.yaml key
    # op-plugin entries whose version gates went unchecked because no torch version was known
    ungated: int = 0

    @property
    def names(self) -> frozenset[str]:
        return frozenset(op.name for op in self.ops)


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


# --- torch-mlir -------------------------------------------------------------------------------

_TD_OP = re.compile(r"Generated op for `aten::([^ `]+) : (\([^`]*\) -> \([^`]*\))`")
_ODS_EMIT = re.compile(r"\b(emit|emit_with_mutating_variants)\(\s*[\"']aten::([^ \"']+) : ([^\"']*)[\"']")
# torch_ods_gen.py also emits whole lists: `for key in ["aten::tanh : (Tensor) -> (Tensor)", ...]:`
# followed by `emit_with_mutating_variants(key)` (or `emit(key)`) in the loop body.
_ODS_FOR = re.compile(r"\bfor\s+(\w+)\s+in\s+\[")
_ODS_BODY = re.compile(r"\]\s*:\s*\n\s*(emit|emit_with_mutating_variants)\(\s*(\w+)\b")
_ODS_KEY = re.compile(r"[\"']aten::([^ \"']+) : ([^\"']*)[\"']")


def python_code_only(text: str) -> str:
    """`text` with Python ``#`` comments blanked (same length and lines): a commented-out emit emits nothing."""
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if "#" not in line:
            continue
        quote = ""
        for i, c in enumerate(line):
            if quote:
                if c == quote and line[i - 1] != "\\":
                    quote = ""
            elif c in "\"'":
                quote = c
            elif c == "#":
                lines[k] = line[:i] + " " * (len(line) - i)
                break
    return "\n".join(lines)


def _ods_emits(text: str) -> list[tuple[int, str, str, str]]:
    """(offset, emit function, operator key, type signature) of every emitted op, in file order."""
    code = python_code_only(text)
    found = [(m.start(2), m.group(1), m.group(2), m.group(3).strip()) for m in _ODS_EMIT.finditer(code)]
    # Each loop's list ends at the first "]" after it: found by bisection, so that many unclosed
    # `for x in [` cannot make the scan quadratic.
    closers = [m.start() for m in re.finditer(r"\]", code)]
    for loop in _ODS_FOR.finditer(code):
        k = bisect_right(closers, loop.end() - 1)
        if k == len(closers):
            break
        end = closers[k]
        body = _ODS_BODY.match(code, end)
        if body is None or body.group(2) != loop.group(1):
            continue
        for m in _ODS_KEY.finditer(code, loop.end(), end):
            found.append((m.start(), body.group(1), m.group(1), m.group(2).strip()))
    return sorted(found)


def _line_finder(text: str) -> Callable[[int], int]:
    """offset → 1-based line. The newline offsets are found once and bisected, so that a .td file of
    60,000 ops costs one pass, not a count from the start for every match."""
    breaks = [m.start() for m in re.finditer("\n", text)]

    def line_at(offset: int) -> int:
        return bisect_right(breaks, offset - 1) + 1

    return line_at


def read_torch_mlir(text: str, path: str) -> BackendList:
    """GeneratedTorchOps.td (``Generated op for `aten::x : (...) -> (...)```) or torch_ods_gen.py's emit calls."""
    ops: list[BackendOp] = []
    line_at = _line_finder(text)
    for m in _TD_OP.finditer(text):
        line = line_at(m.start())
        name = normalise_name(m.group(1), path=path, line=line)
        ops.append(BackendOp(name, line, path, "GeneratedTorchOps.td", m.group(2), "types"))
    if not ops:
        for offset, how, key, signature in _ods_emits(text):
            line = line_at(offset)
            name = normalise_name(key, path=path, line=line)
            ops.append(BackendOp(name, line, path, how, signature, "types"))
            if how == "emit_with_mutating_variants":
                ops.append(BackendOp(inplace_variant(name), line, path, how, signature, "types"))
    if not ops:
        raise ConfigError(
            "no torch-mlir operators found: expected GeneratedTorchOps.td ('Generated op for `aten::...`') "
            'or torch_ods_gen.py (emit("aten::..."))',
            path=path,
        )
    return BackendList("torch-mlir", path, tuple(ops))


# --- YAML lists: torch_xla, Intel XPU, Ascend op-plugin --------------------------------------


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


# The lists of xla_native_functions.yaml that name ATen operators the backend implements.
_XLA_LISTS = ("full_codegen", "ir_gen", "supported", "symint", "autograd")


def read_xla(text: str, path: str) -> BackendList:
    """torch_xla's xla_native_functions.yaml. Its codegen runs under functionalization, so the out and
    in-place variants of a lowered functional op need no kernel of their own."""
    top = _mapping(compose_yaml_document(text, path), path, "xla_native_functions.yaml")
    ops: list[BackendOp] = []
    for key in _XLA_LISTS:
        if key in top:
            for raw, line in _scalar_items(top[key], path, key):
                ops.append(BackendOp(normalise_name(raw, path=path, line=line), line, path, key))
    if not ops:
        raise ConfigError(f"no operators in any of {', '.join(_XLA_LISTS)}", path=path)
    return BackendList("xla", path, tuple(ops), wraps_variants=True)


def read_xpu(text: str, path: str) -> BackendList:
    """Intel's xpu_functions.yaml: ``backend: XPU`` and a ``supported:`` list."""
    top = _mapping(compose_yaml_document(text, path), path, "xpu_functions.yaml")
    if "supported" not in top:
        raise ConfigError("no 'supported:' list", path=path)
    ops = [
        BackendOp(normalise_name(raw, path=path, line=line), line, path, "supported")
        for raw, line in _scalar_items(top["supported"], path, "supported")
    ]
    return BackendList("xpu", path, tuple(ops))


def _version_key(text: str, *, path: str, line: int) -> tuple[int, ...]:
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", text.strip())
    if m is None:
        raise ConfigError(f"bad version {text!r} (expected like v2.1)", path=path, line=line)
    return (int(m.group(1)), int(m.group(2)))


# PEP 440 as torch uses it: a release, then maybe a pre-release or dev part, then a local label.
_TORCH_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:(?:a|b|rc)\d+)?(?:\.dev\d+)?(?:\+[A-Za-z0-9.]+)?")


def torch_version_key(text: str) -> tuple[int, int]:
    """(major, minor) of a torch version as torch spells it: ``2.6.0a0``, ``2.1.0+cpu``, ``v2.7``.

    Gates name minor releases only, and a main-branch checkout's version.txt (``2.6.0a0``) or a CPU
    wheel's (``2.1.0+cpu``) belongs to the release it leads to.
    """
    m = _TORCH_VERSION.fullmatch(text.strip())
    if m is None:
        raise ConfigError(f"torch version {text!r} is not like 2.6 or 2.6.0a0 (give --torch-version X.Y)")
    return (int(m.group(1)), int(m.group(2)))


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


# Keys of an op-plugin entry that gate it by torch version: the ACL-op and the aclnn implementations.
_GATES = ("acl_op", "op_api")
_FUNC_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?)\(")


def read_op_plugin(text: str, path: str, torch_version: str | None) -> BackendList:
    """Ascend's op_plugin_functions.yaml. Only the ``official`` (ATen) entries whose gate admits the torch
    version being compared count; ``custom`` ones are torch_npu's own operators."""
    top = _mapping(compose_yaml_document(text, path), path, "op_plugin_functions.yaml")
    if "official" not in top:
        raise ConfigError("no 'official:' list of ATen operators", path=path)
    version = None if torch_version is None else torch_version_key(torch_version)
    entries = top["official"]
    if not isinstance(entries, yaml.SequenceNode):
        raise ConfigError("'official' must be a list of entries", path=path, line=_line(entries))
    ops: list[BackendOp] = []
    ungated = 0
    for entry in entries.value:
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
        ops.append(
            BackendOp(
                normalise_name(m.group(1), path=path, line=line), line, path, "official", schema, "full"
            )
        )
    return BackendList("op-plugin", path, tuple(ops), ungated=ungated)


# --- C++ registrations --------------------------------------------------------------------------

_LIB_IMPL = re.compile(
    r"TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*([A-Za-z0-9_]+)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)"
)
_SCHEMA_IN_COMMENT = re.compile(r"\"schema\":\s*\"aten::([^\"(]+)(\([^\"]*)\"")
_IF_ZERO = re.compile(r"[ \t]*#[ \t]*if[ \t]+0\b")
_PP_IF = re.compile(r"[ \t]*#[ \t]*if(?:n?def)?\b")
_PP_ELSE_END = re.compile(r"[ \t]*#[ \t]*(else|elif|endif)\b")
# Keys whose registrations are not a kernel that runs the op on the backend's device: an autograd
# formula (AutogradPrivateUse1...) or a shape function (Meta) alone leaves the op unimplemented there.
_NOT_A_KERNEL = re.compile(r"Autograd\w*|Meta")


def code_only(text: str) -> str:
    """`text` with C/C++ comments and ``#if 0`` regions blanked (same length and lines), strings kept.

    A registration commented out, or compiled out with ``#if 0``, registers nothing. A ``'`` after a
    digit is a C++14 digit separator (``1'000``), not a character literal.
    """
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
            i = end
        elif _opens_literal(text, i):
            i = _literal_end(text, i) + 1
        else:
            i += 1
    return _blank_if_zero("".join(out))


def _opens_literal(text: str, i: int) -> bool:
    """A string or character literal starts at `i`; a ``'`` after a digit or letter is a digit
    separator (``1'000``) or part of a prefix, not a literal."""
    c = text[i]
    return c == '"' or (c == "'" and not (i and text[i - 1].isalnum()))


def _literal_end(text: str, i: int) -> int:
    """Index of the quote closing the literal opened at `i` (or of the line end, or len(text), when
    it is not closed on its line)."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return j


def _blank_if_zero(text: str) -> str:
    lines = text.split("\n")
    depth = 0  # > 0 inside an #if 0 region: the nesting of #if lines within it
    for k, line in enumerate(lines):
        if depth == 0:
            if _IF_ZERO.match(line):
                depth = 1
                lines[k] = " " * len(line)
            continue
        if _PP_IF.match(line):
            depth += 1
        else:
            m = _PP_ELSE_END.match(line)
            if m is not None and depth == 1 and m.group(1) != "endif":
                depth = 0  # the #else branch of an #if 0 is compiled: keep it
                continue
            if m is not None and m.group(1) == "endif":
                depth -= 1
        lines[k] = " " * len(line)
    return "\n".join(lines)


def read_cpp(text: str, path: str) -> BackendList:
    """``m.impl("aten::mul.out", ...)`` inside ``TORCH_LIBRARY_IMPL(aten, KEY, m) { ... }`` blocks.

    A ``// {"schema": "aten::add.out(...) -> ..."}`` comment anywhere in the file (the style copied from
    RegistrationDeclarations.h, as pytorch_dlprim does) records that kernel's schema. Registrations in
    comments or under ``#if 0`` do not count, nor do ones under an Autograd or Meta key alone; an op
    registered under several keys is listed once.
    """
    schemas: dict[str, str] = {}
    line_at = _line_finder(text)
    start = 0
    while (found := text.find('"schema":', start)) >= 0:
        start = found + 1
        line_start = text.rfind("\n", 0, found) + 1
        if "//" not in text[line_start:found]:
            continue
        m = _SCHEMA_IN_COMMENT.match(text, found)
        if m is not None:
            line = line_at(found)
            schemas[normalise_name(m.group(1), path=path, line=line)] = m.group(1) + m.group(2)
    code = code_only(text)
    ops: list[BackendOp] = []
    seen: set[str] = set()
    position = 0
    while (block := _LIB_IMPL.search(code, position)) is not None:
        key, var = block.group(1), block.group(2)
        body_start = code.find("{", block.end())
        if body_start < 0:
            break
        body_end = _matching_brace(code, body_start)
        if body_end < 0:
            raise ConfigError(
                "TORCH_LIBRARY_IMPL block is not closed", path=path, line=line_at(block.start())
            )
        # TORCH_LIBRARY_IMPL is a namespace-level macro: the next one starts after this block.
        position = body_end + 1
        if _NOT_A_KERNEL.fullmatch(key):
            continue
        impl = re.compile(rf"\b{re.escape(var)}\s*\.\s*impl\(\s*(?:TORCH_SELECTIVE_NAME\(\s*)?\"([^\"]+)\"")
        for m in impl.finditer(code, body_start, body_end):
            line = line_at(m.start())
            name = normalise_name(m.group(1), path=path, line=line)
            if name in seen:
                continue
            seen.add(name)
            schema = schemas.get(name)
            ops.append(
                BackendOp(name, line, path, "m.impl", schema, "full" if schema else None, dispatch_key=key)
            )
    return BackendList("cpp", path, tuple(ops))


def _matching_brace(code: str, start: int) -> int:
    """Index of the ``}`` closing the ``{`` at `start` in comment-free `code`, skipping strings; -1 if none."""
    depth = 0
    i, n = start, len(code)
    while i < n:
        c = code[i]
        if _opens_literal(code, i):
            i = _literal_end(code, i)
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


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
    return sorted(p for p in root.rglob("*") if p.suffix in _CPP_SUFFIXES and p.is_file())


def parse_backend_arg(arg: str) -> tuple[BackendKind, str]:
    """``KIND=PATH`` of ``--backend``; for kind ``dispatch`` the value is a dispatch key such as MPS."""
    kind, sep, value = arg.partition("=")
    if not sep or not value:
        raise ConfigError(f"--backend expects KIND=PATH, got {arg!r} (kinds: {', '.join(BACKEND_KINDS)})")
    for known in BACKEND_KINDS:
        if kind == known:
            return known, value
    raise ConfigError(f"unknown backend kind {kind!r} (kinds: {', '.join(BACKEND_KINDS)})")


def read_backend(kind: BackendKind, value: str, *, torch_version: str | None = None) -> BackendList:
    """Read one backend list from disk. ``dispatch`` lists are derived from the snapshot by coverage."""
    if kind == "dispatch":
        return BackendList("dispatch", value, (), dispatch_key=value)
    path = Path(value)
    if kind == "cpp":
        if path.exists() and not (path.is_dir() or path.is_file()):
            raise ConfigError("not a regular file or directory (a FIFO would block the read)", path=value)
        files = _cpp_files(path) if path.is_dir() else [path]
        ops: list[BackendOp] = []
        for file in files:
            ops.extend(read_cpp(_read_cpp_source(file), str(file)).ops)
        if not ops:
            raise ConfigError("no m.impl(...) registrations inside TORCH_LIBRARY_IMPL(aten, ...)", path=value)
        return BackendList("cpp", value, tuple(ops))
    text = _read_text(path)
    if kind == "torch-mlir":
        return read_torch_mlir(text, value)
    if kind == "xla":
        return read_xla(text, value)
    if kind == "xpu":
        return read_xpu(text, value)
    if kind == "op-plugin":
        return read_op_plugin(text, value, torch_version)
    return read_text_list(text, value)
