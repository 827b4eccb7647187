"""The kinds of list backends keep in 2026, each read from its real file: ExecuTorch's kernel
yamls, a gen_backend_stubs yaml (OpenReg's, XLA's), a Python tree (torchax), judged on a real snapshot."""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path
from typing import Any

import pytest
from clirun import ROOT
from goldens import check_golden_entry, updating
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from opdrift.cli import main
from opdrift.coverage.backends import read_backend
from opdrift.coverage.check import compute_coverage
from opdrift.coverage.jsonform import coverage_json
from opdrift.coverage.pyreg import read_python
from opdrift.coverage.workitems import work_items
from opdrift.snapshot import load_snapshot

REAL = ROOT / "tests" / "data" / "backends" / "real"
SNAPSHOT = ROOT / "snapshots" / "v2.15.0.json"
# An ATen `- func:` entry: a schema with no namespace before its name (`quantized_decomposed::` is not ATen).
_ATEN_FUNC = re.compile(r"^- func: [A-Za-z_][A-Za-z0-9_.]*\(", re.MULTILINE)


def _unxz(name: str, dest: Path, as_name: str | None = None) -> Path:
    path = dest / (as_name or name.removesuffix(".xz"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
    return path


def _text(name: str) -> str:
    return lzma.decompress((REAL / name).read_bytes()).decode("utf-8")


@pytest.fixture(scope="module")
def snapshot() -> Any:
    return load_snapshot(str(SNAPSHOT))


# --- executorch ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "executorch.portable.functions.yaml.xz",
        "executorch.portable.custom_ops.yaml.xz",
        "executorch.optimized.yaml.xz",
        "executorch.quantized.yaml.xz",
        "executorch.aten.functions.yaml.xz",
    ],
)
def test_each_executorch_yaml_is_read_entry_for_entry(name: str, tmp_path: Path) -> None:
    text = _text(name)
    expected = len(re.findall(r"^- op:", text, re.MULTILINE)) + len(_ATEN_FUNC.findall(text))
    if name == "executorch.quantized.yaml.xz":
        assert expected == 0  # every entry is quantized_decomposed::'s, none ATen's
        return
    found = read_backend("executorch", str(_unxz(name, tmp_path)))
    assert len(found.ops) == expected
    assert all(op.origin in ("op", "func") for op in found.ops)
    assert {op.origin == "func" for op in found.ops} <= {True, False}


def test_the_portable_library_counts(tmp_path: Path) -> None:
    found = read_backend("executorch", str(_unxz("executorch.portable.functions.yaml.xz", tmp_path)))
    ops = {op.name: op for op in found.ops}
    assert len([o for o in found.ops if o.origin == "op"]) == 200
    # its own schema of an op upstream has; other namespaces' entries (et_copy::, dim_order_ops::) are not ATen
    assert ops["bitwise_left_shift.Tensor_out"].schema_kind == "full"
    assert not any("::" in o.name for o in found.ops) and "_h2d_copy.out" not in ops


def test_executorch_needs_no_variant_and_covers_functional_ops_through_their_out_variant(
    snapshot: Any, tmp_path: Path
) -> None:
    found = read_backend("executorch", str(_unxz("executorch.portable.functions.yaml.xz", tmp_path)))
    cov = compute_coverage(snapshot, found)
    assert cov.profile == "export"
    by_name = {o.name: o for o in cov.ops}
    needs = [o for o in cov.uncovered]
    assert needs, "the portable library lacks some core ops"
    assert not [o.name for o in needs if snapshot.operators[o.name].kind in ("out", "inplace")]
    add = by_name["add.Tensor"]
    assert (add.covered, add.rule, add.via) == (True, "listed", "add.out")
    # a view becomes its view_copy op (to_edge's ReplaceViewOpsWithViewCopyOpsPass)
    assert (by_name["permute"].rule, by_name["permute"].via) == ("backend_codegen", "permute_copy")
    # the verifier refuses an op tagged neither core nor view_copy (for an out= or in-place variant:
    # the functional op it becomes): no need of the backend's
    rejected = [o.name for o in cov.ops if o.rule == "verifier_rejects"]

    tagged = [n for n in rejected if {"core", "view_copy"} & set(snapshot.operators[n].facets.tags)]
    # resize_ is tagged core, but functionalization turns it into resize, which is not
    assert tagged == ["resize_"] and "core" not in snapshot.operators["resize"].facets.tags
    assert cov.by_rule()["verifier_rejects"] == len(rejected)
    # docs/coverage.md's figures: the verifier's refusals are neither covered nor needed
    assert (len(cov.ops), len(cov.covered), len(cov.uncovered), len(cov.training_only)) == (
        3110,
        1782,
        34,
        87,
    )
    # the runtime serves _local_scalar_dense itself (a prim op): no need, no out= variant to list
    assert (by_name["_local_scalar_dense"].covered, by_name["_local_scalar_dense"].rule) == (
        True,
        "runtime_prim",
    )
    assert (cov.by_rule()["listed"], len(rejected)) == (361, 1207)
    assert len(cov.covered) + len(cov.uncovered) + len(cov.training_only) + len(cov.rejected) == len(cov.ops)


