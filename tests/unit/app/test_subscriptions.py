"""Every channel tells each backend the whole truth. A subscription's gap (and the watch and
the impact table built from it) carries, beside lacks, breaks and removals: torch-mlir's recorded
schema changes, judged by coverage's alert rule; core-set changes for a backend of the export or
functional profile; dead C++ registrations of removed ops; and, apart, the ops only some backends need.

Each case is real: the release entries as PyTorch shipped them (tests/data/releases) and the backends'
own lists (tests/data/backends/real, SOURCES.md), torch-mlir's at the time it met the change.
"""

from __future__ import annotations

import lzma
from collections.abc import Callable
from pathlib import Path

import pytest
from datafiles import DATA, release_text, write_release
from goldens import check_golden_entry, updating
from pytorch_history import swapped

from opdrift import pipeline
from opdrift.app.prepare import backend_work, downstream_impact
from opdrift.app.subscriptions import backend_gaps, mentions_for
from opdrift.config.file import parse_config
from opdrift.coverage.backends import read_backend
from opdrift.coverage.change import compare_coverage
from opdrift.coverage.check import compute_coverage
from opdrift.coverage.kinds import BackendKind
from opdrift.drift.changes import Change, compute_drift
from opdrift.model import Snapshot
from opdrift.render.context import BackendGap, ReportContext
from opdrift.render.report import render

REAL = DATA / "backends" / "real"
LISTS: dict[str, tuple[BackendKind, str, str]] = {
    "mlir-2022": ("torch-mlir", "torch-mlir-2022-08.GeneratedTorchOps.td.xz", "GeneratedTorchOps-2022.td"),
    "mlir-2024": ("torch-mlir", "torch-mlir-2024-08.GeneratedTorchOps.td.xz", "GeneratedTorchOps-2024.td"),
    "mlir": ("torch-mlir", "torch-mlir.GeneratedTorchOps.td.xz", "GeneratedTorchOps.td"),
    "xla": ("xla", "pytorch-xla.xla_native_functions.yaml.xz", "xla_native_functions.yaml"),
    "npu": ("op-plugin", "op-plugin.op_plugin_functions.yaml.xz", "op_plugin_functions.yaml"),
}


Pr = Callable[[str, str], tuple[Snapshot, Snapshot]]


@pytest.fixture
def pr(tmp_path: Path) -> Pr:
    """pr(VERSION, TEXT): VERSION's files as BASE, and HEAD with native_functions.yaml as TEXT."""

    def make(version: str, text: str) -> tuple[Snapshot, Snapshot]:
        base = write_release(version, tmp_path / "base")
        head = write_release(version, tmp_path / "head")
        head.write_text(text)
        return pipeline.load_snapshot(str(base)), pipeline.load_snapshot(str(head))

    return make


@pytest.fixture
def folder(tmp_path: Path, dlprim_src: Path) -> Path:
    """The config's folder: the real lists decompressed beside it; dlprim's src/ tree by its path."""
    out = tmp_path / "cfg"
    out.mkdir()
    for _, packed, name in LISTS.values():
        (out / name).write_bytes(lzma.decompress((REAL / packed).read_bytes()))
    (out / "dlprim").symlink_to(dlprim_src)
    return out


def gaps(folder: Path, mlir: str, base: Snapshot, head: Snapshot) -> dict[str, BackendGap]:
    """Each backend's gap (torch-mlir's list MLIR of LISTS, XLA, op-plugin, dlprim), by handle."""
    kind, _, td = LISTS[mlir]
    text = "subscriptions:\n" + "".join(
        f'  - who: ["@{who}"]\n    backend: {{kind: {kind}, path: {path}}}\n'
        for who, kind, path in (
            ("mlir", kind, td),
            ("xla", "xla", LISTS["xla"][2]),
            ("npu", "op-plugin", LISTS["npu"][2]),
            ("dlprim", "cpp", "dlprim"),
        )
    )
    cfg = parse_config(text, str(folder / "opdrift.yml"), base_dir=str(folder))
    changes = compute_drift(base, head).changes
    lacking, implemented = backend_work(cfg, head)
    found = {g.who[0].lstrip("@"): g for g in backend_gaps(cfg, changes, lacking, implemented)}
    warned = {g.who[0].lstrip("@") for g in found.values() if g.warns()}
    assert {h.lstrip("@") for h in mentions_for(cfg, changes, lacking, implemented)} == warned
    return found


