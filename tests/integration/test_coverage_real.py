"""Coverage of real downstream op lists (tests/data/backends/real, sources and commits in SOURCES.md)."""

from __future__ import annotations

import json
import lzma
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from clirun import Opdrift
from datafiles import DATA, RELEASES, _vkey, release_text
from goldens import check_golden_entry, updating

from opdrift import pipeline
from opdrift.config.file import BotConfig, parse_config
from opdrift.coverage.backends import BackendKind, BackendList, read_backend
from opdrift.coverage.check import Coverage, compute_coverage
from opdrift.coverage.jsonform import coverage_json
from opdrift.coverage.yaml_lists import XPU_MOVED
from opdrift.operators.autogen import group_key
from opdrift.operators.functionalize import Functionalization
from opdrift.schema.grammar import parse_schema

REAL = DATA / "backends" / "real"


def _real(name: str, tmp_path: Path) -> str:
    path = tmp_path / name.removesuffix(".xz")
    path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
    return str(path)


@pytest.fixture(scope="module")
def xla_215(tmp_path_factory: pytest.TempPathFactory, release_file: Callable[[str], Path]) -> Coverage:
    tmp = tmp_path_factory.mktemp("xla")
    backend = read_backend("xla", _real("pytorch-xla.xla_native_functions.yaml.xz", tmp))
    return compute_coverage(pipeline.load_snapshot(str(release_file("2.15.0"))), backend)


def test_xla_out_variants_pair_with_their_functional_op_as_torchgen_groups_them(xla_215: Coverage) -> None:
    """torchgen's signature() leaves out dtype/layout/device/pin_memory, so `linspace.out` (which has
    none of them) is in `linspace`'s group, and XLA's functionalization derives it from `linspace`."""
    by_name = {o.name: o for o in xla_215.ops}
    assert by_name["linspace"].rule == "listed"
    assert (by_name["linspace.out"].covered, by_name["linspace.out"].rule, by_name["linspace.out"].via) == (
        True,
        "backend_codegen",
        "linspace",
    )


def test_a_derived_variant_comes_from_the_functional_op_of_its_own_group(
    xla_215: Coverage, release_file: Callable[[str], Path]
) -> None:
    """Pairing follows torchgen's groups: every variant XLA's functionalization is said to derive has
    a functional op with the same signature(), which carries the work (listed, decomposed, served by a
    default kernel, or itself needed)."""
    records = pipeline.load_snapshot(str(release_file("2.15.0"))).operators
    derived = [o for o in xla_215.ops if o.rule == "backend_codegen"]
    assert len(derived) > 100, "the real XLA list derives many variants"
    # a view op is its *_copy's (tests/unit/render/test_reach.py), not a variant of a group
    views = Functionalization(records)
    derived = [o for o in derived if views.view_copy_of(records[o.name]) != o.via]
    for o in derived:
        assert records[o.via].kind == "functional"
        assert group_key(parse_schema(records[o.name].schema)) == group_key(
            parse_schema(records[o.via].schema)
        )


