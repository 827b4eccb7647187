"""The drift model: every change kind, renames, fingerprints, and real release pairs."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import RELEASES, release_text
from driftcases import real_snapshot, realistic_pair, rec, snap
from releasesnap import release_snapshot

from opdrift.drift.changes import Change, Drift, compute_drift, fingerprint
from opdrift.schema.compare import diff_schemas
from opdrift.schema.grammar import parse_schema


def one_change(before: str, after: str, **kw: object) -> Change:
    drift = compute_drift(snap([rec(before, **kw)]), snap([rec(after, **kw)]))  # type: ignore[arg-type]
    assert len(drift.changed) == 1, drift
    return drift.changed[0]


def codes(before: str, after: str) -> list[tuple[str, str]]:
    return [(d.code, d.severity) for d in diff_schemas(parse_schema(before), parse_schema(after))]


# --- schema changes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("f(Tensor self, int dim) -> Tensor", "f(Tensor self) -> Tensor", [("argument_removed", "breaking")]),
        (
            "f(Tensor self, int dim) -> Tensor",
            "f(Tensor self, int axis) -> Tensor",
            [("argument_renamed", "breaking")],
        ),
        (
            "f(Tensor self, int dim) -> Tensor",
            "f(Tensor self, int[1] dim) -> Tensor",
            [("argument_retyped", "breaking")],
        ),
        (
            "f(Tensor self, int[] s) -> Tensor",
            "f(Tensor self, SymInt[] s) -> Tensor",
            [("argument_widened", "compatible")],
        ),
        (
            "f(Tensor self, Tensor w) -> Tensor",
            "f(Tensor self, Tensor? w) -> Tensor",
            [("argument_widened", "compatible")],
        ),
        (
            "f(Tensor self, Tensor? w) -> Tensor",
            "f(Tensor self, Tensor w) -> Tensor",
            [("argument_retyped", "breaking")],
        ),
        (
            "f(Tensor self, int[2] s) -> Tensor",
            "f(Tensor self, SymInt[] s) -> Tensor",
            [("argument_retyped", "breaking")],
        ),
        (
            "f(Tensor self, int dim=0) -> Tensor",
            "f(Tensor self, int dim) -> Tensor",
            [("default_removed", "breaking")],
        ),
        (
            "f(Tensor self, int dim=0) -> Tensor",
            "f(Tensor self, int dim=1) -> Tensor",
            [("default_changed", "breaking")],
        ),
        (
            "f(Tensor self, int dim) -> Tensor",
            "f(Tensor self, int dim=0) -> Tensor",
            [("default_added", "compatible")],
        ),
        # Defaults compare as the values PyTorch's parser reads: another spelling is only news.
        (
            "f(Tensor self, float eps=1e-05, SymInt[2] stride=1) -> Tensor",
            "f(Tensor self, float eps=1.0e-05, SymInt[2] stride=[1, 1]) -> Tensor",
            [("default_respelled", "info"), ("default_respelled", "info")],
        ),
        (
            "f(Tensor self, float eps=1e-05) -> Tensor",
            "f(Tensor self, float eps=1e-06) -> Tensor",
            [("default_changed", "breaking")],
        ),
        (
            "f(Tensor self, Scalar alpha=1) -> Tensor",
            "f(Tensor self, Scalar alpha=1.0) -> Tensor",
            [("default_changed", "breaking")],
        ),
        (
            "f(Tensor self) -> Tensor",
            "f(Tensor self, bool flag=False) -> Tensor",
            [("argument_added_with_default", "compatible")],
        ),
        (
            "f(Tensor self) -> Tensor",
            "f(Tensor self, bool flag) -> Tensor",
            [("argument_added_required", "breaking")],
        ),
        (
            "f(Tensor self, int dim) -> Tensor",
            "f(Tensor self, bool flag=False, int dim) -> Tensor",
            [("argument_inserted", "breaking")],
        ),
        (
            "f(Tensor self, int dim) -> Tensor",
            "f(Tensor self, *, bool flag=False, int dim) -> Tensor",
            [("argument_inserted", "breaking"), ("positional_made_kwarg_only", "breaking")],
        ),
        # PyTorch's check lets a keyword-only argument become positional in the same slot
        (
            "f(Tensor self, *, int dim=0) -> Tensor",
            "f(Tensor self, int dim=0) -> Tensor",
            [("kwarg_only_made_positional", "compatible")],
        ),
        # C++ passes keyword-only arguments by position too: inserting before one shifts it...
        (
            "f(Tensor self, *, bool unbiased=True) -> Tensor",
            "f(Tensor self, bool keep=False, *, bool unbiased=True) -> Tensor",
            [("argument_inserted", "breaking")],
        ),
        (
            "f(Tensor self, *, int a=0) -> Tensor",
            "f(Tensor self, *, bool b=False, int a=0) -> Tensor",
            [("argument_inserted", "breaking")],
        ),
        # ...reordering them swaps an int and a bool...
        (
            "f(Tensor self, *, int a=0, bool b=False) -> Tensor",
            "f(Tensor self, *, bool b=False, int a=0) -> Tensor",
            [("arguments_reordered", "breaking")],
        ),
        # ...and appending after the last one is the compatible way to add one.
        (
            "f(Tensor self, *, int a=0) -> Tensor",
            "f(Tensor self, *, int a=0, bool b=False) -> Tensor",
            [("argument_added_with_default", "compatible")],
        ),
        # Lists are invariant: Tensor[] (TensorList) and Tensor?[] are different C++ types.
        (
            "f(Tensor[] tensors) -> Tensor",
            "f(Tensor?[] tensors) -> Tensor",
            [("argument_retyped", "breaking")],
        ),
        (
            "f(Tensor self, int[] size) -> Tensor",
            "f(Tensor self, int[]? size) -> Tensor",
            [("argument_widened", "compatible")],
        ),
        # int and float are Scalars to PyTorch's check (2.1.0: var.correction int? → Scalar?), and the
        # schema parser reads DeviceIndex as int (2.1.0: _cufft_* device_index); not inside a list.
        (
            "var.correction(Tensor self, int[1]? dim=None, *, int? correction=None) -> Tensor",
            "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None) -> Tensor",
            [("argument_widened", "compatible")],
        ),
        (
            "f(Tensor self, float p) -> Tensor",
            "f(Tensor self, Scalar p) -> Tensor",
            [("argument_widened", "compatible")],
        ),
        (
            "f(Tensor self, int device_index) -> Tensor",
            "f(Tensor self, DeviceIndex device_index) -> Tensor",
            [("argument_widened", "compatible")],
        ),
        (
            "f(Tensor self, int[] p) -> Tensor",
            "f(Tensor self, Scalar[] p) -> Tensor",
            [("argument_retyped", "breaking")],
        ),
        (
            "f(Tensor self, Scalar p) -> Tensor",
            "f(Tensor self, int p) -> Tensor",
            [("argument_retyped", "breaking")],
        ),
        (
            "f(Tensor(a) self) -> Tensor(a)",
            "f(Tensor(a!) self) -> Tensor(a)",
            [("alias_annotation_changed", "breaking")],
        ),
        (
            "f(Tensor(a) self) -> Tensor(a)",
            "f(Tensor(a) self) -> Tensor",
            [("return_alias_annotation_changed", "breaking")],
        ),
        ("f(Tensor self) -> Tensor", "f(Tensor self) -> (Tensor, Tensor)", [("return_changed", "breaking")]),
        (
            "f(Tensor self, int a, int b) -> Tensor",
            "f(Tensor self, int b, int a) -> Tensor",
            [("arguments_reordered", "breaking")],
        ),
    ],
)
def test_schema_changes_are_classified(before: str, after: str, expected: list[tuple[str, str]]) -> None:
    assert codes(before, after) == expected


def test_breaking_flag_follows_the_details() -> None:
    compatible = one_change("f(Tensor self) -> Tensor", "f(Tensor self, bool flag=False) -> Tensor")
    assert not compatible.breaking
    breaking = one_change("f(Tensor self, int dim) -> Tensor", "f(Tensor self, float dim) -> Tensor")
    assert breaking.breaking
    assert [(d.subject, d.before, d.after) for d in breaking.details] == [("dim", "int", "float")]


# --- kernels, tags, buckets, structured ------------------------------------------------------------


def test_composite_to_kernels_needs_a_kernel() -> None:
    c = one_change_records(
        rec("f(Tensor self) -> Tensor"), rec("f(Tensor self) -> Tensor", dispatch=["CPU", "CUDA"])
    )
    assert c.needs_kernel and not c.now_decomposes
    assert [d.code for d in c.details] == ["stopped_decomposing", "kernel_added", "kernel_added"]


def test_kernels_to_composite_now_decomposes() -> None:
    c = one_change_records(rec("f(Tensor self) -> Tensor", dispatch=["CPU"]), rec("f(Tensor self) -> Tensor"))
    assert c.now_decomposes and not c.needs_kernel
    assert c.details[0].code == "now_decomposes"


def test_an_empty_dispatch_table_is_not_a_decomposition() -> None:
    """``dispatch: {}`` registers no kernel and no composite: a backend still has nothing to run."""
    before = rec("f(Tensor self) -> Tensor", dispatch=["CPU"])
    empty = rec("f(Tensor self) -> Tensor", dispatch=["CPU"])
    empty = replace(empty, facets=replace(empty.facets, composite=None, dispatch=()))
    c = one_change_records(before, empty)
    assert not c.now_decomposes
    assert "now_decomposes" not in [d.code for d in c.details]


def test_implicit_to_explicit_composite_needs_a_lowering_only() -> None:
    """A CompositeExplicitAutograd kernel serves eager and functional backends, so nothing is asked of
    them; an exported graph, which the decomposition kept it out of, now holds the op."""
    before = rec("f(Tensor self) -> Tensor")
    after = rec("f(Tensor self) -> Tensor", composite="CompositeExplicitAutograd")
    c = one_change_records(before, after)
    assert c.needs_kernel_for == c.profiles == ("export",)
    assert c.details[0].code == "stopped_decomposing"


def test_new_op_needs_a_kernel_only_without_a_generic_one() -> None:
    base = snap([])
    head = snap(
        [
            rec("k(Tensor self) -> Tensor", dispatch=["CPU", "CUDA"]),
            rec("d(Tensor self) -> Tensor"),
            rec("e(Tensor self) -> Tensor", composite="CompositeExplicitAutograd"),
            rec("s(Tensor self) -> Tensor", delegate="s.out"),
            rec("s.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", dispatch=["CPU"], structured=True),
            # a decomposition for nested tensors only: CPU and CUDA need their own kernels elsewhere
            rec(
                "n(Tensor self) -> Tensor",
                dispatch=["CPU", "CUDA"],
                composite="CompositeImplicitAutogradNestedTensor",
            ),
        ]
    )
    drift = compute_drift(base, head)

    def needing(profile: str) -> set[str]:
        return {c.name for c in drift.added if profile in c.needs_kernel_for}

    assert needing("eager") == {"k", "s.out", "n"}
    # functionalized: s.out comes from s, which the structured kernel no longer serves
    assert needing("functional") == {"k", "s", "n"}
    assert needing("export") == {"k", "e", "s", "n"}
    assert {c.name for c in drift.added if c.needs_kernel} == {"k", "e", "s", "s.out", "n"}
    assert not any(c.breaking for c in drift.added)


def test_core_tag_gained_and_lost() -> None:
    gained = one_change_records(
        rec("f(Tensor self) -> Tensor"), rec("f(Tensor self) -> Tensor", tags=["core"])
    )
    assert gained.new_core
    assert [(d.code, d.subject) for d in gained.details] == [("tag_added", "core")]
    lost = one_change_records(rec("f(Tensor self) -> Tensor", tags=["core"]), rec("f(Tensor self) -> Tensor"))
    assert not lost.new_core
    assert [(d.code, d.subject) for d in lost.details] == [("tag_removed", "core")]


def test_bucket_structured_and_delegate_changes() -> None:
    before = rec("f(Tensor self) -> Tensor", bucket="misc", dispatch=["CPU"])
    after = rec("f(Tensor self) -> Tensor", bucket="linalg", delegate="f.out")
    c = one_change_records(before, after)
    assert {d.code for d in c.details} == {"bucket_changed", "kernel_removed", "structured_delegate_changed"}
    assert c.category == "linalg"


def test_method_variant_removed_is_breaking() -> None:
    before = rec("f(Tensor self) -> Tensor", variants=["function", "method"])
    after = rec("f(Tensor self) -> Tensor", variants=["function"])
    assert one_change_records(before, after).breaking


def one_change_records(before: object, after: object) -> Change:
    drift = compute_drift(snap([before]), snap([after]))  # type: ignore[list-item]
    assert len(drift.changed) == 1, drift
    return drift.changed[0]


# --- renames, removals, counts ---------------------------------------------------------------------


def test_overload_renamed_is_one_rename() -> None:
    base = snap([rec("tile(Tensor self, int[] dims) -> Tensor")])
    head = snap([rec("tile.sym(Tensor self, SymInt[2] dims) -> Tensor")])
    drift = compute_drift(base, head)
    assert not drift.added and not drift.removed
    (c,) = drift.renamed
    assert (c.old_name, c.name, c.breaking) == ("tile", "tile.sym", True)
    assert [(d.code, d.subject) for d in c.details] == [("argument_retyped", "dims")]


def test_an_overload_removed_and_an_unrelated_one_added_are_not_a_rename() -> None:
    base = snap([rec("softmax.Dimname(Tensor self, Dimname dim, *, ScalarType? dtype=None) -> Tensor")])
    head = snap([rec("softmax.masked(Tensor self, Tensor mask, bool inverted) -> Tensor", dispatch=["CUDA"])])
    drift = compute_drift(base, head)
    assert not drift.renamed
    assert [c.name for c in drift.removed] == ["softmax.Dimname"]
    assert [c.name for c in drift.added] == ["softmax.masked"]


def test_same_types_under_a_new_name_is_a_rename_only_when_unambiguous() -> None:
    base = snap([rec("old_thing(Tensor self, int k) -> Tensor"), rec("neg(Tensor self) -> Tensor")])
    head = snap(
        [
            rec("new_thing(Tensor self, int k) -> Tensor"),
            rec("sin(Tensor self) -> Tensor"),
            rec("cos(Tensor self) -> Tensor"),
        ]
    )
    drift = compute_drift(base, head)
    assert [(c.old_name, c.name) for c in drift.renamed] == [("old_thing", "new_thing")]
    # neg vanished while sin and cos appeared: three unary ops, no way to tell, so no rename.
    assert [c.name for c in drift.removed] == ["neg"]
    assert [c.name for c in drift.added] == ["cos", "sin"]


def test_one_removal_and_one_unrelated_addition_of_the_same_shape_are_not_a_rename() -> None:
    base = snap([rec("angle(Tensor self) -> Tensor", dispatch=["CPU"])])
    head = snap([rec("my_brand_new_op(Tensor self) -> Tensor", dispatch=["CPU", "CUDA"])])
    drift = compute_drift(base, head)
    assert not drift.renamed
    assert [c.name for c in drift.removed] == ["angle"]
    (new,) = drift.added
    assert new.name == "my_brand_new_op" and new.needs_kernel


def test_a_renamed_op_needs_its_kernels_under_the_new_name() -> None:
    base = snap([rec("mps_max_pool2d_backward(Tensor grad, Tensor self) -> Tensor", dispatch=["MPS"])])
    head = snap([rec("max_pool2d_backward(Tensor grad, Tensor self) -> Tensor", dispatch=["CPU", "MPS"])])
    (c,) = compute_drift(base, head).renamed
    assert (c.old_name, c.name) == ("mps_max_pool2d_backward", "max_pool2d_backward")
    assert c.needs_kernel and c.breaking


def test_removal_is_breaking_and_counts_follow_base_operators() -> None:
    base = snap([rec("a(Tensor self) -> Tensor", bucket="x"), rec("b(Tensor self) -> Tensor", bucket="y")])
    head = snap([rec("a(Tensor self) -> Tensor", bucket="x")])
    drift = compute_drift(base, head)
    assert [(c.name, c.breaking) for c in drift.removed] == [("b", True)]
    assert {(b.bucket, b.before, b.after) for b in drift.buckets} == {("x", 1, 1), ("y", 1, 0)}


def test_self_diff_is_empty() -> None:
    base, _ = realistic_pair()
    drift = compute_drift(base, base)
    assert drift.is_empty
    assert drift.changes == ()


# --- fingerprints ----------------------------------------------------------------------------------


def test_fingerprint_is_stable_across_lines_commits_and_neighbours() -> None:
    before = "f(Tensor self, int dim) -> Tensor"
    after = "f(Tensor self, int[1] dim) -> Tensor"
    one = compute_drift(
        snap([rec(before, line=10)], commit="1" * 40), snap([rec(after, line=12)], commit="2" * 40)
    )
    other = compute_drift(
        snap([rec(before, line=900), rec("g(Tensor self) -> Tensor")], commit="3" * 40),
        snap([rec(after, line=950), rec("g(Tensor self) -> Tensor", tags=["core"])], commit="4" * 40),
    )
    fp = {c.name: c.fingerprint for c in other.changes}
    assert one.changed[0].fingerprint == fp["f"]
    assert len(fp["f"]) == 12 and fp["f"] != fp["g"]
    # A different change to the same op is a different fingerprint.
    third = compute_drift(snap([rec(before)]), snap([rec("f(Tensor self, float dim) -> Tensor")]))
    assert third.changed[0].fingerprint != fp["f"]


def test_fingerprint_function_is_pinned() -> None:
    # Pinned on purpose: a silent change here would orphan every acknowledgement in every allow-list.
    assert fingerprint("removed", "qr", ["qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)"]) == (
        fingerprint("removed", "qr", ["qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)"])
    )
    import hashlib

    payload = '["removed","qr",["x"]]'
    assert fingerprint("removed", "qr", ["x"]) == hashlib.sha256(payload.encode()).hexdigest()[:12]


# --- the synthetic 2.13 → 2.14-like pair -----------------------------------------------------------


def test_realistic_pair_answers_what_a_backend_must_do() -> None:
    drift = compute_drift(*realistic_pair())
    by = {c.name: c for c in drift.changes}
    # hardswish stopped decomposing (it gained CPU/CUDA/MPS kernels), so other backends now need one too;
    # not an exported graph: PyTorch's Core-ATen table decomposes hardswish (bot/operators/data/core_aten.tsv).
    assert {n: c.needs_kernel_for for n, c in by.items() if c.needs_kernel} == {
        "_philox_key_fold_in.Tensor": ("eager", "functional", "export"),
        "hardswish": ("eager", "functional"),
        # a structured group: eager backends write the out= kernel, functionalized ones the functional op
        "linalg_polar": ("functional", "export"),
        "linalg_polar.out": ("eager",),
    }
    assert {n for n, c in by.items() if c.breaking} == {
        "_cdist_backward",
        "cholesky",
        "cholesky.out",
        "std.names_dim",
        "tile.sym",
    }
    assert {n for n, c in by.items() if c.new_core} == {"hardswish"}
    assert {n for n, c in by.items() if c.now_decomposes} == {"logit"}
    assert not by["_cudnn_attention_forward"].breaking
    assert by["abs"].kernels_only and by["abs.out"].kernels_only


# --- real releases ---------------------------------------------------------------------------------


def test_real_self_diff_is_empty(tmp_path: Path) -> None:
    s = real_snapshot("2.14.1", str(tmp_path))
    assert compute_drift(s, s).is_empty


@pytest.mark.slow
def test_real_2_12_to_2_13_removes_named_overloads(tmp_path: Path) -> None:
    drift = compute_drift(real_snapshot("2.12.0", str(tmp_path)), real_snapshot("2.13.0", str(tmp_path)))
    named = [c for c in drift.removed if "Dimname" in c.record.schema]
    assert len(named) >= 20
    assert all(c.breaking for c in named)


def test_real_2_13_to_2_14_1(tmp_path: Path) -> None:
    drift = compute_drift(real_snapshot("2.13.0", str(tmp_path)), real_snapshot("2.14.1", str(tmp_path)))
    by = {c.name: c for c in drift.changes}
    # Read off the two yaml files: _cdist_backward's first argument was renamed grad -> grad_output.
    assert "Tensor grad_output, Tensor x1" in release_text("2.14.1").split("_cdist_backward(")[1][:60]
    assert any(d.code == "argument_renamed" for d in by["_cdist_backward"].details)
    assert by["linalg_polar.out"].needs_kernel
    assert by["_cudnn_attention_forward"].details and not by["_cudnn_attention_forward"].breaking


@pytest.mark.slow
def test_real_edited_copy_each_change_kind(tmp_path: Path) -> None:
    """Small edits of the real 2.14.1 file, one per change kind, diffed through the whole pipeline."""
    from opdrift.pipeline import load_snapshot

    text = release_text("2.14.1")
    tags = release_text("2.14.1", "tags.yaml")

    def load(name: str, body: str) -> Drift:
        d = tmp_path / name
        d.mkdir()
        (d / "native_functions.yaml").write_text(body, encoding="utf-8")
        (d / "tags.yaml").write_text(tags, encoding="utf-8")
        return compute_drift(base, load_snapshot(str(d / "native_functions.yaml")))

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "native_functions.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "base" / "tags.yaml").write_text(tags, encoding="utf-8")
    base = load_snapshot(str(tmp_path / "base" / "native_functions.yaml"))

    entry = (
        "- func: histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor\n"
        "  variants: method, function\n"
        "  dispatch:\n"
        "    CPU, MPS: histogram_histc\n"
        "    CUDA: _histc_cuda\n"
        "    XPU: _histc_xpu\n"
    )
    assert entry in text

    def edited(name: str, new: str) -> dict[str, Change]:
        return {c.name: c for c in load(name, text.replace(entry, new)).changes}

    head = entry.split("\n")[0]
    retyped = edited("retyped", entry.replace("int bins=100", "float bins=100"))
    assert [(d.code, d.subject) for d in retyped["histc"].details] == [("argument_retyped", "bins")]
    assert retyped["histc"].breaking and len(retyped) == 1
    compatible = edited("compatible", entry.replace("max=0)", "max=0, bool flag=False)"))
    assert [d.code for d in compatible["histc"].details] == ["argument_added_with_default"]
    assert not compatible["histc"].breaking
    default = edited("default", entry.replace("int bins=100", "int bins"))
    assert [d.code for d in default["histc"].details] == ["default_removed"] and default["histc"].breaking
    decomposes = edited("decomposes", "\n".join(entry.split("\n")[:2]) + "\n")
    assert decomposes["histc"].now_decomposes and not decomposes["histc"].breaking
    core = edited("core", entry + "  tags: core\n")
    assert core["histc"].new_core
    removed = edited("removed", "")
    assert removed["histc"].kind == "removed" and removed["histc"].breaking
    renamed = edited("renamed", entry.replace(head, head.replace("histc(", "histc.bins(")))
    assert renamed["histc.bins"].kind == "renamed" and renamed["histc.bins"].old_name == "histc"


def _edit_entry(text: str, name: str, old: str, new: str) -> str:
    """TEXT with OLD replaced by NEW on the `- func: NAME(` line (which must hold OLD)."""
    lines = text.split("\n")
    (at,) = [i for i, ln in enumerate(lines) if ln.startswith(f"- func: {name}(")]
    assert old in lines[at], (name, lines[at])
    lines[at] = lines[at].replace(old, new)
    return "\n".join(lines)


def _edited_release(tmp_path: Path, release: Path, edits: dict[str, tuple[str, str]]) -> Path:
    """A copy of a vendored release's yaml files with EDITS (name → (old, new)) made to its entries."""
    text = release.read_text(encoding="utf-8")
    for name, (old, new) in edits.items():
        text = _edit_entry(text, name, old, new)
    tmp_path.mkdir()
    for other in release.parent.iterdir():
        (tmp_path / other.name).write_bytes(other.read_bytes())
    (tmp_path / release.name).write_text(text, encoding="utf-8")
    return tmp_path / release.name