def _alerted(folder: Path, mlir: str, base: Snapshot, head: Snapshot) -> set[str]:
    """The schema alerts coverage raises at HEAD for torch-mlir's list that it did not at BASE."""
    kind, _, td = LISTS[mlir]
    listed = read_backend(kind, str(folder / td))
    change = compare_coverage(compute_coverage(base, listed), compute_coverage(head, listed))
    return {a.name for a in change.new_alerts}


@pytest.mark.slow
def test_torch_mlir_is_told_when_mean_dims_dim_becomes_optional(pr: Pr, folder: Path) -> None:
    """llvm/torch-mlir#1121: 1.13.0 made `mean.dim`'s `int[1] dim` an `int[1]? dim`; torch-mlir's ODS
    of the day recorded `(Tensor, int[], bool, int?)`. Coverage raises the alert; the gap says it."""
    base, head = pr("1.12.0", swapped("1.12.0", {"mean.dim": "1.13.0", "mean.out": "1.13.0"}))
    found = gaps(folder, "mlir-2022", base, head)
    assert (
        found["mlir"].schema_changed
        == ("mean.dim",)
        == tuple(sorted(_alerted(folder, "mlir-2022", base, head)))
    )
    assert found["mlir"].warns() and not found["mlir"].broken  # torch-mlir writes no C++ kernel
    # only torch-mlir records a schema it builds from: the C++ backends hear of their kernels instead
    assert all(not g.schema_changed for who, g in found.items() if who != "mlir")
    assert found["xla"].broken_names == ("mean.dim",)
    # torch-mlir after #1129 records the new type: the same change is no news to it (no alert at HEAD)
    later = gaps(folder, "mlir-2024", base, head)
    assert "mlir" not in later and not _alerted(folder, "mlir-2024", base, head)


@pytest.mark.slow
def test_torch_mlir_is_told_of_enable_gqa_and_xla_is_not(pr: Pr, folder: Path) -> None:
    """2.5.0 added `bool enable_gqa=False` to `scaled_dot_product_attention`: XLA, op-plugin and dlprim
    were warned, torch-mlir (whose ODS op gained an operand, llvm/torch-mlir#3627) was not."""
    base, head = pr("2.4.0", swapped("2.4.0", {"scaled_dot_product_attention": "2.5.0"}))
    found = gaps(folder, "mlir-2024", base, head)
    assert found["mlir"].schema_changed == ("scaled_dot_product_attention",)
    assert _alerted(folder, "mlir-2024", base, head) == {"scaled_dot_product_attention"}
    # XLA and dlprim list no scaled_dot_product_attention: nothing to tell them
    assert "xla" not in found and "dlprim" not in found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("release", "broken"),
    [
        ("before-49c8366e", {"_scaled_mm_v2", "_scaled_grouped_mm_v2"}),
        ("49c8366e", {"_scaled_grouped_mm_v2"}),  # f2d45694 forced the second a month later
        ("b8d8c479", set()),  # today's list (it registers v2.15): both forced
    ],
)
def test_op_plugin_kernels_its_codegen_binds_as_list_refs_survive_joining_a_structured_group(
    tmp_path: Path, release: str, broken: set[str]
) -> None:
    """2.13.0 → 2.14.1: `_scaled_mm_v2` and `_scaled_grouped_mm_v2` joined structured groups, so
    torchgen binds their `Tensor[]` scales as `const at::ITensorListRef &`. op-plugin's torchnpugen
    binds its kernels of them so from a list of its own (torchnpugen/context.py), whatever its yaml says,
    and they take a TensorList too: a list as old as the commit that put each op there is not broken by
    the change; an older one is (Ascend changed the C++ by hand: 49c8366e, f2d45694)."""
    import tarfile

    if release == "b8d8c479":
        listed = tmp_path / "op_plugin_functions.yaml"
        listed.write_bytes(lzma.decompress((REAL / LISTS["npu"][1]).read_bytes()))
    else:
        with tarfile.open(REAL / "op-plugin.gates.tar.xz") as tar:
            tar.extractall(tmp_path, filter="data")
        listed = tmp_path / "op-plugin-gates" / f"{release}.yaml"
    base = pipeline.load_snapshot(str(write_release("2.13.0", tmp_path / "base")))
    head = pipeline.load_snapshot(str(write_release("2.14.1", tmp_path / "head")))
    text = f'subscriptions:\n  - who: ["@npu"]\n    backend: {{kind: op-plugin, path: "{listed}"}}\n'
    cfg = parse_config(text, str(tmp_path / "opdrift.yml"), base_dir=str(tmp_path))
    lacking, implemented = backend_work(cfg, head)
    (gap,) = backend_gaps(cfg, compute_drift(base, head).changes, lacking, implemented)
    assert {op for op in gap.broken_names if op.startswith("_scaled")} == broken


