"""C++ registrations: ``m.impl(...)`` inside ``TORCH_LIBRARY_IMPL(aten, KEY, m)`` blocks.

Comments, string literals and ``#if 0`` blocks are blanked out first, so a registration that is only
mentioned is not counted.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from opdrift.coverage.oplist import BackendList, BackendOp, line_finder, normalise_name
from opdrift.errors import ConfigError
from opdrift.schema.kernel import KernelForm

_LIB_IMPL = re.compile(
    r"TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*([A-Za-z0-9_]+)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)"
)
# A schema comment is one line: an unclosed quote must not swallow the code below it.
_SCHEMA_IN_COMMENT = re.compile(r"\"schema\":[ \t]*\"aten::([^\"(\n]+)(\([^\"\n]*)\"")
_IF_ZERO = re.compile(r"[ \t]*#[ \t]*if[ \t]+0\b")
_PP_IF = re.compile(r"[ \t]*#[ \t]*if(?:n?def)?\b")
_PP_ELSE_END = re.compile(r"[ \t]*#[ \t]*(else|elif|endif)\b")
# A catch-all block: `m.fallback(...)` in it is the backend's boxed fallback for every operator.
_ANY_LIB_IMPL = re.compile(
    r"TORCH_LIBRARY_IMPL\(\s*_\s*,\s*([A-Za-z0-9_]+)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)"
)
# Keys whose fallback does not run an operator on the backend's device: autocast, functionalization,
# tracing and the other wrappers around a kernel (their fallbacks are usually fallthroughs).
_NOT_A_DEVICE_FALLBACK = re.compile(
    r"Autograd\w*|Autocast\w*|Meta|Functionalize|ADInplaceOrView|Python\w*|BackendSelect|FuncTorch\w*|"
    r"Tracer|Named|Conjugate|Negative|ZeroTensor|Batched\w*|VmapMode"
)
# Keys whose registrations are not a kernel that runs the op on the backend's device: a shape function
# (Meta) or an autocast wrapper alone leaves the op unimplemented there. A registration at an Autograd
# key (AutogradPrivateUse1) is the op's whole implementation on the backend, its forward and backward
# (pytorch_dlprim's `relu`: a torch::autograd::Function whose forward runs dlprim's activation), so
# it counts, with its key kept.
_NOT_A_KERNEL = re.compile(r"Meta|Autocast\w*")
# A function definition's head in comment-free code: NAME(PARAMETERS) [const|noexcept|override]
# [-> RETURN TYPE] {. The parameters hold no semicolons and at most one level of parentheses or braces
# (a default such as `c10::nullopt`, `std::vector<int64_t>()` or `{}`), which keeps the scan linear on
# any file; a trailing return type (`auto f(...) -> Tensor {`) holds no parentheses or braces.
_DEFINITION = re.compile(
    r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(([^(){};]*(?:(?:\([^(){};]*\)|\{[^(){};]*\})[^(){};]*)*)\)"
    r"\s*(?:(?:const|noexcept|override|final)\b\s*)*(?:->[^(){};]*)?\{"
)
# Words followed by `(...) {` that are statements, not functions.
_STATEMENTS = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"})
# The second argument of m.impl: `&ns::fn`, `ns::fn` or `TORCH_FN(ns::fn)`; the function's own name.
_IMPL_FUNCTION = re.compile(
    r"\s*\)?\s*,\s*(?:TORCH_FN\(\s*)?&?\s*(?:[A-Za-z_][A-Za-z0-9_]*\s*::\s*)*([A-Za-z_][A-Za-z0-9_]*)"
)
# What makes a kernel's parameters the SymInt form (c10::SymInt, SymIntArrayRef, OptionalSymIntArrayRef).
_SYMINT_PARAMETER = re.compile(r"\bSymInt|SymIntArrayRef\b")


@dataclass(frozen=True)
class _Definition:
    """A C++ function defined in the file, and the schema comment right above it."""

    name: str
    start: int  # offset of its name
    form: KernelForm  # the form its parameters are written in
    head_end: int = 0  # offset of the `{` that opens its body
    schema_name: str | None = None  # the operator its schema comment names, normalised
    schema: str | None = None  # that comment's schema text


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

    A ``// {"schema": "aten::add.out(...) -> ..."}`` comment (the style copied from
    RegistrationDeclarations.h, as pytorch_dlprim does) records the schema of the function defined right
    below it. An op's schema and kernel form are those of the function its ``m.impl`` names, when this
    file defines it: the comment above that function, if it names the op, and the form of its
    parameters (``c10::SymInt`` / ``SymIntArrayRef``: SymInt, else int64_t). A comment naming the op
    above another function says nothing about the registered kernel. Registrations in comments or
    under ``#if 0`` do not count, nor do ones under a Meta or Autocast key alone; an op registered
    under several keys is listed once.
    """
    comments: list[tuple[int, str, str]] = []  # (offset, op name, schema text)
    warnings: list[tuple[int, str]] = []  # (offset, message): said in the file's order
    line_at = line_finder(text)
    start = 0
    while (found := text.find('"schema":', start)) >= 0:
        start = found + 1
        line_start = text.rfind("\n", 0, found) + 1
        if "//" not in text[line_start:found]:
            continue
        m = _SCHEMA_IN_COMMENT.match(text, found)
        line = line_at(found)
        try:
            name = None if m is None else normalise_name(m.group(1), path=path, line=line)
        except ConfigError:
            name = None
        if m is None or name is None:
            # One hand-written comment in a large tree is not worth the whole run: say it, skip it.
            warnings.append(
                (
                    found,
                    f'{path}:{line}: a schema comment that is not `"schema": "aten::NAME(...) -> ..."` on'
                    " one line; its kernel's schema is not checked",
                )
            )
            continue
        comments.append((found, name, m.group(1) + m.group(2)))
    code = code_only(text)
    functions, tied = _definitions(code, comments)
    registered: dict[str, _Definition | None] = {}
    ops: list[BackendOp] = []
    seen: set[str] = set()
    for block, key, var, body_start, body_end in _blocks(code, _LIB_IMPL):
        if body_end < 0:
            raise ConfigError(
                "TORCH_LIBRARY_IMPL block is not closed", path=path, line=line_at(block.start())
            )
        if _NOT_A_KERNEL.fullmatch(key):
            continue
        impl = re.compile(rf"\b{re.escape(var)}\s*\.\s*impl\(\s*(?:TORCH_SELECTIVE_NAME\(\s*)?\"([^\"]+)\"")
        for m in impl.finditer(code, body_start, body_end):
            line = line_at(m.start())
            name = normalise_name(m.group(1), path=path, line=line)
            if name in seen:
                continue
            seen.add(name)
            kernel = _IMPL_FUNCTION.match(code, m.end(), body_end)
            found_def = None if kernel is None else _registered(functions.get(kernel.group(1), ()), name)
            registered[name] = found_def
            schema = None
            if found_def is not None and found_def.schema_name == name:
                schema = found_def.schema
            ops.append(
                BackendOp(
                    name,
                    line,
                    path,
                    "m.impl",
                    schema,
                    "full" if schema else None,
                    dispatch_key=key,
                    kernel_form=None if found_def is None else found_def.form,
                )
            )
    warnings.extend(_misplaced(comments, tied, registered, path, line_at))
    return BackendList(
        "cpp",
        path,
        tuple(ops),
        warnings=tuple(message for _, message in sorted(warnings)),
        fallback=_fallback(code, path, line_at),
    )


