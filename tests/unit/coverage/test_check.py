"""Coverage rules, one by one, on real release files and small edited copies of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import release_text, write_release
from goldens import check_golden_entry, updating

from opdrift import pipeline
from opdrift.coverage.alerts import SchemaAlert, mlir_signature
from opdrift.coverage.backends import read_backend
from opdrift.coverage.change import compare_coverage
from opdrift.coverage.check import compute_coverage
from opdrift.coverage.oplist import BackendList, BackendOp, SchemaKind
from opdrift.model import Snapshot
from opdrift.operators.kernels import Profile
from opdrift.schema.grammar import parse_schema

FIXTURES = Path(__file__).parents[2] / "data" / "backends"
LINES = "coverage.lines.txt"  # the wording of the lines these tests find (tests/goldens.py)


def _snapshot(tmp_path: Path, version: str, edit: tuple[str, str] | None = None) -> Snapshot:
    native = write_release(version, tmp_path / version)
    if edit is not None:
        text = release_text(version)
        old, new = edit
        # The edit must hit: a test whose edit silently misses would pass for the wrong reason.
        assert text.count(old) == 1, old
        native.write_text(text.replace(old, new), encoding="utf-8")
    return pipeline.load_snapshot(str(native))


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return _snapshot(tmp_path_factory.mktemp("rel"), "2.14.1")


def _listing(*names: str) -> BackendList:
    ops = tuple(BackendOp(n, i + 1, "list.txt", "list") for i, n in enumerate(names))
    return BackendList("text", "list.txt", ops)


def _rule(
    snapshot: Snapshot, backend: BackendList, name: str, profile: Profile | None = None
) -> tuple[str, str]:
    found = {o.name: o for o in compute_coverage(snapshot, backend, profile).ops}[name]
    return found.rule, found.via


def test_every_operator_gets_exactly_one_verdict(head: Snapshot) -> None:
    cov = compute_coverage(head, _listing("relu"))
    assert [o.name for o in cov.ops] == sorted(head.operators)
    assert sum(c + n + t for c, n, t in cov.by_bucket().values()) == len(head.operators)


def test_listed(head: Snapshot) -> None:
    assert _rule(head, _listing("relu"), "relu") == ("listed", "")
    assert _rule(head, _listing(), "relu") == ("needs_kernel", "")


def test_composite_implicit_decomposes(tmp_path: Path, head: Snapshot) -> None:
    assert _rule(head, _listing(), "matmul") == ("decomposes", "")
    # The same entry with a backend kernel instead of its CompositeImplicitAutograd one needs a kernel.
    edited = _snapshot(
        tmp_path, "2.14.1", ("    CompositeImplicitAutograd: matmul\n", "    CPU: matmul_cpu\n")
    )
    assert _rule(edited, _listing(), "matmul") == ("needs_kernel", "")


def test_composite_explicit_has_a_default_kernel(head: Snapshot) -> None:
    assert _rule(head, _listing(), "new_empty") == ("default_kernel", "")


def test_structured_delegate_is_no_work_of_its_own(tmp_path: Path, head: Snapshot) -> None:
    """torchgen's CompositeExplicitAutogradNonFunctional kernels of add.Tensor and add_.Tensor call the
    backend's add.out: listed or not, the work is add.out's, one item, not three."""
    assert _rule(head, _listing("add.out"), "add.Tensor") == ("structured_delegate", "add.out")
    assert _rule(head, _listing(), "add.Tensor") == ("structured_delegate", "add.out")
    assert _rule(head, _listing(), "add.out") == ("needs_kernel", "")
    # Without its structured_delegate line, add.Tensor no longer rides on add.out.
    edited = _snapshot(
        tmp_path,
        "2.14.1",
        (
            "  device_check: NoCheck   # TensorIterator\n  structured_delegate: add.out\n  variants: function, method\n  dispatch:\n    SparseCPU, SparseCUDA, SparseMPS",
            "  device_check: NoCheck   # TensorIterator\n  variants: function, method\n  dispatch:\n    CPU: add_cpu\n    SparseCPU, SparseCUDA, SparseMPS",
        ),
    )
    assert _rule(edited, _listing("add.out"), "add.Tensor") == ("needs_kernel", "")


def test_functionalized_profiles_derive_variants_and_eager_does_not(head: Snapshot) -> None:
    listing = _listing("relu")
    for profile in ("functional", "export"):
        assert _rule(head, listing, "relu_", profile) == ("backend_codegen", "relu")
    # relu.out is autogen's CompositeExplicitAutograd kernel: that serves XLA, but an exported graph
    # never holds it, so there only functionalization explains it
    assert _rule(head, listing, "relu.out", "functional") == ("default_kernel", "")
    assert _rule(head, listing, "relu.out", "export") == ("backend_codegen", "relu")
    assert _rule(head, listing, "relu_", "eager") == ("needs_kernel", "")
    assert _rule(head, listing, "relu_") == ("needs_kernel", "")  # a text list is eager unless told


def test_dispatch_key_of_native_functions_itself(head: Snapshot) -> None:
    mps = read_backend("dispatch", "MPS")
    cov = compute_coverage(head, mps)
    verdicts = {o.name: o.rule for o in cov.ops}
    assert verdicts["relu"] == "listed"  # `MPS: relu_mps`
    assert verdicts["matmul"] == "decomposes"
    assert not cov.stale


def test_stale_entries(head: Snapshot) -> None:
    backend = read_backend("xla", str(FIXTURES / "xla_native_functions.yaml"))
    cov = compute_coverage(head, backend)
    assert [op.name for op in cov.stale] == ["not_an_op_anymore"]


def test_schema_alerts_full_schemas(head: Snapshot) -> None:
    cpp = read_backend("cpp", str(FIXTURES / "dlprim"))
    alerts = {a.name: a for a in compute_coverage(head, cpp).alerts}
    # The fixture's mm comment has an extra argument that upstream lacks; add.out and relu match.
    assert set(alerts) == {"mm"}
    assert alerts["mm"].breaking
    assert any(d.code.startswith("argument") for d in alerts["mm"].details)

    plugin = read_backend("op-plugin", str(FIXTURES / "op_plugin_functions.yaml"), torch_version="1.11")
    alerts = {a.name: a for a in compute_coverage(head, plugin).alerts}
    # 1.11's std.correction took `int? correction` with no defaults; upstream changed it since, in
    # ways PyTorch's check calls compatible (int? → Scalar? widens; defaults were added).
    assert "std.correction" in alerts
    assert not alerts["std.correction"].breaking
    assert [(d.code, d.subject) for d in alerts["std.correction"].details] == [
        ("default_added", "dim"),
        ("argument_widened", "correction"),
        ("default_added", "correction"),
    ]
    current = read_backend("op-plugin", str(FIXTURES / "op_plugin_functions.yaml"), torch_version="2.4")
    assert "std.correction" not in {a.name for a in compute_coverage(head, current).alerts}


def test_schema_alerts_torch_mlir_types(head: Snapshot) -> None:
    add = head.operators["add.Tensor"]
    assert mlir_signature(parse_schema(add.schema)) == "(Tensor, Tensor, Scalar) -> (Tensor)"
    assert mlir_signature(parse_schema(head.operators["view"].schema)) == "(Tensor, int[]) -> (Tensor)"
    backend = read_backend("torch-mlir", str(FIXTURES / "GeneratedTorchOps.td"))
    alerts = {a.name: a for a in compute_coverage(head, backend).alerts}
    assert "add.Tensor" not in alerts
    assert "view" not in alerts
    assert "foo_bar" not in alerts  # not upstream at all: stale, not an alert
    assert "foo_bar" in {op.name for op in compute_coverage(head, backend).stale}


def _alerts(head: Snapshot, kind: SchemaKind, *ops: tuple[str, str]) -> dict[str, SchemaAlert]:
    """The alerts of a list whose entries (name, schema) record a signature of KIND ("full" or "types")."""
    listed = tuple(
        BackendOp(name, i + 1, "ops.txt", "list", schema, kind) for i, (name, schema) in enumerate(ops)
    )
    return {a.name: a for a in compute_coverage(head, BackendList("text", "ops.txt", listed)).alerts}


def test_torch_mlir_types_follow_the_caller_rule_of_diff_and_get_a_kernel_verdict(head: Snapshot) -> None:
    alerts = _alerts(
        head,
        "types",
        ("std.correction", "(Tensor, int[]?, int?, bool) -> (Tensor)"),  # int? → Scalar? widens
        ("add.Tensor", "(Tensor, Tensor, int) -> (Tensor)"),  # int → Scalar widens as well
        ("mm", "(Tensor, Tensor?) -> (Tensor)"),  # Tensor? → Tensor narrows
        ("view", "(Tensor, t) -> (Tensor)"),  # a type our grammar does not know: not provably wider
    )
    correction = alerts["std.correction"]
    assert (correction.breaking, correction.kernel) == (False, "breaking")
    assert [(d.code, d.subject) for d in correction.details] == [("argument_widened", "correction")]
    (form, *_) = correction.kernel_changes
    assert (
        "parameter 3",
        "::std::optional<int64_t>",
        "const ::std::optional<at::Scalar> &",
    ) in form.differences()
    assert (alerts["add.Tensor"].breaking, alerts["add.Tensor"].kernel) == (False, "breaking")
    mm = alerts["mm"]
    assert (mm.breaking, mm.kernel) == (True, "breaking")
    assert [(d.code, d.before, d.after) for d in mm.details] == [("argument_retyped", "Tensor?", "Tensor")]
    view = alerts["view"]
    assert (view.breaking, view.kernel, view.kernel_changes) == (True, "breaking", ())


def test_types_that_print_alike_keep_upstreams_kernel_types(head: Snapshot) -> None:
    """torch-mlir prints SymInt and the enums as int: where its types print as upstream's, upstream's
    argument stands in, so the one real difference is the only kernel change."""
    (alert,) = _alerts(
        head, "types", ("layer_norm", "(Tensor, int[], Tensor?, Tensor?, float, int) -> (Tensor)")
    ).values()
    assert [(d.code, d.subject) for d in alert.details] == [("argument_retyped", "cudnn_enable")]
    assert {k.differences() for k in alert.kernel_changes} == {(("parameter 6", "int64_t", "bool"),)}


def test_a_schema_comment_that_only_respells_a_default_raises_no_alert(head: Snapshot) -> None:
    respelled = head.operators["layer_norm"].schema.replace("eps=1e-05", "eps=1.0e-05")
    widened = head.operators["std.correction"].schema.replace("Scalar? correction", "int? correction")
    alerts = _alerts(head, "full", ("layer_norm", respelled), ("std.correction", widened))
    assert set(alerts) == {"std.correction"}
    assert (alerts["std.correction"].breaking, alerts["std.correction"].kernel) == (False, "breaking")


def test_gap_since_base(tmp_path: Path, head: Snapshot) -> None:
    base = _snapshot(tmp_path, "2.13.0")
    backend = _listing("relu")
    change = compare_coverage(compute_coverage(base, backend), compute_coverage(head, backend))
    added = set(head.operators) - set(base.operators)
    uncovered_now = {o.name for o in compute_coverage(head, backend).uncovered}
    # Every op new in HEAD that needs a kernel is reported as a new gap.
    assert (added & uncovered_now) <= set(change.new_uncovered)
    assert change.gap_after == len(uncovered_now)
    # cholesky was removed in 2.14: it left the gap, but the backend closed nothing
    assert "cholesky" in {o.name for o in compute_coverage(base, backend).uncovered}
    assert "cholesky" not in head.operators and "cholesky" not in change.newly_covered
    # the backend closed nothing: what left the gap became a structured delegator in 2.14, its work
    # moved to its out= op, which the backend lacks
    moved = {"_scaled_grouped_mm_v2", "_scaled_mm_v2"}
    assert set(change.newly_covered) == moved
    assert {f"{name}.out" for name in moved} <= uncovered_now


@pytest.mark.slow
def test_coverage_command_json_and_markdown(
    tmp_path: Path, release_file: Callable[[str], Path], opdrift: Opdrift
) -> None:
    base = release_file("2.13.0")
    head_path = release_file("2.14.1")
    xla = FIXTURES / "xla_native_functions.yaml"
    out = tmp_path / "cov.json"
    run = opdrift(
        "coverage",
        "--backend",
        f"xla={xla}",
        str(head_path),
        "--base",
        str(base),
        "--format",
        "json",
        "-o",
        str(out),
    )
    assert run.code == 0
    doc = json.loads(out.read_text())
    report = doc["backends"][0]
    assert report["backend"]["kind"] == "xla"
    assert report["covered"] + report["needs_kernel"] == report["operators"] == 3103
    assert "since_base" in report
    assert report["stale"] == [
        {"name": "not_an_op_anymore", "path": str(xla), "line": 23, "last_registered": None}
    ]

    run = opdrift("coverage", "--backend", f"xla={xla}", str(head_path), "--format", "markdown")
    assert run.code == 0
    md = run.out
    assert md.startswith("## Coverage of `xla`")
    # torch_xla runs what it lacks on its boxed CPU fallback: the table says so
    assert "| bucket | covered | needs a kernel |" in md
    assert report["uncovered_run"] == "falls_back_to_cpu"


def test_coverage_command_errors(
    tmp_path: Path, release_file: Callable[[str], Path], opdrift: Opdrift
) -> None:
    head_path = release_file("2.14.1")
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: XLA\nfull_codegen:\n  - abs\n  - 'add Tensor'\n")
    run = opdrift("coverage", "--backend", f"xla={bad}", str(head_path))
    assert run.code == 2
    assert run.err.count("\n") == 1
    assert f"{bad}:4:" in run.err
    run = opdrift("coverage", "--backend", "nope=x", str(head_path))
    assert run.code == 2
    assert "unknown backend kind" in run.err


def test_dispatch_key_that_no_operator_has_is_an_error_with_a_guess(
    release_file: Callable[[str], Path], opdrift: Opdrift
) -> None:
    head_path = release_file("2.14.1")
    out = opdrift("coverage", "--backend", "dispatch=mps", str(head_path))
    assert out.code == 2
    assert out.out == ""
    assert out.err.count("\n") == 1
    assert "--backend dispatch=mps: no operator of" in out.err
    assert out.err.endswith("has a kernel under 'mps'; did you mean MPS?\n")
    run = opdrift("coverage", "--backend", "dispatch=MPS", str(head_path), "--format", "json")
    assert run.code == 0
    listed = json.loads(run.out)["backends"][0]
    assert listed["covered"] > 0


@pytest.mark.parametrize("version", ["banana", "2", "2.x", "2.14.1.0"])
def test_torch_version_is_checked_at_the_command_line(opdrift: Opdrift, version: str) -> None:
    plugin = FIXTURES / "op_plugin_functions.yaml"
    run = opdrift("coverage", "--backend", f"op-plugin={plugin}", "--torch-version", version, "nowhere.yaml")
    assert run.code == 2
    assert run.err == (
        f"opdrift: error: --torch-version {version!r}: expected a version like 2.14, 2.14.1 or 2.15.0a0\n"
    )


@pytest.mark.parametrize("version", ["2.6.0a0", "2.6.0+cpu", "2.6.0.dev20241101", "2.6.0rc1", "v2.6"])
def test_torch_versions_as_torch_spells_them_select_the_gates_of_their_release(version: str) -> None:
    """A main-branch checkout says 2.6.0a0 and a CPU wheel 2.6.0+cpu: both are 2.6 to op-plugin's gates."""
    from opdrift.coverage.yaml_lists import read_op_plugin

    path = FIXTURES / "op_plugin_functions.yaml"
    text = path.read_text()
    assert read_op_plugin(text, str(path), version) == read_op_plugin(text, str(path), "2.6")


