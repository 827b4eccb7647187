"""op-plugin's version gates for a new torch release, computed instead of kept by hand.

Ascend's op_plugin_functions.yaml gates each implementation key of an entry (``acl_op``, ``op_api``,
``exposed``...) by torch version: ``all_version`` (every release of the top-level ``all_version:`` list),
a range ``[v2.1, v2.12]``, an open range ``[v2.6, newest]``, or a set ``v2.1, v2.2``. Registering a
release X.Y is three edits, which Ascend made by hand (Ascend/op-plugin ``ba79f856`` for 2.13,
``49c8366e`` for 2.14):

- an entry whose operator X.Y no longer registers is capped at the last release that had it
  (``all_version`` → ``[v2.1, v2.12]``; an open range closed); one of torch_npu's own operators whose
  schema uses a type X.Y removed (``Dimname`` in 2.13) likewise, at the release before X.Y;
- X.Y is appended to the top-level ``all_version``;
- an entry whose C++ binding X.Y changes (the op joins a structured group, so its ``Tensor[]`` become
  ``const at::ITensorListRef &``; its schema changes the form the entry's kernel is written in) cannot
  be fixed in the yaml: it is listed with its new declaration, for a person to fix the C++.

The edits are made on the text, by the positions of the YAML nodes, so that everything else (order,
comments, spacing, quoting) stays byte for byte; the YAML is never dumped again.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import yaml

from opdrift.coverage.workitems import declaration
from opdrift.coverage.yaml_lists import gate_applies
from opdrift.errors import ConfigError
from opdrift.schema.grammar import parse_schema
from opdrift.schema.kernel import Binding as KernelBinding
from opdrift.schema.kernel import KernelForm, breaks_form, kernel_changes
from opdrift.versions import parse_user_version
from opdrift.yamltext import compose_yaml_document

Minor = tuple[int, int]

# The keys of an entry that op-plugin gates by torch version: torchnpugen's acl_op / op_api / sparse
# (which decide what is registered, `opdrift.coverage.yaml_lists`), and the gates of the Python binding
# (`exposed`), the DVM and internal-format kernels. ba79f856 capped `exposed` beside `acl_op`.
GATE_KEYS = ("acl_op", "op_api", "sparse", "exposed", "dvm", "internal_format_opapi")
# The lists whose entries carry gates, in file order of Ascend's file; `custom` holds torch_npu's own
# operators, the others ATen operators (`symint` repeats names of the others, see yaml_lists).
ENTRY_LISTS = ("official", "autograd", "custom", "symint", "quant")


@dataclass(frozen=True)
class ReleaseOps:
    """What the gates need of one upstream release: its operator names, their schemas (the binding's),
    and the operators in a structured group (``structured`` or ``structured_delegate``)."""

    version: Minor
    label: str  # where it came from, for the header: "2.13.0 (release tables)", a SOURCE
    names: frozenset[str]
    schemas: Mapping[str, str]
    structured: frozenset[str]


@dataclass(frozen=True)
class Cap:
    """One gate capped: the entry, the key, its gate's text before and after (None: no supported
    release keeps the operator, so the entry is to be deleted by hand), and why."""

    name: str
    line: int
    key: str
    before: str
    after: str | None
    reason: str


@dataclass(frozen=True)
class Binding:
    """An entry whose C++ kernel X.Y's codegen declares differently: why, and its new declaration."""

    name: str
    line: int
    why: str
    declaration: str


@dataclass(frozen=True)
class GatePlan:
    release: Minor
    text: str  # the file with the edits applied
    caps: tuple[Cap, ...]
    appended: bool  # X.Y appended to the top-level all_version
    bindings: tuple[Binding, ...]


def vname(version: Minor) -> str:
    return f"v{version[0]}.{version[1]}"


def _dotted(version: Minor) -> str:
    return f"{version[0]}.{version[1]}"


def _minor(text: str, node: yaml.Node, path: str) -> Minor:
    version = parse_user_version(text)
    if version is None:
        raise ConfigError(f"bad version {text!r} (expected like v2.1)", path=path, line=_line(node))
    return version.minor_key


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class _Entry:
    list_name: str
    name: str
    schema: str
    line: int
    fields: Mapping[str, yaml.Node]


def _top(text: str, path: str) -> dict[str, yaml.Node]:
    root = compose_yaml_document(text, path)
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError("expected a mapping at the top of op_plugin_functions.yaml", path=path)
    return {str(k.value): v for k, v in root.value if isinstance(k, yaml.ScalarNode)}


def _entries(top: Mapping[str, yaml.Node], path: str) -> Iterator[_Entry]:
    for list_name in ENTRY_LISTS:
        seq = top.get(list_name)
        if not isinstance(seq, yaml.SequenceNode):
            continue
        for item in seq.value:
            if not isinstance(item, yaml.MappingNode):
                raise ConfigError(f"'{list_name}' items must be entries", path=path, line=_line(item))
            fields = {str(k.value): v for k, v in item.value if isinstance(k, yaml.ScalarNode)}
            func = fields.get("func")
            if not isinstance(func, yaml.ScalarNode):
                raise ConfigError("entry without 'func:'", path=path, line=_line(item))
            schema = str(func.value).strip()
            name = schema.split("(", 1)[0].strip()
            yield _Entry(list_name, name, schema, _line(func), fields)


