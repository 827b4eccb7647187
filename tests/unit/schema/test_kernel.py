"""The second compatibility axis: the C++ signature a backend's kernel is compiled against."""

from __future__ import annotations

import json
import lzma
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA
from goldens import check_golden_entry, updating

from opdrift import pipeline
from opdrift.coverage.alerts import mlir_signature
from opdrift.drift.changes import Change, compute_drift
from opdrift.operators.codegen import kernel_binding, rules_for_version
from opdrift.schema.grammar import parse_schema
from opdrift.schema.kernel import Binding, KernelForm, kernel_changes, kernel_signature


def _split(params: str) -> list[str]:
    out, depth, current = [], 0, ""
    for ch in params:
        depth += (ch in "<([" and 1) or 0
        depth -= (ch in ">)]" and 1) or 0
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
    return [*out, current.strip()] if current.strip() else out


# The int64_t form of a header signature: the dispatcher unpacks SymInt parameters for a plain kernel
# (returns keep the SymInt form).
_PLAIN = (
    ("at::OptionalSymIntArrayRef", "at::OptionalIntArrayRef"),
    ("c10::SymIntArrayRef", "at::IntArrayRef"),
    ("c10::SymInt", "int64_t"),
)


def _plain(parameter: str) -> str:
    for symint, plain in _PLAIN:
        parameter = parameter.replace(symint, plain)
    return parameter


def test_signatures_equal_the_wheels_own_registration_declarations(
    release_file: Callable[[str], Path],
) -> None:
    """RegistrationDeclarations.h of the 2.14.1 wheel is torchgen's own SymInt-form signature of every
    operator; unpacking its SymInt parameters gives the int64_t form. Ours equal both, the operators
    whose entry sets `use_const_ref_for_mutable_tensors` (a mutable Tensor taken as const ref) and
    those generated from such an entry included."""
    records = pipeline.load_snapshot(str(release_file("2.14.1"))).operators
    text = lzma.decompress(
        (DATA / "wheels" / "2.14.1" / "RegistrationDeclarations.h.xz").read_bytes()
    ).decode()
    checked, const_ref = 0, 0
    for line in text.splitlines():
        m = re.match(r"^(.*?) (\w+)\((.*)\); // (\{.*\})$", line)
        if m is None:
            continue
        name = json.loads(m.group(4))["schema"].removeprefix("aten::")
        schema = parse_schema(name)
        facets = records[str(schema.name)].facets
        returns, params = m.group(1).strip(), [re.sub(r"\s*\w+$", "", p) for p in _split(m.group(3))]
        checked += 1
        const_ref += bool(facets.const_ref_mutable)
        binding = kernel_binding(facets, rules_for_version("2.14.1"))
        symint = kernel_signature(schema, "SymInt", binding)
        plain = kernel_signature(schema, "int64_t", binding)
        assert (symint.returns, list(symint.parameters)) == (returns, params), name
        assert (plain.returns, list(plain.parameters)) == (returns, [_plain(p) for p in params]), name
    assert checked == 3103 and 10 < const_ref < 40


def test_dropping_use_const_ref_breaks_kernels_not_callers(release_file: Callable[[str], Path]) -> None:
    """2.7.0 dropped `use_const_ref_for_mutable_tensors` from five out= entries: no schema changed, but
    their kernels' `out` went from `const at::Tensor &` to `at::Tensor &`."""
    changes = _drift(release_file, "2.6.0", "2.7.0")
    dropped = sorted(
        name for name, c in changes.items() if any(d.code == "const_ref_changed" for d in c.details)
    )
    assert dropped == [
        "_conv_depthwise2d.out",
        "fft_hfft2.out",
        "fft_hfftn.out",
        "fft_ihfft2.out",
        "fft_ihfftn.out",
    ]
    for name in dropped:
        c = changes[name]
        assert (c.breaking, c.kernel) == (False, "breaking"), name
        assert c.before is not None and c.after is not None and c.before.schema == c.after.schema
        (form, *_) = c.kernel_changes
        assert ("return", "const at::Tensor &", "at::Tensor &") in form.differences(), name


def test_a_structured_group_takes_tensor_lists_as_ilistref() -> None:
    cat = parse_schema("cat(Tensor[] tensors, int dim=0) -> Tensor")
    assert (
        kernel_signature(cat, "SymInt", Binding(ilistref=True)).parameters[0] == "const at::ITensorListRef &"
    )
    assert kernel_signature(cat, "SymInt").parameters[0] == "at::TensorList"
    (joined, _) = kernel_changes(cat, cat, binding_after=Binding(ilistref=True))
    assert joined.differences() == (("parameter 1", "at::TensorList", "const at::ITensorListRef &"),)