def test_schema_alert_details_read_as_the_drift_report_sentences(
    head: Snapshot, capsys: pytest.CaptureFixture[str]
) -> None:
    from opdrift.render.coverage import render

    cpp = read_backend("cpp", str(FIXTURES / "dlprim"))
    results = [(compute_coverage(head, cpp), None)]
    text = render(results, "text", head=head)
    # The fixture's mm takes `int extra`, which upstream's mm does not have.
    assert "      - argument `extra` removed (was `int extra`)\n" in text
    assert "argument_removed" not in text
    md = render(results, "markdown", head=head)
    assert "  - argument `extra` removed (was `int extra`)\n" in md
    assert "argument_removed" not in md


def test_schema_alert_details_stay_inert_in_markdown(head: Snapshot) -> None:
    from opdrift.coverage.alerts import SchemaAlert
    from opdrift.coverage.check import Coverage
    from opdrift.render.coverage import render
    from opdrift.schema.codes import Detail
    from opdrift.text import code

    hostile = Detail("argument_renamed", "breaking", "*x*", "*x*", "<img src=x onerror=alert(1)> @org/team")
    alert = SchemaAlert(
        "mm",
        "list.txt",
        3,
        "mm(Tensor *x*) -> Tensor",
        "mm(Tensor y) -> Tensor",
        True,
        (hostile,),
        "compatible",
    )
    results = [(Coverage("text", "list.txt", "eager", (), (), (alert,)), None)]
    md = render(results, "markdown", head=head)
    # folded: caller-only; no release had upstream's schema (a made-up alert has no date)
    assert (
        f"): argument {code('*x*')} renamed to {code(hostile.after)} (upstream's schema is in no release yet)\n"
    ) in md
    text = render(results, "text", head=head)
    assert f"      - argument `*x*` renamed to `{hostile.after}`\n" in text


