"""Backend op-list readers, on small fixtures in each backend's real format."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from goldens import check_golden_entry, updating

from opdrift.coverage.backends import parse_backend_arg, read_backend, read_text_list
from opdrift.coverage.cpp import read_cpp
from opdrift.coverage.kinds import PROFILE_OF_KIND
from opdrift.coverage.oplist import BackendList, normalise_name
from opdrift.coverage.torch_mlir import read_torch_mlir
from opdrift.coverage.yaml_lists import read_op_plugin, read_xla, read_xpu
from opdrift.errors import ConfigError, OpdriftError, SourceError, YamlError

FIXTURES = Path(__file__).parents[2] / "data" / "backends"


def _names(backend: BackendList) -> list[str]:
    return [op.name for op in backend.ops]


def test_normalise_name() -> None:
    assert normalise_name("aten::add.Tensor", path="x", line=1) == "add.Tensor"
    assert normalise_name("aten::relu", path="x", line=1) == "relu"
    assert normalise_name("relu.default", path="x", line=1) == "relu"
    with pytest.raises(ConfigError, match=r"not an ATen operator name"):
        normalise_name("aten::add Tensor", path="x", line=3)


def test_torch_mlir_td() -> None:
    path = FIXTURES / "GeneratedTorchOps.td"
    backend = read_torch_mlir(path.read_text(), str(path))
    assert _names(backend) == [
        "hardtanh",
        "hardtanh_",
        "add.Tensor",
        "std.correction",
        "view",
        "threshold_backward",
        "foo_bar",
    ]
    add = backend.ops[2]
    assert add.schema == "(Tensor, Tensor, Scalar) -> (Tensor)"
    assert add.schema_kind == "types"
    assert path.read_text().splitlines()[add.line - 1].strip().startswith("let summary")


def test_torch_mlir_ods_gen_implies_inplace_variants() -> None:
    path = FIXTURES / "torch_ods_gen.py"
    backend = read_torch_mlir(path.read_text(), str(path))
    names = _names(backend)
    # emit_with_mutating_variants also emits the trailing-underscore twin, same overload.
    assert {"add.Tensor", "add_.Tensor", "sub.Tensor", "sub_.Tensor"} <= set(names)
    assert "view" in names and "view_" not in names
    assert "native_layer_norm" in names
    # Ops listed in a `for key in [...]:` loop are emitted by the call in the loop body.
    assert {"tanh", "tanh_", "relu", "relu_"} <= set(names)
    assert names.index("tanh") < names.index("add.Tensor")  # file order


def test_xla_lists_and_wrapping() -> None:
    path = FIXTURES / "xla_native_functions.yaml"
    backend = read_xla(path.read_text(), str(path))
    assert PROFILE_OF_KIND[backend.kind] == "functional"  # its variants come from functionalization
    assert {"abs", "add.Tensor", "_adaptive_avg_pool2d", "empty.memory_format", "max_pool2d"} <= backend.names
    origins = {op.name: op.origin for op in backend.ops}
    assert origins["abs"] == "full_codegen" and origins["_adaptive_avg_pool2d"] == "ir_gen"
    # non_native entries are XLA's own ops, not ATen's.
    assert "linear" not in backend.names


def test_xpu() -> None:
    path = FIXTURES / "xpu_functions.yaml"
    assert _names(read_xpu(path.read_text(), str(path))) == [
        "add.Tensor",
        "add_.Tensor",
        "add.out",
        "relu",
        "mm",
        "mm.out",
    ]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2.1", {"abs", "add.Tensor", "std.correction", "mm", "relu"}),
        ("2.4", {"abs", "add.Tensor", "std.correction", "relu"}),
        ("1.11", {"abs", "add.Tensor", "std.correction"}),
    ],
)
def test_op_plugin_version_gates(version: str, expected: set[str]) -> None:
    path = FIXTURES / "op_plugin_functions.yaml"
    backend = read_op_plugin(path.read_text(), str(path), version)
    assert backend.names == expected
    std = [op for op in backend.ops if op.name == "std.correction"]
    assert len(std) == 1  # exactly one of the two version-gated definitions applies
    if version == "1.11":
        assert std[0].schema is not None and "int? correction" in std[0].schema
    else:
        assert std[0].schema is not None and "Scalar? correction=None" in std[0].schema
    assert "npu_format_cast" not in backend.names  # custom ops are torch_npu's own


def test_cpp_registrations_with_keys_and_schema_comments() -> None:
    path = FIXTURES / "dlprim" / "pointwise_ops.cpp"
    backend = read_cpp(path.read_text(), str(path))
    got = [(op.name, op.dispatch_key) for op in backend.ops]
    # relu's AutogradPrivateUse1 registration is an autograd formula, not a second kernel
    assert got == [
        ("add.out", "PrivateUse1"),
        ("relu", "PrivateUse1"),
        ("mm", "PrivateUse1"),
        ("sigmoid", "PrivateUse1"),
    ]
    by_name = {op.name: op for op in backend.ops}
    assert by_name["add.out"].schema is not None and by_name["add.out"].schema.startswith(
        "add.out(Tensor self"
    )
    assert by_name["sigmoid"].schema is None


def test_cpp_tree_walk_and_unclosed_block(tmp_path: Path) -> None:
    backend = read_backend("cpp", str(FIXTURES / "dlprim"))
    assert "add.out" in backend.names
    bad = tmp_path / "bad.cpp"
    bad.write_text('int x;\nTORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n  m.impl("relu", f);\n')
    with pytest.raises(ConfigError) as info:
        read_backend("cpp", str(bad))
    assert str(info.value).startswith(f"{bad}:2: ")


def test_text_list() -> None:
    path = FIXTURES / "ops.txt"
    assert _names(read_text_list(path.read_text(), str(path))) == ["add.Tensor", "relu", "mm.out"]


@pytest.mark.parametrize(
    ("kind", "text", "message", "line"),
    [
        ("xla", "backend: XLA\nfull_codegen: abs\n", "'full_codegen' must be a list", 2),
        ("xla", "backend: XLA\nfull_codegen:\n  - [abs]\n", "items must be operator names", 3),
        ("xla", "backend: XLA\nfull_codegen:\n  - abs\n  - 'add Tensor'\n", "not an ATen operator name", 4),
        ("xla", "- just\n- a list\n", "expected a gen_backend_stubs mapping", 1),
        ("xla", "backend: XLA\nfull_codegen: [abs\n", "invalid YAML", 3),
        ("xpu", "backend: XPU\n", "no 'supported:' list", None),
        ("op-plugin", "official:\n  - op_api: all_version\n", "entry without 'func:'", 2),
        ("op-plugin", "official:\n  - func: abs(Tensor self) -> Tensor\n    op_api: v2\n", "bad version", 3),
        (
            "op-plugin",
            "official:\n  - func: abs(Tensor self) -> Tensor\n    op_api: [v2.1]\n",
            "version gate must be",
            3,
        ),
        ("text", "add.Tensor\nrelu(\n", "not an ATen operator name", 2),
        ("torch-mlir", "nothing here\n", "no torch-mlir operators found", None),
    ],
)
def test_malformed_lists(tmp_path: Path, kind: str, text: str, message: str, line: int | None) -> None:
    path = tmp_path / "list"
    path.write_text(text)
    parsed_kind, value = parse_backend_arg(f"{kind}={path}")
    with pytest.raises((ConfigError, YamlError)) as info:
        read_backend(parsed_kind, value, torch_version="2.4")
    err = info.value
    assert message in str(err)
    assert err.path == str(path)
    assert err.line == line
    assert "\n" not in str(err)


def test_backend_arg_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KIND=PATH"):
        parse_backend_arg("xla")
    with pytest.raises(ConfigError, match="unknown backend kind 'mlir'"):
        parse_backend_arg("mlir=x")
    with pytest.raises(SourceError, match="cannot read the backend list: No such file"):
        read_backend("xla", str(tmp_path / "missing.yaml"))
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe relu\n")
    with pytest.raises(OpdriftError, match="not UTF-8"):
        read_backend("text", str(binary))


def test_line_numbers_are_found_by_bisection_as_counting_would() -> None:
    from opdrift.coverage.oplist import line_finder

    for text in ("", "x", "\n", "a\nbb\n\nccc", "\n\n\nz\n"):
        line_at = line_finder(text)
        assert [line_at(i) for i in range(len(text) + 1)] == [
            text.count("\n", 0, i) + 1 for i in range(len(text) + 1)
        ]


# --- what a real file writes, and what hostile input must not do ---------------------------------


def test_op_plugin_comma_list_gates_as_ascends_file_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "op_plugin_functions.yaml"
    path.write_text(
        "official:\n"
        "  - func: mm(Tensor self, Tensor mat2) -> Tensor\n"
        "    op_api: v2.1, v2.2, v2.3\n"
        "  - func: relu(Tensor self) -> Tensor\n"
        "    acl_op: v2.5\n"
        "    op_api: [v2.6, newest]\n"
    )
    assert _names(read_backend("op-plugin", str(path), torch_version="2.2")) == ["mm"]
    assert _names(read_backend("op-plugin", str(path), torch_version="2.4")) == []
    assert _names(read_backend("op-plugin", str(path), torch_version="2.7.0a0")) == ["relu"]
    everything = read_backend("op-plugin", str(path))
    assert _names(everything) == ["mm", "relu"] and everything.ungated == 2
    path.write_text("official:\n  - func: mm(Tensor self, Tensor mat2) -> Tensor\n    op_api: v2.1, two\n")
    with pytest.raises(ConfigError, match=r"op_plugin_functions\.yaml:3: bad version list 'v2\.1, two'"):
        read_backend("op-plugin", str(path), torch_version="2.2")


def test_op_plugin_quant_entries_are_aten_operators_too(tmp_path: Path) -> None:
    """torchnpugen generates the `quant:` list with `official:` (ATen quantized ops such as int_repr),
    gated the same way; `custom:` stays torch_npu's own."""
    path = tmp_path / "op_plugin_functions.yaml"
    path.write_text(
        "official:\n"
        "  - func: abs(Tensor self) -> Tensor\n"
        "    op_api: all_version\n"
        "custom:\n"
        "  - func: npu_format_cast(Tensor self, int acl_format) -> Tensor\n"
        "    op_api: all_version\n"
        "quant:\n"
        "  - func: q_scale(Tensor self) -> float\n"
        "    acl_op: v2.2\n"
        "  - func: int_repr(Tensor self) -> Tensor\n"
        "    acl_op: [v2.2, newest]\n"
    )
    at_22 = read_backend("op-plugin", str(path), torch_version="2.2")
    assert _names(at_22) == ["abs", "q_scale", "int_repr"]
    assert [(op.origin, op.line) for op in at_22.ops[1:]] == [("quant", 8), ("quant", 10)]
    assert _names(read_backend("op-plugin", str(path), torch_version="2.5")) == ["abs", "int_repr"]
    assert read_backend("op-plugin", str(path)).ungated == 3
    path.write_text("official:\n  - func: abs(Tensor self) -> Tensor\nquant:\n")
    assert _names(read_backend("op-plugin", str(path), torch_version="2.2")) == ["abs"]