def test_a_listed_op_the_verifier_refuses_is_extra_not_covered(snapshot: Any, tmp_path: Path) -> None:
    """Portable lists bitwise_left_shift.Tensor_out, whose functional op is tagged neither core nor
    view_copy: to_edge refuses a program holding it before any kernel is looked up."""
    found = read_backend("executorch", str(_unxz("executorch.portable.functions.yaml.xz", tmp_path)))
    assert "bitwise_left_shift.Tensor_out" in found.names
    cov = compute_coverage(snapshot, found)
    by_name = {o.name: o for o in cov.ops}
    for name in ("bitwise_left_shift.Tensor", "bitwise_left_shift.Tensor_out"):
        assert by_name[name].rule == "verifier_rejects"
        assert name not in {o.name for o in cov.covered} | {o.name for o in cov.uncovered}
    assert "bitwise_left_shift.Tensor_out" in cov.extra and "add.out" not in cov.extra
    # every extra entry is one the backend lists, and is refused
    assert set(cov.extra) <= found.names and set(cov.extra) <= {o.name for o in cov.rejected}
    out = coverage_json(cov)
    assert (out["covered"], out["verifier_rejects"]) == (len(cov.covered), len(cov.rejected))
    assert (
        int(str(out["covered"])) + int(str(out["needs_kernel"])) + len(cov.training_only) + len(cov.rejected)
        == out["operators"]
    )


def test_executorch_work_items_name_the_out_variant_to_write(snapshot: Any, tmp_path: Path) -> None:
    """The exported program is converted to out= variants (to_out_variant), so an ExecuTorch item
    names the out= op its yaml must list, and serves the functional op."""
    found = read_backend("executorch", str(_unxz("executorch.portable.functions.yaml.xz", tmp_path)))
    cov = compute_coverage(snapshot, found)
    items = {i.name: i for i in work_items(cov, snapshot)}
    sort = items["sort.values"]
    assert "sort" in sort.members and "sort" not in items
    assert sort.schema.startswith("sort.values(") and sort.line == snapshot.operators["sort.values"].line
    assert "- op: sort.values" in sort.why
    assert "scatter_reduce.two" in items["scatter_reduce.two_out"].members
    for item in items.values():
        rec = snapshot.operators[item.name]
        # a functional op leads an item only when upstream has no out= variant of it
        if rec.kind == "functional":
            assert not any(snapshot.operators[m].kind == "out" for m in item.members), item.name
            assert "no out= variant" in item.why
        else:
            assert rec.kind == "out", item.name
    # every need is the name or a member of exactly one item
    named = [n for i in items.values() for n in (i.name, *i.members)]
    assert all(named.count(o.name) == 1 for o in cov.uncovered)
    # another export backend still lowers the functional op (torch-mlir writes no out= kernel)
    text = read_backend("text", str(_write(tmp_path / "ops.txt", "add.Tensor\n")))
    other = {i.name for i in work_items(compute_coverage(snapshot, text, "export"), snapshot)}
    assert "sort" in other and "sort.values" not in other


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_an_executorch_checkout_reads_its_lean_mode_yamls(snapshot: Any, tmp_path: Path) -> None:
    root = tmp_path / "executorch"
    _unxz("executorch.portable.functions.yaml.xz", root, "kernels/portable/functions.yaml")
    _unxz("executorch.portable.custom_ops.yaml.xz", root, "kernels/portable/custom_ops.yaml")
    _unxz("executorch.optimized.yaml.xz", root, "kernels/optimized/optimized.yaml")
    found = read_backend("executorch", str(root))
    counts = [
        len(read_backend("executorch", str(root / rel)).ops)
        for rel in (
            "kernels/portable/functions.yaml",
            "kernels/portable/custom_ops.yaml",
            "kernels/optimized/optimized.yaml",
        )
    ]
    assert len(found.ops) == sum(counts) and found.roots == (str(root),)
    assert {"allclose.out", "allclose.Tensor"} <= found.names


