"""`opdrift watch` tells each backend the whole truth: open upstream pull requests replayed on
a real PyTorch-shaped history (tests/watch_upstream.py) whose main is the release the change was made
against, each PR head that change as the next release shipped it, judged for four real backends at once
(torch-mlir's ODS of the time, XLA, op-plugin, dlprim; tests/data/backends/real, SOURCES.md).

Each PR warns exactly the backends it asks something of, with the list that says what: torch-mlir of a
schema change to an op it records, XLA of an op leaving the core set, dlprim of a removed op it
registers. No other backend is warned.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import jsonschema
import pytest
from datafiles import DATA
from goldens import check_golden_entry, updating
from pytorch_history import NATIVE, swapped
from watch_upstream import Run, Upstream

from opdrift.app.watch_judge import who_by_backend
from opdrift.app.watch_state import read_state
from opdrift.config.file import BotConfig, parse_config
from opdrift.render.watch import watch_json

REAL = DATA / "backends" / "real"
ROOT = Path(__file__).resolve().parents[2]


def _config(folder: Path, dlprim: Path, td: str) -> BotConfig:
    lists = {
        "GeneratedTorchOps.td": td,
        "xla_native_functions.yaml": "pytorch-xla.xla_native_functions.yaml.xz",
        "op_plugin_functions.yaml": "op-plugin.op_plugin_functions.yaml.xz",
    }
    for name, packed in lists.items():
        (folder / name).write_bytes(lzma.decompress((REAL / packed).read_bytes()))
    text = (
        "subscriptions:\n"
        '  - who: ["@mlir-team"]\n    backend: {kind: torch-mlir, path: GeneratedTorchOps.td}\n'
        '  - who: ["@xla-team"]\n    backend: {kind: xla, path: xla_native_functions.yaml}\n'
        '  - who: ["@npu-team"]\n    backend: {kind: op-plugin, path: op_plugin_functions.yaml}\n'
        f'  - who: ["@dlprim-team"]\n    backend: {{kind: cpp, path: "{dlprim}"}}\n'
    )
    (folder / "opdrift.yml").write_text(text)
    return parse_config(text, str(folder / "opdrift.yml"), base_dir=str(folder))


def _watch(
    tmp_path: Path, dlprim: Path, release: str, td: str, entries: dict[str, str | None]
) -> tuple[dict[str, dict[str, tuple[str, ...]]], str, dict[str, object]]:
    """One PR against RELEASE changing ENTRIES (as `swapped`), watched for the four backends: each
    warned backend's kind → its non-empty lists, the run's comment, and the JSON."""
    up = Upstream(tmp_path / "up", release)
    folder = tmp_path / "cfg"
    folder.mkdir()
    cfg = _config(folder, dlprim, td)
    run = Run(up, cfg)
    run.pulls.add(1, up.commit({NATIVE: swapped(release, entries)}, "the change"), title="the change")
    plan = run()
    assert not run.warnings
    ((_, impacts),) = plan.view.news  # the one PR is news for every backend it affects
    assert impacts == plan.view.rows[0].impacts
    found: dict[str, dict[str, tuple[str, ...]]] = {}
    for i in impacts:
        lists = {"needs": i.ops, "breaks": i.broken_names, "removes": i.removed}
        lists |= {g.field: ops for g, ops, _ in i.also()}
        found[i.kind] = {k: v for k, v in lists.items() if v}
    # the state keeps every list: the next run reads the same rows back, and nothing is news again
    state, problem = read_state(plan.body, who_by_backend(cfg))
    assert problem is None and state.rows[0].impacts == plan.view.rows[0].impacts
    assert run().comment == ""
    data = watch_json(plan.view)
    jsonschema.validate(data, json.loads((ROOT / "schemas" / "watch.schema.json").read_text()))
    return found, plan.comment, data


@pytest.mark.slow
def test_the_watch_warns_torch_mlir_of_mean_dims_optional_dim(
    tmp_path: Path, dlprim_src: Path, request: pytest.FixtureRequest
) -> None:
    """llvm/torch-mlir#1121: 1.13.0's `int[1]? dim` against torch-mlir's ODS of 2022-08-01."""
    found, comment, _ = _watch(
        tmp_path, dlprim_src, "1.12.0", "torch-mlir-2022-08.GeneratedTorchOps.td.xz",
        {"mean.dim": "1.13.0", "mean.out": "1.13.0"},
    )  # fmt: skip
    assert found["torch-mlir"] == {"schema_changed": ("mean.dim",)}
    # the C++ backends implement mean: their kernels stop compiling, as before this issue
    assert found["xla"] == {"breaks": ("mean.dim",)}
    assert all("schema_changed" not in v for k, v in found.items() if k != "torch-mlir")
    assert "@mlir-team" in comment
    (line,) = [x for x in comment.splitlines() if "📐" in x]
    assert line.lstrip("- ").startswith("📐 1 op ") and line.endswith(": `mean.dim`")
    check_golden_entry("watch.lines.md", "schema changed: torch-mlir", line + "\n", updating(request))


