"""What functional backends receive, registrations at other keys, and lists a backend keeps elsewhere,
on the real lists of tests/data/backends/real (SOURCES.md) and 2.15.0."""

from __future__ import annotations

import json
import lzma
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from clirun import Opdrift
from datafiles import DATA, RELEASES, has_release_file, release_text

from opdrift import pipeline
from opdrift.coverage.backends import merge_backends, read_backend
from opdrift.coverage.check import SHARED_BACKWARDS, Coverage, compute_coverage
from opdrift.coverage.jsonform import coverage_json
from opdrift.coverage.oplist import BackendList
from opdrift.drift.needs import ProfileNeeds
from opdrift.model import Snapshot
from opdrift.operators.functionalize import Functionalization
from opdrift.operators.kernels import Profile

REAL = DATA / "backends" / "real"
XLA = "pytorch-xla.xla_native_functions.yaml.xz"
OP_PLUGIN = "op-plugin.op_plugin_functions.yaml.xz"
TORCH_NPU = "torch_npu.npu_native_functions.yaml.xz"
XPU = "torch-xpu-ops.xpu_functions.yaml.xz"

# Out= variants whose functional op is CompositeImplicitAutograd, and the backward kernels
# that XLA's `autograd:` registrations of native_layer_norm and native_group_norm bypass.
DECOMPOSED_FUNCTIONAL = (
    "adaptive_avg_pool2d.out",
    "adaptive_avg_pool3d.out",
    "conj_physical.out",
    "linalg_eigvals.out",
    "sspaddmm.out",
)
BYPASSED_BACKWARDS = ("native_layer_norm_backward", "native_group_norm_backward")
# What torch_npu registers in its own yaml, which op-plugin's list does not name.
TORCH_NPU_OWN = ("resize_", "isnan", "as_strided", "view", "empty.memory_format")


def _real(name: str, tmp: Path) -> str:
    path = tmp / name.removesuffix(".xz")
    path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
    return str(path)


@pytest.fixture(scope="module")
def snap_215(release_file: Callable[[str], Path]) -> Snapshot:
    return pipeline.load_snapshot(str(release_file("2.15.0")))