def test_op_plugin_sparse_gate_admits_an_entry_like_acl_op_and_op_api(tmp_path: Path) -> None:
    """torchnpugen keeps an entry when its torch version is in acl_op, op_api or sparse: Ascend's
    `_coalesce` has only a `sparse:` gate."""
    path = tmp_path / "op_plugin_functions.yaml"
    path.write_text(
        "official:\n"
        "  - func: _coalesce(Tensor self) -> Tensor\n"
        "    sparse: [v2.3, newest]\n"
        "  - func: max(Tensor self) -> Tensor\n"
        "    op_api: v2.1\n"
        "    sparse: [v2.1, newest]\n"
    )
    assert _names(read_backend("op-plugin", str(path), torch_version="2.1")) == ["max"]
    assert _names(read_backend("op-plugin", str(path), torch_version="2.4")) == ["_coalesce", "max"]
    assert read_backend("op-plugin", str(path)).ungated == 2


def test_cpp_registrations_in_comments_compiled_out_or_at_meta_do_not_count(tmp_path: Path) -> None:
    """An Autograd-key registration is the op's implementation on the backend (forward and backward),
    so it counts with its key; a Meta one is a shape function only."""
    path = tmp_path / "ops.cpp"
    path.write_text(
        "constexpr long big = 1'000'000'000;\n"
        "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
        '  // m.impl("aten::mm", mm_kernel);\n'
        '  /* m.impl("aten::addmm", addmm_kernel); */\n'
        "#if 0\n"
        '  m.impl("aten::bmm", bmm_kernel);\n'
        "#if defined(X)\n"
        '  m.impl("aten::baddbmm", f);\n'
        "#endif\n"
        "#else\n"
        '  m.impl("aten::relu", relu_kernel);  // "}" in a comment\n'
        "#endif\n"
        "  char brace = '}';\n"
        '  m.impl("aten::sigmoid", sigmoid_kernel);\n'
        "}\n"
        "TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {\n"
        '  m.impl("aten::tanh", tanh_autograd);\n'
        '  m.impl("aten::relu", relu_autograd);\n'
        "}\n"
        "TORCH_LIBRARY_IMPL(aten, Meta, m) {\n"
        '  m.impl("aten::exp", exp_meta);\n'
        "}\n"
    )
    backend = read_cpp(path.read_text(), str(path))
    assert [(op.name, op.line, op.dispatch_key) for op in backend.ops] == [
        ("relu", 11, "PrivateUse1"),
        ("sigmoid", 14, "PrivateUse1"),
        ("tanh", 17, "AutogradPrivateUse1"),
    ]