def _definitions(
    code: str, comments: list[tuple[int, str, str]]
) -> tuple[dict[str, list[_Definition]], list[_Definition | None]]:
    """Every function defined in comment-free CODE by name, each with its schema comment; and for each
    of COMMENTS the definition it ended up with (None: none). A function's comment is one at the end
    of its head (before the ``{``), else the last one before its head with nothing but its return type
    between (no ``;``, ``{``, ``}``).
    """
    found = [
        (m.start(), m.end() - 1, m.group(1), _form_of(m.group(2)))
        for m in _DEFINITION.finditer(code)
        if m.group(1) not in _STATEMENTS
    ]
    starts = [start for start, _, _, _ in found]
    # Where statements and blocks end or open: a comment with one of these between it and the next
    # definition is not that definition's (found by bisection, so many comments cost no rescans).
    barriers = [m.start() for m in re.finditer(r"[;{}]", code)]
    above: dict[int, int] = {}  # definition → the comment it takes
    for c, (offset, _, _) in enumerate(comments):
        k = bisect_right(starts, offset) - 1
        if k >= 0 and offset < found[k][1]:
            above[k] = c  # on the head's own line, after the parameters: the function's, whichever else
            continue
        line_end = code.find("\n", offset)
        after = len(code) if line_end < 0 else line_end
        k = bisect_right(starts, after)
        if k < len(found) and bisect_right(barriers, after) == bisect_right(barriers, found[k][0]):
            above[k] = c  # a later comment, nearer the function, wins (comments come in order)
    out: dict[str, list[_Definition]] = {}
    tied: list[_Definition | None] = [None] * len(comments)
    for k, (start, head_end, name, form) in enumerate(found):
        taken = above.get(k)
        named, text = (None, None) if taken is None else comments[taken][1:]
        definition = _Definition(name, start, form, head_end, named, text)
        out.setdefault(name, []).append(definition)
        if taken is not None:
            tied[taken] = definition
    return out, tied


