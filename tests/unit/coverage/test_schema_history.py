"""One rule binds a kernel beyond its schema, in the diff and in coverage alike.

torchgen binds a structured group's `Tensor[]` as `const at::ITensorListRef &` (1.13 on) and a
`use_const_ref_for_mutable_tensors` entry's mutable tensors as `const at::Tensor &`
(`opdrift.operators.codegen.kernel_binding`). `_scaled_mm_v2` and `_scaled_grouped_mm_v2` kept their schemas
in 2.14.0 and joined structured groups; op-plugin's entries do not say `structured_delegate:` and its
torchnpugen binds by its own file, so its kernels broke (Ascend/op-plugin 49c8366e and f2d45694 changed
them by hand). `opdrift diff` said so; coverage said "compatible", since it bound the backend's side as
upstream's and its schema table knew schemas only. Those two commits also force that binding in
torchnpugen (`opdrift.coverage.yaml_lists.FORCED_ILISTREF`): a list as recent as them builds. These
tests run the real op-plugin lists, the shipped snapshots and every vendored release.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import lzma
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import Opdrift
from datafiles import DATA, RELEASES

from opdrift import pipeline
from opdrift.coverage.backends import read_backend
from opdrift.coverage.check import compute_coverage
from opdrift.coverage.schema_history import Since, schema_since
from opdrift.drift.changes import compute_drift
from opdrift.model import Facets, Snapshot
from opdrift.operators.codegen import rules_for_release
from opdrift.snapshot import load_snapshot

ROOT = Path(__file__).parents[3]
OP_PLUGIN = DATA / "backends" / "real" / "op-plugin.op_plugin_functions.yaml.xz"
SCALED = ("_scaled_mm_v2", "_scaled_grouped_mm_v2")
LISTS = ("at::TensorList", "const at::ITensorListRef &")


@pytest.fixture(scope="module")
def op_plugin_list(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("op-plugin") / "op_plugin_functions.yaml"
    path.write_bytes(lzma.decompress(OP_PLUGIN.read_bytes()))
    return path


@pytest.fixture(scope="module")
def op_plugin_before_49c8366e(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ascend's list of the day before 49c8366e (tests/data/backends/real/SOURCES.md)."""
    folder = tmp_path_factory.mktemp("op-plugin-gates")
    with tarfile.open(DATA / "backends" / "real" / "op-plugin.gates.tar.xz") as tar:
        tar.extractall(folder, filter="data")
    return folder / "op-plugin-gates" / "before-49c8366e.yaml"


def _alerts(opdrift: Opdrift, backend: Path, snapshot: str) -> dict[str, dict[str, Any]]:
    run = opdrift("coverage", "--backend", f"op-plugin={backend}", snapshot, "--format", "json")
    assert run.code == 0, run.err
    (cov,) = json.loads(run.out)["backends"]
    return {a["name"]: a for a in cov["schema_alerts"]}


@pytest.mark.slow
def test_coverage_and_diff_agree_that_joining_a_structured_group_breaks_op_plugins_kernels(
    opdrift: Opdrift, op_plugin_list: Path, op_plugin_before_49c8366e: Path
) -> None:
    """The brief's case, through the CLI: coverage of the real op-plugin list of before 49c8366e against
    2.14.1 says both kernels break, since 2.14.0 (the binding's release; the schema came in 2.10.0),
    with the same C++ signatures the diff of the shipped 2.13.0 and 2.14.1 snapshots gives; against
    2.13.0 they build. Today's list (b8d8c479), whose torchnpugen forces that binding, builds on both."""
    alerts = _alerts(opdrift, op_plugin_before_49c8366e, str(ROOT / "snapshots" / "v2.14.1.json"))
    diff = opdrift(
        "diff",
        str(ROOT / "snapshots" / "v2.13.0.json"),
        str(ROOT / "snapshots" / "v2.14.1.json"),
        "--format",
        "json",
        "--fail-on",
        "never",
    )
    assert diff.code == 0, diff.err
    changed = {c["name"]: c for c in json.loads(diff.out)["changed"]}
    snap = load_snapshot(ROOT / "snapshots" / "v2.14.1.json")
    for name in SCALED:
        a = alerts[name]
        assert (a["kernel"], a["upstream_since"], a["upstream_since_event"]) == (
            "breaking",
            "2.14.0",
            "rebound",
        )
        assert {k["form"] for k in a["kernel_changes"]} == {"SymInt", "int64_t"}
        for k in a["kernel_changes"]:
            assert k["before"].count(LISTS[0]) == 2 and LISTS[1] not in k["before"], name
            assert k["after"].count(LISTS[1]) == 2 and LISTS[0] not in k["after"], name
        # the diff's verdict for the same op, and its signature after the change: one rule
        assert changed[name]["kernel"] == "breaking"
        assert changed[name]["before_schema"] == changed[name]["schema"] == snap.operators[name].schema
        drift = compute_drift(load_snapshot(ROOT / "snapshots" / "v2.13.0.json"), snap)
        (change,) = [c for c in drift.changed if c.name == name]
        assert {(k.form, str(k.after)) for k in change.kernel_changes} == {
            (k["form"], k["after"]) for k in a["kernel_changes"]
        }
    before = _alerts(opdrift, op_plugin_before_49c8366e, str(ROOT / "snapshots" / "v2.13.0.json"))
    for name in SCALED:
        assert (before[name]["kernel"], before[name]["kernel_changes"]) == ("compatible", []), name
    for snapshot in ("v2.13.0.json", "v2.14.1.json"):
        today = _alerts(opdrift, op_plugin_list, str(ROOT / "snapshots" / snapshot))
        for name in SCALED:
            assert (today[name]["kernel"], today[name]["kernel_changes"]) == ("compatible", []), name


