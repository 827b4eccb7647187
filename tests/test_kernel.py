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

from bot import pipeline
from bot.drift.changes import Change, compute_drift
from bot.schema.grammar import parse_schema
from bot.schema.kernel import KernelForm, kernel_changes, kernel_signature


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


def test_signatures_equal_the_wheels_own_registration_declarations() -> None:
    """RegistrationDeclarations.h of the 2.14.1 wheel is torchgen's own SymInt-form signature of every
    operator. Ours equal it, but for two entry keys a snapshot does not hold: ops that take tensor
    lists as ITensorListRef, and `use_const_ref_for_mutable_tensors` (a mutable Tensor as const ref)."""
    text = lzma.decompress(
        (DATA / "wheels" / "2.14.1" / "RegistrationDeclarations.h.xz").read_bytes()
    ).decode()
    checked, explained = 0, 0
    for line in text.splitlines():
        m = re.match(r"^(.*?) (\w+)\((.*)\); // (\{.*\})$", line)
        if m is None:
            continue
        schema = parse_schema(json.loads(m.group(4))["schema"].removeprefix("aten::"))
        ours = kernel_signature(schema, "SymInt")
        theirs_returns = m.group(1).strip()
        theirs = [re.sub(r"\s*\w+$", "", p) for p in _split(m.group(3))]
        checked += 1
        if (ours.returns, list(ours.parameters)) == (theirs_returns, theirs):
            continue
        # The two keys, undone: the same signature once ITensorListRef reads as TensorList and a
        # const-ref mutable Tensor as a mutable one.
        undone = [p.replace("const at::ITensorListRef &", "at::TensorList") for p in theirs]
        undone = [
            "at::Tensor &" if a.is_write and p == "const at::Tensor &" else p
            for a, p in zip(schema.arguments.flat_all, undone, strict=True)
        ]
        returns = "at::Tensor &" if theirs_returns == "const at::Tensor &" else theirs_returns
        assert (ours.returns, list(ours.parameters)) == (returns, undone), str(schema)
        explained += 1
    assert checked == 3103 and explained < 25


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
    assert ("parameters", "2", "3") in change.differences()


def _drift(release_file: Callable[[str], Path], base: str, head: str) -> dict[str, Change]:
    drift = compute_drift(
        pipeline.load_snapshot(str(release_file(base))), pipeline.load_snapshot(str(release_file(head)))
    )
    return {c.name: c for c in drift.changes}


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


def test_reports_lead_with_kernel_changes_and_json_carries_both(
    opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    base, head = str(release_file("2.0.0")), str(release_file("2.1.0"))
    text = opdrift("diff", base, head, "--fail-on", "never").out
    assert "🔧 Kernel signature changed:" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("std.correction "))
    assert "SymInt and int64_t kernels: parameter 3" in line
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
    from bot.drift.policy import failing

    drift = compute_drift(
        pipeline.load_snapshot(str(release_file("2.0.0"))), pipeline.load_snapshot(str(release_file("2.1.0")))
    )
    correction = next(c for c in drift.changes if c.name == "std.correction")
    assert not correction.breaking and not correction.needs_kernel
    assert correction in failing(drift, "kernel") and correction not in failing(drift, "breaking")