def test_returns_keep_the_symint_form_in_both_kernel_forms() -> None:
    size = parse_schema("sym_size.int(Tensor self, int dim) -> SymInt")
    assert (
        kernel_signature(size, "int64_t").returns == kernel_signature(size, "SymInt").returns == "c10::SymInt"
    )


S = "foo(Tensor self, int[1] dim, int? correction=None, bool keepdim=False) -> Tensor"


@pytest.mark.parametrize(
    ("after", "forms"),
    [
        # the cases: callers are fine (or not), kernels break
        ("foo(Tensor self, int[1]? dim, int? correction=None, bool keepdim=False) -> Tensor", ["SymInt", "int64_t"]),
        ("foo(Tensor self, int[1] dim, Scalar? correction=None, bool keepdim=False) -> Tensor", ["SymInt", "int64_t"]),
        ("foo(Tensor self, int[1] dim, int? correction=None, bool keepdim=False, bool x=False) -> Tensor", ["SymInt", "int64_t"]),
        ("foo(Tensor self, SymInt[1] dim, int? correction=None, bool keepdim=False) -> Tensor", ["SymInt"]),
        ("foo(Tensor? self, int[1] dim, int? correction=None, bool keepdim=False) -> Tensor", ["SymInt", "int64_t"]),
        ("foo(Tensor self, int[1] dim, int? correction=None, bool keepdim=False) -> (Tensor, Tensor)", ["SymInt", "int64_t"]),
        # and what breaks callers but no kernel
        ("foo(Tensor self, int[1] dims, int? correction=None, bool keepdim=False) -> Tensor", []),
        ("foo(Tensor self, int[1] dim, int? correction=1, bool keepdim=True) -> Tensor", []),
        ("foo(Tensor self, int[1] dim, *, int? correction=None, bool keepdim=False) -> Tensor", []),
    ],
)  # fmt: skip
def test_which_kernel_forms_a_change_breaks(after: str, forms: list[KernelForm]) -> None:
    assert [k.form for k in kernel_changes(parse_schema(S), parse_schema(after))] == forms


def test_an_out_argument_added_breaks_the_out_kernel() -> None:
    before = parse_schema("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    after = parse_schema(
        "foo.out(Tensor self, *, Tensor(a!) out, Tensor(b!) extra) -> (Tensor(a!), Tensor(b!))"
    )
    (change, _) = kernel_changes(before, after)
    assert ("parameters added", "", "at::Tensor &") in change.differences()


def _drift(release_file: Callable[[str], Path], base: str, head: str) -> dict[str, Change]:
    drift = compute_drift(
        pipeline.load_snapshot(str(release_file(base))), pipeline.load_snapshot(str(release_file(head)))
    )
    return {c.name: c for c in drift.changes}


@pytest.mark.slow
def test_real_releases_get_both_verdicts(release_file: Callable[[str], Path]) -> None:
    """2.1.0 turned `int? correction` into `Scalar? correction`: compatible for callers (PyTorch's rule:
    an int is a Scalar), but every std/var kernel's third parameter changed type."""
    changes = _drift(release_file, "2.0.0", "2.1.0")
    for name in ("std.correction", "var.correction", "std_mean.correction", "var_mean.correction"):
        assert (changes[name].breaking, changes[name].kernel) == (False, "breaking"), name
    (form, *_) = changes["std.correction"].kernel_changes
    assert (
        "parameter 3",
        "::std::optional<int64_t>",
        "const ::std::optional<at::Scalar> &",
    ) in form.differences()
    # 2.14.1 renamed _cdist_backward's `grad` to `grad_output`: callers by keyword break, kernels do not
    later = _drift(release_file, "2.13.0", "2.14.1")
    assert (later["_cdist_backward"].breaking, later["_cdist_backward"].kernel) == (True, "compatible")