def _misplaced(
    comments: list[tuple[int, str, str]],
    tied: list[_Definition | None],
    registered: dict[str, _Definition | None],
    path: str,
    line_at: Callable[[int], int],
) -> Iterator[tuple[int, str]]:
    """A warning for each schema comment that names an operator the file registers but is tied to no
    function, or to a function the file registers for another operator (pytorch_dlprim's comment
    naming ``clamp.out`` above ``clamp_min_out``): that op's kernel schema goes unchecked, silently
    otherwise."""
    users: dict[int, list[str]] = {}
    for op, definition in registered.items():
        if definition is not None:
            users.setdefault(definition.start, []).append(op)
    for (offset, op, _), definition in zip(comments, tied, strict=True):
        if op not in registered:
            continue
        where = f"{path}:{line_at(offset)}: the schema comment for {op}"
        if definition is None:
            yield offset, f"{where} is tied to no function definition; its kernel's schema is not checked"
            continue
        others = [o for o in users.get(definition.start, ()) if o != op]
        if others and op not in users.get(definition.start, ()):
            yield (
                offset,
                (
                    f"{where} sits on {definition.name}, which this file registers for {', '.join(others)};"
                    f" {op}'s kernel schema is not checked"
                ),
            )


def _form_of(parameters: str) -> KernelForm:
    return "SymInt" if _SYMINT_PARAMETER.search(parameters) else "int64_t"


def _registered(candidates: Iterable[_Definition], op: str) -> _Definition | None:
    """The definition a registration of OP names: of C++ overloads sharing the name, the one whose
    schema comment names OP, else the first."""
    listed = list(candidates)
    return next((d for d in listed if d.schema_name == op), listed[0] if listed else None)


def _blocks(code: str, macro: re.Pattern[str]) -> Iterator[tuple[re.Match[str], str, str, int, int]]:
    """Each MACRO block of comment-free CODE: (its match, KEY, the registrar's name, the index of its
    ``{``, of its closing ``}``, or -1 when it is not closed)."""
    position = 0
    while (block := macro.search(code, position)) is not None:
        body_start = code.find("{", block.end())
        if body_start < 0:
            return
        body_end = _matching_brace(code, body_start)
        yield block, block.group(1), block.group(2), body_start, body_end
        # TORCH_LIBRARY_IMPL is a namespace-level macro: the next one starts after this block.
        position = body_end + 1 if body_end >= 0 else block.end()


def _fallback(code: str, path: str, line_at: Callable[[int], int]) -> str | None:
    """Where the first boxed fallback of a device key is registered, or None."""
    for _, key, var, body_start, body_end in _blocks(code, _ANY_LIB_IMPL):
        if body_end < 0 or _NOT_A_DEVICE_FALLBACK.fullmatch(key):
            continue
        calls = re.compile(rf"\b{re.escape(var)}\s*\.\s*fallback\(([^;]*)").finditer(
            code, body_start, body_end
        )
        for call in calls:
            # A fallthrough only skips the key; it runs nothing.
            if "makeFallthrough" not in call.group(1):
                return f"{path}:{line_at(call.start())} ({key})"
    return None


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


# A list of operator names a backend registers one by one to a boxed CPU fallback: torch-xpu-ops'
# `std::vector<std::string> fallback_list = {"cholesky_inverse", ...}` inside
# `TORCH_LIBRARY_IMPL(aten, XPU, m)`, each name then `m.impl(op_name, ...&xpu_fallback_impl)`
# (intel/torch-xpu-ops, src/ATen/native/xpu/XPUFallback.cpp:344 at 9061f28)
_FALLBACK_LIST = re.compile(r"\bfallback_list\s*=\s*\{([^{}]*)\}")
_QUOTED = re.compile(r"\"([^\"\n]*)\"")


def read_fallback_list(text: str, path: str) -> BackendList:
    """The ``fallback_list`` of a ``TORCH_LIBRARY_IMPL(aten, KEY, m)`` block: the operators the backend
    runs on CPU through its boxed fallback, one by one. They have no kernel of the backend's: the list
    names no op (`BackendList.ops`), only what runs on CPU (`BackendList.cpu_fallback_ops`)."""
    code = code_only(text)
    line_at = line_finder(text)
    found: list[BackendOp] = []
    for _, key, _var, body_start, body_end in _blocks(code, _LIB_IMPL):
        if body_end < 0:
            continue
        listing = _FALLBACK_LIST.search(code, body_start, body_end)
        if listing is None:
            continue
        for m in _QUOTED.finditer(code, listing.start(1), listing.end(1)):
            line = line_at(m.start())
            name = normalise_name(m.group(1), path=path, line=line)
            found.append(BackendOp(name, line, path, "fallback_list", dispatch_key=key))
        where = f"{path}:{line_at(listing.start())} ({key})"
        return BackendList("xpu-fallback", path, (), cpu_fallback_ops=tuple(found), cpu_fallback_at=where)
    raise ConfigError("no fallback_list = {...} inside TORCH_LIBRARY_IMPL(aten, KEY, m)", path=path)