def test_ods_emits_in_python_comments_do_not_count(tmp_path: Path) -> None:
    text = (
        'emit("aten::tanh : (Tensor) -> (Tensor)")\n'
        '# emit("aten::mm : (Tensor, Tensor) -> (Tensor)")\n'
        'emit("aten::exp : (Tensor) -> (Tensor)")  # emit("aten::log : (Tensor) -> (Tensor)")\n'
        'for key in ["aten::sin : (Tensor) -> (Tensor)",  # "aten::cos : (Tensor) -> (Tensor)"\n'
        '            "aten::sqrt : (Tensor) -> (Tensor)"]:\n'
        "    emit_with_mutating_variants(key)\n"
    )
    backend = read_torch_mlir(text, "torch_ods_gen.py")
    assert sorted(_names(backend)) == ["exp", "sin", "sin_", "sqrt", "sqrt_", "tanh"]


def test_hostile_cpp_and_ods_files_are_read_in_linear_time(tmp_path: Path) -> None:
    """Each of these took seconds to minutes when every match rescanned the rest of the file."""
    slashes = tmp_path / "slashes.cpp"
    slashes.write_text("/" * 40_000 + '"schema": "aten::mm(Tensor self) -> Tensor"\n' + _ONE_BLOCK)
    assert _names(read_backend("cpp", str(slashes))) == ["relu"]
    nested = tmp_path / "nested.cpp"
    nested.write_text("TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n" * 5000 + "}\n" * 5000)
    with pytest.raises(ConfigError, match=r"no m\.impl"):
        read_backend("cpp", str(nested))
    comments = tmp_path / "comments.cpp"
    comments.write_text(
        '// {"schema": "aten::relu(Tensor self) -> Tensor"}\n' * 20_000
        + "Tensor relu_kernel(Tensor a) {}\n"
        + _ONE_BLOCK
    )
    (relu,) = read_backend("cpp", str(comments)).ops
    assert relu.schema == "relu(Tensor self) -> Tensor"
    loops = "for k in [\n" * 20_000 + 'emit("aten::tanh : (Tensor) -> (Tensor)")\n'
    assert _names(read_torch_mlir(loops, "torch_ods_gen.py")) == ["tanh"]


