"""The per-dispatch-key kernel model (opdrift.operators.kernels) on the real release files: what the
snapshot records, what `explain`, `diff` and `coverage` read from it, and version-1 snapshots."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from goldens import check_golden_entry, updating

from opdrift import pipeline
from opdrift.coverage.backends import read_backend
from opdrift.coverage.check import compute_coverage
from opdrift.dispatchkeys import CEA, CEA_NON_FUNCTIONAL, CIA, CIA_NESTED, STRUCTURED_KEYS
from opdrift.errors import SnapshotError
from opdrift.model import Snapshot
from opdrift.operators.kernels import (
    DELEGATE,
    OWN,
    kernel_for,
    profile_kernel,
)
from opdrift.snapshot import from_json, to_json
from opdrift.work.rules import DECOMPOSES, DEFAULT_KERNEL, NEEDS_KERNEL, words

NESTED_AND_EXPLICIT = ("zeros_like", "randn_like", "randn_like.generator")


@pytest.fixture(scope="module")
def s215(release_file: Callable[[str], Path]) -> Snapshot:
    return pipeline.load_snapshot(str(release_file("2.15.0")))


def _table(snapshot: Snapshot, name: str) -> dict[str, str]:
    return dict(snapshot.operators[name].facets.kernels)


def test_a_nested_tensor_decomposition_serves_only_nested_keys(s215: Snapshot) -> None:
    """`CompositeExplicitAutograd, CompositeImplicitAutogradNestedTensor: …` on one dispatch line: dense
    keys get the explicit kernel, the NestedTensor keys decompose."""
    for name in NESTED_AND_EXPLICIT:
        rec = s215.operators[name]
        table = dict(rec.facets.kernels)
        assert table == {CEA: CEA, CIA_NESTED: CIA_NESTED}, name
        assert rec.facets.composite == CEA, name
        assert kernel_for(table, "PrivateUse1") == kernel_for(table, "XLA") == CEA
        assert kernel_for(table, "NestedTensorCPU") == CIA_NESTED


def test_the_dispatchers_order_per_key(s215: Snapshot) -> None:
    """The dispatcher's fill order on real entries: own kernel, NonFunctional (not for Sparse, XLA or
    Lazy), Explicit (not for NestedTensor), the decompositions, else nothing."""
    scatter = _table(s215, "slice_scatter")  # CompositeExplicitAutogradNonFunctional only
    assert kernel_for(scatter, "PrivateUse1") == kernel_for(scatter, "MPS") == CEA_NON_FUNCTIONAL
    assert kernel_for(scatter, "XLA") is None and kernel_for(scatter, "Lazy") is None
    assert kernel_for(scatter, "SparseCPU") is None
    assert kernel_for(scatter, "NestedTensorCPU") is None

    add = _table(s215, "add.Tensor")  # structured_delegate add.out, plus kernels of its own
    assert kernel_for(add, "CPU") == kernel_for(add, "MPS") == DELEGATE
    assert kernel_for(add, "SparseCPU") == OWN
    assert kernel_for(add, "PrivateUse1") is None
    assert _table(s215, "add.out")["CPU"] == OWN

    relu6 = _table(s215, "relu6")  # no dispatch table: decomposes everywhere
    assert relu6 == {CIA: CIA}
    assert kernel_for(relu6, "NestedTensorCPU") == kernel_for(relu6, "XLA") == CIA

    # every structured_delegate op's structured keys run the delegate's kernel, and only those
    for rec in s215.operators.values():
        if rec.facets.structured_delegate is not None:
            delegated = {k for k, v in rec.facets.kernels if v == DELEGATE}
            assert delegated <= STRUCTURED_KEYS, rec.name


def test_profiles_read_the_same_table(s215: Snapshot) -> None:
    zeros = _table(s215, "zeros_like")
    assert [profile_kernel(zeros, p) for p in ("eager", "functional", "export")] == [CEA, CEA, None]
    scatter = _table(s215, "slice_scatter")
    assert [profile_kernel(scatter, p) for p in ("eager", "functional", "export")] == [
        CEA_NON_FUNCTIONAL,
        None,
        None,
    ]


def test_explain_shows_each_kind_of_backend(opdrift: Opdrift, release_file: Callable[[str], Path]) -> None:
    run = opdrift("explain", "zeros_like", str(release_file("2.15.0")))
    assert run.code == 0, run.err
    record = run.out.split("zeros_like.out", 1)[0]
    assert "composite: CompositeExplicitAutograd\n" in record
    served = f"{words(DEFAULT_KERNEL)} (CompositeExplicitAutograd)"  # the rule's sentence, then the kernel
    assert (
        f"without its own: eager (PrivateUse1): {served}; functional (XLA): {served}; "
        f"export (an exported graph): {words(DECOMPOSES)} (PyTorch 2.14.1's Core-ATen table names it)"
    ) in record
    # one answer with coverage and the drift (opdrift.drift.needs.export_path_for): _to_copy is in no table
    to_copy = opdrift("explain", "_to_copy", str(release_file("2.15.0")))
    need = words(NEEDS_KERNEL, profile="export")
    assert f"export (an exported graph): {need}" in to_copy.out.split("_to_copy.out", 1)[0]
    add = opdrift("explain", "add.Tensor", str(release_file("2.15.0")))
    assert "CPU, CUDA, MPS, MTIA, XPU (from add.out)" in add.out


@pytest.mark.slow
def test_diff_says_which_profiles_must_act(
    opdrift: Opdrift, release_file: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """2.1.0 moved four *_scatter ops from CompositeExplicitAutograd to NonFunctional: XLA lost its
    default kernel, eager backends kept one, and an exported graph needed a lowering before and after.
    `zeros_like` and friends gained a NestedTensor decomposition, which no dense backend sees."""
    run = opdrift(
        "diff",
        str(release_file("2.0.0")),
        str(release_file("2.1.0")),
        "--format",
        "json",
        "--fail-on",
        "never",
    )
    assert run.code == 0, run.err
    data = json.loads(run.out)
    items = {c["name"]: c for section in ("added", "removed", "renamed", "changed") for c in data[section]}
    for name in ("slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter"):
        item = items[name]
        assert (item["profiles"], item["needs_kernel_for"], item["needs_kernel"]) == (
            ["functional"],
            ["functional"],
            True,
        ), name
    std = items["std.correction"]
    # A bare yaml names no torch version, so the export path is the newest shipped one, whose Core-ATen
    # table decomposes std.correction (2.1's did not yet: bot/operators/data/core_aten.tsv).
    assert (std["breaking"], std["kernel"], std["profiles"], std["needs_kernel_for"]) == (
        False,
        "breaking",
        ["eager", "functional"],
        [],
    )
    for name in ("zeros_like", "randn_like"):
        codes = [d["code"] for d in items[name]["changes"]]
        assert "composite_changed" not in codes and items[name]["profiles"] == [], name
    # a new CompositeExplicitAutograd op is work for compilers of exported graphs only
    assert items["empty_permuted"]["profiles"] == ["export"]
    summary = data["summary"]["profiles"]
    assert summary == {
        p: sum(p in c["profiles"] for c in items.values()) for p in ("eager", "functional", "export")
    }

    markdown = opdrift(
        "diff",
        str(release_file("2.0.0")),
        str(release_file("2.1.0")),
        "--format",
        "markdown",
        "--fail-on",
        "never",
    )
    (line,) = [x for x in markdown.out.splitlines() if "`slice_scatter` (`scatter_gather`): " in x]
    now, was = (
        line.index("`CompositeExplicitAutogradNonFunctional`"),
        line.index("`CompositeExplicitAutograd`"),
    )
    assert now < was and line.endswith(" · for functional")
    check_golden_entry("report.lines.txt", "default kernel: slice_scatter", line + "\n", updating(request))


def test_the_real_dlprim_tree_needs_no_kernel_for_the_nested_composites(
    dlprim_src: Path, s215: Snapshot
) -> None:
    cov = compute_coverage(s215, read_backend("cpp", str(dlprim_src)))
    by_name = {o.name: o for o in cov.ops}
    for name in NESTED_AND_EXPLICIT:
        assert (by_name[name].covered, by_name[name].rule) == (True, "default_kernel"), name
    assert by_name["slice_scatter"].covered  # eager: the NonFunctional kernel serves it


def _as_version_1(snapshot: Snapshot) -> str:
    """The snapshot as opdrift wrote it before per-key kernels: no `kernels` facet, and `composite` the
    first composite key in COMPOSITE_KEYS' order."""
    order = (CIA, CIA_NESTED, CEA, CEA_NON_FUNCTIONAL)
    data = json.loads(to_json(snapshot))
    data["format_version"] = 1
    for record in data["operators"].values():
        facets = record["facets"]
        del facets["kernels"]
        facets["composite"] = next((k for k in order if k in facets["dispatch"]), None)
    return json.dumps(data)


