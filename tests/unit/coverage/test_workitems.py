"""Coverage needs as work items (bot/coverage/workitems.py), on the real backend lists of
tests/data/backends/real (repositories and commits in its SOURCES.md) against 2.15.0."""

from __future__ import annotations

import dataclasses
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
from opdrift.coverage.workitems import (
    Through,
    WorkItem,
    declaration,
    decomposition_in_degree,
    served_by,
    with_served,
    work_items,
)
from opdrift.model import Snapshot
from opdrift.render.rank import work_item_rank_key
from opdrift.schema.kernel import PLAIN
from opdrift.work.rules import TRAINING_ONLY, words

REAL = DATA / "backends" / "real"
XLA = "pytorch-xla.xla_native_functions.yaml.xz"
OP_PLUGIN = "op-plugin.op_plugin_functions.yaml.xz"
EXECUTORCH = "executorch.portable.functions.yaml.xz"


@pytest.fixture(scope="module")
def snap_215(release_file: Callable[[str], Path]) -> Snapshot:
    return pipeline.load_snapshot(str(release_file("2.15.0")))


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    tmp = tmp_path_factory.mktemp("workitems")

    def unpack(name: str) -> str:
        path = tmp / name.removesuffix(".xz")
        if not path.exists():
            path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
        return str(path)

    return unpack


@pytest.fixture(scope="module")
def dlprim(dlprim_src: Path, snap_215: Snapshot) -> Coverage:
    return compute_coverage(snap_215, read_backend("cpp", str(dlprim_src)))


@pytest.fixture(scope="module")
def xla(real: Callable[[str], str], snap_215: Snapshot) -> Coverage:
    return compute_coverage(snap_215, read_backend("xla", real(XLA)))


def _items(cov: Coverage, snap: Snapshot) -> dict[str, WorkItem]:
    return {i.name: i for i in work_items(cov, snap)}


def test_dlprims_acos_family_is_one_item_to_write_at_its_out_op(dlprim: Coverage, snap_215: Snapshot) -> None:
    """dlprim (eager) lacks acos: write the structured `acos.out`, and `acos` and `acos_` follow by
    structured_delegate (2.15.0's yaml: both name `structured_delegate: acos.out`)."""
    items = _items(dlprim, snap_215)
    assert "acos" not in items and "acos_" not in items
    item = items["acos.out"]
    assert item.members == ("acos", "acos_")
    assert item.form == "int64_t"
    assert item.signature == "at::Tensor & acos_out(const at::Tensor & self, at::Tensor & out)"
    assert item.schema == "acos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"
    assert item.line == snap_215.operators["acos.out"].line
    assert item.core  # `acos` is tagged core, its out= op is not
    assert "no default kernel" in item.why
    # every op dlprim must write is exactly one item; a member is no work of its own
    assert sorted(items) == sorted(o.name for o in dlprim.uncovered)
    members = [n for i in items.values() for n in i.members]
    assert len(members) == len(set(members)) and not set(members) & set(items)


def test_xlas_functional_trio_is_one_item_at_its_functional_op(xla: Coverage, snap_215: Snapshot) -> None:
    """Under functionalization `exp2.out` and `exp2_` become `exp2`: one item, written at `exp2`."""
    items = _items(xla, snap_215)
    item = items["exp2"]
    assert item.members == ("exp2.out", "exp2_")
    assert "exp2.out" not in items and "exp2_" not in items
    assert item.signature == "at::Tensor exp2(const at::Tensor & self)"
    # a functional op whose default kernel calls its out= variant back: write one of the pair
    complex_ = items["complex"]
    assert complex_.alternative == "complex.out" and "calls complex.out, which has no kernel" in complex_.why
    # XLA's needs are its uncovered ops, one item each (the members are covered by functionalization)
    assert sorted(items) == sorted(o.name for o in xla.uncovered)


def test_a_listed_kernel_serves_the_ops_that_run_it(
    dlprim: Coverage, real: Callable[[str], str], snap_215: Snapshot
) -> None:
    """What a kernel serves, the rule a work item's members and a broken kernel's model count share:
    dlprim (eager) writes `mean.out`, and `mean.dim`'s structured kernel runs it (2.15.0's yaml:
    `structured_delegate: mean.out`); ExecuTorch lists `add.out`, which runs for `add.Tensor` (to_out_
    variant), which `add_.Tensor` becomes (functionalization): two hops, both served."""
    assert "mean.dim" in served_by(dlprim)["mean.out"]
    assert with_served(["mean.out"], served_by(dlprim))[0] == "mean.out"
    edge = compute_coverage(snap_215, read_backend("executorch", real(EXECUTORCH)))
    assert {"add.Tensor", "add_.Tensor"} <= served_by(edge)["add.out"]