# Real 2.15.0 entries with their defaults spelled another way PyTorch's parser reads as the same value.
RESPELLED = {
    "layer_norm": ("float eps=1e-05", "float eps=1.0e-05"),
    "conv2d": (
        "SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1",
        "SymInt[2] stride=[1,1], SymInt[2] padding=[0,0], SymInt[2] dilation=[1,1]",
    ),
    "conv1d.padding": ('str padding="valid"', "str padding='valid'"),
    "mse_loss": ("int reduction=Mean", "int reduction=1"),  # at::Reduction::Mean is 1
    "hinge_embedding_loss": ("float margin=1.0", "float margin=1"),
}


@pytest.mark.slow
def test_real_defaults_respelled_are_no_bc_break(
    opdrift: Opdrift, release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """A default written another way (1e-05 → 1.0e-05, a broadcast scalar → its list, one quote → the
    other) is the same value to PyTorch: diff says so, as news, and breaks neither callers nor kernels."""
    base = release_file("2.15.0")
    head = _edited_release(tmp_path / "respelled", base, RESPELLED)
    run = opdrift("diff", str(base), str(head), "--format", "json")
    assert run.code == 0, run.err
    data = json.loads(run.out)
    assert (data["summary"]["breaking"], data["summary"]["kernel_breaking"]) == (0, 0)
    changed = {c["name"]: c for c in data["changed"]}
    assert set(changed) == set(RESPELLED)
    for name, c in changed.items():
        assert (c["breaking"], c["kernel"]) == (False, "compatible"), name
        assert {(d["code"], d["severity"]) for d in c["changes"]} == {("default_respelled", "info")}, name
    assert [(d["subject"], d["before"], d["after"]) for d in changed["conv2d"]["changes"]] == [
        ("stride", "1", "[1,1]"),
        ("padding", "0", "[0,0]"),
        ("dilation", "1", "[1,1]"),
    ]
    text = opdrift("diff", str(base), str(head)).out
    assert "default of `eps` respelled `1e-05` → `1.0e-05` (the same value)" in text


@pytest.mark.slow
def test_real_default_values_changed_stay_bc_breaking(
    opdrift: Opdrift, release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """A default whose value changed still breaks callers, an int Scalar made a float one included
    (PyTorch's IValues of 1 and 1.0 differ: the result's dtype can follow)."""
    base = release_file("2.15.0")
    edits = {
        "group_norm": ("float eps=1e-05", "float eps=1e-06"),
        "multi_margin_loss": ("Scalar p=1", "Scalar p=1.0"),
    }
    head = _edited_release(tmp_path / "changed", base, edits)
    run = opdrift("diff", str(base), str(head), "--format", "json")
    assert run.code == 1
    changed = {c["name"]: c for c in json.loads(run.out)["changed"]}
    assert set(changed) == set(edits)
    assert [(d["code"], d["subject"], d["before"], d["after"]) for d in changed["group_norm"]["changes"]] == [
        ("default_changed", "eps", "1e-05", "1e-06")
    ]
    assert [d["code"] for d in changed["multi_margin_loss"]["changes"]] == ["default_changed"]
    assert all(c["breaking"] and c["kernel"] == "compatible" for c in changed.values())


# Every default_changed detail between consecutive vendored releases (nanmean/nansum's `dim=[]` → None
# with the type made optional, randint's dtype None → long): real changes of value, still reported.
REAL_DEFAULT_CHANGES = {
    ("1.12.0", "1.13.0"): {
        ("nanmean", "dim", "[]", "None"),
        ("nanmean.out", "dim", "[]", "None"),
        ("nansum", "dim", "[]", "None"),
        ("nansum.out", "dim", "[]", "None"),
        ("randint", "dtype", "None", "long"),
        ("randint.generator", "dtype", "None", "long"),
        ("randint.low", "dtype", "None", "long"),
        ("randint.low_generator", "dtype", "None", "long"),
    },
}


@pytest.mark.slow
def test_real_default_changes_across_every_release_pair_stay_reported() -> None:
    found: dict[tuple[str, str], set[tuple[str, str, str, str]]] = {}
    for base, head in itertools.pairwise(RELEASES):
        for c in compute_drift(release_snapshot(base), release_snapshot(head)).changes:
            for d in c.details:
                assert d.code != "default_respelled", (base, head, c.name, d)
                if d.code == "default_changed":
                    assert c.breaking
                    found.setdefault((base, head), set()).add((c.name, d.subject, d.before, d.after))
    assert found == REAL_DEFAULT_CHANGES
