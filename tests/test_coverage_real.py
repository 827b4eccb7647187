"""Coverage of real downstream op lists (tests/data/backends/real, sources and commits in SOURCES.md)."""

from __future__ import annotations

import lzma
from collections.abc import Callable
from pathlib import Path

import pytest
from datafiles import DATA

from bot import pipeline
from bot.coverage.backends import read_backend
from bot.coverage.check import Coverage, compute_coverage

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


def test_an_out_variant_of_another_group_is_not_derived(xla_215: Coverage) -> None:
    """Pairing follows the groups: an out= op whose arguments differ from every listed functional op
    (beyond the tensor options) still needs its own kernel."""
    derived = [o for o in xla_215.ops if o.rule == "backend_codegen"]
    assert derived, "the real XLA list derives variants"
    by_name = {o.name: o for o in xla_215.ops}
    for o in derived:
        assert o.via in by_name and by_name[o.via].rule == "listed"