@pytest.mark.parametrize("version", ["1.12.0", "2.1.0", "2.15.0"])
@pytest.mark.slow
def test_a_version_1_snapshot_is_read_with_its_kernels_derived(
    release_file: Callable[[str], Path], version: str
) -> None:
    """A stored version-1 snapshot (the weekly workflow's `main.json`) still loads. Its facets lack
    where each key's kernel comes from; the derived table is the fresh parse's, except where version 1
    cannot tell: a structured_delegate operator's non-structured keys that its delegate also has."""
    fresh = pipeline.load_snapshot(str(release_file(version)))
    old = from_json(_as_version_1(fresh), "main.json")
    assert old.decisions == fresh.decisions
    for name, rec in fresh.operators.items():
        got = old.operators[name].facets
        assert got.composite == rec.facets.composite, name
        if got.kernels != rec.facets.kernels:
            assert rec.facets.structured_delegate is not None, name
            extra = set(got.kernels) - set(rec.facets.kernels)
            assert extra and all(src == OWN and key not in STRUCTURED_KEYS for key, src in extra), name
            assert set(rec.facets.kernels) <= set(got.kernels), name


def test_a_kernel_table_with_an_unknown_source_is_refused(
    s215: Snapshot, request: pytest.FixtureRequest
) -> None:
    good = to_json(s215)
    line = next(x for x in good.splitlines() if x.startswith('  "relu6": {"base"'))
    text = good.replace(
        line,
        line.replace(
            '"kernels": {"CompositeImplicitAutograd": "CompositeImplicitAutograd"}',
            '"kernels": {"CPU": "mine"}',
        ),
    )
    assert text != good
    with pytest.raises(SnapshotError) as err:
        from_json(text, "snap.json")
    message = str(err.value)
    assert message.startswith("snap.json:") and ": operators['relu6'].facets.kernels: " in message
    check_golden_entry(
        "errors.lines.txt", "snapshot: kernels of the wrong shape", message + "\n", updating(request)
    )
    where = message.split(":")[1]
    assert text.splitlines()[int(where) - 1].startswith('  "relu6": {"base"')
