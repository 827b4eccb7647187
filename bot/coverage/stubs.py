"""torchgen's ``gen_backend_stubs`` yaml: any out-of-tree backend's list of the ATen ops it registers.

The format is torchgen's (torchgen/gen_backend_stubs.py, ``parse_backend_yaml``): ``backend:`` (the
dispatch key, PrivateUse1 for OpenReg), ``cpp_namespace:``, optional ``class_name:``,
``use_out_as_primary:``, ``device_guard:``, ``extra_headers:``, then lists of operator names:
``supported:`` (the backend key), ``autograd:`` (its Autograd key), ``symint:`` (kernels declared in
the SymInt form, NAME_symint), and the lazy-tensor codegen's ``full_codegen:``, ``ir_gen:``,
``non_native:``. An item of ``supported:`` may carry settings: OpenReg's yaml (pytorch/pytorch,
test/cpp_extensions/open_registration_extension/torch_openreg/csrc/aten/openreg_native_functions.yaml)
writes ``- maximum.out:`` followed by ``structured: true``, which YAML reads as one mapping
``{maximum.out: null, structured: true}``; ``- maximum.out: {structured: true}`` says the same. A
structured kernel binds as torchgen's structured kernels do (`BackendOp.own_binding`,
`opdrift.operators.codegen.kernel_binding`): its tensor lists as ITensorListRef; any other kernel is bound
as upstream binds it, as the dispatcher's signature is.

torch_xla's xla_native_functions.yaml is such a file (the ``xla`` kind reads it with this reader).
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from opdrift.coverage.kinds import BackendKind
from opdrift.coverage.oplist import BackendList, BackendOp, normalise_name
from opdrift.errors import ConfigError
from opdrift.yamltext import compose_yaml_document

# The lists that name ATen operators the backend implements, in the order torchgen reads them.
STUB_LISTS = ("full_codegen", "ir_gen", "supported", "symint", "autograd")
_EMPTY = ("", "~", "null")


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _truth(node: yaml.Node, path: str) -> bool:
    if not isinstance(node, yaml.ScalarNode) or node.value.lower() not in ("true", "false"):
        raise ConfigError("'structured' must be true or false", path=path, line=_line(node))
    return bool(node.value.lower() == "true")


def _item(node: yaml.Node, path: str, key: str) -> tuple[str, int, bool | None]:
    """(name, line, structured) of one list item: a name, ``{NAME: null, structured: true}``,
    ``{NAME: {structured: true}}`` or torch_npu's ``{func: NAME, ...}``; None: not said."""
    if isinstance(node, yaml.ScalarNode):
        return str(node.value), _line(node), None
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"'{key}' items must be operator names", path=path, line=_line(node))
    name: tuple[str, int] | None = None
    structured: bool | None = None
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise ConfigError("expected a plain key", path=path, line=_line(k))
        if k.value == "structured":
            structured = _truth(v, path)
        elif k.value == "func" and isinstance(v, yaml.ScalarNode):
            name = (str(v.value), _line(v))
        elif isinstance(v, yaml.MappingNode):
            name = (str(k.value), _line(k))
            for sk, sv in v.value:
                if isinstance(sk, yaml.ScalarNode) and sk.value == "structured":
                    structured = _truth(sv, path)
        elif isinstance(v, yaml.ScalarNode) and v.value in _EMPTY and name is None:
            name = (str(k.value), _line(k))
    if name is None:
        raise ConfigError(f"'{key}' entry names no operator", path=path, line=_line(node))
    return name[0], name[1], structured


def _items(node: yaml.Node, path: str, key: str) -> Iterator[tuple[str, int, bool | None]]:
    if isinstance(node, yaml.ScalarNode) and node.value in _EMPTY:
        return  # `key:` with nothing under it
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(f"'{key}' must be a list of operator names", path=path, line=_line(node))
    for item in node.value:
        yield _item(item, path, key)


def read_backend_stubs(text: str, path: str, kind: BackendKind = "backend-stubs") -> BackendList:
    """A gen_backend_stubs yaml: every operator of its lists, in file order, with its list as origin,
    its kernel form (``symint:`` names the SymInt ones) and whether it is structured."""
    root = compose_yaml_document(text, path)
    if not isinstance(root, yaml.MappingNode):
        line = None if root is None else _line(root)
        raise ConfigError(
            "expected a gen_backend_stubs mapping (backend:, supported: …)", path=path, line=line
        )
    top = {str(k.value): v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
    parsed = {
        key: [
            (normalise_name(raw, path=path, line=line), line, s)
            for raw, line, s in _items(top[key], path, key)
        ]
        for key in STUB_LISTS
        if key in top
    }
    symint = frozenset(name for name, _, _ in parsed.get("symint", ()))
    ops = [
        BackendOp(
            name,
            line,
            path,
            key,
            kernel_form="SymInt" if name in symint else "int64_t",
            # a list that marks the op structured binds its kernel so (`BackendOp.own_binding`); one
            # that does not say leaves upstream's binding, which the dispatcher's signature follows
            own_binding=structured is True,
            structured=structured is True,
        )
        for key in STUB_LISTS
        for name, line, structured in parsed.get(key, ())
    ]
    if not ops:
        raise ConfigError(f"no operators in any of {', '.join(STUB_LISTS)}", path=path)
    return BackendList(kind, path, tuple(ops))