@pytest.mark.slow
def test_unchecked_version_gates_are_said(release_file: Callable[[str], Path], opdrift: Opdrift) -> None:
    """A bare yaml has no torch version: op-plugin's gates cannot be checked, and the run says so."""
    head_path = release_file("2.14.1")
    plugin = FIXTURES / "op_plugin_functions.yaml"
    run = opdrift("coverage", "--backend", f"op-plugin={plugin}", str(head_path), "--format", "json")
    assert run.code == 0
    assert run.err.count("\n") == 1 and "version gates of 6 op-plugin entries were not checked" in run.err
    assert "--torch-version" in run.err
    argv = ["coverage", "--backend", f"op-plugin={plugin}", str(head_path), "--torch-version", "2.4"]
    run = opdrift(*argv, "--format", "json")
    assert run.code == 0
    assert run.err == ""


def test_long_lists_say_how_many_more_and_alerts_are_capped_in_markdown(
    head: Snapshot, request: pytest.FixtureRequest
) -> None:
    from opdrift.render.coverage import render

    names = [f"gone_{i}" for i in range(205)]
    cov = compute_coverage(head, _listing(*names))
    text = render([(cov, None)], "text", head=head)
    # the terminal folds names no release registered to a count (the work items come first)
    (line,) = [x for x in text.splitlines() if "never a native function" in x]
    assert ": 205 (" in line and "--format json" in line
    check_golden_entry(LINES, "never native, folded", line + "\n", updating(request))
    assert "gone_0" not in text
    markdown = render([(cov, None)], "markdown", head=head)
    assert "- … and 5 more (`--format json` lists all)" in markdown
    alerts = tuple(
        SchemaAlert(
            f"op{i}", "f.cpp", i, "op(Tensor a) -> Tensor", "op(Tensor b) -> Tensor", True, (), "compatible"
        )
        for i in range(60)
    )
    markdown = render([(replace(cov, alerts=alerts), None)], "markdown", head=head)
    assert "`op49`" in markdown and "`op50`" not in markdown and "- … and 10 more" in markdown


