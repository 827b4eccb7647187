"""What really reaches each kind of backend, on the real lists of
tests/data/backends/real and the vendored releases, against what torch 2.13.0 did
(tests/data/observed/reach/, the script beside its output)."""

from __future__ import annotations

import json
import lzma
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA

from opdrift import pipeline
from opdrift.coverage.backends import read_backend
from opdrift.coverage.check import Coverage, compute_coverage
from opdrift.coverage.kinds import KIND_BY_ID
from opdrift.coverage.workitems import WorkItem, has_cpu_kernel, work_items
from opdrift.model import Snapshot
from opdrift.operators.exported import export_fate
from opdrift.operators.functionalize import Functionalization
from opdrift.render.rank import work_item_rank_key
from opdrift.work.engine import Backend, Engine, export_path_for

REAL = DATA / "backends" / "real"
OBSERVED = json.loads((DATA / "observed" / "reach" / "reach-2.13.0.json").read_text(encoding="utf-8"))


def _real(name: str, tmp: Path) -> str:
    path = tmp / name.removesuffix(".xz")
    path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
    return str(path)


@pytest.fixture(scope="module")
def snap_213(release_file: Callable[[str], Path]) -> Snapshot:
    return pipeline.load_snapshot(str(release_file("2.13.0")))


@pytest.fixture(scope="module")
def snap_2141() -> Snapshot:
    return pipeline.load_snapshot(str(Path(__file__).parents[3] / "snapshots" / "v2.14.1.json"))


