"""`opdrift watch` tells each backend the whole truth: open upstream pull requests replayed on
a real PyTorch-shaped history (tests/watch_upstream.py) whose main is the release the change was made
against, each PR head that change as the next release shipped it, judged for four real backends at once
(torch-mlir's ODS of the time, XLA, op-plugin, dlprim; tests/data/backends/real, SOURCES.md).

Each PR warns exactly the backends it asks something of, with the list that says what: torch-mlir of a
schema change to an op it records, XLA of an op leaving the core set, dlprim of a removed op it
registers. No other backend is warned. And a kernel a change breaks is shown alike by every channel:
the weekly issue, the PR comment and the watch read the gap's record of it.
"""

from __future__ import annotations

import json
import lzma
import re
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from datafiles import DATA
from goldens import check_golden_entry, updating
from pytorch_history import NATIVE, swapped
from watch_upstream import Run, Upstream

from opdrift import pipeline
from opdrift.app.prepare import backend_work
from opdrift.app.subscriptions import backend_gaps
from opdrift.app.watch_judge import who_by_backend
from opdrift.app.watch_state import read_state
from opdrift.config.file import BotConfig, parse_config
from opdrift.coverage.backends import read_backend
from opdrift.drift.changes import compute_drift
from opdrift.render.context import ReportContext
from opdrift.render.report import render
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


# --- a broken kernel, said one way by every channel ------------------------------------------------


def _said(body: str, op: str) -> set[tuple[str, str, str]]:
    """What BODY says of OP's broken kernel, once per backend it names: (the form it names, the
    declaration before, after; "" where it shows none)."""
    lines = body.splitlines()
    out = set()
    for i, line in enumerate(lines):
        said = line.lstrip().startswith(f"- `{op}`: ") or f"your `{op}` kernel from compiling" in line
        if not said:
            continue
        form = re.search(r"\(your form[^)]*\)", line)
        decls = ("", "")
        if i + 3 < len(lines) and lines[i + 1].strip() == "```diff":
            decls = (lines[i + 2].strip().removeprefix("- "), lines[i + 3].strip().removeprefix("+ "))
        out.add(("" if form is None else form.group(0), *decls))
    return out


@pytest.mark.slow
def test_every_channel_shows_a_broken_kernel_as_the_gap_records_it(
    tmp_path: Path, release_file: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """2.7.0's `_conv_depthwise2d.out` (its out tensor and return from `const at::Tensor &` to
    `at::Tensor &`) against 2.6.0, for op-plugin's real list (each op's form recorded) and the same
    ops as a plain text list (no form recorded): the weekly issue, the PR comment and the watch
    (Markdown and JSON) show each backend the declarations of its gap's record (`BackendGap.broken`).
    The op has SymInt parameters, so its two forms' declarations differ: the text list is told that
    its form is not known and shown the int64_t form, the one it is judged in, not the SymInt one as
    if it were its own (the watch did; the reports showed it no declaration)."""
    op = "_conv_depthwise2d.out"
    folder = tmp_path / "cfg"
    folder.mkdir()
    plugin = folder / "op_plugin_functions.yaml"
    plugin.write_bytes(lzma.decompress((REAL / "op-plugin.op_plugin_functions.yaml.xz").read_bytes()))
    names = sorted({o.name for o in read_backend("op-plugin", str(plugin), torch_version="2.7.0").ops})
    assert op in names
    (folder / "ops.txt").write_text(
        "# op-plugin's ops as a plain list: no kernel form\n" + "\n".join(names) + "\n"
    )
    text = (
        "subscriptions:\n"
        '  - who: ["@npu-team"]\n    backend: {kind: op-plugin, path: op_plugin_functions.yaml}\n'
        '  - who: ["@plain-team"]\n    backend: {kind: text, path: ops.txt}\n'
    )
    cfg = parse_config(text, str(folder / "opdrift.yml"), base_dir=str(folder))
    # the weekly issue and the PR comment: the release drift
    base, head = (pipeline.load_snapshot(str(release_file(v))) for v in ("2.6.0", "2.7.0"))
    drift = compute_drift(base, head)
    lacking, implemented = backend_work(cfg, head)
    gaps = backend_gaps(cfg, list(drift.changes), lacking, implemented)
    records = {g.kind: b for g in gaps for b in g.broken if b.op == op}
    assert set(records) == {"op-plugin", "text"}
    assert records["op-plugin"].form == "int64_t" and records["text"].form == ""
    shown = {
        (b.before.declaration(op), b.after.declaration(op)) for b in records.values() if b.before and b.after
    }
    assert len(shown) == 1 and "c10::SymInt" not in next(iter(shown))[0]  # the int64_t form, for both
    ctx = ReportContext(backend_gaps=gaps)
    weekly = _said(render(drift, "weekly-issue", context=ctx), op)
    assert _said(render(drift, "pr-comment", context=ctx), op) == weekly
    assert {(b, a) for _, b, a in weekly} == shown
    # each names its form; the text list's says it is not known, and which one it shows (wording: golden)
    (unknown,) = {f for f, _, _ in weekly} - {"(your form: `int64_t`)"}
    assert "not known" in unknown and "`int64_t`" in unknown and len(weekly) == 2
    # the watch: a pull request making that one change to 2.6.0
    up = Upstream(tmp_path / "up", "2.6.0")
    run = Run(up, cfg)
    run.pulls.add(1, up.commit({NATIVE: swapped("2.6.0", {op: "2.7.0"})}, "the change"), title="the change")
    plan = run()
    assert not run.warnings
    assert _said(plan.comment, op) == weekly
    breaks = [b for p in watch_json(plan.view)["pulls"] for i in p["backends"] for b in i["breaks"]]  # type: ignore[attr-defined]
    assert {(b["declaration_before"], b["declaration_after"]) for b in breaks if b["op"] == op} == shown
    body = render(drift, "weekly-issue", context=ctx).splitlines()
    (line,) = [x for x in body if f"`{op}`: " in x and "is not known" in x]
    check_golden_entry(
        "weekly.lines.md", "a gap: a broken kernel of no known form", line + "\n", updating(request)
    )
