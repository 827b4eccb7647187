"""The export profile follows the real export path: what torch.export gives a compiler, per release and
decomposition table. Judged against torch-mlir's real checkout files (tests/data/backends/real,
SOURCES.md) and what torch.export produced on torch 2.13.0 (tests/data/observed/export)."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA
from goldens import check_golden_entry, updating

from opdrift import pipeline
from opdrift.coverage.backends import BackendList, read_backend
from opdrift.coverage.check import compute_coverage
from opdrift.coverage.torch_mlir import read_fx_decompositions
from opdrift.dispatchkeys import CIA
from opdrift.drift.needs import ProfileNeeds, export_path_for
from opdrift.errors import ConfigError
from opdrift.model import Snapshot
from opdrift.operators.export_table import core_aten_release, shipped_releases
from opdrift.operators.exported import export_fate, keeps_cia
from opdrift.operators.kernels import table_of

OBSERVED = json.loads((DATA / "observed" / "export" / "export-2.13.0.json").read_text(encoding="utf-8"))
REACHES_TORCH_MLIR = ("cdist", "kron", "nanmean", "diff", "clip", "divide.Tensor")
DECOMPOSED_BY_TORCH_MLIR = ("squeeze.dims", "grid_sampler_2d", "linspace")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("torch-mlir")
    with tarfile.open(DATA / "backends" / "real" / "torch-mlir.checkout.tar.xz") as tar:
        tar.extractall(root, filter="data")
    return root


@pytest.fixture(scope="module")
def snapshots(release_file: Callable[[str], Path]) -> dict[str, Snapshot]:
    return {v: pipeline.load_snapshot(str(release_file(v))) for v in ("2.13.0", "2.15.0")}


def test_the_checkout_reads_torch_mlirs_own_table(checkout: Path) -> None:
    backend = read_backend("torch-mlir", str(checkout))
    assert len([op for op in backend.ops if op.origin != "fx_importer"]) == 749
    assert backend.decompositions is not None
    assert backend.decompositions_path.endswith("python/torch_mlir/extras/fx_decomp_util.py")
    # overloads as named, packets whole, the hasattr-guarded appends included
    assert {"squeeze.dims", "linspace", "addmm.*", "_scaled_dot_product_flash_attention_for_cpu.*"} <= (
        backend.decompositions
    )
    assert "scaled_dot_product_attention.*" in backend.decompositions


@pytest.mark.parametrize("version", ["2.13.0", "2.15.0"])
def test_a_torch_mlir_checkouts_needs(checkout: Path, snapshots: dict[str, Snapshot], version: str) -> None:
    """What torch-mlir must lower at 2.15.0: no out= or in-place variant; cdist, kron, nanmean, diff, clip and
    divide.Tensor (not in torch-mlir's list) need a lowering; squeeze.dims, grid_sampler_2d and
    linspace do not."""
    snapshot = snapshots[version]
    backend = read_backend("torch-mlir", str(checkout))
    cov = compute_coverage(snapshot, backend)
    need = {o.name for o in cov.uncovered}
    assert not [n for n in need if snapshot.operators[n].kind in ("out", "inplace")]
    for name in REACHES_TORCH_MLIR:
        assert name not in backend.names and name in need, name
    for name in DECOMPOSED_BY_TORCH_MLIR:
        assert name not in need, name
    rules = {o.name: o.rule for o in cov.ops}
    assert rules["squeeze.dims"] == rules["grid_sampler_2d"] == "decomposes"
    assert rules["add.out"] == rules["kron.out"] == rules["clip_"] == "backend_codegen"
    # backward ops torch-mlir does not list are apart: not needs, and named
    assert {"_cdist_backward", "_ctc_loss_backward"} <= {o.name for o in cov.training_only}
    assert "_cdist_backward" not in need and rules["convolution_backward"] == "listed"
    assert cov.decompositions.endswith("fx_decomp_util.py (the hand list DEFAULT_DECOMPOSITIONS)")


def test_a_bare_td_file_takes_pytorchs_core_aten_table(
    snapshots: dict[str, Snapshot], checkout: Path
) -> None:
    td = checkout / "include" / "torch-mlir" / "Dialect" / "Torch" / "IR" / "GeneratedTorchOps.td"
    cov = compute_coverage(snapshots["2.15.0"], read_backend("torch-mlir", str(td)))
    rules = {o.name: o.rule for o in cov.ops}
    assert all(rules[name] == "decomposes" for name in ("cdist", "kron", "nanmean", "diff", "divide.Tensor"))
    assert cov.decompositions == f"PyTorch {core_aten_release('2.15.0').version}'s Core-ATen table"


@pytest.mark.parametrize("table", ["torch_mlir", "core_aten", "empty"])
def test_the_model_agrees_with_what_torch_export_produced(
    table: str, snapshots: dict[str, Snapshot], checkout: Path
) -> None:
    """Every operator an observed graph holds after run_decompositions(TABLE) reaches the compiler by
    the model; every operator export traced that the decomposed graph lost does not."""
    records = snapshots["2.13.0"].operators
    backend = read_backend("torch-mlir", str(checkout))
    names = {"torch_mlir": backend.decompositions, "core_aten": None, "empty": frozenset()}[table]
    path = export_path_for("2.13.0", names)
    checked = 0
    for case, graphs in OBSERVED["graphs"].items():
        for name in graphs[table]:
            assert export_fate(records[name], path) == "reaches", (case, name)
        # the out= call's buffer (empty_like) is dead code once export functionalizes the call
        for name in set(graphs["exported"]) - set(graphs[table]) - {"empty_like"}:
            assert export_fate(records[name], path) != "reaches", (case, name)
            checked += 1
    assert checked >= 5


def test_the_tables_named_operators_are_the_observed_table_keys(
    snapshots: dict[str, Snapshot], checkout: Path
) -> None:
    """torch-mlir's get_decomposition_table() at 2.13.0, as observed: the model names the same
    functional operators, but `diag` (its packet has a decomposition only for diag.out)."""
    records = snapshots["2.13.0"].operators
    path = export_path_for("2.13.0", read_backend("torch-mlir", str(checkout)).decompositions)
    named = {n for n, r in records.items() if r.kind == "functional" and path.table.names_op(r)}
    observed = {n for n in OBSERVED["torch_mlir_table"] if records[n].kind == "functional"}
    assert observed <= named
    assert named - observed == {"diag"}


def test_export_keeps_the_functional_cia_operators_torch_says_it_may(snapshots: dict[str, Snapshot]) -> None:
    """The model's functional, non-aliasing CIA operators at 2.13.0 are torch's own
    _collect_all_valid_cia_ops_for_aten_namespace(); torch's has a few more, whose CIA kernel is
    registered in Python (py_impl) and which the yaml gives a backend kernel: they reach either way."""
    records = snapshots["2.13.0"].operators
    empty = export_path_for("2.13.0", frozenset())
    fates = {n: export_fate(r, empty) for n, r in records.items() if CIA in table_of(r.facets)}
    kept = {n for n, fate in fates.items() if fate in ("reaches", "training_only")}
    answered = {n for n, fate in fates.items() if fate == "evaluated"}
    # get_gradients is registered in the aten namespace outside native_functions.yaml
    observed = set(OBSERVED["preservable_cia"]) - {"get_gradients"}
    assert kept <= observed and len(kept) > 400
    # ops answered while tracing reach no compiler either way; torch refuses these to preserve
    # (FunctionalTensor.metadata_fns)
    assert answered - observed == {
        "dim",
        "is_contiguous",
        "is_contiguous.memory_format",
        "numel",
        "storage_offset",
        "sym_numel",
        "sym_storage_offset",
    }
    for name in observed - kept - answered:
        assert CIA not in table_of(records[name].facets) and export_fate(records[name], empty) == "reaches"


def test_what_export_answers_while_tracing_reaches_no_compiler(snapshots: dict[str, Snapshot]) -> None:
    """is_same_size, result_type and can_cast were traced as dead nodes and gone after every
    run_decompositions (observed); an op returning a number stays (item() is _local_scalar_dense)."""
    graphs = OBSERVED["graphs"]["scalar_answers"]
    answered = {"is_same_size", "result_type.Scalar", "can_cast"}
    assert answered <= set(graphs["exported"]) and not answered & set(graphs["empty"])
    records = snapshots["2.13.0"].operators
    path = export_path_for("2.13.0", frozenset())
    assert {export_fate(records[n], path) for n in answered} == {"evaluated"}
    assert export_fate(records["_local_scalar_dense"], path) == "reaches"


def test_backward_ops_appear_only_in_training_graphs(snapshots: dict[str, Snapshot]) -> None:
    train = OBSERVED["graphs"]["train"]
    backward = {n for n in train["training_graph_undecomposed"] if "backward" in n}
    assert backward == {"gelu_backward", "native_layer_norm_backward"}
    assert not backward & set(train["exported"])
    path = export_path_for("2.13.0", frozenset())
    records = snapshots["2.13.0"].operators
    assert {export_fate(records[n], path) for n in backward} == {"training_only"}


def test_before_2_6_every_cia_operator_decomposes(snapshots: dict[str, Snapshot], checkout: Path) -> None:
    """2.5's run_decompositions(decomp_table, _preserve_ops=()) kept only _preserve_ops; 2.6 introduced
    _split_decomp_table_to_cia_and_python_decomp and its _special_op_to_preserve_cia."""
    assert not keeps_cia("2.5.0") and keeps_cia("2.6.0") and keeps_cia(None)
    names = read_backend("torch-mlir", str(checkout)).decompositions
    records = snapshots["2.15.0"].operators
    old, new = export_path_for("2.5.0", names), export_path_for("2.15.0", names)
    for name in REACHES_TORCH_MLIR:
        assert (export_fate(records[name], old), export_fate(records[name], new)) == ("decomposed", "reaches")


def test_the_shipped_core_aten_table() -> None:
    """Generated from the wheels by scripts/export_table.py; from 2.7 PyTorch keeps the upsample .vec
    CIA operators (PRESERVED_ATEN_CIA_OPS), and a release the table lacks takes the one before."""
    versions = [r.version for r in shipped_releases()]
    assert versions[0] == "2.1.0" and "2.13.0" in versions
    assert core_aten_release("2.12.0").version == "2.11.0"
    assert core_aten_release("2.15.0").version == "2.14.1"
    assert core_aten_release("1.13.0").version == "2.1.0"
    assert core_aten_release("2.6.0").preserved_cia == frozenset()
    assert {"upsample_bilinear2d.vec", "upsample_nearest2d.vec"} <= core_aten_release("2.13.0").preserved_cia
    assert "new_zeros.*" in core_aten_release("2.13.0").decomposes


def test_drift_and_coverage_give_one_answer(snapshots: dict[str, Snapshot], checkout: Path) -> None:
    """drift/needs.py's export profile and coverage of an empty list call one function with one path:
    the ops a backend with that table must lower are exactly the export needs, for both tables."""
    snapshot = snapshots["2.15.0"]
    names = read_backend("torch-mlir", str(checkout)).decompositions
    for table in (None, names):
        path = export_path_for(snapshot.meta.torch_version, table)
        needs = ProfileNeeds(snapshot.operators, export=path)
        empty = BackendList("torch-mlir", "empty", (), decompositions=table)
        cov = compute_coverage(snapshot, empty)
        assert {o.name for o in cov.uncovered} == {
            n for n, r in snapshot.operators.items() if "export" in needs(r)
        }


def test_fx_decomp_util_is_read_as_text_and_bounded() -> None:
    text = (
        "import torch\nDEFAULT_DECOMPOSITIONS = [torch.ops.aten.t, torch.ops.aten.squeeze.dims]\n"
        "if hasattr(torch.ops.aten, 'x'):\n    DEFAULT_DECOMPOSITIONS.append(torch.ops.aten.x.default)\n"
        "OTHER = [torch.ops.aten.never]\n"
    )
    assert read_fx_decompositions(text, "f.py") == frozenset({"t.*", "squeeze.dims", "x"})
    with pytest.raises(ConfigError, match="not valid Python"):
        read_fx_decompositions("DEFAULT_DECOMPOSITIONS = [", "f.py")
    with pytest.raises(ConfigError, match="no DEFAULT_DECOMPOSITIONS"):
        read_fx_decompositions("x = 1\n", "f.py")
    with pytest.raises(ConfigError, match="larger than"):
        read_fx_decompositions("#" * (2 << 20), "f.py")


def test_the_cli_reports_the_table_and_the_training_only_ops(
    opdrift: Opdrift, checkout: Path, release_file: Callable[[str], Path]
) -> None:
    run = opdrift(
        "coverage", "--backend", f"torch-mlir={checkout}", "--format", "json", str(release_file("2.15.0"))
    )
    assert run.code == 0, run.err
    found = json.loads(run.out)["backends"][0]
    assert found["backend"]["decompositions"].endswith(
        "fx_decomp_util.py (the hand list DEFAULT_DECOMPOSITIONS)"
    )
    assert "_cdist_backward" in {o["name"] for o in found["training_only"]}
    assert "cdist" in {o["name"] for o in found["uncovered"]}
    missing = opdrift(
        "coverage", "--backend", f"torch-mlir={checkout / 'python'}", str(release_file("2.15.0"))
    )
    assert missing.code == 2 and "not a torch-mlir checkout" in missing.err and "Traceback" not in missing.err


@pytest.mark.slow
def test_training_only_ops_are_counted_apart_from_covered_and_needed(
    opdrift: Opdrift, checkout: Path, release_file: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """An inference graph never holds them, so torch-mlir neither serves nor needs its training-only ops:
    the JSON's `covered` and every by-bucket row leave them out, and the reports count them apart."""
    source = str(release_file("2.15.0"))
    run = opdrift("coverage", "--backend", f"torch-mlir={checkout}", "--format", "json", source)
    assert run.code == 0, run.err
    found = json.loads(run.out)["backends"][0]
    training = len(found["training_only"])
    assert training > 100
    assert found["covered"] + found["needs_kernel"] + training == found["operators"]
    backward = found["by_bucket"]["backward"]
    # 138 backward ops read "covered" when training-only ones counted as covered: 81 are listed
    assert (backward["covered"], backward["needs_kernel"], backward["training_only"]) == (81, 0, 57)
    assert sum(b["training_only"] for b in found["by_bucket"].values()) == training
    md = opdrift("coverage", "--backend", f"torch-mlir={checkout}", "--format", "markdown", source)
    assert f"Covered **{found['covered']}** of {found['operators']} operators" in md.out
    (said,) = [x for x in md.out.splitlines() if f". {training} more " in x]  # the summary, then a section
    assert f"<summary>{training} more " in md.out
    check_golden_entry("coverage.lines.txt", "torch-mlir: the summary", said + "\n", updating(request))
    assert "| bucket | covered | needs a lowering | training only |" in md.out
    text = opdrift("coverage", "--backend", f"torch-mlir={checkout}", source)
    assert f"covered {found['covered']} of {found['operators']} operators" in text.out


def test_symbolic_shape_ops_the_fx_importer_maps_are_served_by_their_target(
    checkout: Path, snapshots: dict[str, Snapshot]
) -> None:
    """A dynamic-shape graph holds `sym_size.int` (a functional CompositeImplicitAutograd op export
    keeps: `preservable_cia` of the observed run); torch-mlir's FX importer imports it as `size.int`
    (SYMBOLIC_OP_TO_TORCH_OP), which its .td lists. `sym_stride.int` and `sym_is_contiguous` never
    reach a graph (tests/data/observed/reach/: a symbolic stride is written with `sym_size.int`), so
    their lack of a mapping costs nothing."""
    assert {"sym_size.int", "sym_stride.int", "sym_is_contiguous"} <= set(OBSERVED["preservable_cia"])
    for root in (checkout, checkout / "include/torch-mlir/Dialect/Torch/IR/GeneratedTorchOps.td"):
        backend = read_backend("torch-mlir", str(root))
        rules = {o.name: o.rule for o in compute_coverage(snapshots["2.15.0"], backend).ops}
        assert rules["sym_size.int"] == rules["sym_numel"] == "listed", root
        assert rules["sym_stride.int"] == rules["sym_is_contiguous"] == "decomposes", root
        found = {op.name: op for op in backend.ops}
        assert found["sym_size.int"].line == found["size.int"].line and found["sym_size.int"].schema is None
        assert "stride.int" not in found and "sym_stride.int" not in found