_ONE_BLOCK = 'TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n  m.impl("aten::relu", relu_kernel);\n}\n'


def test_a_latin1_file_in_a_cpp_tree_is_read_and_a_fifo_refused(tmp_path: Path) -> None:
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "old.cpp").write_bytes("// Copyright \u00a9 J\u00f6rg\n".encode("latin-1") + _ONE_BLOCK.encode())
    assert _names(read_backend("cpp", str(tree))) == ["relu"]
    fifo = tmp_path / "pipe.cpp"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        read_backend("cpp", str(fifo))
    with pytest.raises(ConfigError, match=r"cannot read the backend list: No such file"):
        read_backend("cpp", str(tmp_path / "absent.cpp"))


def test_a_cpp_schema_comment_belongs_to_the_function_right_below_it(request: pytest.FixtureRequest) -> None:
    """The comment above a definition is that function's; an op's schema and kernel form are those of
    the function its m.impl names. A comment naming the op above another function (dlprim's
    clamp_min_out), or above a mere declaration, says nothing about the registered kernel."""
    text = (
        '// {"schema": "aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)"}\n'
        "Tensor & clamp_out(const Tensor & self, const c10::optional<Scalar> & min,\n"
        "                   const c10::optional<Scalar> & max, Tensor & out)\n"
        "{ return out; }\n"
        '// {"schema": "aten::clamp.out(Tensor self, Scalar min, Tensor(a!) out) -> Tensor(a!)"}\n'
        "Tensor & clamp_min_out(const Tensor & self, const Scalar & min, Tensor & out) { return out; }\n"
        '// {"schema": "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)"}\n'
        "Tensor view(const Tensor & self, c10::SymIntArrayRef size);\n"
        "Tensor view(const Tensor & self, c10::SymIntArrayRef size) { return self; }\n"
        "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
        '  m.impl("aten::clamp.out", &clamp_out);\n'
        '  m.impl("aten::clamp_min.out", TORCH_FN(clamp_min_out));\n'
        '  m.impl("aten::view", &ns::view);\n'
        '  m.impl("aten::relu", &elsewhere);\n'
        "}\n"
    )
    ops = {op.name: op for op in read_cpp(text, "ops.cpp").ops}
    assert ops["clamp.out"].schema is not None and "Scalar? max=None" in ops["clamp.out"].schema
    assert ops["clamp_min.out"].schema is None  # its comment names clamp.out
    assert ops["view"].schema is None  # the comment sits above a declaration
    assert [ops[n].kernel_form for n in ("clamp.out", "clamp_min.out", "view", "relu")] == [
        "int64_t",
        "int64_t",
        "SymInt",
        None,  # not defined in this file: its form is not known
    ]
    warnings = read_cpp(text, "ops.cpp").warnings
    # one warning for each comment: the op it names and the function it sits on (golden: the wording)
    misplaced, loose = (w.split(": ", 1)[1] for w in warnings)
    assert all(name in misplaced for name in ("clamp.out", "clamp_min_out", "clamp_min.out"))
    assert "view" in loose and "clamp" not in loose
    check_golden_entry(
        "backend-warnings.lines.txt", "cpp: misplaced comments", "\n".join(warnings) + "\n", updating(request)
    )


