"""torch-mlir's FX decomposition table in both of its forms (tests/data/backends/real, SOURCES.md): the hand
list `DEFAULT_DECOMPOSITIONS` (the checkout's fx_decomp_util.py, df3b957) and, from llvm/torch-mlir#4733,
`core_aten_decompositions()` minus `_EXPANDED_DECOMP_EXCLUDE`, plus the hand list, resolved against the
release judged."""

from __future__ import annotations

import json
import lzma
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA
from goldens import check_golden_entry, updating
from releasesnap import release_snapshot

from opdrift.coverage.backends import BackendList, read_backend
from opdrift.coverage.check import compute_coverage
from opdrift.coverage.torch_mlir import FX_DECOMP_PATH, read_fx_table
from opdrift.model import Snapshot
from opdrift.operators.export_table import core_aten_release

REAL = DATA / "backends" / "real"
EXPANDED = lzma.decompress((REAL / "torch-mlir.fx_decomp_util.pr4733.py.xz").read_bytes()).decode("utf-8")
EXCLUDED = "_EXPANDED_DECOMP_EXCLUDE"


def _checkout(root: Path, fx_text: str | None) -> Path:
    with tarfile.open(REAL / "torch-mlir.checkout.tar.xz") as tar:
        tar.extractall(root, filter="data")
    if fx_text is not None:
        (root / FX_DECOMP_PATH).write_text(fx_text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def hand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _checkout(tmp_path_factory.mktemp("hand"), None)


@pytest.fixture(scope="module")
def expanded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _checkout(tmp_path_factory.mktemp("expanded"), EXPANDED)


@pytest.fixture(scope="module")
def snapshots() -> dict[str, Snapshot]:
    """The releases with their torch version known, as a release's snapshot has it."""
    return {v: release_snapshot(v) for v in ("2.5.0", "2.13.0", "2.15.0")}


def _rules(snapshot: Snapshot, backend: BackendList) -> dict[str, str]:
    """Every operator's rule for a torch-mlir that lists nothing, with BACKEND's table."""
    empty = BackendList(
        "torch-mlir",
        "empty",
        (),
        decompositions=backend.decompositions,
        decompositions_path=backend.decompositions_path,
        decompositions_core_except=backend.decompositions_core_except,
        decompositions_form=backend.decompositions_form,
    )
    return {o.name: o.rule for o in compute_coverage(snapshot, empty).ops}


def test_both_forms_are_read(hand: Path, expanded: Path) -> None:
    old = read_backend("torch-mlir", str(hand))
    assert old.decompositions_core_except is None and not old.warnings
    assert old.decompositions_form == "the hand list DEFAULT_DECOMPOSITIONS"
    assert {"squeeze.dims", "linspace", "t.*", "xlogy.*"} <= (old.decompositions or frozenset())
    new = read_backend("torch-mlir", str(expanded))
    assert not new.warnings
    assert new.decompositions_form == (
        f"core_aten_decompositions() minus the 35 operators of {EXCLUDED}, plus DEFAULT_DECOMPOSITIONS"
    )
    excluded = new.decompositions_core_except or frozenset()
    # the file's packets, every one: 22 FFT ops, 3 norms, linalg_slogdet and 9 the backends cannot take
    assert (
        len(excluded) == 35
        and {"roll", "fft_fft", "stft", "norm", "linalg_vector_norm", "isclose"} <= excluded
    )
    # the hand list the new form adds, its hasattr-guarded appends included; the old one's other entries gone
    assert new.decompositions == frozenset(
        {
            *("native_group_norm.*", "upsample_bilinear2d.vec", "native_layer_norm.*", "addmm.*"),
            *("_native_batch_norm_legit_functional.*", "_native_batch_norm_legit_no_training.*"),
            *("_native_batch_norm_legit.*", "_native_batch_norm_legit.no_stats", "squeeze.dims"),
            *("_euclidean_dist.*", "grid_sampler_2d.*", "_adaptive_avg_pool2d.*", "full.*"),
            *("_log_softmax.*", "_to_copy.*", "diag.*", "scaled_dot_product_attention.*"),
            "_scaled_dot_product_flash_attention_for_cpu.*",
        }
    )
    # the merged file caches the function (review of #4733); the decorator changes nothing read
    cached = EXPANDED.replace(
        "def get_expanded_decomposition_table():",
        "@functools.cache\ndef get_expanded_decomposition_table():",
    )
    assert "@functools.cache" in cached
    assert read_fx_table("import functools\n" + cached, "f.py").core_except == excluded


def test_the_hand_list_form_judges_as_before(hand: Path, snapshots: dict[str, Snapshot]) -> None:
    """The hand list alone decomposes: hardshrink and cdist (not named) reach torch-mlir at 2.15.0."""
    backend = read_backend("torch-mlir", str(hand))
    rules = _rules(snapshots["2.15.0"], backend)
    assert rules["squeeze.dims"] == rules["grid_sampler_2d"] == "decomposes"
    assert rules["hardshrink"] == rules["cdist"] == rules["pixel_shuffle"] == "needs_kernel"
    assert rules["roll"] == "needs_kernel"
    cov = compute_coverage(snapshots["2.15.0"], backend)
    assert cov.decompositions == f"{FX_DECOMP_PATH} (the hand list DEFAULT_DECOMPOSITIONS)"


@pytest.mark.parametrize("version", ["2.13.0", "2.15.0"])
def test_the_new_form_is_core_minus_the_exclusions_at_the_sources_release(
    expanded: Path, snapshots: dict[str, Snapshot], version: str
) -> None:
    snapshot = snapshots[version]
    backend = read_backend("torch-mlir", str(expanded))
    rules = _rules(snapshot, backend)
    # in the Core-ATen table and not excluded: decomposed before import
    assert rules["hardshrink"] == rules["pixel_shuffle"] == "decomposes"
    # excluded: roll's PT decomposition (arange+fmod+index_select) is left to torch-mlir's C++ one
    assert rules["roll"] == rules["logaddexp"] == rules["one_hot"] == "needs_kernel"
    # every overload of an excluded packet goes, the Core-ATen table's norm.Scalar among them
    assert rules["norm.Scalar"] == rules["norm.ScalarOpt_dim"] == "needs_kernel"
    # a functional CompositeImplicitAutograd op: core_aten_decompositions() names it from 2.6 ...
    assert rules["cdist"] == rules["kron"] == rules["diff"] == "decomposes"
    # ... but not one of an excluded packet, which export then keeps
    assert rules["fft_fft"] == rules["stft"] == "needs_kernel"
    # the hand list still decomposes what it names (squeeze.dims is no Core-ATen entry)
    assert rules["squeeze.dims"] == "decomposes"
    cov = compute_coverage(snapshot, backend)
    release = core_aten_release(version).version
    assert cov.decompositions == (
        f"{FX_DECOMP_PATH} (core_aten_decompositions() minus the 35 operators of {EXCLUDED},"
        f" plus DEFAULT_DECOMPOSITIONS), with PyTorch {release}'s Core-ATen table as core_aten_decompositions()"
    )
    assert not [o for o in cov.uncovered if snapshot.operators[o.name].kind in ("out", "inplace")]


def test_the_release_decides_what_core_aten_decompositions_holds(
    expanded: Path, snapshots: dict[str, Snapshot]
) -> None:
    """linalg_vector_norm joined the Core-ATen table in 2.14: the core table decomposes it at 2.15.0
    and not at 2.13.0; torch-mlir's exclusion keeps it at both. Before 2.6 export decomposes every
    CompositeImplicitAutograd op, excluded or not."""
    core = read_backend(
        "torch-mlir", str(expanded / "include/torch-mlir/Dialect/Torch/IR/GeneratedTorchOps.td")
    )
    backend = read_backend("torch-mlir", str(expanded))
    assert _rules(snapshots["2.13.0"], core)["linalg_vector_norm"] == "needs_kernel"
    assert _rules(snapshots["2.15.0"], core)["linalg_vector_norm"] == "decomposes"
    for version in ("2.13.0", "2.15.0"):
        assert _rules(snapshots[version], backend)["linalg_vector_norm"] == "needs_kernel"
    old = _rules(snapshots["2.5.0"], backend)
    assert old["fft_fft"] == old["cdist"] == "decomposes" and old["roll"] == "needs_kernel"
    assert old["hardshrink"] == "decomposes"


def test_a_form_not_read_is_said_with_its_line(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    unknown = EXPANDED.replace("if k._overloadpacket not in exclude", "if k not in exclude")
    found = read_fx_table(unknown, "fx.py")
    line = unknown.splitlines().index("def get_expanded_decomposition_table():") + 1
    (warning,) = found.warnings
    assert found.named is None and warning.startswith(f"fx.py:{line}: ")
    assert "get_expanded_decomposition_table()" in warning and "Core-ATen" in warning
    check_golden_entry(
        "backend-warnings.lines.txt", "torch-mlir: a table not read", warning + "\n", updating(request)
    )
    root = _checkout(tmp_path, unknown)
    backend = read_backend("torch-mlir", str(root))
    assert backend.decompositions is None and backend.decompositions_core_except is None
    assert backend.warnings == (found.warnings[0].replace("fx.py", str(root / FX_DECOMP_PATH)),)
    # an exclusion entry naming one overload: k._overloadpacket never equals it
    overload = EXPANDED.replace("torch.ops.aten.roll,", "torch.ops.aten.roll.default,")
    partial = read_fx_table(overload, "fx.py")
    assert partial.core_except is not None and "roll" not in partial.core_except
    assert (
        len(partial.warnings) == 1
        and "names the overload roll, which excludes nothing" in partial.warnings[0]
    )


@pytest.mark.slow
def test_the_cli_reads_a_checkout_of_the_new_form(
    opdrift: Opdrift, expanded: Path, release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    source = str(release_file("2.15.0"))
    run = opdrift("coverage", "--backend", f"torch-mlir={expanded}", "--format", "json", source)
    assert run.code == 0, run.err
    found = json.loads(run.out)["backends"][0]
    table = found["backend"]["decompositions"]
    assert f"minus the 35 operators of {EXCLUDED}" in table and "PyTorch 2.14.1's Core-ATen table" in table
    uncovered = {o["name"] for o in found["uncovered"]}
    assert "cdist" not in uncovered and "kron" not in uncovered
    text = opdrift("coverage", "--backend", f"torch-mlir={expanded}", source)
    assert f"(core_aten_decompositions() minus the 35 operators of {EXCLUDED}" in text.out
    md = opdrift("coverage", "--backend", f"torch-mlir={expanded}", "--format", "markdown", source)
    # Markdown escaped: the table's file and the function it calls, and how many it leaves out
    assert (
        r"extras/fx\_decomp\_util.py \(" in md.out
        and r"core\_aten\_decompositions\(\) minus the 35" in md.out
    )
    unknown = _checkout(tmp_path, EXPANDED.replace("core_aten_decompositions()", "my_table()"))
    warned = opdrift("coverage", "--backend", f"torch-mlir={unknown}", source)
    assert warned.code == 0 and f"{unknown / FX_DECOMP_PATH}:" in warned.err
    assert "cannot read the decomposition table" in warned.err
    assert "PyTorch 2.14.1's Core-ATen table" in warned.out
    shutil.rmtree(unknown)