def test_torch_mlir_stale_entries_say_that_torchscript_built_ins_are_among_them(
    head: Snapshot, request: pytest.FixtureRequest
) -> None:
    from opdrift.render.coverage import render

    backend = BackendList(
        "torch-mlir", "GeneratedTorchOps.td", (BackendOp("add.t", 7, "GeneratedTorchOps.td", "td"),)
    )
    cov = compute_coverage(head, backend)
    assert [o.name for o in cov.stale] == ["add.t"]
    for fmt in ("text", "markdown"):
        (line,) = [x for x in render([(cov, None)], fmt, head=head).splitlines() if "TorchScript" in x]
        assert "add.t" in line
        check_golden_entry(LINES, f"torch-mlir stale: {fmt}", line + "\n", updating(request))
    plain = compute_coverage(head, _listing("add.t"))
    assert "TorchScript" not in render([(plain, None)], "text", head=head)


def test_a_symint_only_change_that_breaks_callers_is_graded_with_the_caller_breaking_alerts(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """2.2.0 swapped `_efficient_attention_backward`'s max_seqlen_q and max_seqlen_k and made them
    SymInt: an int64_t kernel still builds ("symint"), but callers by position break. The Markdown
    grades it with the caller-breaking alerts, not under "SymInt form only", which says callers are
    fine."""
    from opdrift.render.coverage import coverage_view, render

    old = next(
        line.removeprefix("- func: ")
        for line in release_text("2.1.0").splitlines()
        if line.startswith("- func: _efficient_attention_backward(")
    )
    cpp = tmp_path / "attention.cpp"
    cpp.write_text(
        f'// {{"schema": "aten::{old}"}}\n'
        "std::tuple<Tensor, Tensor, Tensor, Tensor> efficient_attention_backward(const Tensor & grad_out,"
        " int64_t max_seqlen_k, int64_t max_seqlen_q) { return {}; }\n"
        "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n"
        '  m.impl("aten::_efficient_attention_backward", &efficient_attention_backward);\n'
        "}\n"
    )
    head = _snapshot(tmp_path, "2.2.0")
    cov = compute_coverage(head, read_backend("cpp", str(cpp)))
    (alert,) = cov.alerts
    assert (alert.kernel, alert.breaking, alert.form) == ("symint", True, "int64_t")
    view = coverage_view(cov, None, head)
    assert (view.alerts_symint, view.alerts_caller) == ((), (alert,))
    md = render([(cov, None)], "markdown", head=head)
    (heading,) = [x for x in md.splitlines() if x.startswith("**caller-only")]
    assert heading.endswith(" (1)**")
    check_golden_entry(LINES, "caller-only heading", heading + "\n", updating(request))
    assert "SymInt form only" not in md