def test_an_items_count_says_which_members_its_models_reach_it_through(
    dlprim: Coverage, snap_215: Snapshot
) -> None:
    """No model calls `sin.out` or `cumsum.out`: the models that need dlprim's item reach it through
    `sin` and `cumsum` (and not `sin_`, `cumsum_`), which the JSON's `through` says; `nonzero` is its
    own op, reached by its own models. The item's lines name its members already, so they say no more."""
    head = dataclasses.replace(snap_215, meta=dataclasses.replace(snap_215.meta, torch_version="2.15.0"))
    items = _items(dlprim, head)
    for name, member in (("sin.out", "sin"), ("cumsum.out", "cumsum")):
        m = items[name].models
        assert m is not None and m.used_by > 0 and m.through == Through(m.used_by, (member,))
        assert "through" not in items[name].models_words
    nonzero = items["nonzero"].models
    assert nonzero is not None and nonzero.used_by > 0 and nonzero.through is None


@pytest.mark.slow
def test_torch_mlir_items_are_lowerings_with_a_schema_and_no_cpp(
    tmp_path: Path, snap_215: Snapshot, opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    """A torch-mlir checkout (export profile, its own decomposition table): the items are ops to lower,
    shown by schema; the reports say "need a lowering", name the table and fold the training-only ops."""
    with tarfile.open(REAL / "torch-mlir.checkout.tar.xz") as tar:
        tar.extractall(tmp_path, filter="data")
    cov = compute_coverage(snap_215, read_backend("torch-mlir", str(tmp_path)))
    items = _items(cov, snap_215)
    cdist = items["cdist"]
    assert cdist.form is None and cdist.signature == "" and cdist.schema.startswith("cdist(Tensor x1")
    assert "reaches the exported graph" in cdist.why
    source = str(release_file("2.15.0"))
    text = opdrift("coverage", "--backend", f"torch-mlir={tmp_path}", source).out
    assert "need a lowering" in text and "need a kernel" not in text
    assert "decomposed by " in text and "fx_decomp_util.py" in text
    assert f"{words(TRAINING_ONLY)}, not needed for inference graphs: {len(cov.training_only)}" in text
    md = opdrift("coverage", "--backend", f"torch-mlir={tmp_path}", source, "--format", "markdown").out
    assert "### Work items: operators that need a lowering (" in md
    assert "fx\\_decomp\\_util.py" in md
    assert f"<summary>{len(cov.training_only)} more only a training graph holds" in md


def test_items_rank_core_first_then_by_decomposition_in_degree(dlprim: Coverage, snap_215: Snapshot) -> None:
    """What fails on dlprim's device today comes first (tests/unit/render/test_reach.py); among what its CPU
    fallback runs, the first item is `where.self`: core, and `where` is what the most Python
    decompositions of 2.15.0 call of all the ops dlprim lacks. Core items come first, then by in-degree."""
    everything = sorted(work_items(dlprim, snap_215), key=work_item_rank_key)
    assert everything[0].today == "fails"
    ranked = [i for i in everything if i.today == "cpu_fallback"]
    assert ranked[0].name == "where.self"
    degree = decomposition_in_degree(snap_215)
    assert degree["where"] == 54 and degree["mul"] == 131  # base operators whose decomposition calls it
    core = [i.core for i in ranked]
    assert core == sorted(core, reverse=True)
    plain = [i for i in ranked if not i.core]
    assert plain[0].in_degree == max(i.in_degree for i in plain) > 0
    for tier in (True, False):
        degrees = [i.in_degree for i in ranked if i.core is tier]
        assert degrees == sorted(degrees, reverse=True)


@pytest.mark.slow
def test_the_new_gaps_of_an_opencl_backend_fold_cuda_only_ops(
    dlprim_src: Path, opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    """dlprim from 2.14.1 to 2.15.0: of its three new gaps, the cuDNN and CUDA-only ones are folded
    with their reason, as the main list folds them; `_philox_randint_` leads. (`_scaled_addmm`
    delegates to `_scaled_addmm.out`: no gap of its own.)"""
    args = ("coverage", "--backend", f"cpp={dlprim_src}", "--base", str(release_file("2.14.1")))
    md = opdrift(*args, str(release_file("2.15.0")), "--format", "markdown").out
    new = md.split("### ⚠️ New operators that need a kernel (1)")[1].split("### ")[0]
    shown, _, folded = new.partition("<details>")
    assert shown.strip() == "- `_philox_randint_`"
    for name in ("_cudnn_attention_forward_no_dropout_inplace", "_scaled_addmm.out"):
        assert f"`{name}`" in folded, name
    assert "`_scaled_addmm`" not in new
    assert "its only kernel is for CUDA" in folded and "(3 new, 0 closed)" in md
    text = opdrift(*args, str(release_file("2.15.0"))).out
    news = [line for line in text.splitlines() if line.startswith("    new, ")]
    assert news == ["    new, needs a kernel: _philox_randint_"]
    assert "and 2 new ones only some backends need" in text


def test_the_coverage_json_has_work_items_beside_the_flat_list(
    dlprim_src: Path, opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    run = opdrift(
        "coverage", "--backend", f"cpp={dlprim_src}", str(release_file("2.15.0")), "--format", "json"
    )
    (report,) = json.loads(run.out)["backends"]
    items = {i["name"]: i for i in report["work_items"]}
    acos = items["acos.out"]
    assert acos["members"] == ["acos", "acos_"] and acos["form"] == "int64_t"
    assert acos["signature"].startswith("at::Tensor & acos_out(") and acos["schema"].startswith("acos.out(")
    # a bare native_functions.yaml names no torch release: no model table can answer for it
    assert acos["models"] is None
    assert acos["rank"] == {
        "breaks_models": 0,
        "used_by_models": 0,
        "core": True,
        "in_degree": 0,
        "private": False,
        "bucket": "primitive_pointwise",
    }
    assert acos["scope"] is None and acos["alternative"] is None and acos["why"]
    assert items["_cudnn_rnn"]["scope"]["rule"] == "scope.name.vendor"
    assert report["work_items"][0]["today"] == "fails"
    assert next(i["name"] for i in report["work_items"] if i["today"] == "cpu_fallback") == "where.self"
    # the flat list stays, for compatibility: the ops to write; `acos` and `acos_` are no work of their
    # own (the work engine's structured-delegate rule), so they are members, not needs
    uncovered = {u["name"] for u in report["uncovered"]}
    assert "acos.out" in uncovered and not {"acos", "acos_"} & uncovered
    assert uncovered == {i["name"] for i in report["work_items"]}


@pytest.mark.slow
def test_coverage_text_puts_the_needs_before_alerts_and_folds_never_native_names(
    tmp_path: Path, opdrift: Opdrift, real: Callable[[str], str], release_file: Callable[[str], Path]
) -> None:
    """op-plugin's 102 alerts and torch-mlir's 107 TorchScript built-ins used to come before the needs."""
    source = str(release_file("2.15.0"))
    plugin = opdrift(
        "coverage", "--backend", f"op-plugin={real(OP_PLUGIN)}", "--torch-version", "2.15", source
    ).out
    # torch_npu's boxed CPU fallback runs what op-plugin lacks (the kind table's column)
    assert plugin.index("  work items: need a kernel (") < plugin.index("  schema alerts (")
    td = tmp_path / "GeneratedTorchOps.td"
    td.write_bytes(lzma.decompress((REAL / "torch-mlir.GeneratedTorchOps.td.xz").read_bytes()))
    mlir = opdrift("coverage", "--backend", f"torch-mlir={td}", source).out
    (line,) = [s for s in mlir.splitlines() if "never a native function" in s]
    assert line.startswith("  listed, but never a native function: 107 (") and "TorchScript" in line
    assert ": add.t" not in mlir and "Int.Tensor\n" not in mlir
    assert mlir.index("  work items: need a lowering (") < mlir.index(line)


def test_before_1_13_the_declaration_is_in_the_symint_form(
    dlprim: Coverage, snap_215: Snapshot, release_file: Callable[[str], Path], dlprim_src: Path
) -> None:
    """1.12.0's dispatcher took a kernel only in its schema's own types, the SymInt form
    (`opdrift.schema.kernel.PLAIN_KERNELS_FOR_SYMINT_SINCE`): a work item against it is declared so."""
    import dataclasses

    old = pipeline.load_snapshot(str(release_file("1.12.0")))
    old = dataclasses.replace(old, meta=dataclasses.replace(old.meta, torch_version="1.12.0"))
    cov = compute_coverage(old, read_backend("cpp", str(dlprim_src)))
    items = _items(cov, old)
    assert {i.form for i in items.values()} == {"SymInt"}
    assert {i.form for i in work_items(dlprim, snap_215)} == {"int64_t"}
    # 1.12.0's RegistrationDeclarations.h declares expand.SymInt with c10::SymIntArrayRef
    rec = old.operators["expand.SymInt"]
    assert declaration(rec.name, rec.schema, "SymInt", PLAIN) == (
        "at::Tensor expand_SymInt(const at::Tensor & self, c10::SymIntArrayRef size, bool implicit)"
    )