def _supported(top: Mapping[str, yaml.Node], path: str) -> tuple[yaml.SequenceNode, list[Minor]]:
    node = top.get("all_version")
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise ConfigError("no top-level 'all_version:' list of the supported releases", path=path)
    versions = []
    for item in node.value:
        if not isinstance(item, yaml.ScalarNode):
            raise ConfigError("'all_version' items must be versions like v2.1", path=path, line=_line(item))
        versions.append(_minor(str(item.value), item, path))
    return node, versions


def _append(node: yaml.SequenceNode, text: str, release: Minor) -> _Edit:
    """X.Y after the last item of the top-level list, in the list's own style."""
    last = node.value[-1]
    at = int(last.end_mark.index)
    if node.flow_style:
        return _Edit(at, at, f", {vname(release)}")
    line_start = text.rfind("\n", 0, int(last.start_mark.index)) + 1
    indent = text[line_start : int(last.start_mark.index)]  # "  - "
    return _Edit(at, at, f"\n{indent}{vname(release)}")


def _quote(node: yaml.ScalarNode, value: str) -> str:
    style = node.style if node.style in ('"', "'") else ""
    return f"{style}{value}{style}"


def _capped(
    text: str, node: yaml.Node, last: Minor, first: Minor, path: str
) -> tuple[_Edit | None, str | None]:
    """The edit that caps one gate at LAST, and the gate's new text (None: no release is left)."""
    if isinstance(node, yaml.ScalarNode):
        value = str(node.value).strip()
        if value == "all_version":
            kept = f"[{vname(first)}, {vname(last)}]" if first <= last else None
        else:
            versions = [(v.strip(), _minor(v, node, path)) for v in value.split(",")]
            left = [v for v, key in versions if key <= last]
            kept = _quote(node, ", ".join(left)) if left else None
        start, end = int(node.start_mark.index), int(node.end_mark.index)
        return (None if kept is None else _Edit(start, end, kept)), kept
    if isinstance(node, yaml.SequenceNode) and len(node.value) == 2:
        low, high = node.value
        if _minor(str(low.value), low, path) > last:
            return None, None
        start, end = int(high.start_mark.index), int(high.end_mark.index)
        gate_start, gate_end = int(node.start_mark.index), int(node.end_mark.index)
        spelt = text[gate_start:start] + vname(last) + text[end:gate_end]  # `[ v2.6, v2.12 ]` stays spaced
        return _Edit(start, end, vname(last)), spelt
    raise ConfigError(
        "a version gate must be all_version, vX.Y, a list or a range", path=path, line=_line(node)
    )


def _types(schema: str) -> set[str]:
    parsed = parse_schema(schema)
    return {a.type.base for a in parsed.arguments.flat_all} | {r.type.base for r in parsed.returns}


def removed_types(previous: ReleaseOps, release: ReleaseOps) -> frozenset[str]:
    """The schema types PREVIOUS's operators use and none of RELEASE's does (``Dimname`` in 2.13)."""
    before: set[str] = set()
    for schema in previous.schemas.values():
        before |= _types(schema)
    after: set[str] = set()
    for schema in release.schemas.values():
        after |= _types(schema)
    return frozenset(before - after)


def _binding(entry: _Entry, previous: ReleaseOps, release: ReleaseOps, form: KernelForm) -> Binding | None:
    old, new = previous.schemas.get(entry.name), release.schemas.get(entry.name)
    if old is None or new is None:
        return None
    was, now = entry.name in previous.structured, entry.name in release.structured
    # 2.x bindings: a structured group's Tensor[] bind as ITensorListRef (`opdrift.operators.codegen.kernel_binding`)
    changes = kernel_changes(
        parse_schema(old),
        parse_schema(new),
        binding_before=KernelBinding(ilistref=was),
        binding_after=KernelBinding(ilistref=now),
    )
    if not breaks_form(changes, form):
        return None
    why = []
    if now and not was:
        why.append("joins a structured group: its Tensor[] become const at::ITensorListRef &")
    elif was and not now:
        why.append("leaves its structured group: its Tensor[] become at::TensorList")
    if old != new:
        why.append(f"schema {old} → {new}")
    if form == "SymInt":
        why.append("a `symint:` op, declared in the SymInt form")
    name = entry.name + ("_symint" if form == "SymInt" else "")  # torchnpugen's name of a SymInt kernel
    decl = declaration(name, new, form, KernelBinding(ilistref=now))
    return Binding(entry.name, entry.line, "; ".join(why), _own_names(decl, new, entry.schema))