def test_a_core_set_change_reaches_export_and_functional_backends(pr: Pr, folder: Path) -> None:
    """2.1.0 took `native_batch_norm` out of the core set (pytorch/xla#5880) and put `_embedding_bag`
    in it: XLA (functional) lists the first and lacks the second; torch-mlir (export) lists the first.
    The eager backends (op-plugin, dlprim) lower no Core ATen opset: not told."""
    base, head = pr("2.0.0", swapped("2.0.0", {"native_batch_norm": "2.1.0", "_embedding_bag": "2.1.0"}))
    found = gaps(folder, "mlir-2024", base, head)
    assert (found["xla"].left_core, found["xla"].joined_core) == (("native_batch_norm",), ("_embedding_bag",))
    assert found["mlir"].left_core == ("native_batch_norm",)
    assert "npu" not in found and "dlprim" not in found
    # what diff says of the same change
    (change,) = [c for c in compute_drift(base, head).changes if c.name == "native_batch_norm"]
    assert [(d.code, d.subject) for d in change.details] == [("tag_removed", "core")]


def test_a_cpp_backend_is_told_its_registration_of_a_removed_op_is_dead(pr: Pr, folder: Path) -> None:
    """A PR removing `mse_loss_backward`, which dlprim registers (`m.impl`, src/loss_ops.cpp): XLA's
    and op-plugin's codegen refuses the name (removed), dlprim's build takes it (dead, not broken)."""
    base, head = pr("2.14.1", swapped("2.14.1", {"mse_loss_backward": None}))
    found = gaps(folder, "mlir", base, head)
    assert found["dlprim"].dead == ("mse_loss_backward",)
    assert (found["dlprim"].removed, found["dlprim"].broken, found["dlprim"].ops) == ((), (), ())
    assert found["xla"].removed == ("mse_loss_backward",) == found["npu"].removed
    assert not found["xla"].dead


@pytest.mark.slow
def test_ops_only_some_backends_need_are_listed_apart_as_coverage_does(
    release_file: Callable[[str], Path], folder: Path
) -> None:
    """2.14.1 → 2.15.0: coverage reports 3 new gaps for XLA, 2 of them only some backends need
    (CUDA-, cuDNN-only); the subscription said 1 and dropped the others."""
    base, head = (pipeline.load_snapshot(str(release_file(v))) for v in ("2.14.1", "2.15.0"))
    found = gaps(folder, "mlir", base, head)
    xla = read_backend("xla", str(folder / LISTS["xla"][2]))
    new = compare_coverage(compute_coverage(base, xla), compute_coverage(head, xla)).new_uncovered
    assert len(new) == 3
    assert sorted(found["xla"].ops + found["xla"].some_need) == sorted(new)
    assert found["xla"].some_need == ("_cudnn_attention_forward_no_dropout_inplace", "_scaled_addmm")
    # the weekly issue lists them apart, with no mention for them
    ctx = ReportContext(backend_gaps=(found["xla"],))
    body = render(compute_drift(base, head), "weekly-issue", context=ctx.linked(compute_drift(base, head)))
    (line,) = [ln for ln in body.splitlines() if "only some backends need (CUDA-" in ln]
    assert "@" not in line and "`_scaled_addmm`" in line


def _changes(base: Snapshot, head: Snapshot) -> list[Change]:
    return list(compute_drift(base, head).changes)