# --- backend-stubs ---------------------------------------------------------------------------------


def test_openregs_yaml_lists_its_structured_op(snapshot: Any, tmp_path: Path) -> None:
    found = read_backend("backend-stubs", str(_unxz("openreg.openreg_native_functions.yaml.xz", tmp_path)))
    ((op),) = found.ops
    assert (op.name, op.origin, op.structured, op.kernel_form) == (
        "maximum.out",
        "supported",
        True,
        "int64_t",
    )
    cov = compute_coverage(snapshot, found)
    by_name = {o.name: o for o in cov.ops}
    assert cov.profile == "eager" and by_name["maximum.out"].rule == "listed"
    # the structured group's functional op runs the out= op's kernel
    assert (by_name["maximum"].rule, by_name["maximum"].via) == ("structured_delegate", "maximum.out")


def test_xla_is_the_stubs_reader_judged_as_xla(tmp_path: Path) -> None:
    path = str(_unxz("pytorch-xla.xla_native_functions.yaml.xz", tmp_path))
    text = _text("pytorch-xla.xla_native_functions.yaml.xz")
    stubs, xla = read_backend("backend-stubs", path), read_backend("xla", path)
    assert [(o.name, o.line, o.origin, o.kernel_form) for o in stubs.ops] == [
        (o.name, o.line, o.origin, o.kernel_form) for o in xla.ops
    ]
    # an independent count: every "  - name" item under the five lists
    assert len(xla.ops) == len(re.findall(r"^\s+- [A-Za-z_]", text, re.MULTILINE))
    assert xla.kind == "xla" and stubs.kind == "backend-stubs"


# --- python ----------------------------------------------------------------------------------------


def test_torchax_is_read_op_for_op(snapshot: Any, tmp_path: Path) -> None:
    text = _text("torchax.jaten.py.xz")
    blocks = re.findall(r"^@op\((.*?)\)\s*$", text, re.MULTILINE | re.DOTALL)
    expected = sum(len(re.findall(r"torch\.ops\.aten\.\w+", b)) for b in blocks)
    found = read_backend("python", str(_unxz("torchax.jaten.py.xz", tmp_path)))
    assert len(found.ops) == expected == 365 and not found.warnings
    cov = compute_coverage(snapshot, found)
    by_name = {o.name: o for o in cov.ops}
    assert by_name["add.Tensor"].rule == "listed"
    # `@op(torch.ops.aten.view, ...)` names the packet: every overload of view
    assert by_name["view.dtype"].rule == "listed"


def test_every_python_registration_form_and_what_cannot_be_resolved() -> None:
    source = """import torch
from torch.ops import aten
lib = torch.library.Library("aten", "IMPL")
lib.impl("add.Tensor", my_add, "PrivateUse1")
lib.impl(name_from_somewhere, my_add, "PrivateUse1")
torch.library.impl(lib, "mul.Tensor", "PrivateUse1")(my_mul)
other = torch.library.Library("mylib", "DEF")
torch.library.impl(other, "thing", "CPU")(f)

@torch.library.impl("aten::sub.Tensor", "PrivateUse1")
def sub(a, b): ...

@torch.library.register_fake("aten::div.Tensor")
def div_fake(a, b): ...

torch.library.register_kernel(torch.ops.aten.relu.default, ["cpu"])(f)

@register_fallback([aten.sin.default, aten.cos.default, OTHERS])
def fallback(*args): ...
"""
    found = read_python(source, "backend/ops.py")
    assert [(o.name, o.line) for o in found.ops] == [
        ("add.Tensor", 4),
        ("mul.Tensor", 6),
        ("sub.Tensor", 10),
        ("relu", 16),
        ("sin", 18),
        ("cos", 18),
    ]
    assert found.ops[0].dispatch_key == "PrivateUse1"
    assert [w.split(": ", 1)[0] for w in found.warnings] == ["backend/ops.py:5", "backend/ops.py:18"]