@pytest.mark.slow
def test_the_watch_warns_torch_mlir_of_enable_gqa_and_no_backend_without_sdpa(
    tmp_path: Path, dlprim_src: Path
) -> None:
    """2.5.0's `enable_gqa` against torch-mlir's ODS of 2024-08-14 (before llvm/torch-mlir#3627)."""
    found, comment, data = _watch(
        tmp_path, dlprim_src, "2.4.0", "torch-mlir-2024-08.GeneratedTorchOps.td.xz",
        {"scaled_dot_product_attention": "2.5.0"},
    )  # fmt: skip
    assert found["torch-mlir"] == {"schema_changed": ("scaled_dot_product_attention",)}
    assert "xla" not in found and "cpp" not in found  # neither lists it
    assert "@xla-team" not in comment and "@dlprim-team" not in comment
    pulls = data["pulls"]
    assert isinstance(pulls, list) and len(pulls) == 1
    mlir = next(b for b in pulls[0]["backends"] if b["kind"] == "torch-mlir")
    assert mlir["schema_changed"] == ["scaled_dot_product_attention"] and mlir["new"]


@pytest.mark.slow
def test_the_watch_warns_xla_of_native_batch_norm_leaving_the_core_set(
    tmp_path: Path, dlprim_src: Path
) -> None:
    """pytorch/xla#5880: 2.1.0's `native_batch_norm` entry (no `core` tag) against 2.0.0."""
    found, comment, _ = _watch(
        tmp_path, dlprim_src, "2.0.0", "torch-mlir-2024-08.GeneratedTorchOps.td.xz",
        {"native_batch_norm": "2.1.0"},
    )  # fmt: skip
    assert found["xla"] == {"left_core": ("native_batch_norm",)}
    # torch-mlir lowers the Core ATen opset and records native_batch_norm too; the eager ones do not
    assert found["torch-mlir"] == {"left_core": ("native_batch_norm",)}
    assert set(found) == {"xla", "torch-mlir"}
    assert "@npu-team" not in comment and "@dlprim-team" not in comment
    assert "📉 1 op it lists that left the Core ATen opset" in comment


@pytest.mark.slow
def test_the_watch_warns_dlprim_of_a_removed_op_it_registers(
    tmp_path: Path, dlprim_src: Path, request: pytest.FixtureRequest
) -> None:
    """A PR removing `mse_loss_backward` from 2.14.1: dlprim's registration is dead (its build takes
    it), XLA's and op-plugin's codegen refuses the name."""
    found, comment, _ = _watch(
        tmp_path, dlprim_src, "2.14.1", "torch-mlir.GeneratedTorchOps.td.xz", {"mse_loss_backward": None}
    )
    assert found["cpp"] == {"dead": ("mse_loss_backward",)}
    assert found["xla"] == {"removes": ("mse_loss_backward",)} == found["op-plugin"]
    assert "torch-mlir" not in found
    assert "@dlprim-team" in comment
    (line,) = [x for x in comment.splitlines() if "🪦" in x]
    assert line.lstrip("- ").startswith("🪦 1 op ") and line.endswith(": `mse_loss_backward`")
    check_golden_entry("watch.lines.md", "dead registration: cpp", line + "\n", updating(request))