def test_the_impact_table_gets_a_torch_mlir_row_for_a_new_argument_of_mean_dim(
    pr: Pr, folder: Path, request: pytest.FixtureRequest
) -> None:
    """A PR adding `bool fast=False` to `mean.dim` (and its out= twin): coverage reports the alert for
    torch-mlir's ODS op; the PR comment's impact table now has its row."""
    text = release_text("2.14.1")
    for name in ("mean.dim", "mean.out"):
        at = f"- func: {name}(Tensor self, int[1]? dim, bool keepdim=False,"
        text = text.replace(at, at + " bool fast=False,")
    base, head = pr("2.14.1", text)
    cfg = parse_config(
        f"backends:\n  - {{name: torch-mlir, kind: torch-mlir, path: {LISTS['mlir'][2]}}}\n",
        str(folder / "opdrift.yml"),
        base_dir=str(folder),
    )
    (impact,) = downstream_impact(cfg, head, _changes(base, head), warn=print)
    assert not impact.unread and impact.schema_changed == ("mean.dim",)
    assert _alerted(folder, "mlir", base, head) == {"mean.dim"}
    drift = compute_drift(base, head)
    body = render(drift, "pr-comment", context=ReportContext(impact=(impact,)).linked(drift))
    assert "| `torch-mlir` | `torch-mlir` | 0 | 0 | 0 | 📐 1 recorded schema changed |" in body
    (line,) = [x for x in body.splitlines() if "📐 **1** op " in x]
    assert "`mean.dim`" in line
    check_golden_entry(
        "report.lines.txt", "impact: a recorded schema changed", line + "\n", updating(request)
    )


@pytest.mark.slow
def test_each_gap_counts_the_models_of_its_needs_and_breaks_as_coverage_does(
    pr: Pr, folder: Path, request: pytest.FixtureRequest
) -> None:
    """2.14.1 with `bool fast` added to `mean.dim`/`mean.out` and 2.15.0's new
    `_philox_randint_`, HEAD said to be 2.14.1. XLA's `mean.dim` kernel breaks, and the models that
    reach it on XLA's functional path are the ones coverage counts; dlprim writes `mean.out`, which the
    models reach through `mean.dim`'s structured kernel: those models break with it; a new op is newer
    than the table."""
    import dataclasses

    from watch_upstream import added_entry, with_fast

    from opdrift.coverage.workitems import Through, model_reach
    from opdrift.usage.device import on_device
    from opdrift.usage.models import usage_for

    base, head = pr("2.14.1", with_fast(release_text("2.14.1")) + added_entry())
    head = dataclasses.replace(head, meta=dataclasses.replace(head.meta, torch_version="2.14.1"))
    found = gaps(folder, "mlir", base, head)
    xla, dlprim = found["xla"], found["dlprim"]
    assert [(b.op, b.form) for b in xla.broken] == [("mean.dim", "int64_t")]
    assert xla.broken_models is not None and xla.broken_models.short_words().startswith("used by ")
    table = usage_for("2.14.1").usage
    assert xla.broken_models == model_reach(table, ("functional",), ("mean.dim",), None)
    assert 0 < xla.broken_models.used_by < xla.broken_models.of
    assert [(b.op, b.form) for b in dlprim.broken] == [("mean.out", "int64_t")]
    # dlprim's mean.out kernel is the one `mean.dim`'s structured kernel runs on its key (the work
    # engine's `structured_delegate`): the models calling mean.dim break with it, counted on its
    # device's eager path as coverage counts a work item's members
    on_dlprim = dataclasses.replace(table, counts=on_device(table.counts, "PrivateUse1"))
    assert dlprim.broken_models == model_reach(
        on_dlprim,
        ("eager_inference", "eager_training"),
        ("mean.out", "mean.dim"),
        None,
        served=frozenset({"mean.dim"}),
    )
    assert 0 < dlprim.broken_models.used_by < dlprim.broken_models.of
    # no model calls mean.out itself: the count says they reach it through mean.dim, every one of
    # them; XLA's own mean.dim reaches its models, and says nothing more
    assert dlprim.broken_models.through == Through(dlprim.broken_models.used_by, ("mean.dim",))
    (kernel,) = dlprim.broken
    assert kernel.models == dlprim.broken_models
    assert xla.broken_models.through is None
    # the new op: every backend lacks it, and no table can say whether models use it
    assert xla.ops == ("_philox_randint",)  # its functional variant, on a functional backend
    assert xla.ops_models is not None and xla.ops_models.short_words() == "no model data yet"
    assert all(g.models_caveat == "" for g in found.values())  # 2.14.1 has its own table
    # a HEAD that names no release: no counts, and nothing said of models
    bare = gaps(folder, "mlir", *pr("2.14.1", with_fast(release_text("2.14.1"))))
    assert all(g.broken_models is None and g.ops_models is None for g in bare.values())
    body = render(
        compute_drift(base, head), "weekly-issue", context=ReportContext(backend_gaps=tuple(found.values()))
    )
    (line,) = [x for x in body.splitlines() if "`mean.dim` — used by " in x]
    assert "— no model data yet" in body
    check_golden_entry(
        "weekly.lines.md", "a gap: a kernel that no longer builds", line + "\n", updating(request)
    )
    assert "— no model data yet" in body