# --- every kind end to end -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("executorch", "executorch.portable.functions.yaml.xz"),
        ("backend-stubs", "openreg.openreg_native_functions.yaml.xz"),
        ("python", "torchax.jaten.py.xz"),
    ],
)
@pytest.mark.slow
def test_coverage_runs_end_to_end_and_follows_the_schema(
    kind: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _unxz(name, tmp_path)
    assert main(["coverage", "--backend", f"{kind}={path}", str(SNAPSHOT), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    schemas = {
        n: json.loads((ROOT / "schemas" / f"{n}.schema.json").read_text(encoding="utf-8"))
        for n in ("snapshot", "drift", "coverage")
    }
    registry: Registry[Any] = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in schemas.values()
    )
    validator = Draft202012Validator(schemas["coverage"], registry=registry)
    errors = [e.message for e in validator.iter_errors(report)]
    assert errors == []
    (backend,) = report["backends"]
    assert backend["backend"]["kind"] == kind
    assert (
        backend["covered"]
        + backend["needs_kernel"]
        + len(backend.get("training_only", []))
        + backend.get("verifier_rejects", 0)
        == backend["operators"]
    )


def test_explain_says_what_executorchs_verifier_and_out_variants_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    """`sort.stable` is refused by the verifier (it was a KeyError); `add.Tensor` is served by the
    listed `add.out`."""
    path = _unxz("executorch.portable.functions.yaml.xz", tmp_path)
    assert main(["explain", "sort", str(SNAPSHOT), "--backend", f"executorch={path}"]) == 0
    out = capsys.readouterr().out
    (refused,) = [x for x in out.splitlines() if x.startswith("  sort.stable: ")]
    assert "(verifier_rejects)" in refused and "ExecuTorch" in refused
    check_golden_entry(
        "explain.lines.txt", "executorch: refused by the verifier", refused + "\n", updating(request)
    )
    assert "  sort: needs an out= kernel (needs_kernel): " in out
    assert "; list its out= variant: `- op: sort.values`" in out
    assert main(["explain", "add", str(SNAPSHOT), "--backend", f"executorch={path}", "--format", "json"]) == 0
    verdicts = {v["name"]: v for v in json.loads(capsys.readouterr().out)["backends"][0]["operators"]}
    assert "add.out" in verdicts["add.Tensor"]["why"] and "out=" in verdicts["add.Tensor"]["why"]
    check_golden_entry(
        "explain.lines.txt",
        "executorch: served by its out= variant",
        verdicts["add.Tensor"]["why"] + "\n",
        updating(request),
    )
    assert (verdicts["add.Tensor"]["status"], verdicts["add.Tensor"]["via"]) == ("covered", "add.out")


def test_the_real_dlprim_tree_is_read_registration_for_registration(tmp_path: Path) -> None:
    """Every `m.impl("...")` line of pytorch_dlprim's src/ (none of them commented out or compiled out),
    counted by a regex over the files, is one listed op, no more: 136 at 30e27c8."""
    import tarfile

    with tarfile.open(REAL / "pytorch_dlprim.src.tar.xz", "r:xz") as tar:
        tar.extractall(tmp_path, filter="data")
    names = [
        m.group(1)
        for path in sorted((tmp_path / "src").rglob("*.cpp"))
        for m in re.finditer(
            r'^[ \t]*m\.impl\(\s*"(?:aten::)?([\w.]+)"',
            path.read_text(encoding="utf-8", errors="replace"),
            re.M,
        )
    ]
    found = read_backend("cpp", str(tmp_path / "src"))
    assert len(names) == 136
    assert sorted(op.name for op in found.ops) == sorted(names)
    assert {op.dispatch_key for op in found.ops} == {"PrivateUse1", "AutogradPrivateUse1"}