def test_a_cpp_schema_comment_is_read_on_the_head_line_after_a_trailing_return_and_braced_default() -> None:
    """A comment at the end of the head line (`{` on the next one), a head with a trailing return type
    and one whose default argument is `{}` each keep their function's schema comment."""
    text = (
        'Tensor abs(const Tensor & self) // {"schema": "aten::abs(Tensor self) -> Tensor"}\n'
        "{ return self; }\n"
        '// {"schema": "aten::neg(Tensor self) -> Tensor"}\n'
        "auto neg(const Tensor & self) -> Tensor { return self; }\n"
        '// {"schema": "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"}\n'
        "Tensor sum(const Tensor & self, at::OptionalIntArrayRef dim = {}, bool keepdim = false,\n"
        "           std::optional<ScalarType> dtype = {}) { return self; }\n"
        "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
        '  m.impl("aten::abs", &abs);\n'
        '  m.impl("aten::neg", &neg);\n'
        '  m.impl("aten::sum.dim_IntList", &sum);\n'
        "}\n"
    )
    backend = read_cpp(text, "ops.cpp")
    ops = {op.name: op for op in backend.ops}
    assert ops["abs"].schema == "abs(Tensor self) -> Tensor"
    assert ops["neg"].schema == "neg(Tensor self) -> Tensor"
    assert (ops["sum.dim_IntList"].schema or "").startswith("sum.dim_IntList(Tensor self, int[1]? dim")
    assert {op.kernel_form for op in backend.ops} == {"int64_t"}
    assert backend.warnings == ()