@pytest.fixture(scope="module")
def real_files(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    tmp = tmp_path_factory.mktemp("reach")
    return lambda name: _real(name, tmp)


@pytest.fixture(scope="module")
def xla_2141(snap_2141: Snapshot, real_files: Callable[[str], str]) -> Coverage:
    return compute_coverage(
        snap_2141, read_backend("xla", real_files("pytorch-xla.xla_native_functions.yaml.xz"))
    )


def _ranked(cov: Coverage, snap: Snapshot) -> list[WorkItem]:
    return sorted(work_items(cov, snap), key=work_item_rank_key)


# --- 1. a view op reaches a functional backend only as its *_copy -----------------------------------


def test_each_observed_view_becomes_the_copy_the_engine_names(snap_213: Snapshot) -> None:
    """torch 2.13.0's functionalization (views removed) turned each view op into one `*_copy` op; the
    engine's functional profile says that view is that copy's work (CompositeImplicitAutograd views,
    which decompose first, aside: `chunk` became `split_copy.Tensor` through `split.Tensor`)."""
    records = snap_213.operators
    engine = Engine(records, Backend("functional"), version="2.13.0")
    checked = 0
    for view, seen in OBSERVED["functionalized_views"].items():
        copies = [n for n in seen["functionalized"] if n != "mul.Tensor"]
        assert len(copies) == 1, (view, seen)
        verdict = engine.judge(records[view])
        if verdict.rule == "decomposes":
            continue
        assert (verdict.covered, verdict.rule, verdict.via) == (True, "backend_codegen", copies[0]), view
        checked += 1
    assert checked >= 20


def test_xla_needs_no_view_it_has_the_copy_of_and_the_copy_ranks_as_the_view(
    xla_2141: Coverage, snap_2141: Snapshot
) -> None:
    """XLA lists `view_as_real_copy` and `view_as_complex_copy`: `view_as_real` and `view_as_complex`
    are no work. `unfold_copy`, which XLA lacks, serves `unfold` and takes the rank `unfold` had
    (the decomposition in-degree of its best member), instead of #190."""
    needed = {o.name for o in xla_2141.uncovered}
    assert not {"view_as_real", "view_as_complex", "unfold", "view.dtype"} & needed
    by_name = {o.name: o for o in xla_2141.ops}
    assert (by_name["view_as_real"].rule, by_name["view_as_real"].via) == (
        "backend_codegen",
        "view_as_real_copy",
    )
    ranked = _ranked(xla_2141, snap_2141)
    names = [i.name for i in ranked]
    item = ranked[names.index("unfold_copy")]
    assert item.members == ("unfold",)
    assert names.index("unfold_copy") < 20
    # every view op XLA still needs has no copy a functionalized graph would call instead
    fz = Functionalization(snap_2141.operators)
    assert not [n for n in needed if fz.view_copy_of(snap_2141.operators[n])]


# --- 2. "write this op, or X": X is what the default kernel calls -------------------------------------


def test_the_alternative_is_what_the_default_kernel_was_observed_to_call(snap_213: Snapshot) -> None:
    fz = Functionalization(snap_213.operators)
    for op, seen in OBSERVED["default_kernel_calls"].items():
        called = [c for c in seen["calls"] if c["base"] not in ("clone", "empty")]
        assert len(called) == 1 and len(called[0]["overloads"]) == 1, (op, seen)
        assert fz.calls_back(snap_213.operators[op]) == called[0]["overloads"][0], op


def test_xla_needs_no_batch_norm_functional_op_whose_callee_it_lists(xla_2141: Coverage) -> None:
    """XLA lists `_native_batch_norm_legit`, which `_native_batch_norm_legit_functional`'s default
    kernel calls; `_batch_norm_with_update_functional` still needs XLA to write it or
    `_batch_norm_with_update` (not its .out)."""
    by_name = {o.name: o for o in xla_2141.ops}
    legit = by_name["_native_batch_norm_legit_functional"]
    assert (legit.covered, legit.rule, legit.via) == (True, "default_kernel", "_native_batch_norm_legit")
    update = by_name["_batch_norm_with_update_functional"]
    assert (update.covered, update.alternative) == (False, "_batch_norm_with_update")
    assert by_name["rrelu_with_noise_functional"].alternative == "rrelu_with_noise_"


# --- 3. metadata ops never reach an exported graph -----------------------------------------------------


def test_metadata_ops_are_answered_while_tracing_as_observed(snap_213: Snapshot) -> None:
    """Every metadata operator whose export was observed: gone from every graph torch-mlir's table
    left (static, one and two dynamic dimensions) is `evaluated`; one still there reaches."""
    records = snap_213.operators
    path = export_path_for("2.13.0")
    reached: set[str] = set()
    answered: set[str] = set()
    for op, rows in OBSERVED["export_metadata"].items():
        graphs = [row["torch_mlir"] for row in rows.values() if "torch_mlir" in row]
        if not graphs:
            continue  # a quantized or sparse op that does not export on dense tensors
        (reached if any(op in g for g in graphs) else answered).add(op)
        assert (export_fate(records[op], path) == "evaluated") == (op in answered), op
    assert reached == {"sym_size.int", "_local_scalar_dense"}
    assert {"sym_is_contiguous", "sym_stride.int", "stride.int", "_version", "output_nr"} <= answered


def test_torch_mlirs_work_items_hold_no_metadata_op(snap_2141: Snapshot, tmp_path: Path) -> None:
    with tarfile.open(REAL / "torch-mlir.checkout.tar.xz") as tar:
        tar.extractall(tmp_path, filter="data")
    cov = compute_coverage(snap_2141, read_backend("torch-mlir", str(tmp_path)))
    top = [i.name for i in _ranked(cov, snap_2141)[:40]]
    assert not {"sym_is_contiguous", "sym_stride.int", "stride.int"} & set(top)
    needed = {o.name for o in cov.uncovered}
    assert not {"dense_dim", "get_device", "output_nr", "_version", "q_scale", "sparse_dim"} & needed
    assert "_local_scalar_dense" in needed


# --- 4. eager: what an op without a kernel does today --------------------------------------------------


def test_the_cpu_kernels_derived_from_the_yaml_are_the_dispatchers(snap_213: Snapshot) -> None:
    """By the dispatcher's rules over each entry's dispatch table (own, structured delegate's, or a
    composite one serving CPU), the 2.13.0 operators without a CPU kernel are exactly those torch
    2.13.0's dispatcher computed none for."""
    observed = OBSERVED["cpu_kernels"]
    assert observed["operators"] >= len(snap_213.operators)
    derived = {n for n, rec in snap_213.operators.items() if not has_cpu_kernel(rec)}
    assert derived == set(observed["without_cpu_kernel"]) & set(snap_213.operators)
    assert "_thnn_fused_lstm_cell" in derived and len(derived) > 150


@pytest.fixture(scope="module")
def dlprim_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("dlprim")
    with tarfile.open(REAL / "pytorch_dlprim.src.tar.xz") as tar:
        tar.extractall(tmp, filter="data")
    return tmp / "src"


def test_what_fails_on_an_eager_device_today_ranks_first(dlprim_tree: Path, snap_2141: Snapshot) -> None:
    """pytorch_dlprim's boxed fallback runs on CPU only what has a CPU kernel: `_thnn_fused_lstm_cell`
    (CUDA and XPU kernels only), which PyTorch's RNN code calls for a PrivateUse1 tensor, fails, and
    ranks among the first items, not at #693: the corpus's LSTM models dispatch it on such a device. The
    items real models use lead (tests/unit/coverage/test_model_rank.py); among the rest, what fails comes first."""
    cov = compute_coverage(snap_2141, read_backend("cpp", str(dlprim_tree)))
    everything = _ranked(cov, snap_2141)
    used = [i for i in everything if i.models is not None and i.models.used_by]
    ranked = everything[len(used) :]
    assert all(i.models is not None and not i.models.used_by for i in ranked)
    todays = [i.today for i in ranked]
    assert todays == sorted(todays, key=lambda t: t != "fails")
    records = snap_2141.operators
    for item in ranked:
        names = (item.name, *item.members)
        assert (item.today == "cpu_fallback") == all(has_cpu_kernel(records[n]) for n in names), item.name
    # the corpus's LSTM models dispatch it on a PrivateUse1 device (opdrift.usage.device): it fails and
    # breaks them, so it leads
    lstm = [i for i in everything if i.name == "_thnn_fused_lstm_cell"]
    assert lstm and lstm[0].today == "fails" and everything.index(lstm[0]) < 10
    assert todays.count("fails") <= 250 < len(ranked) and len(used) < 60


@pytest.mark.slow
def test_today_is_in_the_words_and_the_json(
    dlprim_tree: Path, release_file: Callable[[str], Path], opdrift: Opdrift
) -> None:
    source = str(release_file("2.15.0"))
    text = opdrift("coverage", "--backend", f"cpp={dlprim_tree}", source)
    assert text.code == 0, text.err
    assert "      today: fails on your device\n" in text.out and "(today: runs on CPU)" in text.out
    md = opdrift("coverage", "--backend", f"cpp={dlprim_tree}", "--format", "markdown", source)
    assert "  - today: fails on your device\n" in md.out
    js = opdrift("coverage", "--backend", f"cpp={dlprim_tree}", "--format", "json", source)
    items = json.loads(js.out)["backends"][0]["work_items"]
    by_name = {i["name"]: i for i in items}
    assert by_name["_thnn_fused_lstm_cell"]["today"] == "fails"
    assert {i["today"] for i in items} == {"fails", "cpu_fallback"}


# --- 5. op-plugin: torch_npu's CPU fallback, and its Autograd-key registrations -----------------------


def test_op_plugins_gaps_run_on_torch_npus_cpu_fallback(
    snap_2141: Snapshot, real_files: Callable[[str], str]
) -> None:
    backend = read_backend(
        "op-plugin", real_files("op-plugin.op_plugin_functions.yaml.xz"), torch_version="2.14.1"
    )
    cov = compute_coverage(snap_2141, backend)
    assert cov.fallback == KIND_BY_ID["op-plugin"].fallback != ""
    assert "VariableFallbackKernel.cpp" in (cov.fallback or "")
    assert {i.today for i in work_items(cov, snap_2141)} == {"fails", "cpu_fallback"}
    # no boxed fallback: everything it lacks fails
    xpu = compute_coverage(snap_2141, read_backend("xpu", real_files("torch-xpu-ops.xpu_functions.yaml.xz")))
    assert xpu.fallback is None and {i.today for i in work_items(xpu, snap_2141)} == {"fails"}


def test_op_plugins_autograd_registrations_bypass_their_backward(
    snap_2141: Snapshot, real_files: Callable[[str], str]
) -> None:
    """op-plugin registers `_thnn_fused_gru_cell` in its `autograd:` list (AutogradPrivateUse1), as
    XLA and pytorch_dlprim register theirs: autograd never calls `_thnn_fused_gru_cell_backward`."""
    backend = read_backend(
        "op-plugin", real_files("op-plugin.op_plugin_functions.yaml.xz"), torch_version="2.14.1"
    )
    assert [op.origin for op in backend.ops if op.name == "_thnn_fused_gru_cell"] == ["official", "autograd"]
    by_name = {o.name: o for o in compute_coverage(snap_2141, backend).ops}
    backward = by_name["_thnn_fused_gru_cell_backward"]
    assert (backward.covered, backward.rule, backward.via) == (True, "autograd_key", "_thnn_fused_gru_cell")