def _snapshot(release_file: Callable[[str], Path], version: str) -> Snapshot:
    snap = pipeline.load_snapshot(str(release_file(version)), codegen=rules_for_release(version))
    return dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, torch_version=version))


def _keys(f: Facets) -> tuple[bool, bool]:
    """What an entry says of its binding: in a structured group, use_const_ref_for_mutable_tensors."""
    return (f.structured or f.structured_delegate is not None, bool(f.const_ref_mutable))


def _entry(schema: str, f: Facets) -> str:
    """An op-plugin entry carrying SCHEMA and the keys of upstream's entry F, as torchnpugen reads them."""
    lines = [f"  - func: {schema}", "    op_api: all_version"]
    if f.structured:
        lines.append("    structured: True")
    if f.structured_delegate:
        lines.append(f"    structured_delegate: {f.structured_delegate}")
    if f.const_ref_mutable:
        lines.append("    use_const_ref_for_mutable_tensors: True")
    return "\n".join(lines)


@pytest.mark.slow
def test_every_binding_change_of_the_releases_breaks_a_list_that_kept_the_old_binding(
    release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """Every operator of every pair of neighbouring releases (1.12.0 … 2.15.0) whose entry kept its schema
    and changed its binding keys: the diff says its kernels break, and coverage of an op-plugin list
    holding the older release's entry (schema and keys) against the newer says so too, with the newer
    release's run of the schema table (2.14.0 for 2.14.1: the table holds it) as "rebound". Those are
    use_const_ref_for_mutable_tensors dropped from five out= ops in 2.7.0, and the three `_scaled_*_v2`
    ops that joined structured groups in 2.14.0. 1.12 → 1.13 changed the codegen, not an entry: `cat`'s
    tensor lists, which the table dates to 1.13.0."""
    found: dict[str, set[str]] = {}
    for base_version, head_version in itertools.pairwise(RELEASES):
        base, head = _snapshot(release_file, base_version), _snapshot(release_file, head_version)
        drift = compute_drift(base, head)
        moved = [
            c
            for c in drift.changed
            if c.before is not None
            and c.after is not None
            and c.before.schema == c.after.schema
            and _keys(c.before.facets) != _keys(c.after.facets)
            and c.kernel == "breaking"
        ]
        if not moved:
            continue
        found[head_version] = {c.name for c in moved}
        path = tmp_path / f"{head_version}.yaml"
        entries = "\n\n".join(_entry(c.before.schema, c.before.facets) for c in moved if c.before)
        # a list that kept the older release's entries registers that release, not the newer one (a
        # list registering v2.14 forces the `_scaled_mm_v2` binding: `FORCED_ILISTREF`)
        path.write_text(f"all_version: [v{base_version.rsplit('.', 1)[0]}]\nofficial:\n{entries}\n")
        cov = compute_coverage(head, read_backend("op-plugin", str(path), torch_version=head_version))
        alerts = {a.name: a for a in cov.alerts}
        first = "2.14.0" if head_version == "2.14.1" else head_version
        for c in moved:
            a = alerts[c.name]
            assert (a.kernel, a.upstream_since, a.upstream_event) == ("breaking", first, "rebound"), c.name
            assert {(k.form, str(k.before), str(k.after)) for k in a.kernel_changes} == {
                (k.form, str(k.before), str(k.after)) for k in c.kernel_changes
            }, c.name
        # the same list's entries at the newer release's keys: nothing to say
        same = tmp_path / f"{head_version}-now.yaml"
        entries = "\n\n".join(_entry(c.after.schema, c.after.facets) for c in moved if c.after)
        same.write_text(f"all_version: [v{head_version.rsplit('.', 1)[0]}]\nofficial:\n{entries}\n")
        assert not compute_coverage(
            head, read_backend("op-plugin", str(same), torch_version=head_version)
        ).alerts
    assert found == {
        "2.7.0": {
            "_conv_depthwise2d.out",
            "fft_hfft2.out",
            "fft_hfftn.out",
            "fft_ihfft2.out",
            "fft_ihfftn.out",
        },
        "2.14.1": {"_scaled_mm_v2", "_scaled_mm_v2.out", "_scaled_grouped_mm_v2"},
    }
    cat = "cat(Tensor[] tensors, int dim=0) -> Tensor"
    assert schema_since("cat", cat, "1.13.0", binding="ilistref") == Since("1.13.0", "rebound")
    assert schema_since("cat", cat, "1.13.0") is None  # no release from 1.13.0 took it as TensorList