def _own_names(decl: str, upstream: str, own: str) -> str:
    """DECL with the parameter names of the entry's own schema (op-plugin's ``mat_a`` where upstream
    says ``self``), so that it reads as the C++ it replaces; upstream's when the two do not line up."""
    theirs = [a.name for a in parse_schema(upstream).arguments.flat_all]
    mine = [a.name for a in parse_schema(own).arguments.flat_all]
    if len(theirs) != len(mine):
        return decl
    head, _, params = decl.partition("(")
    parts = params.removesuffix(")").split(", ") if params != ")" else []
    if len(parts) != len(theirs) or not all(p.endswith(" " + n) for p, n in zip(parts, theirs, strict=True)):
        return decl
    renamed = [p[: -len(n)] + m for p, n, m in zip(parts, theirs, mine, strict=True)]
    return f"{head}({', '.join(renamed)})"


def plan_gates(
    text: str,
    path: str,
    previous: ReleaseOps,
    release: ReleaseOps,
    last_seen: Callable[[str], Minor | None],
) -> GatePlan:
    """The gates of op-plugin's TEXT for RELEASE (X.Y), PREVIOUS being the release before it;
    LAST_SEEN: the last release that registered an operator, or None for a name upstream never had."""
    top = _top(text, path)
    supported_node, supported = _supported(top, path)
    first = supported[0]
    edits: list[_Edit] = []
    appended = release.version not in supported
    if appended:
        edits.append(_append(supported_node, text, release.version))
    gone_types = removed_types(previous, release)
    symint = {e.name for e in _entries(top, path) if e.list_name == "symint"}
    # torch_npu's own operators: `custom:` ones, whatever their name (its kl_div_backward is not ATen's,
    # which 1.13 removed), also where `symint:` repeats them.
    own = {e.name for e in _entries(top, path) if e.list_name == "custom"}
    caps: list[Cap] = []
    bindings: list[Binding] = []
    for entry in _entries(top, path):
        gates = [(k, entry.fields[k]) for k in GATE_KEYS if k in entry.fields]
        live = [(k, g) for k, g in gates if _admits(g, release.version, path)]
        if not live:
            continue
        upstream = entry.name not in own
        last: Minor | None = None
        if upstream and entry.name not in release.names:
            last = last_seen(entry.name)  # None: never upstream's (a typo, or a name torchnpugen skips)
            reason = f"removed upstream in {_dotted(release.version)}"
            reason += f" (last in {_dotted(last)})" if last is not None else ""
        elif not upstream:
            used = sorted(_types(entry.schema) & gone_types)
            if used:
                last = previous.version
                reason = f"uses {', '.join(used)}, which {_dotted(release.version)} removed"
        if last is None:
            # `symint:` repeats names of the other lists: one binding per operator.
            if upstream and entry.name not in {b.name for b in bindings}:
                form: KernelForm = "SymInt" if entry.name in symint else "int64_t"
                found = _binding(entry, previous, release, form)
                if found is not None:
                    bindings.append(found)
            continue
        for key, gate in live:
            edit, after = _capped(text, gate, last, first, path)
            if edit is not None:
                edits.append(edit)
            before = text[int(gate.start_mark.index) : int(gate.end_mark.index)]
            caps.append(Cap(entry.name, entry.line, key, before, after, reason))
    return GatePlan(release.version, _apply(text, edits), tuple(caps), appended, tuple(bindings))


def _admits(gate: yaml.Node, version: Minor, path: str) -> bool:
    return gate_applies(gate, version, path=path)


def _apply(text: str, edits: list[_Edit]) -> str:
    out = text
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out


def render(plan: GatePlan, original: str, label: str, *, sources: str) -> str:
    """The unified diff of the plan, after a header of comments saying why each entry was capped and
    which C++ bindings to fix by hand; empty when the file is already gated for the release."""
    diff = list(
        difflib.unified_diff(
            original.splitlines(keepends=True),
            plan.text.splitlines(keepends=True),
            fromfile=label,
            tofile=label,
        )
    )
    if not diff:
        return ""
    x_y = _dotted(plan.release)
    header = [f"# opdrift gates: {label} for torch {x_y} ({sources})"]
    if plan.appended:
        header.append(f"# {vname(plan.release)} appended to all_version")
    named = sorted({(c.line, c.name, c.reason) for c in plan.caps})
    if named:
        header.append(f"# {len(named)} entries capped:")
        header += [f"#   {name} (line {line}): {reason}" for line, name, reason in named]
    orphans = sorted({(c.line, c.name) for c in plan.caps if c.after is None})
    if orphans:
        header.append("# no supported release has these: delete the entries by hand")
        header += [f"#   {name} (line {line})" for line, name in orphans]
    if plan.bindings:
        header.append(f"# {len(plan.bindings)} kernel bindings {x_y} changes (fix the C++ by hand):")
        for b in plan.bindings:
            header.append(f"#   {b.name} (line {b.line}): {b.why}")
            header.append(f"#     {b.declaration}")
    body = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff
    )
    return "\n".join(header) + "\n" + body