@pytest.fixture(scope="module")
def real_files(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    tmp = tmp_path_factory.mktemp("functional")
    return lambda name: _real(name, tmp)


@pytest.fixture(scope="module")
def xla(snap_215: Snapshot, real_files: Callable[[str], str]) -> Coverage:
    return compute_coverage(snap_215, read_backend("xla", real_files(XLA)))


def _by_name(cov: Coverage) -> dict[str, tuple[bool, str, str, str]]:
    return {o.name: (o.covered, o.rule, o.via, o.alternative) for o in cov.ops}


# --- what a functional backend receives -------------------------------------------------------------


def test_xla_needs_no_out_variant_whose_functional_op_decomposes(xla: Coverage) -> None:
    """Functionalization turns `adaptive_avg_pool2d.out` into `adaptive_avg_pool2d`, which is
    CompositeImplicitAutograd: the variant is no work for XLA."""
    ops = _by_name(xla)
    for name in DECOMPOSED_FUNCTIONAL:
        covered, rule, via, _ = ops[name]
        assert (covered, rule) == (True, "backend_codegen"), name
        assert ops[via][1] == "decomposes", (name, via)
    assert not {o.name for o in xla.uncovered} & set(DECOMPOSED_FUNCTIONAL)


def test_a_default_kernel_that_calls_its_variant_back_serves_a_functional_backend_only_with_it(
    xla: Coverage, snap_215: Snapshot, real_files: Callable[[str], str]
) -> None:
    """`complex`'s CompositeExplicitAutograd kernel returns `at::complex_out(...)`, `median.dim`'s calls
    `at::median_out`, and autogen's `cauchy` clones and calls `cauchy_`: at XLA's key the variant has no
    kernel, so XLA needs one of the pair. The functional op is the need, and names the other; the
    variant is functionalization's. An eager backend is unchanged: the default kernel serves it."""
    ops = _by_name(xla)
    for functional, variant in (
        ("complex", "complex.out"),
        ("median.dim", "median.dim_values"),
        ("cauchy", "cauchy_"),
    ):
        assert ops[functional] == (False, "needs_kernel", "", variant), functional
        assert ops[variant][:3] == (True, "backend_codegen", functional), variant
    # Listing the variant is enough: the default kernel then reaches a kernel of XLA's.
    extra = real_files(XLA).replace(".yaml", ".extra.txt")
    Path(extra).write_text("complex.out\n")
    both = merge_backends("XLA", [read_backend("xla", real_files(XLA)), read_backend("text", extra)])
    assert _by_name(compute_coverage(snap_215, both))["complex"] == (
        True,
        "default_kernel",
        "complex.out",
        "",
    )
    eager = _by_name(compute_coverage(snap_215, read_backend("xla", real_files(XLA)), "eager"))
    assert eager["complex"][:2] == (True, "default_kernel")
    doc = coverage_json(xla)
    uncovered = doc["uncovered"]
    assert isinstance(uncovered, list)
    assert {"name": "complex", "bucket": "complex", "alternative": "complex.out"} in uncovered


def test_the_callback_rule_finds_the_wrappers_and_not_the_self_contained_kernels(snap_215: Snapshot) -> None:
    """The structural rule (a CompositeExplicitAutograd functional op without device kernels beside a
    variant with CPU/CUDA kernels) against 2.15.0: the wrappers read in PyTorch's sources are found;
    `mvlgamma` (computes itself), `zeros` (its out= has sparse kernels only) and `digamma` (structured)
    are not, and `bernoulli` names the in-place op its kernel really calls."""
    f = Functionalization(snap_215.operators)
    found = {n: f.calls_back(r) for n, r in snap_215.operators.items() if f.calls_back(r) is not None}
    for name, variant in {
        "complex": "complex.out",
        "median.dim": "median.dim_values",
        "kthvalue": "kthvalue.values",
        "logical_and": "logical_and.out",
        "linspace": "linspace.out",
        "polar": "polar.out",
        "frexp.Tensor": "frexp.Tensor_out",
        "huber_loss_backward": "huber_loss_backward.out",
        "smooth_l1_loss_backward": "smooth_l1_loss_backward.grad_input",
        "cauchy": "cauchy_",
        "bernoulli": "bernoulli_.Tensor",
    }.items():
        assert found.get(name) == variant, name
    assert not {"mvlgamma", "zeros", "digamma", "adaptive_avg_pool2d"} & found.keys()


def test_a_variant_whose_functional_op_is_named_functional_joins_its_group(
    xla: Coverage, snap_215: Snapshot
) -> None:
    """torchgen's BaseOperatorName strips `_functional` as it strips an in-place `_` (Note [Overload
    Ambiguity With Functional Variants]): `rrelu_with_noise_` and `rrelu_with_noise.out` become
    `rrelu_with_noise_functional` under functionalization, which XLA lists, so they are no work."""
    f = Functionalization(snap_215.operators)
    for variant, functional in {
        "rrelu_with_noise_": "rrelu_with_noise_functional",
        "rrelu_with_noise.out": "rrelu_with_noise_functional",
        "_native_batch_norm_legit.out": "_native_batch_norm_legit_functional",
        "_batch_norm_with_update.out": "_batch_norm_with_update_functional",
        "normal_": "normal_functional",
        "normal.out": "normal_functional",
        "_fused_moving_avg_obs_fq_helper.out": "_fused_moving_avg_obs_fq_helper_functional",
    }.items():
        assert f.functional_of(snap_215.operators[variant]) == functional, variant
    needs = {o.name for o in xla.uncovered}
    assert not {"rrelu_with_noise_", "rrelu_with_noise.out", "_native_batch_norm_legit.out"} & needs


@pytest.mark.parametrize("profile", ["eager", "functional", "export"])
def test_coverage_of_an_empty_list_is_what_the_drift_says_the_profile_needs(
    snap_215: Snapshot, profile: Profile
) -> None:
    """One rule for both: a backend that lists nothing needs exactly the ops drift/needs.py flags for
    its profile (complex and the functional trio's functional op, never their variants)."""
    cov = compute_coverage(snap_215, BackendList("text", "none", ()), profile)
    needs = ProfileNeeds(snap_215.operators)
    flagged = {name for name, rec in snap_215.operators.items() if profile in needs(rec)}
    assert {o.name for o in cov.uncovered} == flagged
    if profile == "eager":
        # a structured group is one item, its out= op (1248 before delegators were no work of their own)
        assert len(flagged) == 861 and "add.out" in flagged and not {"add.Tensor", "add_.Tensor"} & flagged
    if profile == "functional":
        assert "complex" in flagged and "complex.out" not in flagged
        assert not set(DECOMPOSED_FUNCTIONAL) & flagged


# --- registrations at other keys, and fallbacks -----------------------------------------------------


def test_xla_autograd_registrations_bypass_their_backward_kernels(xla: Coverage) -> None:
    """XLA's `autograd:` list registers native_layer_norm and native_group_norm at AutogradXLA: their
    backward ops, which only their own derivative formulas call, are no work."""
    ops = _by_name(xla)
    assert ops["native_layer_norm"][:2] == ops["native_group_norm"][:2] == (True, "listed")
    for backward in BYPASSED_BACKWARDS:
        assert ops[backward][:3] == (True, "autograd_key", backward.removesuffix("_backward")), backward
    assert not {o.name for o in xla.uncovered} & set(BYPASSED_BACKWARDS)


@pytest.mark.parametrize("version", [v for v in RELEASES if has_release_file(v, "derivatives.yaml")])
@pytest.mark.slow
def test_shared_backwards_hold_every_backward_another_formula_calls(version: str) -> None:
    """An Autograd-key registration of F bypasses F_backward only when no other op's derivative formula
    calls it (F's in-place twin counts as another op: a registration of F does not cover it)."""
    entries = yaml.safe_load(release_text(version, "derivatives.yaml"))
    # Formulas also call FunctionsManual helpers (as_strided_backward): only operators count.
    operators = set(re.findall(r"^- func: (\w+)[.(]", release_text(version), re.MULTILINE))
    with_formula = {e["name"].split("(")[0].split(".")[0] for e in entries}
    callers: dict[str, set[str]] = {}
    for e in entries:
        name = e["name"].split("(")[0].split(".")[0]
        body = json.dumps({k: v for k, v in e.items() if k != "name"})
        for m in re.finditer(r"\b(\w+_backward)(?:_symint)?\(", body):
            callers.setdefault(m.group(1), set()).add(name)
    shared = {
        backward
        for backward, by in callers.items()
        if backward in operators
        and backward.removesuffix("_backward") in with_formula
        and by - {backward, backward.removesuffix("_backward")}
    }
    assert shared <= SHARED_BACKWARDS, sorted(shared - SHARED_BACKWARDS)
    if version == "2.15.0":
        assert not set(BYPASSED_BACKWARDS) & shared


def test_dlprim_relu_registered_at_its_autograd_key_is_covered(dlprim_src: Path, snap_215: Snapshot) -> None:
    """pytorch_dlprim registers `relu` only at AutogradPrivateUse1 (pointwise_ops.cpp), with a
    torch::autograd::Function whose forward runs dlprim's activation: covered. A Meta key alone is not."""
    backend = read_backend("cpp", str(dlprim_src))
    (relu,) = [op for op in backend.ops if op.name == "relu"]
    assert relu.dispatch_key == "AutogradPrivateUse1"
    assert _by_name(compute_coverage(snap_215, backend))["relu"][:2] == (True, "listed")


@pytest.mark.slow
def test_a_boxed_cpu_fallback_words_the_gap_as_falling_back(
    xla: Coverage,
    dlprim_src: Path,
    opdrift: Opdrift,
    release_file: Callable[[str], Path],
    real_files: Callable[[str], str],
) -> None:
    """XLA (torch_xla/csrc/aten_fallback.cpp) and pytorch_dlprim (`m.fallback` in tensor_ops.cpp) run
    what they lack on the CPU: the outputs say so; a list without a fallback still needs kernels."""
    assert xla.fallback is not None and "aten_fallback.cpp" in xla.fallback
    assert coverage_json(xla)["uncovered_run"] == "falls_back_to_cpu"
    source = str(release_file("2.15.0"))
    text = opdrift("coverage", "--backend", f"xla={real_files(XLA)}", source)
    assert text.code == 0, text.err
    # the fallback runs an op on CPU only where PyTorch has a CPU kernel: the rest fails on the device
    said = re.search(
        r"(\d+) need a kernel \((\d+) run on CPU meanwhile: the boxed fallback at .*; (\d+) fail on", text.out
    )
    assert said is not None and int(said[1]) == int(said[2]) + int(said[3]) and int(said[3]) > 0
    assert "\n  work items: need a kernel (" in text.out
    md = opdrift("coverage", "--backend", f"cpp={dlprim_src}", "--format", "markdown", source)
    assert "### Work items: operators that need a kernel (" in md.out and "tensor\\_ops.cpp:440" in md.out
    assert "runs 553 of them on CPU; **184** fail on your device" in md.out
    # torch_npu registers npu_cpu_fallback for every operator (the kind table's fallback column)
    npu = opdrift("coverage", "--backend", f"op-plugin={real_files(OP_PLUGIN)}", "--format", "json", source)
    assert json.loads(npu.out)["backends"][0]["uncovered_run"] == "falls_back_to_cpu"
    plain = opdrift("coverage", "--backend", f"xpu={real_files(XPU)}", "--format", "json", source)
    assert json.loads(plain.out)["backends"][0]["uncovered_run"] == "fails"


# --- torch_npu's own list ---------------------------------------------------------------------------


def test_torch_npu_yaml_reads_its_aten_lists_and_not_its_custom_ops(real_files: Callable[[str], str]) -> None:
    """Expected names by yaml.safe_load of the vendored file: `supported:` and `symint:` entries, plain
    or `- func: NAME` with settings; `custom:` holds torch_npu's own operators."""
    path = real_files(TORCH_NPU)
    doc = yaml.safe_load(Path(path).read_text())
    expected = [e["func"] if isinstance(e, dict) else e for key in ("supported", "symint") for e in doc[key]]
    backend = read_backend("torch-npu", path)
    assert [op.name for op in backend.ops] == expected
    assert set(TORCH_NPU_OWN) <= backend.names and "npu_format_cast" not in backend.names
    assert {op.origin for op in backend.ops} == {"supported", "symint"}


def test_op_plugin_and_torch_npu_combined_no_longer_need_what_torch_npu_registers(
    snap_215: Snapshot,
    real_files: Callable[[str], str],
    opdrift: Opdrift,
    release_file: Callable[[str], Path],
) -> None:
    op_plugin = read_backend("op-plugin", real_files(OP_PLUGIN), torch_version="2.15")
    alone = {o.name for o in compute_coverage(snap_215, op_plugin).uncovered}
    assert set(TORCH_NPU_OWN) <= alone, "op-plugin's list alone lacks them"
    npu = merge_backends("NPU", [op_plugin, read_backend("torch-npu", real_files(TORCH_NPU))])
    both = compute_coverage(snap_215, npu)
    assert both.profile == "eager"
    assert not set(TORCH_NPU_OWN) & {o.name for o in both.uncovered}
    run = opdrift(
        "coverage",
        "--backend",
        f"NPU:op-plugin={real_files(OP_PLUGIN)}",
        "--backend",
        f"NPU:torch-npu={real_files(TORCH_NPU)}",
        "--torch-version",
        "2.15",
        "--format",
        "json",
        str(release_file("2.15.0")),
    )
    assert run.code == 0, run.err
    names = {o["name"] for o in json.loads(run.out)["backends"][0]["uncovered"]}
    assert not set(TORCH_NPU_OWN) & names


def test_the_markdown_report_reads_right_for_named_real_backends(
    real_files: Callable[[str], str], opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    """What the maintainer reads: the heading leads with the NAME given; the work-item heading's count
    adds up to the summary's; the alerts that break nothing the backend builds (op-plugin's yaml keeps
    old argument names) are one folded group after the kernel-breaking ones; an alternative that is
    also a member is named once."""
    run = opdrift(
        "coverage",
        "--backend",
        f"XLA:xla={real_files(XLA)}",
        "--backend",
        f"NPU:op-plugin={real_files(OP_PLUGIN)}",
        "--backend",
        f"NPU:torch-npu={real_files(TORCH_NPU)}",
        "--torch-version",
        "2.15",
        "--format",
        "markdown",
        str(release_file("2.15.0")),
    )
    assert run.code == 0, run.err
    xla, npu = run.out.split("\n## ")[0], run.out.split("\n## ")[1]
    assert xla.startswith("## Coverage of XLA (`xla`: `")
    assert npu.startswith("Coverage of NPU (`op-plugin`: `")
    for section in (xla, npu):
        items = re.search(r"\*\*(\d+)\*\* [^:]*: (\d+) work items", section)
        heading = re.search(r"### Work items: [^(]*\((\d+) here; (\d+) more only some backends need", section)
        assert items and heading, section[:400]
        assert int(heading[1]) + int(heading[2]) == int(items[2])
    assert "- `range.step` (factory), or `range.out`, which its default kernel calls\n" in xla
    assert "serves `range.out`" not in xla
    quiet = re.search(r"<details><summary>(\d+) more schema alerts break nothing you build", npu)
    assert quiet and int(quiet[1]) >= 67
    assert npu.index("### 🔧 Schema alerts") < quiet.start()
    assert npu.count("<details><summary>") == npu.count("</details>")
    assert "Schema alerts, caller-only" not in npu