def test_a_functional_backend_gets_no_non_functional_default_kernel(
    xla_215: Coverage, release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """PyTorch leaves XLA and Lazy out of CompositeExplicitAutogradNonFunctional's keyset: an op whose only
    kernel is of that kind needs XLA's own, while an eager backend runs PyTorch's."""
    assert xla_215.profile == "functional"
    by_name = {o.name: o for o in xla_215.ops}
    assert (by_name["lift_fresh_copy"].covered, by_name["lift_fresh_copy"].rule) == (False, "needs_kernel")
    assert by_name["new_zeros"].rule == "default_kernel"  # CompositeExplicitAutograd serves it
    backend = read_backend("xla", _real("pytorch-xla.xla_native_functions.yaml.xz", tmp_path))
    as_eager = compute_coverage(pipeline.load_snapshot(str(release_file("2.15.0"))), backend, "eager")
    assert {o.name: o for o in as_eager.ops}["lift_fresh_copy"].rule == "default_kernel"


def test_an_export_backend_lowers_what_survives_decomposition(release_file: Callable[[str], Path]) -> None:
    """A compiler of exported graphs with PyTorch's default Core-ATen table (a bare GeneratedTorchOps.td
    names no table of its own) receives `_to_copy` (CompositeExplicitAutograd, in the observed
    Core-ATen graph of tests/data/observed/export), so needs a lowering where an eager backend runs the
    default kernel; the table decomposes `new_zeros`, and every functional CIA op but its few kept ones."""
    snapshot = pipeline.load_snapshot(str(release_file("2.15.0")))
    backend = read_backend("torch-mlir", str(DATA / "backends" / "GeneratedTorchOps.td"))
    export = {o.name: o for o in compute_coverage(snapshot, backend).ops}
    eager = {o.name: o for o in compute_coverage(snapshot, backend, "eager").ops}
    assert (export["_to_copy"].covered, export["_to_copy"].rule) == (False, "needs_kernel")
    assert eager["_to_copy"].rule == eager["new_zeros"].rule == "default_kernel"
    assert export["new_zeros"].rule == "decomposes"
    for name in (
        "trace_backward",
        "matmul",
        "cdist",
    ):  # CompositeImplicitAutograd: decomposes for every profile
        assert export[name].rule == eager[name].rule == "decomposes"
    assert export["upsample_bilinear2d.vec"].rule == "needs_kernel"  # PRESERVED_ATEN_CIA_OPS


@pytest.mark.slow
def test_coverage_says_the_profile_and_takes_another(
    opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    td = str(DATA / "backends" / "GeneratedTorchOps.td")
    source = str(release_file("2.15.0"))
    run = opdrift("coverage", "--backend", f"torch-mlir={td}", source)
    assert run.code == 0 and "(profile: export)" in run.out.splitlines()[0]
    as_json = opdrift(
        "coverage", "--backend", f"torch-mlir={td}", "--profile", "eager", "--format", "json", source
    )
    assert json.loads(as_json.out)["backends"][0]["backend"]["profile"] == "eager"
    markdown = opdrift("coverage", "--backend", f"torch-mlir={td}", "--format", "markdown", source)
    assert "as a backend of the `export` profile" in markdown.out
    wrong = opdrift("coverage", "--backend", f"torch-mlir={td}", "--profile", "lazy", source)
    assert wrong.code == 2 and "invalid choice: 'lazy'" in wrong.err


def test_the_real_dlprim_tree_reads_with_its_malformed_comments_as_warnings(
    dlprim_src: Path, opdrift: Opdrift, release_file: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """pytorch_dlprim's sources hold three `// {"schema": "aten::...` comments cut short on their line;
    each is one warning naming its file and line, and the rest of the tree is read. Three more name an
    op the file registers but sit on the function registered for another (copied from the function
    beside it): `hardtanh_`'s above `hardtanh`, `abs.out`'s above `abs`, `clamp.out`'s above
    `clamp_min_out`; each is a warning too, as that op's kernel schema goes unchecked."""
    backend = read_backend("cpp", str(dlprim_src))
    assert [w.split(": ", 1)[0].rsplit("/", 1)[-1] for w in backend.warnings] == [
        "loss_ops.cpp:246",
        "pointwise_ops.cpp:558",
        "pointwise_ops.cpp:606",
        "pointwise_ops.cpp:735",
        "pointwise_ops.cpp:1298",
        "vision_ops.cpp:188",
    ]
    misplaced = [w.split(": ", 1)[1] for w in backend.warnings if "sits on" in w]
    assert all(name in misplaced[2] for name in ("clamp.out", "clamp_min_out", "clamp_min.out"))
    said = "".join(f"{w.replace(str(dlprim_src), 'src')}\n" for w in backend.warnings)
    assert str(dlprim_src) not in said
    check_golden_entry("backend-warnings.lines.txt", "cpp: pytorch_dlprim's src", said, updating(request))
    assert len(backend.ops) > 100
    assert any(op.schema for op in backend.ops), "the well-formed schema comments are still read"
    run = opdrift("coverage", "--backend", f"cpp={dlprim_src}", str(release_file("2.15.0")))
    assert run.code == 0, run.err
    assert run.err.count("a schema comment that is not") == 3
    assert "(profile: eager)" in run.out


@pytest.mark.parametrize("version", ["2.14.1", "2.15.0"])
def test_the_real_dlprim_tree_against_two_releases(
    dlprim_src: Path, release_file: Callable[[str], Path], version: str
) -> None:
    """What dlprim registers is covered at both releases, what it lacks at 2.15.0 beyond 2.14.1 is new
    in 2.15.0, and its dense default kernels serve it (no NestedTensor decomposition counted)."""
    backend = read_backend("cpp", str(dlprim_src))
    cov = compute_coverage(pipeline.load_snapshot(str(release_file(version))), backend)
    rules = {o.name: o.rule for o in cov.ops}
    assert {name for name in backend.names if name in rules} <= {n for n, r in rules.items() if r == "listed"}
    for name in ("zeros_like", "randn_like", "randn_like.generator"):
        assert rules[name] == "default_kernel", name
    assert rules["mm.out"] == "listed" and rules["geqrf"] == rules["igamma.out"] == "needs_kernel"
    # igamma's work is igamma.out's: torchgen's default_backend kernel of igamma calls it
    assert rules["igamma"] == "structured_delegate"
    if version == "2.15.0":
        before = compute_coverage(pipeline.load_snapshot(str(release_file("2.14.1"))), backend)
        new = {o.name for o in cov.uncovered} - {o.name for o in before.uncovered}
        assert new and new <= _release_names("2.15.0") - _release_names("2.14.1")


def test_a_subscription_to_the_real_dlprim_tree_says_what_its_reader_skipped(
    dlprim_src: Path, release_file: Callable[[str], Path]
) -> None:
    from opdrift.app.prepare import backend_work
    from opdrift.config.file import parse_config

    text = f'subscriptions:\n  - who: ["@dlprim"]\n    backend: {{kind: cpp, path: "{dlprim_src}"}}\n'
    config = parse_config(text, "opdrift.yml")
    said: list[str] = []
    (lacking,) = backend_work(config, pipeline.load_snapshot(str(release_file("2.15.0"))), warn=said.append)[
        0
    ].values()
    assert sum("a schema comment that is not" in s for s in said) == 3
    assert sum("sits on" in s for s in said) == 3 and len(said) == 6
    assert lacking, "the tree still needs kernels for some 2.15.0 operators"


# --- three real lists (torch-mlir, op-plugin, Intel XPU), each against two releases ------------------
#
# Expected values come from the vendored files themselves, by a parse of their own here (a regex or
# yaml.safe_load), not from the readers under test; ops named below were checked by hand in the files.


def _real_text(name: str) -> str:
    return lzma.decompress((REAL / name).read_bytes()).decode("utf-8")


def _release_names(version: str) -> set[str]:
    """Every operator a release's native_functions.yaml declares: its funcs and their autogen'd kin."""
    text = release_text(version)
    names = set(re.findall(r"^- func: ([\w.]+)\(", text, re.MULTILINE))
    for line in re.findall(r"^  autogen: (.+)$", text, re.MULTILINE):
        names |= {n.strip() for n in line.split(",")}
    return names


def _release_funcs(version: str) -> set[str]:
    return set(re.findall(r"^- func: ([\w.]+)\(", release_text(version), re.MULTILINE))


def _coverage_of(
    kind: BackendKind, name: str, version: str, release_file: Callable[[str], Path], tmp: Path
) -> tuple[BackendList, Coverage]:
    minor = ".".join(version.split(".")[:2])
    backend = read_backend(kind, _real(name, tmp), torch_version=minor if kind == "op-plugin" else None)
    return backend, compute_coverage(pipeline.load_snapshot(str(release_file(version))), backend)


def _rules(cov: Coverage) -> dict[str, str]:
    return {o.name: o.rule for o in cov.ops}


# torch-mlir: the file was generated against torch 2.14.0.dev20260719 (its pytorch-requirements.txt),
# so 2.14.1 is the release it tracks and 2.15.0 the next one its maintainers move to.
TORCH_MLIR = "torch-mlir.GeneratedTorchOps.td.xz"
_TD_ATEN = re.compile(r"let summary = \"Generated op for `aten::(\S+) : (\([^`]*\)) -> \([^`]*\)`\";")


@pytest.fixture(scope="module", params=["2.14.1", "2.15.0"])
def torch_mlir_real(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    release_file: Callable[[str], Path],
) -> tuple[str, BackendList, Coverage]:
    version: str = request.param
    return (
        version,
        *_coverage_of("torch-mlir", TORCH_MLIR, version, release_file, tmp_path_factory.mktemp("mlir")),
    )


def test_the_real_torch_mlir_file_reads_every_aten_op_and_only_those(
    torch_mlir_real: tuple[str, BackendList, Coverage],
) -> None:
    """Of the file's `def Torch_...` records, those for aten:: ops are read (prim::, prims::, quantized::
    and torchvision:: ones are torch-mlir's own), one op each, with its type signature."""
    _, backend, _ = torch_mlir_real
    text = _real_text(TORCH_MLIR)
    aten = {m.group(1): m.group(2) for m in _TD_ATEN.finditer(text)}
    assert len(aten) == 749 and text.count("\ndef Torch_") == 780
    assert [op.name for op in backend.ops if op.origin != "fx_importer"] == [
        n.removesuffix(".default") for n in aten
    ]
    assert backend.warnings == ()
    by_name = {op.name: op for op in backend.ops}
    assert by_name["convolution"].schema == aten["convolution"] + " -> (Tensor)"
    assert by_name["sort"].schema == "(Tensor, int, bool) -> (Tensor, Tensor)"


def test_the_real_torch_mlir_file_against_a_release(
    torch_mlir_real: tuple[str, BackendList, Coverage],
) -> None:
    version, backend, cov = torch_mlir_real
    rules = _rules(cov)
    upstream = _release_names(version)
    listed = {n for n in backend.names if n in upstream}
    # 642 in the file, and sym_size.int and sym_numel, which its FX importer serves with size.int and numel
    assert len(listed) == 644 and {"sym_size.int", "sym_numel"} <= listed
    assert {n for n, r in rules.items() if r == "listed"} == listed
    for name in ("convolution", "relu", "relu_", "add.Tensor", "add_.Tensor", "native_layer_norm"):
        assert rules[name] == "listed", name
    # Lowered for one overload only: rsub.Scalar and __lshift__.Scalar are listed, not their .Tensor kin
    # (rsub.Tensor itself is in PyTorch's Core-ATen table, which a bare .td file is judged by).
    for name in ("__lshift__.Tensor", "_cdist_forward", "histc"):
        assert name not in backend.names and rules[name] == "needs_kernel", name
    assert "rsub.Tensor" not in backend.names and rules["rsub.Tensor"] == "decomposes"
    # Stale: what the file lists that the release does not declare. None of it is a native function; it
    # is torch-mlir's TorchScript built-ins (add.t, Int.Tensor, size) and hacked twins.
    stale = {op.name for op in cov.stale}
    assert stale == backend.names - upstream and len(stale) == 107
    assert not stale & _release_funcs(version)
    assert {"add.t", "Int.Tensor", "size", "index_put.hacked_twin", "__getitem__.t"} <= stale


def test_the_real_torch_mlir_file_raises_no_schema_alert_at_the_releases_it_tracks(
    torch_mlir_real: tuple[str, BackendList, Coverage],
) -> None:
    """The file was regenerated against a 2.14 nightly, and no listed op's signature changed by 2.15:
    every listed native op has as many types as the release's schema has arguments (counted here from
    the yaml), and coverage raises no alert."""
    version, backend, cov = torch_mlir_real
    schemas = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^- func: ([\w.]+)\((.*)\) -> ", release_text(version), re.MULTILINE)
    }
    compared = 0
    for op in backend.ops:
        if op.name in schemas and op.schema is not None:
            theirs = op.schema.split(") -> (")[0].strip("(")
            ours = [a for a in _top_level_commas(schemas[op.name]) if a.strip() != "*"]
            assert len([t for t in theirs.split(",") if t.strip()]) == len(ours), op.name
            compared += 1
    assert compared > 600
    assert cov.alerts == ()


def _top_level_commas(args: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in args:
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [a for a in [*out, cur] if a.strip()]


# op-plugin: its all_version runs to v2.15, and the file (2026-08-21) postdates 2.15.0, so 2.14.1 and
# 2.15.0 are the two newest releases it builds for; their gates differ for a few entries.
OP_PLUGIN = "op-plugin.op_plugin_functions.yaml.xz"


def _torchnpugen_versions(gate: object, all_version: list[str]) -> list[str]:
    """The torch versions a gate admits, as torchnpugen's get_version spells them (v2.14...)."""
    if gate is None:
        return []
    if isinstance(gate, list):
        start = all_version.index(gate[0].strip())
        end = None if gate[1].strip() == "newest" else all_version.index(gate[1].strip()) + 1
        return all_version[start:end]
    if gate == "all_version":
        return all_version
    return [v.strip() for v in str(gate).split(",")]


def _torchnpugen_aten_ops(version: str) -> list[str]:
    """What torchnpugen generates for `version` from the official and quant lists, in file order."""
    doc = yaml.safe_load(_real_text(OP_PLUGIN))
    want = "v" + ".".join(version.split(".")[:2])
    names = []
    for key in ("official", "quant", "autograd"):
        for entry in doc[key]:
            gates = (entry.get(g) for g in ("acl_op", "op_api", "sparse"))
            if any(want in _torchnpugen_versions(g, doc["all_version"]) for g in gates):
                names.append(entry["func"].split("(")[0])
    return names


@pytest.fixture(scope="module", params=["2.14.1", "2.15.0"])
def op_plugin_real(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    release_file: Callable[[str], Path],
) -> tuple[str, BackendList, Coverage]:
    version: str = request.param
    return (
        version,
        *_coverage_of("op-plugin", OP_PLUGIN, version, release_file, tmp_path_factory.mktemp("npu")),
    )


@pytest.mark.slow
def test_the_real_op_plugin_file_reads_what_torchnpugen_generates_for_the_version(
    op_plugin_real: tuple[str, BackendList, Coverage],
) -> None:
    version, backend, cov = op_plugin_real
    expected = _torchnpugen_aten_ops(version)
    assert len(expected) > 1000
    assert [op.name for op in backend.ops] == [n.removesuffix(".default") for n in expected]
    assert not {"npu_format_cast", "npu_fusion_attention"} & backend.names  # custom: torch_npu's own
    # Two entries for _foreach_norm.Scalar: the v2.1-v2.3 one has no dtype; only the newer counts.
    (norm,) = [op for op in backend.ops if op.name == "_foreach_norm.Scalar"]
    assert norm.schema is not None and "ScalarType? dtype=None" in norm.schema
    rules = _rules(cov)
    # The quant: list holds ATen ops too; those gated [v2.2, newest] are listed, the v2.2-only ones not.
    for name in ("int_repr", "dequantize.self", "_empty_affine_quantized"):
        assert rules[name] == "listed", name
    assert "q_scale" not in backend.names
    assert cov.stale == ()  # every ATen entry the gates admit is an operator of the release


def test_the_real_op_plugin_file_against_a_release(op_plugin_real: tuple[str, BackendList, Coverage]) -> None:
    _, backend, cov = op_plugin_real
    rules = _rules(cov)
    for name in ("abs", "add.Tensor", "convolution", "_foreach_abs", "scaled_dot_product_attention"):
        assert rules[name] == "listed", name
    for name in ("geqrf", "i0.out", "igamma.out", "heaviside.out"):
        assert name not in backend.names and rules[name] == "needs_kernel", name
    # their functional ops are no work of their own: torchgen's default_backend kernels call the out= op
    for name in ("i0", "igamma", "heaviside"):
        assert name not in backend.names and rules[name] == "structured_delegate", name


def test_the_real_op_plugin_file_carries_older_schemas_than_the_release(
    op_plugin_real: tuple[str, BackendList, Coverage],
) -> None:
    """Alerts that are in the file: rrelu_with_noise still takes `Tensor noise`, which upstream marks
    mutated (`Tensor(b!) noise`), and _upsample_nearest_exact1d writes `SymInt[3] output_size` for
    upstream's `SymInt[1]`."""
    version, backend, cov = op_plugin_real
    text = _real_text(OP_PLUGIN)
    alerts = {a.name: a for a in cov.alerts}
    rrelu = alerts["rrelu_with_noise"]
    assert "Tensor noise," in rrelu.backend_schema and "Tensor(b!) noise," in rrelu.upstream_schema
    assert [(d.code, d.subject) for d in rrelu.details] == [("alias_annotation_changed", "noise")]
    upsample = alerts["_upsample_nearest_exact1d"]
    assert [(d.code, d.before, d.after) for d in upsample.details] == [
        ("argument_retyped", "SymInt[3]", "SymInt[1]")
    ]
    for alert in (rrelu, upsample):
        assert text.splitlines()[alert.line - 1].strip() == f"- func: {alert.backend_schema}"
        assert alert.breaking
    # An alert only where the file's text differs from the release's.
    release = {
        m.group(1): m.group(0)[len("- func: ") :]
        for m in re.finditer(r"^- func: ([\w.]+)\(.*$", release_text(version), re.MULTILINE)
    }
    for alert in cov.alerts:
        assert release[alert.name] != alert.backend_schema
    same = [op for op in backend.ops if release.get(op.name) == op.schema]
    assert len(same) > 800 and not {op.name for op in same} & set(alerts)


# torch-xpu-ops: the list was last edited on 2024-11-07, in the torch 2.6 cycle (release/2.6 is the
# first release branch holding that commit), so 2.5.0 is the release it built on and 2.6.0 the one it
# was made for.
XPU = "torch-xpu-ops.xpu_functions.yaml.xz"


@pytest.fixture(scope="module", params=["2.5.0", "2.6.0"])
def xpu_real(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    release_file: Callable[[str], Path],
) -> tuple[str, BackendList, Coverage]:
    version: str = request.param
    return (version, *_coverage_of("xpu", XPU, version, release_file, tmp_path_factory.mktemp("xpu")))


def test_the_real_xpu_list_against_a_release(xpu_real: tuple[str, BackendList, Coverage]) -> None:
    version, backend, cov = xpu_real
    supported = yaml.safe_load(_real_text(XPU))["supported"]
    assert len(supported) == 741 and len(set(supported)) == 737  # _softmax and kin are listed twice
    assert [op.name for op in backend.ops] == supported
    assert "resize_as_" not in backend.names  # commented out: registered by hand
    rules = _rules(cov)
    upstream = _release_names(version)
    assert {n for n, r in rules.items() if r == "listed"} == set(supported) & upstream
    assert cov.stale == () and set(supported) <= upstream
    for name in ("add.Tensor", "segment_reduce", "_segment_reduce_backward", "fractional_max_pool3d.output"):
        assert rules[name] == "listed", name
    # Listed as its out variant only, which the functional op is structured on.
    assert (
        "fractional_max_pool3d" not in backend.names
        and rules["fractional_max_pool3d"] == "structured_delegate"
    )
    # Neither in the list nor among the XPU kernels of torch-xpu-ops' own native_functions.yaml then.
    for name in ("cholesky", "geqrf", "i0.out", "igamma.out", "heaviside.out"):
        assert name not in backend.names and rules[name] == "needs_kernel", name
    for name in ("i0", "igamma", "heaviside"):
        assert name not in backend.names and rules[name] == "structured_delegate", name
    assert cov.alerts == ()  # the list names operators only, no schemas


@pytest.mark.slow
def test_what_a_real_list_newly_lacks_at_the_next_release_is_new_in_it(
    tmp_path: Path, release_file: Callable[[str], Path]
) -> None:
    """An op a list covers at one release stays covered at the next: what newly needs a kernel is what
    the next release added."""
    lists: list[tuple[BackendKind, str, str, str]] = [
        ("torch-mlir", TORCH_MLIR, "2.14.1", "2.15.0"),
        ("op-plugin", OP_PLUGIN, "2.14.1", "2.15.0"),
        ("xpu", XPU, "2.5.0", "2.6.0"),
        ("xla", "pytorch-xla.xla_native_functions.yaml.xz", "2.14.1", "2.15.0"),
    ]
    for kind, name, before, after in lists:
        lacking = [
            {o.name for o in _coverage_of(kind, name, v, release_file, tmp_path)[1].ops if not o.covered}
            for v in (before, after)
        ]
        new = lacking[1] - lacking[0]
        assert new and not new & _release_names(before), kind
        assert new <= _release_names(after) - _release_names(before), kind


@pytest.mark.parametrize(
    ("kind", "name", "version", "extra", "where", "said"),
    [
        # A TorchScript built-in is stale, at its record's line (the text folds those to a count line;
        # the JSON names each).
        ("torch-mlir", TORCH_MLIR, "2.15.0", (), "Generated op for `aten::add.t :", "stale: add.t"),
        # op-plugin's rrelu_with_noise predates upstream's Tensor(b!) noise.
        (
            "op-plugin",
            OP_PLUGIN,
            "2.15.0",
            ("--torch-version", "2.15"),
            "- func: rrelu_with_noise(",
            "{at}: you implement rrelu_with_noise, whose schema differs from upstream's; upstream's"
            " schema dates from 2.6.0 (callers: BC-breaking; your int64_t kernel's C++ signature changed)",
        ),
        ("xpu", XPU, "2.6.0", (), "- cholesky", ""),
    ],
)
@pytest.mark.slow
def test_opdrift_coverage_on_a_real_list(
    kind: BackendKind,
    name: str,
    version: str,
    extra: tuple[str, ...],
    where: str,
    said: str,
    opdrift: Opdrift,
    release_file: Callable[[str], Path],
    tmp_path: Path,
) -> None:
    """The CLI as a backend's maintainer runs it: exit 0, nothing on stderr, the numbers of the
    in-process coverage, and what it says of one op, with the line of the file that lists it."""
    path = _real(name, tmp_path)
    source = str(release_file(version))
    run = opdrift("coverage", "--backend", f"{kind}={path}", *extra, source)
    # the old XPU yaml says, in one line, that XPU now lives upstream (`XPU_MOVED`)
    moved = f"opdrift: warning: {XPU_MOVED.format(path=path)}\n" if kind == "xpu" else ""
    assert run.code == 0 and run.err == moved, run.err
    # the list by its file's name, never the machine's path to it
    assert run.out.splitlines()[0].startswith(f"{kind} {Path(path).name} against {source}")
    assert path not in run.out
    _, cov = _coverage_of(kind, name, version, release_file, tmp_path)
    covered = len(cov.covered)
    # torch-mlir lowers ops; what a backend with a boxed CPU fallback lacks runs on CPU when PyTorch
    # has a CPU kernel for it, else it fails on the device (then the headline counts both)
    gap = "need a lowering" if kind == "torch-mlir" else "need a kernel"
    said_gap = f"covered {covered} of {len(cov.ops)} operators; {len(cov.uncovered)} "
    assert f"{said_gap}{gap}" in run.out or f"{said_gap}fall back to CPU" in run.out
    lines = [k for k, line in enumerate(_real_text(name).splitlines(), start=1) if where in line]
    as_json = json.loads(
        opdrift("coverage", "--backend", f"{kind}={path}", *extra, "--format", "json", source).out
    )
    (report,) = as_json["backends"]
    if said.startswith("stale: "):
        (line,) = lines
        stale = {"name": said.removeprefix("stale: "), "path": path, "line": line, "last_registered": None}
        assert stale in report["stale"]
        assert "  listed, but never a native function: " in run.out
    elif said:
        (line,) = lines
        assert said.format(at=f"{Path(path).name}:{line}") in run.out
    else:
        assert lines == []  # the XPU list lacks it, and the report says it needs a kernel
    assert (report["covered"], len(report["stale"]), len(report["schema_alerts"])) == (
        covered,
        len(cov.stale),
        len(cov.alerts),
    )
    if not said:
        assert "cholesky" in {u["name"] for u in report["uncovered"]}


@pytest.mark.slow
def test_opdrift_says_the_real_op_plugin_gates_went_unchecked_without_a_torch_version(
    opdrift: Opdrift, release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    doc = yaml.safe_load(_real_text(OP_PLUGIN))
    gated = sum(
        any(g in entry for g in ("acl_op", "op_api", "sparse"))
        for key in ("official", "quant", "autograd")
        for entry in doc[key]
    )
    assert gated == 1067
    run = opdrift(
        "coverage", "--backend", f"op-plugin={_real(OP_PLUGIN, tmp_path)}", str(release_file("2.15.0"))
    )
    assert run.code == 0
    assert f"the version gates of {gated} op-plugin entries were not checked" in run.err


# --- each backend's kernel form; a schema comment tied to its function; since when ----------------------


@pytest.mark.slow
def test_op_plugin_kernel_breaking_alerts_are_exactly_the_rrelu_with_noise_family(
    op_plugin_real: tuple[str, BackendList, Coverage],
) -> None:
    """torchnpugen declares an op's kernel in the SymInt form only when its name is in the file's
    `symint:` section (gen.py's SYMINT_SET), so `convolution`, `bincount` and `channel_shuffle` are
    int64_t kernels, which still build after upstream's int → SymInt widenings. What breaks them:
    rrelu_with_noise's `Tensor noise` → `Tensor(b!) noise` (a `const Tensor &` that became
    `Tensor &`). Not the two ops that joined a structured group in 2.14.0 with their schemas unchanged,
    whose `Tensor[]` scales became `const at::ITensorListRef &` while op-plugin's entries still bind
    them outside one (no `structured_delegate:`): Ascend/op-plugin 49c8366e and f2d45694 changed their
    kernels by hand and force that binding in torchnpugen/context.py, and this list (b8d8c479)
    registers v2.15, so it is later than both (`test_op_plugins_forced_binding_is_known_from_the_
    commits_that_added_it`)."""
    _, backend, cov = op_plugin_real
    doc = yaml.safe_load(_real_text(OP_PLUGIN))
    symint = {entry["func"].split("(")[0] for entry in doc["symint"]}
    for op in backend.ops:
        assert op.kernel_form == ("SymInt" if op.name in symint else "int64_t"), op.name
    assert {"embedding", "zeros"} <= {op.name for op in backend.ops if op.kernel_form == "SymInt"}
    alerts = {a.name: a for a in cov.alerts}
    breaking = {a.name for a in cov.alerts if a.kernel == "breaking"}
    rrelu = {"rrelu_with_noise", "rrelu_with_noise.out", "rrelu_with_noise_"}
    assert breaking == rrelu
    for name in breaking:
        changed = {(k.form, part) for k in alerts[name].kernel_changes for part in k.differences()}
        parts = [("parameter 2", "const at::Tensor &", "at::Tensor &")]
        assert changed == {(f, part) for f in ("SymInt", "int64_t") for part in parts}, name
    for name in ("convolution", "bincount", "channel_shuffle"):
        alert = alerts[name]
        assert (alert.kernel, alert.form) == ("symint", "int64_t"), name
        assert [k.form for k in alert.kernel_changes] == ["SymInt"]


@pytest.mark.parametrize(
    ("release", "commit", "breaking"),
    [
        # the list before 49c8366e: both entries bound outside a structured group, as Ascend's C++ was
        ("before-49c8366e", "", {"_scaled_mm_v2", "_scaled_grouped_mm_v2"}),
        # 49c8366e forced the binding of `_scaled_mm_v2` (and registered v2.14); `_scaled_grouped_mm_v2`
        # still broke torch_npu's 2.14 build until f2d45694
        ("49c8366e", "49c8366e", {"_scaled_grouped_mm_v2"}),
        # b8d8c479 (2026-08-21) registers v2.15: later than f2d45694 too
        ("b8d8c479", "", set()),
    ],
)
def test_op_plugins_forced_binding_is_known_from_the_commits_that_added_it(
    release: str, commit: str, breaking: set[str], release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """torchnpugen/context.py binds `_scaled_mm_v2`'s and `_scaled_grouped_mm_v2`'s `Tensor[]` as
    `const at::ITensorListRef &` from a list of its own, whatever op_plugin_functions.yaml says (it does
    not mark them structured), and the kernels written so build against 2.14's structured binding and
    2.13's plain one alike. Each real list, judged against 2.14.1 and 2.15.0 (whose `_scaled_mm_v2` has
    `structured_delegate: _scaled_mm_v2.out`), breaks on exactly the ops whose forced binding it is
    older than; against 2.13.0 none breaks."""
    import tarfile

    from opdrift.coverage.yaml_lists import FORCED_ILISTREF

    if release == "b8d8c479":
        path = _real(OP_PLUGIN, tmp_path)
    else:
        with tarfile.open(REAL / "op-plugin.gates.tar.xz") as tar:
            tar.extractall(tmp_path, filter="data")
        path = str(tmp_path / "op-plugin-gates" / f"{release}.yaml")
    scaled = {"_scaled_mm_v2", "_scaled_grouped_mm_v2"}
    assert {f.base for f in FORCED_ILISTREF} == scaled
    assert {f.base for f in FORCED_ILISTREF if f.commit == commit} <= scaled - breaking
    for version, broken in (("2.13.0", set()), ("2.14.1", breaking), ("2.15.0", breaking)):
        snap = pipeline.load_snapshot(str(release_file(version)))
        backend = read_backend("op-plugin", path, torch_version=version)
        alerts = {a.name: a for a in compute_coverage(snap, backend).alerts if a.name in scaled}
        assert {n for n, a in alerts.items() if a.kernel == "breaking"} == broken, version
        for name in broken:
            parts = {part for k in alerts[name].kernel_changes for part in k.differences()}
            assert parts == {
                (f"parameter {i}", "at::TensorList", "const at::ITensorListRef &") for i in (3, 6)
            }


def test_dlprim_kernels_are_judged_in_their_own_form_and_by_the_function_registered(
    dlprim_src: Path, release_file: Callable[[str], Path]
) -> None:
    """dlprim's `clamp.out` registers `clamp_out`, whose comment (pointwise_ops.cpp:1274) matches
    upstream; the comment naming `clamp.out` at 1298 sits above `clamp_min_out` and says nothing of
    it. Its kernels take int64_t / IntArrayRef (nll_loss_forward_out's `int64_t ignore_index`), so
    upstream's SymInt widenings break none of them; the few written with SymIntArrayRef are SymInt."""
    backend = read_backend("cpp", str(dlprim_src))
    ops = {op.name: op for op in backend.ops}
    source = (dlprim_src / "pointwise_ops.cpp").read_text().splitlines()
    assert source[1274 - 1].strip().startswith('// {"schema": "aten::clamp.out(Tensor self, Scalar? min=None')
    assert source[1275 - 1].strip().startswith("Tensor & clamp_out(")
    assert (
        ops["clamp.out"].schema
        == "clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)"
    )
    assert ops["clamp.out"].kernel_form == "int64_t"
    assert ops["native_layer_norm"].kernel_form == "SymInt"  # c10::SymIntArrayRef normalized_shape
    assert ops["nll_loss_forward.output"].kernel_form == "int64_t"
    cov = compute_coverage(pipeline.load_snapshot(str(release_file("2.15.0"))), backend)
    assert not [a.name for a in cov.alerts if a.kernel == "breaking"]
    assert "clamp.out" not in {a.name for a in cov.alerts}
    assert {a.name: (a.kernel, a.form) for a in cov.alerts} == {
        "nll_loss_forward.output": ("symint", "int64_t"),
        "nll_loss_backward.grad_input": ("symint", "int64_t"),
        "convolution_backward_overrideable": ("symint", "int64_t"),
    }


def test_an_alert_says_since_which_release_upstreams_schema_holds(
    op_plugin_real: tuple[str, BackendList, Coverage],
) -> None:
    """convolution's strides became SymInt[] in 2.2.0 (2.1.0 still had int[] stride); rrelu_with_noise
    took `Tensor(b!) noise` in 2.6.0. Checked against the vendored release files themselves."""
    version, _, cov = op_plugin_real
    alerts = {a.name: a for a in cov.alerts}
    for name, since, before in (("convolution", "2.2.0", "2.1.0"), ("rrelu_with_noise", "2.6.0", "2.5.0")):
        assert alerts[name].upstream_since == since
        head = f"- func: {alerts[name].upstream_schema}\n"
        assert head in release_text(since) and head in release_text(version)
        assert head not in release_text(before)


def test_an_alert_says_whether_upstream_added_the_op_or_changed_its_schema(
    op_plugin_real: tuple[str, BackendList, Coverage],
) -> None:
    """`upstream_since` is the first release of the latest run of upstream's schema and binding; an op
    that came in that release was added, not changed (op-plugin's `addmm.dtype` 2.8.0,
    `_scaled_grouped_mm` 2.7.0); `_scaled_mm_v2` came in 2.10.0, but its run starts at 2.14.0, where it
    joined a structured group with its schema unchanged ("rebound"); a run from the table's first
    release says only "or earlier"."""
    from opdrift.render.coverage import since_words

    _, _, cov = op_plugin_real
    alerts = {a.name: a for a in cov.alerts}
    expected = {
        "addmm.dtype": ("2.8.0", "added", "added upstream in 2.8.0"),
        "_scaled_mm_v2": (
            "2.14.0",
            "rebound",
            "upstream's kernel binding dates from 2.14.0, its schema from before",
        ),
        "_scaled_grouped_mm": ("2.7.0", "added", "added upstream in 2.7.0"),
        "convolution": ("2.2.0", "changed", "upstream's schema dates from 2.2.0"),
        "linalg_qr": ("1.12.0", "earliest", "upstream's schema unchanged since 1.12.0 or earlier"),
    }
    for name, (since, event, words) in expected.items():
        a = alerts[name]
        assert (a.upstream_since, a.upstream_event, str(since_words(a))) == (since, event, words), name
        earlier = [v for v in RELEASES if _vkey(v) < _vkey(since)]
        if event == "added":  # no earlier release had the op at all
            assert not any(f"- func: {name}(" in release_text(v) for v in earlier), name
        elif event == "changed":  # the release before had the op, with another schema
            assert f"- func: {name}(" in release_text(earlier[-1]), name
            assert f"- func: {a.upstream_schema}\n" not in release_text(earlier[-1]), name
        elif event == "rebound":  # the release before had the same schema (2.13.0, before 2.14.0)
            assert f"- func: {a.upstream_schema}\n" in release_text(earlier[-1]), name
    doc = json.loads(json.dumps(coverage_json(cov)))
    events = {x["name"]: (x["upstream_since"], x["upstream_since_event"]) for x in doc["schema_alerts"]}
    assert {name: events[name] for name in expected} == {n: (s, e) for n, (s, e, _) in expected.items()}


@pytest.mark.slow
def test_the_shipped_schema_table_is_what_its_script_makes_of_the_vendored_releases(
    release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """scripts/schema_table.py fed the release yamls by path regenerates bot/coverage/data/schemas.tsv.xz,
    2.14.0 included (tests/data/extra_releases, from its wheel): a table without it dated 2.14.0's
    changes 2.14.1 and gave a 2.14.0 snapshot's alerts no date."""
    from datafiles import RELEASES

    out = tmp_path / "schemas.tsv.xz"
    script = Path(__file__).parents[2] / "scripts" / "schema_table.py"
    extra = tmp_path / "2.14.0"
    extra.mkdir()
    for packed in (Path(__file__).parents[1] / "data" / "extra_releases" / "2.14.0").glob("*.xz"):
        (extra / packed.stem).write_bytes(lzma.decompress(packed.read_bytes()))
    dirs = [str(release_file(v).parent) for v in RELEASES] + [str(extra / "native_functions.yaml")]
    subprocess.run([sys.executable, str(script), *dirs, "-o", str(out)], check=True, capture_output=True)
    shipped = Path(__file__).parents[2] / "bot" / "coverage" / "data" / "schemas.tsv.xz"
    assert lzma.decompress(out.read_bytes()) == lzma.decompress(shipped.read_bytes())
    assert "release\t2.14.0\n" in lzma.decompress(shipped.read_bytes()).decode()


@pytest.mark.slow
def test_the_shipped_structured_table_is_what_its_script_makes_of_the_vendored_releases(
    release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """scripts/structured_table.py fed the release yamls by path (in no order) regenerates
    bot/coverage/data/structured.tsv.xz, which holds the .0 releases and 2.14.1."""
    out = tmp_path / "structured.tsv.xz"
    script = Path(__file__).parents[2] / "scripts" / "structured_table.py"
    dirs = [str(release_file(v).parent) for v in reversed(RELEASES)]
    subprocess.run([sys.executable, str(script), *dirs, "-o", str(out)], check=True, capture_output=True)
    shipped = Path(__file__).parents[2] / "bot" / "coverage" / "data" / "structured.tsv.xz"
    assert lzma.decompress(out.read_bytes()) == lzma.decompress(shipped.read_bytes())


def test_the_table_scripts_refuse_a_release_given_twice(release_file: Callable[[str], Path]) -> None:
    script = Path(__file__).parents[2] / "scripts" / "schema_table.py"
    path = str(release_file("2.14.1"))
    done = subprocess.run(
        [sys.executable, str(script), path, str(Path(path).parent), "-o", "/nonexistent/x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and done.stderr == "a release given twice: ['2.14.1', '2.14.1']\n"


def test_an_alert_on_a_change_of_2_14_0_dates_it_2_14_0(
    release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """2.14.0 changed `_cdist_backward`'s schema (and 2.14.1 kept it): an alert dates it 2.14.0, not
    2.14.1, and a 2.14.0 snapshot's alert gets that date too."""
    from opdrift.coverage.schema_history import Since, schema_since

    upstream = next(
        line.removeprefix("- func: ")
        for line in release_text("2.14.1").splitlines()
        if line.startswith("- func: _cdist_backward(")
    )
    assert upstream not in release_text("2.13.0")
    assert schema_since("_cdist_backward", upstream) == Since("2.14.0", "changed")
    assert schema_since("_cdist_backward", upstream, "2.14.0") == Since("2.14.0", "changed")
    assert schema_since("_cdist_backward", upstream, "2.14.0a0") is None  # before 2.14.0: no release had it


@pytest.mark.parametrize(
    ("base", "head", "broken", "still_build"),
    [
        # Tensor noise → Tensor(b!) noise: both forms change (const Tensor & → Tensor &).
        ("2.5.0", "2.6.0", {"rrelu_with_noise", "rrelu_with_noise.out", "rrelu_with_noise_"}, set()),
        # int → SymInt widenings: the SymInt kernels of op-plugin's `symint:` section break
        # (repeat_interleave), its int64_t ones (convolution, channel_shuffle) still build; _scaled_mm
        # gained `Tensor? scale_result` and `bool use_fast_accum`, which every form's signature takes.
        (
            "2.1.0",
            "2.2.0",
            {
                "_scaled_mm",
                "repeat_interleave.self_int",
                "repeat_interleave.self_Tensor",
                "repeat_interleave.Tensor",
            },
            {"convolution", "channel_shuffle", "_convolution"},
        ),
    ],
)
@pytest.mark.slow
def test_a_backend_subscription_mentions_its_subscriber_when_a_kernel_it_implements_breaks(
    release_file: Callable[[str], Path],
    tmp_path: Path,
    base: str,
    head: str,
    broken: set[str],
    still_build: set[str],
) -> None:
    from opdrift.app.prepare import backend_work
    from opdrift.app.subscriptions import backend_gaps, mentions_for
    from opdrift.config.file import parse_config
    from opdrift.drift.changes import compute_drift

    path = _real(OP_PLUGIN, tmp_path)
    config = parse_config(
        f'subscriptions:\n  - who: ["@ascend"]\n    backend: {{kind: op-plugin, path: "{path}"}}\n',
        "opdrift.yml",
    )
    before = pipeline.load_snapshot(str(release_file(base)))
    after = pipeline.load_snapshot(str(release_file(head)))
    changes = compute_drift(before, after).changes
    lacking, implemented = backend_work(config, after)
    # what it lacks alone would not name the kernels it implements
    assert not {g for gap in backend_gaps(config, changes, lacking) for g in gap.broken}
    assert mentions_for(config, changes, lacking, implemented) == ("@ascend",)
    (gap,) = backend_gaps(config, changes, lacking, implemented)
    assert set(gap.broken_names) == broken and not still_build & set(gap.broken_names)
    assert not set(gap.broken_names) & set(gap.ops)
    changed = {c.name for c in changes if c.kernel_changes}
    assert still_build <= changed  # they did change, in the SymInt form only


def _subscribed(kind: BackendKind, name: str, tmp_path: Path) -> BotConfig:
    path = _real(name, tmp_path)
    return parse_config(
        f'subscriptions:\n  - who: ["@{kind}"]\n    backend: {{kind: {kind}, path: "{path}"}}\n',
        "opdrift.yml",
    )


@pytest.mark.slow
def test_a_coverage_alert_before_1_13_keeps_the_written_form_and_says_why_it_is_judged_in_symint(
    tmp_path: Path, dlprim_src: Path, opdrift: Opdrift, request: pytest.FixtureRequest
) -> None:
    """dlprim's `mean.out` kernel takes int64_t; against 1.12.0, whose dispatcher accepted only the
    SymInt form, it is judged in that form, and the alert keeps `form` int64_t and says why."""
    # A checkout of v1.12.0: its version.txt names the release the kernels are built against.
    checkout = tmp_path / "pytorch"
    native = checkout / "aten" / "src" / "ATen" / "native"
    native.mkdir(parents=True)
    for name in ("native_functions.yaml", "tags.yaml"):
        (native / name).write_text(release_text("1.12.0", name))
    (checkout / "version.txt").write_text("1.12.0\n")
    source = str(checkout)
    snapshot = pipeline.load_snapshot(source)
    assert snapshot.meta.torch_version == "1.12.0"
    cov = compute_coverage(snapshot, read_backend("cpp", str(dlprim_src)))
    (alert,) = [a for a in cov.alerts if a.name == "mean.out"]
    assert (alert.kernel, alert.form, alert.judged_in) == ("breaking", "int64_t", "SymInt")
    run = opdrift("coverage", "--backend", f"cpp={dlprim_src}", source)
    (line,) = [x for x in run.out.splitlines() if ": you implement mean.out," in x]
    assert "your SymInt kernel" not in line
    # why it is judged in the SymInt form: the release that changed that (golden: the wording)
    why = line[line.rindex("(") :]
    assert "1.13" in why and "int64_t" in why and "SymInt" in why
    check_golden_entry(
        "coverage.lines.txt", "alert judged in SymInt before 1.13", line + "\n", updating(request)
    )
    doc = json.loads(opdrift("coverage", "--backend", f"cpp={dlprim_src}", source, "--format", "json").out)
    (entry,) = [a for a in doc["backends"][0]["schema_alerts"] if a["name"] == "mean.out"]
    assert (entry["form"], entry["judged_in"]) == ("int64_t", "SymInt")


def test_a_subscription_mentions_a_backend_whose_listed_op_upstream_removes(
    release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """2.14.0 removed `cholesky` and `qr`, which XLA's yaml still lists: torchgen's gen_backend_stubs
    refuses a name native_functions.yaml lacks ("Found an invalid operator name"), so XLA's build
    breaks, and its subscriber is mentioned with them apart. A dlprim-like C++ list is told apart:
    an `m.impl` of a name no schema defines still compiles, so its registration is dead, not broken."""
    from opdrift.app.prepare import backend_work
    from opdrift.app.subscriptions import backend_gaps, mentions_for
    from opdrift.drift.changes import compute_drift

    config = _subscribed("xla", "pytorch-xla.xla_native_functions.yaml.xz", tmp_path)
    before = pipeline.load_snapshot(str(release_file("2.13.0")))
    after = pipeline.load_snapshot(str(release_file("2.14.1")))
    changes = compute_drift(before, after).changes
    removed = [c for c in changes if c.kind == "removed" and c.name in ("cholesky", "qr")]
    assert len(removed) == 2
    lacking, implemented = backend_work(config, after)
    assert mentions_for(config, removed, lacking, implemented) == ("@xla",)
    (gap,) = backend_gaps(config, changes, lacking, implemented)
    assert (gap.removed, set(gap.broken_names) & {"cholesky", "qr"}) == (("cholesky", "qr"), set())
    cpp = tmp_path / "ops.cpp"
    cpp.write_text('TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n  m.impl("aten::qr", &qr);\n}\n')
    text = f'subscriptions:\n  - who: ["@c"]\n    backend: {{kind: cpp, path: "{cpp}"}}\n'
    cpp_config = parse_config(text, "opdrift.yml")
    lacking, implemented = backend_work(cpp_config, after)
    assert mentions_for(cpp_config, removed, lacking, implemented) == ("@c",)
    (cpp_gap,) = backend_gaps(cpp_config, removed, lacking, implemented)
    assert (cpp_gap.dead, cpp_gap.removed, cpp_gap.broken) == (("qr",), (), ())


def test_xla_and_xpu_kernel_forms_follow_their_yaml_symint_lists(tmp_path: Path) -> None:
    """torchgen's gen_backend_stubs gives an op of the yaml's `symint:` list a NAME_symint kernel in
    the SymInt form and every other op an int64_t one; Intel's list has no `symint:` key."""
    xla = read_backend("xla", _real("pytorch-xla.xla_native_functions.yaml.xz", tmp_path))
    symint = set(yaml.safe_load(_real_text("pytorch-xla.xla_native_functions.yaml.xz"))["symint"])
    assert {"view", "expand", "empty.memory_format"} <= symint
    for op in xla.ops:
        assert op.kernel_form == ("SymInt" if op.name in symint else "int64_t"), op.name
    xpu = read_backend("xpu", _real(XPU, tmp_path))
    assert "symint" not in yaml.safe_load(_real_text(XPU))
    assert {op.kernel_form for op in xpu.ops} == {"int64_t"}


@pytest.mark.parametrize(
    ("version", "verdict", "judged"), [("1.12.0", "breaking", "SymInt"), ("1.13.0", "symint", "int64_t")]
)
@pytest.mark.slow
def test_kernels_are_judged_in_their_own_form_from_the_release_whose_dispatcher_unpacks_symints(
    release_file: Callable[[str], Path], tmp_path: Path, version: str, verdict: str, judged: str
) -> None:
    """1.13.0's KernelFunction::call first calls an int64_t kernel for a SymInt schema (unpackSymInt);
    before it a kernel had to take its schema's own types, the SymInt form, so a snapshot of an
    earlier release judges every kernel in that form; `form` stays the one it is written in."""
    import dataclasses

    snapshot = pipeline.load_snapshot(str(release_file("2.15.0")))
    snapshot = dataclasses.replace(snapshot, meta=dataclasses.replace(snapshot.meta, torch_version=version))
    backend = read_backend("op-plugin", _real(OP_PLUGIN, tmp_path))
    (alert,) = [a for a in compute_coverage(snapshot, backend).alerts if a.name == "convolution"]
    assert (alert.kernel, alert.form, alert.judged_in) == (verdict, "int64_t", judged)
