"""Intel XPU since torch-xpu-ops deleted its yaml (June 2026): its kernels are PyTorch's own `XPU:`
entries (``dispatch=XPU``), and the ops it lacks but lists in XPUFallback.cpp's `fallback_list` run on
CPU; every other op it lacks fails (its catch-all fallback raises unless PYTORCH_ENABLE_XPU_FALLBACK=1).
Real data: the vendored XPUFallback.cpp (intel/torch-xpu-ops at 9061f28) and snapshots/v2.15.0.json."""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path
from typing import Any

import pytest
from clirun import ROOT, Opdrift
from datafiles import DATA
from goldens import check_golden_entry, updating

from opdrift.coverage.backends import read_backend

REAL = DATA / "backends" / "real"
SNAPSHOT = str(ROOT / "snapshots" / "v2.15.0.json")
# The fallback_list of XPUFallback.cpp at 9061f28 (2026-08-12), in its order.
LISTED = [
    "cholesky_inverse",
    "cholesky_inverse.out",
    "_cholesky_solve_helper",
    "_efficient_attention_forward",
    "hash_tensor.out",
    "linalg_cholesky_ex.L",
    "linalg_eig",
    "linalg_eig.out",
    "_linalg_eigvals",
    "linalg_eigvals.out",
    "_linalg_eigh.eigenvalues",
    "linalg_ldl_factor_ex.out",
    "linalg_ldl_solve.out",
    "linalg_lstsq.out",
    "linalg_lu.out",
    "linalg_matrix_exp",
    "linalg_matrix_sqrth",
    "linalg_polar.out",
    "_linalg_svd.U",
    "lu_unpack.out",
    "ormqr",
    "ormqr.out",
    "triangular_solve.X",
    "_validate_compressed_sparse_indices",
]


@pytest.fixture
def fallback_cpp(tmp_path: Path) -> Path:
    path = tmp_path / "XPUFallback.cpp"
    path.write_bytes(lzma.decompress((REAL / "torch-xpu-ops.XPUFallback.cpp.xz").read_bytes()))
    return path


def test_the_real_fallback_list_reads_every_name_and_no_kernel(fallback_cpp: Path) -> None:
    found = read_backend("xpu-fallback", str(fallback_cpp))
    assert found.ops == ()  # it names no kernel of XPU's
    assert tuple(op.name for op in found.cpu_fallback_ops) == tuple(LISTED)
    assert {op.dispatch_key for op in found.cpu_fallback_ops} == {"XPU"}
    assert found.cpu_fallback_ops[0].line == 345
    assert found.cpu_fallback_at == f"{fallback_cpp}:344 (XPU)"
    # The catch-all `m.fallback` at line 298 is no boxed CPU fallback for every op: by default it raises.
    assert found.fallback is None


def _items(opdrift: Opdrift, *argv: str) -> tuple[dict[str, Any], dict[str, str]]:
    run = opdrift("coverage", *argv, SNAPSHOT, "--format", "json")
    assert run.code == 0, run.err
    (backend,) = json.loads(run.out)["backends"]
    today = {}
    for item in backend["work_items"]:
        for name in (item["name"], *item["members"]):
            today[name] = item["today"]
    return backend, today


def test_listed_ops_run_on_cpu_and_an_unlisted_op_without_an_xpu_kernel_fails(
    opdrift: Opdrift, fallback_cpp: Path
) -> None:
    backend, today = _items(
        opdrift, "--backend", "xpu:dispatch=XPU", "--backend", f"xpu:xpu-fallback={fallback_cpp}"
    )
    assert backend["backend"]["cpu_fallback_list"] == f"{fallback_cpp}:344 (XPU)"
    assert backend["backend"]["fallback"] is None and backend["uncovered_run"] == "fails"
    # listed, no XPU kernel in 2.15.0's yaml, a CPU kernel: runs on CPU
    for name in ("linalg_eig", "linalg_eig.out", "ormqr", "cholesky_inverse", "linalg_matrix_exp"):
        assert today[name] == "cpu_fallback", name
    # not listed, no XPU kernel, though PyTorch has a CPU one: fails on XPU
    for name in ("slow_conv_dilated2d", "slow_conv_transpose3d"):
        assert today[name] == "fails", name
    # linalg_polar.out is listed but served upstream at 2.15.0: torch-xpu-ops skips a listed op that
    # has an XPU kernel, and coverage does not count it
    assert "linalg_polar.out" not in today
    # a structured group whose out= op alone is listed: its functional op has no XPU kernel and is not
    # listed, so it still fails (the item says so)
    assert today["hash_tensor.out"] == today["hash_tensor"] == "fails"
    # without the fallback list, the listed ops fail too
    _, bare = _items(opdrift, "--backend", "dispatch=XPU")
    assert bare["linalg_eig"] == bare["ormqr"] == "fails"


def test_the_text_report_counts_what_the_list_runs_on_cpu(
    opdrift: Opdrift, fallback_cpp: Path, request: pytest.FixtureRequest
) -> None:
    run = opdrift(
        "coverage", "--backend", "xpu:dispatch=XPU", "--backend", f"xpu:xpu-fallback={fallback_cpp}", SNAPSHOT
    )
    assert run.code == 0, run.err
    head = run.out.splitlines()[1]
    # how many run on CPU, by which list at which line, and how many fail (golden: the wording)
    assert re.search(
        rf"\d+ need a kernel \(22 run on CPU .* {re.escape(fallback_cpp.name)}:344 \(XPU\) .*; \d+ ", head
    )
    check_golden_entry("coverage.lines.txt", "xpu fallback: the count", head + "\n", updating(request))


def test_a_fallback_list_alone_is_refused_in_one_line(opdrift: Opdrift, fallback_cpp: Path) -> None:
    run = opdrift("coverage", "--backend", f"xpu-fallback={fallback_cpp}", SNAPSHOT)
    assert run.code == 2 and run.out == ""
    assert run.err.count("\n") == 1 and "Traceback" not in run.err
    assert run.err.startswith(f"opdrift: error: {fallback_cpp}: the xpu-fallback list names the ops")


def test_the_old_xpu_yaml_says_xpu_now_lives_upstream(opdrift: Opdrift, tmp_path: Path) -> None:
    yaml_path = tmp_path / "xpu_functions.yaml"
    yaml_path.write_bytes(lzma.decompress((REAL / "torch-xpu-ops.xpu_functions.yaml.xz").read_bytes()))
    run = opdrift("coverage", "--backend", f"xpu={yaml_path}", SNAPSHOT)
    assert run.code == 0
    said = [line for line in run.err.splitlines() if "deleted xpu_functions.yaml" in line]
    assert len(said) == 1 and "--backend xpu:dispatch=XPU" in said[0], run.err