def test_a_count_names_the_ops_its_models_reach_the_kernels_through(
    folder: Path, request: pytest.FixtureRequest
) -> None:
    """dlprim (2.14.1, its real src/ tree and the 2.14.1 model table) writes `mean.out`, which no model
    calls: all of its models come through `mean.dim`, whose structured kernel runs it. With `relu_`,
    which models call themselves, only those that call neither come through `mean.dim`; five out= ops
    it lacks come through their functional ops, three named; `mean.dim` on its own says nothing more."""
    import dataclasses

    from opdrift.coverage.workitems import Through
    from opdrift.render.reach import reach_phrase

    head = pipeline.load_snapshot(str(write_release("2.14.1", folder / "release")))
    head = dataclasses.replace(head, meta=dataclasses.replace(head.meta, torch_version="2.14.1"))
    text = 'subscriptions:\n  - who: ["@dlprim"]\n    backend: {kind: cpp, path: dlprim}\n'
    cfg = parse_config(text, str(folder / "opdrift.yml"), base_dir=str(folder))
    _, implemented = backend_work(cfg, head)
    (kernels,) = implemented.values()
    models = kernels.models
    # it writes mean.out and relu_, and lacks sin.out: a list of needs is counted the same way
    assert (
        models is not None and {"mean.out", "relu_"} <= set(kernels.forms) and "sin.out" not in kernels.forms
    )
    mean, dim = models.reach(["mean.out"]), models.reach(["mean.dim"])
    assert mean is not None and dim is not None and 0 < mean.used_by == dim.used_by
    assert mean.through == Through(mean.used_by, ("mean.dim",)) and dim.through is None
    partly = models.reach(["mean.out", "relu_"])
    relu = models.reach(["relu_"])
    assert partly is not None and relu is not None and relu.through is None
    assert partly.through == Through(partly.used_by - relu.used_by, ("mean.dim",))
    assert 0 < partly.through.models < partly.used_by
    five = models.reach(["sin.out", "cos.out", "rsqrt.out", "cumsum.out", "floor.out"])
    assert five is not None and five.through is not None
    assert (len(five.through.ops), five.through.more) == (3, 2)
    said = "".join(f"{reach_phrase(r)}\n" for r in (mean, partly, five, dim))
    check_golden_entry("weekly.lines.md", "a count through the ops a kernel serves", said, updating(request))


def test_the_broken_kernel_shown_is_the_change_that_breaks_it_not_a_forced_list_binding() -> None:
    """op-plugin's codegen binds `_scaled_mm_v2`'s tensor lists as ITensorListRef whatever upstream
    says (`BackendOp.ilistref_either`): a change that only switches TensorList and ITensorListRef does
    not break it, so the declarations shown are those of the change that does (a new argument)."""
    from opdrift.app.subscriptions import Kernels, _kernel
    from opdrift.coverage.oplist import BackendOp
    from opdrift.drift.changes import Change
    from opdrift.schema.kernel import KernelChange, KernelSignature

    def sig(*params: str) -> KernelSignature:
        return KernelSignature("int64_t", "at::Tensor", params)

    list_only = KernelChange(
        "int64_t", sig("at::TensorList", "int64_t"), sig("const at::ITensorListRef &", "int64_t")
    )
    real = KernelChange("int64_t", sig("at::TensorList", "int64_t"), sig("at::TensorList", "int64_t", "bool"))
    change = Change(
        kind="changed",
        name="_scaled_mm_v2",
        category="core",
        fingerprint="x",
        before=None,
        after=None,
        kernel="breaking",
        kernel_changes=(list_only, real),
    )
    forced = BackendOp("_scaled_mm_v2", 1, "op_plugin_functions.yaml", "official", ilistref_either=True)
    listed = Kernels({"_scaled_mm_v2": "int64_t"}, "2.15.0", {"_scaled_mm_v2": forced})
    shown = _kernel(change, listed)
    assert (shown.before, shown.after) == (real.before, real.after)
    # a backend whose codegen follows upstream is shown the first change of its form, the list's
    plain = Kernels({"_scaled_mm_v2": "int64_t"}, "2.15.0", {})
    assert _kernel(change, plain).after == list_only.after
