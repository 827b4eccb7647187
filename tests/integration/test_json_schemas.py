"""The JSON Schemas in schemas/ are the contract of opdrift's JSON: real outputs must validate.

Each schema is checked against what opdrift really writes: the snapshots shipped in snapshots/, the
drift of real release pairs (one with renames, one with an acknowledgement), and the coverage of the
real backend lists in tests/data/backends/real. The closed parts of the contract are closed
(`additionalProperties: false`), so a renamed or a new key fails until the schema says so; the enums
are compared with the code's own tables, so a new bucket or rule cannot slip past the schema either.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import lzma
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource

from opdrift.cli import main
from opdrift.coverage.kinds import BACKEND_KINDS
from opdrift.coverage.schema_history import SinceEvent
from opdrift.coverage.workitems import Today, WorkItem
from opdrift.model import Facets, OpKind, SourceKind, SourceMeta
from opdrift.operators.kernels import PROFILES, SOURCES
from opdrift.schema.codes import Severity
from opdrift.schema.kernel import KernelForm, KernelVerdict
from opdrift.taxonomy.buckets import BUCKET_TABLE
from opdrift.work.rules import RULE_TABLE

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
SNAPSHOTS = sorted((ROOT / "snapshots").glob("*.json"))
REAL = ROOT / "tests" / "data" / "backends" / "real"

Json = dict[str, Any]


def _schema(name: str) -> Json:
    loaded: Json = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    return loaded


def _validator(name: str) -> Draft202012Validator:
    """A validator for schemas/NAME.schema.json that resolves its references to the other schemas."""
    resources = [
        (s["$id"], Resource.from_contents(s)) for s in map(_schema, ("snapshot", "drift", "coverage"))
    ]
    registry: Registry[Any] = Registry().with_resources(resources)
    schema = _schema(name)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=registry)


def _errors(name: str, document: object) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator(name).iter_errors(document)
    ]


def _run(*argv: str) -> None:
    code = main(list(argv))
    if code != 0:
        raise RuntimeError(f"opdrift {' '.join(argv)} exited {code}")


def _unxz(name: str, dest: Path) -> str:
    path = dest / name.removesuffix(".xz")
    path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
    return str(path)


# --- real outputs -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def drift_with_acknowledgement(tmp_path_factory: pytest.TempPathFactory) -> Json:
    """2.13.0 → 2.14.1 from the shipped snapshots, with one change acknowledged."""
    tmp = tmp_path_factory.mktemp("drift")
    allowlist = tmp / "allowlist.yaml"
    allowlist.write_text(
        '- name: "aten::cholesky"\n  reason: "removed upstream, tracked"\n  expires: 2999-12-31\n',
        encoding="utf-8",
    )
    out = tmp / "drift.json"
    _run(
        "diff",
        str(ROOT / "snapshots" / "v2.13.0.json"),
        str(ROOT / "snapshots" / "v2.14.1.json"),
        "--format",
        "json",
        "--fail-on",
        "never",
        "--allowlist",
        str(allowlist),
        "-o",
        str(out),
    )
    loaded: Json = json.loads(out.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def drift_with_renames(tmp_path_factory: pytest.TempPathFactory, release_file: Callable[[str], Path]) -> Json:
    """2.0.0 → 2.1.0 from the vendored release files: `_to_sparse`'s out= overloads were renamed."""
    out = tmp_path_factory.mktemp("renames") / "drift.json"
    _run(
        "diff",
        str(release_file("2.0.0")),
        str(release_file("2.1.0")),
        "--format",
        "json",
        "--fail-on",
        "never",
        "-o",
        str(out),
    )
    loaded: Json = json.loads(out.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def real_coverage(tmp_path_factory: pytest.TempPathFactory) -> Json:
    """Every real backend list against 2.15.0, with 2.14.1 as the base (SOURCES.md names each commit)."""
    tmp = tmp_path_factory.mktemp("real")
    with tarfile.open(REAL / "pytorch_dlprim.src.tar.xz") as tar:
        tar.extractall(tmp / "dlprim", filter="data")
    with tarfile.open(REAL / "torch-mlir.checkout.tar.xz") as tar:
        tar.extractall(tmp / "torch-mlir", filter="data")
    out = tmp / "coverage.json"
    _run(
        "coverage",
        "--backend",
        f"xla={_unxz('pytorch-xla.xla_native_functions.yaml.xz', tmp)}",
        "--backend",
        f"torch-mlir={tmp / 'torch-mlir'}",
        "--backend",
        f"mlir-td:torch-mlir={_unxz('torch-mlir.GeneratedTorchOps.td.xz', tmp)}",
        "--backend",
        f"cpp={tmp / 'dlprim' / 'src'}",
        "--backend",
        f"NPU:op-plugin={_unxz('op-plugin.op_plugin_functions.yaml.xz', tmp)}",
        "--backend",
        f"NPU:torch-npu={_unxz('torch_npu.npu_native_functions.yaml.xz', tmp)}",
        "--backend",
        f"xpu={_unxz('torch-xpu-ops.xpu_functions.yaml.xz', tmp)}",
        "--backend",
        "dispatch=MPS",
        str(ROOT / "snapshots" / "v2.15.0.json"),
        "--base",
        str(ROOT / "snapshots" / "v2.14.1.json"),
        "--format",
        "json",
        "-o",
        str(out),
    )
    loaded: Json = json.loads(out.read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.name)
@pytest.mark.slow
def test_every_shipped_snapshot_follows_the_snapshot_schema(path: Path) -> None:
    assert _errors("snapshot", json.loads(path.read_text(encoding="utf-8"))) == []


@pytest.mark.slow
def test_a_real_drift_follows_the_drift_schema(drift_with_acknowledgement: Json) -> None:
    drift = drift_with_acknowledgement
    assert drift["summary"]["acknowledged"] == 1, "the allow-list entry must reach the report"
    assert drift["changed"] and drift["removed"] and drift["added"]
    assert _errors("drift", drift) == []


@pytest.mark.slow
def test_a_real_drift_with_renames_follows_the_drift_schema(drift_with_renames: Json) -> None:
    assert {r["old_name"] for r in drift_with_renames["renamed"]}, "2.0.0 → 2.1.0 has renames"
    assert _errors("drift", drift_with_renames) == []


@pytest.mark.slow
def test_the_real_backends_coverage_follows_the_coverage_schema(real_coverage: Json) -> None:
    profiles = {b["backend"]["profile"] for b in real_coverage["backends"]}
    assert profiles == set(PROFILES), "every profile is exercised"
    assert any(b["schema_alerts"] for b in real_coverage["backends"])
    assert any(b["backend"]["fallback"] for b in real_coverage["backends"])
    assert all("since_base" in b for b in real_coverage["backends"])
    assert any(i["members"] and i["scope"] for b in real_coverage["backends"] for i in b["work_items"])
    todays = {
        (b["backend"]["profile"], i["today"]) for b in real_coverage["backends"] for i in b["work_items"]
    }
    assert {("eager", "fails"), ("eager", "cpu_fallback"), ("export", None), ("functional", None)} <= todays
    # an item some of whose models reach it through its members only (dlprim's cumsum.out: cumsum)
    assert any((i["models"] or {}).get("through") for b in real_coverage["backends"] for i in b["work_items"])
    assert _errors("coverage", real_coverage) == []


# --- a broken document fails --------------------------------------------------------------------


@pytest.mark.slow
def test_a_renamed_key_in_a_snapshot_operator_fails() -> None:
    snapshot = json.loads((ROOT / "snapshots" / "v2.15.0.json").read_text(encoding="utf-8"))
    record = snapshot["operators"]["add.Tensor"]
    record["category"] = record.pop("bucket")
    errors = _errors("snapshot", snapshot)
    assert any("category" in e for e in errors), errors
    assert any("'bucket' is a required property" in e for e in errors), errors


def test_a_new_facet_or_an_unknown_bucket_fails() -> None:
    snapshot = json.loads((ROOT / "snapshots" / "v2.15.0.json").read_text(encoding="utf-8"))
    snapshot["operators"]["add.Tensor"]["facets"]["hot"] = True
    snapshot["decisions"]["add"]["bucket"] = "addition"
    errors = _errors("snapshot", snapshot)
    assert len(errors) == 2, errors


@pytest.mark.slow
def test_a_renamed_summary_key_or_a_wrong_verdict_in_a_drift_fails(drift_with_acknowledgement: Json) -> None:
    drift = copy.deepcopy(drift_with_acknowledgement)
    drift["summary"]["kernel_breaks"] = drift["summary"].pop("kernel_breaking")
    drift["changed"][0]["kernel"] = "maybe"
    errors = _errors("drift", drift)
    assert any("kernel_breaks" in e for e in errors), errors
    assert any(e.startswith("changed/0/kernel:") for e in errors), errors


@pytest.mark.slow
def test_a_coverage_report_without_its_profile_fields_fails(real_coverage: Json) -> None:
    coverage = copy.deepcopy(real_coverage)
    export = next(b for b in coverage["backends"] if b["backend"]["profile"] == "export")
    del export["training_only"]
    eager = next(b for b in coverage["backends"] if b["backend"]["profile"] == "eager")
    eager["backend"]["decompositions"] = "PyTorch's table"
    eager["uncovered_run"] = "crashes"
    assert len(_errors("coverage", coverage)) == 3


# --- the enums are the code's own tables ----------------------------------------------------------


def _at(schema: Json, pointer: str) -> Any:
    node: Any = schema
    for part in pointer.strip("/").split("/"):
        node = node[part]
    return node


def test_the_schemas_enums_are_the_codes_tables() -> None:
    snapshot, drift, coverage = _schema("snapshot"), _schema("drift"), _schema("coverage")
    assert _at(snapshot, "$defs/bucket/enum") == [b.id for b in BUCKET_TABLE]
    assert _at(snapshot, "$defs/operator/properties/kind/enum") == list(get_args(OpKind))
    assert _at(snapshot, "$defs/source/properties/kind/enum") == list(get_args(SourceKind))
    assert _at(snapshot, "$defs/dispatch_key_source/enum") == list(SOURCES)
    assert _at(drift, "$defs/profile/enum") == list(PROFILES)
    assert _at(coverage, "$defs/profile/enum") == list(PROFILES)
    assert _at(drift, "$defs/kernel_verdict/enum") == list(get_args(KernelVerdict))
    assert _at(drift, "$defs/detail/properties/severity/enum") == list(get_args(Severity))
    assert _at(coverage, "$defs/rule/enum") == [r.id for r in RULE_TABLE]
    assert _at(coverage, "$defs/backend/properties/kind/enum") == list(BACKEND_KINDS)
    forms = list(get_args(KernelForm))
    assert _at(coverage, "$defs/alert/properties/form/enum") == [*forms, None]
    assert _at(coverage, "$defs/work_item/properties/form/enum") == [*forms, None]
    assert _at(coverage, "$defs/alert/properties/judged_in/enum") == [*forms, None]
    assert _at(coverage, "$defs/alert/properties/upstream_since_event/enum") == [*get_args(SinceEvent), None]
    item_fields = {f.name for f in dataclasses.fields(WorkItem)} - {"core", "in_degree", "private"}
    assert sorted(_at(coverage, "$defs/work_item/required")) == sorted([*item_fields, "rank"])
    assert _at(coverage, "$defs/work_item/properties/today/enum") == [*get_args(Today), None]


def test_the_snapshot_schema_names_every_field_the_code_writes() -> None:
    snapshot = _schema("snapshot")
    assert sorted(_at(snapshot, "$defs/facets/properties")) == sorted(
        f.name for f in dataclasses.fields(Facets)
    )
    assert _at(snapshot, "$defs/facets/required") == [f.name for f in dataclasses.fields(Facets)]
    assert _at(snapshot, "$defs/source/required") == [f.name for f in dataclasses.fields(SourceMeta)]


@pytest.mark.slow
def test_the_docs_validation_example_runs(
    drift_with_acknowledgement: Json, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/schemas.md shows how to validate a drift report; it must work as written, and reject a broken one."""
    page = (ROOT / "docs" / "schemas.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    shutil.copytree(SCHEMAS, tmp_path / "schemas")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "drift.json").write_text(json.dumps(drift_with_acknowledgement), encoding="utf-8")
    exec(compile(example, "docs/schemas.md", "exec"), {})
    broken = copy.deepcopy(drift_with_acknowledgement)
    broken["summary"]["extra"] = 1
    (tmp_path / "drift.json").write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(ValidationError):
        exec(compile(example, "docs/schemas.md", "exec"), {})
