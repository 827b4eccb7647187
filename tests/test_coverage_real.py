"""Coverage of real downstream op lists (tests/data/backends/real, sources and commits in SOURCES.md)."""

from __future__ import annotations

import json
import lzma
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA

from bot import pipeline
from bot.coverage.backends import read_backend
from bot.coverage.check import Coverage, compute_coverage
from bot.operators.autogen import group_key
from bot.schema.grammar import parse_schema

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


def test_a_derived_variant_comes_from_a_listed_op_of_its_own_group(
    xla_215: Coverage, release_file: Callable[[str], Path]
) -> None:
    """Pairing follows torchgen's groups: every variant XLA's functionalization is said to derive has
    a listed functional op with the same signature()."""
    records = pipeline.load_snapshot(str(release_file("2.15.0"))).operators
    by_name = {o.name: o for o in xla_215.ops}
    derived = [o for o in xla_215.ops if o.rule == "backend_codegen"]
    assert len(derived) > 100, "the real XLA list derives many variants"
    for o in derived:
        assert by_name[o.via].rule == "listed" and records[o.via].kind == "functional"
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
    """A compiler of exported graphs sees CompositeExplicitAutograd ops (only CompositeImplicitAutograd
    decomposes there): torch-mlir needs a lowering for new_zeros, an eager backend does not."""
    snapshot = pipeline.load_snapshot(str(release_file("2.15.0")))
    backend = read_backend("torch-mlir", str(DATA / "backends" / "GeneratedTorchOps.td"))
    export = {o.name: o for o in compute_coverage(snapshot, backend).ops}
    eager = {o.name: o for o in compute_coverage(snapshot, backend, "eager").ops}
    assert (export["new_zeros"].covered, export["new_zeros"].rule) == (False, "needs_kernel")
    assert eager["new_zeros"].rule == "default_kernel"
    for name in ("trace_backward", "matmul"):  # CompositeImplicitAutograd: decomposes for every profile
        assert export[name].rule == eager[name].rule == "decomposes"


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


@pytest.fixture(scope="module")
def dlprim_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dlprim")
    with tarfile.open(REAL / "pytorch_dlprim.src.tar.xz") as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def test_the_real_dlprim_tree_reads_with_its_malformed_comments_as_warnings(
    dlprim_src: Path, opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    """pytorch_dlprim's sources hold three `// {"schema": "aten::...` comments cut short on their line;
    each is one warning naming its file and line, and the rest of the tree is read."""
    backend = read_backend("cpp", str(dlprim_src))
    assert [w.split(": ", 1)[0].rsplit("/", 1)[-1] for w in backend.warnings] == [
        "loss_ops.cpp:246",
        "pointwise_ops.cpp:735",
        "vision_ops.cpp:188",
    ]
    assert len(backend.ops) > 100
    assert any(op.schema for op in backend.ops), "the well-formed schema comments are still read"
    run = opdrift("coverage", "--backend", f"cpp={dlprim_src}", str(release_file("2.15.0")))
    assert run.code == 0, run.err
    assert run.err.count("a schema comment that is not") == 3
    assert "(profile: eager)" in run.out


def test_a_subscription_to_the_real_dlprim_tree_says_what_its_reader_skipped(
    dlprim_src: Path, release_file: Callable[[str], Path]
) -> None:
    from bot.publish.config import parse_config
    from bot.publish.setup import backend_lacking

    text = f'subscriptions:\n  - who: ["@dlprim"]\n    backend: {{kind: cpp, path: "{dlprim_src}"}}\n'
    config = parse_config(text, "opdrift.yml")
    said: list[str] = []
    (lacking,) = backend_lacking(
        config, pipeline.load_snapshot(str(release_file("2.15.0"))), warn=said.append
    ).values()
    assert len(said) == 3 and all("a schema comment that is not" in s for s in said)
    assert lacking, "the tree still needs kernels for some 2.15.0 operators"