@pytest.mark.slow
def test_reports_lead_with_kernel_changes_and_json_carries_both(
    opdrift: Opdrift, release_file: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    base, head = str(release_file("2.0.0")), str(release_file("2.1.0"))
    text = opdrift("diff", base, head, "--fail-on", "never").out
    assert "🔧 Kernel signature changed:" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("std.correction "))
    # the parameter by its name, not its place: what a maintainer can act on
    assert all(
        part in line
        for part in ("`correction`", "`::std::optional<int64_t>`", "`const ::std::optional<at::Scalar> &`")
    )
    check_golden_entry("report.lines.txt", "kernel signature: std.correction", line + "\n", updating(request))
    data = json.loads(opdrift("diff", base, head, "--fail-on", "never", "--format", "json").out)
    changed = {c["name"]: c for c in data["changed"]}
    assert (changed["std.correction"]["breaking"], changed["std.correction"]["kernel"]) == (False, "breaking")
    assert data["summary"]["kernel_breaking"] == sum(
        c["kernel"] == "breaking" and c["acknowledged"] is None
        for kind in ("added", "removed", "renamed", "changed")
        for c in data[kind]
    )
    markdown = opdrift(
        "diff",
        release_file("2.13.0").as_posix(),
        release_file("2.14.1").as_posix(),
        "--fail-on",
        "never",
        "--format",
        "markdown",
    ).out
    assert "renamed to `grad_output`; C++ kernels still build" in markdown


def test_fail_on_kernel_counts_a_changed_kernel_signature(release_file: Callable[[str], Path]) -> None:
    from opdrift.drift.policy import failing

    drift = compute_drift(
        pipeline.load_snapshot(str(release_file("2.0.0"))), pipeline.load_snapshot(str(release_file("2.1.0")))
    )
    correction = next(c for c in drift.changes if c.name == "std.correction")
    assert not correction.breaking and not correction.needs_kernel
    assert correction in failing(drift, "kernel") and correction not in failing(drift, "breaking")


@pytest.mark.slow
def test_a_coverage_alert_gets_the_verdicts_diff_gives(
    opdrift: Opdrift, release_file: Callable[[str], Path], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """torch-mlir lists types only. A list still carrying 2.0.0's std.correction (`int? correction`)
    against 2.15.0 gets an alert with diff's two verdicts for the same change from 2.0.0 to 2.1.0:
    callers compatible (int? widens to Scalar?), kernels breaking (parameter 3 changed type)."""
    old = pipeline.load_snapshot(str(release_file("2.0.0"))).operators["std.correction"].schema
    types = mlir_signature(parse_schema(old))
    assert types == "(Tensor, int[]?, int?, bool) -> (Tensor)"
    td = tmp_path / "GeneratedTorchOps.td"
    td.write_text(f'  let summary = "Generated op for `aten::std.correction : {types}`";\n', encoding="utf-8")
    head = str(release_file("2.15.0"))
    run = opdrift("coverage", "--backend", f"torch-mlir={td}", head, "--format", "json")
    assert run.code == 0, run.err
    (alert,) = json.loads(run.out)["backends"][0]["schema_alerts"]
    assert (alert["name"], alert["breaking"], alert["kernel"]) == ("std.correction", False, "breaking")
    assert [(d["code"], d["severity"], d["before"], d["after"]) for d in alert["details"]] == [
        ("argument_widened", "compatible", "int?", "Scalar?")
    ]

    diffed = _drift(release_file, "2.0.0", "2.1.0")["std.correction"]
    assert (alert["breaking"], alert["kernel"]) == (diffed.breaking, diffed.kernel)
    assert [(k["form"], k["before"], k["after"]) for k in alert["kernel_changes"]] == [
        (k.form, str(k.before), str(k.after)) for k in diffed.kernel_changes
    ]

    text = opdrift("coverage", "--backend", f"torch-mlir={td}", head).out
    # the alert and its kernel change, by what they name (golden: the wording)
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if "std.correction" in x)
    end = next(i for i in range(at, len(lines)) if lines[i].startswith("      - kernel signature: "))
    alert_line, change = lines[at], lines[end]
    assert "2.1.0" in alert_line and "compatible" in alert_line
    assert "`::std::optional<int64_t>`" in change and "`const ::std::optional<at::Scalar> &`" in change
    said = "".join(f"{x}\n" for x in lines[at : end + 1]).replace(str(td), "GeneratedTorchOps.td")
    check_golden_entry(
        "coverage.lines.txt", "alert of a kernel signature: std.correction", said, updating(request)
    )
    markdown = opdrift("coverage", "--backend", f"torch-mlir={td}", head, "--format", "markdown").out
    assert "compatible for callers, 🔧 kernels: C++ signature changed:" in markdown
