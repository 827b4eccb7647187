"""Reports that put a backend's work first (issue: ranking, grouping, less noise), on real releases
and the real backend lists in tests/data/backends/real."""

from __future__ import annotations

import dataclasses
import json
import lzma
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA
from goldens import check_golden, check_golden_entry, updating

from opdrift import pipeline
from opdrift.coverage.kinds import BackendKind
from opdrift.drift.changes import compute_drift
from opdrift.model import Snapshot
from opdrift.render.context import ReportContext
from opdrift.render.report import render
from opdrift.render.view import build_view
from opdrift.taxonomy.scope import scope_of

REAL = DATA / "backends" / "real"
GITHUB_LIMIT = 65_536


def _load(release_file: Callable[[str], Path], version: str) -> Snapshot:
    return pipeline.load_snapshot(str(release_file(version)))


def _section(body: str, heading: str) -> str:
    start = body.index(heading)
    end = body.find("\n### ", start + 1)
    return body[start : end if end >= 0 else len(body)]


def test_needs_a_kernel_leads_with_what_every_backend_needs(release_file: Callable[[str], Path]) -> None:
    """2.14.1 → 2.15.0: the cuDNN and CUDA-only ops leave the generic ⚠️ list for a collapsed group
    with a count, and each says why."""
    drift = compute_drift(_load(release_file, "2.14.1"), _load(release_file, "2.15.0"))
    body = render(drift, "pr-comment", context=ReportContext())
    section = _section(body, "### ⚠️ Needs a kernel")
    generic, _, other = section.partition("<details>")
    for name in ("_cudnn_attention_forward_no_dropout_inplace", "_scaled_addmm.out", "_scaled_addmm"):
        assert f"`{name}`" not in generic, name
        assert f"`{name}`" in other, name
    assert other.startswith("<summary>3 only some backends need")
    assert "its only kernel is for CUDA" in other and "its name contains cudnn" in other
    assert "`_philox_randint_`" in generic
    view = build_view(drift, ReportContext().acknowledgements)
    (needs,) = [s for s in view.lead if s.key == "needs_kernel"]
    assert all(scope_of(i.change.record).generic for i in needs.items)
    assert len(needs.other) + sum(len(i.changes) for i in needs.items) == len(needs.changes)


@pytest.mark.slow
def test_the_weekly_issue_groups_a_family_and_fits(release_file: Callable[[str], Path]) -> None:
    """2.12.0 → 2.15.0 removed 114 Dimname overloads: one line, and the ❌ section is whole."""
    drift = compute_drift(_load(release_file, "2.12.0"), _load(release_file, "2.15.0"))
    body = render(drift, "weekly-issue", context=ReportContext())
    assert len(body) <= GITHUB_LIMIT
    breaking = _section(body, "### ❌ BC-breaking")
    assert "… and" not in breaking
    (family,) = [line for line in breaking.splitlines() if "Dimname overloads" in line]
    count = int(re.search(r"\*\*(\d+) Dimname overloads\*\* removed", family).group(1))  # type: ignore[union-attr]
    removed_dimname = [c for c in drift.removed if "Dimname" in c.record.schema]
    assert count == len(removed_dimname) > 100
    # a caller-breaking report says how breaks are usually avoided
    assert "BC allow-list" in breaking


def test_ranking_puts_core_then_public_then_private(release_file: Callable[[str], Path]) -> None:
    drift = compute_drift(_load(release_file, "2.0.0"), _load(release_file, "2.1.0"))
    view = build_view(drift, ReportContext().acknowledgements)
    for section in view.lead:
        tiers = []
        for item in section.items:
            rec = item.change.record
            tiers.append((0 if "core" in rec.facets.tags else 2) + rec.base.startswith("_"))
        assert tiers == sorted(tiers), section.key


@pytest.mark.slow
def test_dlprim_coverage_leads_with_public_core_ops(
    dlprim_src: Path, opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    snapshot = _load(release_file, "2.15.0")
    run = opdrift(
        "coverage", "--backend", f"cpp={dlprim_src}", str(release_file("2.15.0")), "--format", "markdown"
    )
    assert run.code == 0, run.err
    # dlprim has a boxed CPU fallback: what it lacks runs on CPU, or fails where PyTorch has no CPU
    # kernel. Each line is a work item: the op to write, and the ops it serves.
    listed = _section(run.out, "### Work items: operators that need a kernel").split("<details>")[0]
    items = re.findall(r"^- `([^`]+)` \([^)]*\)(?:, serves ([^;\n]+))?", listed, re.MULTILINE)
    family = {lead: {lead, *re.findall(r"`([^`]+)`", serves)} for lead, serves in items}
    # what fails on the device today (PyTorch has no CPU kernel for the fallback to run) leads; then
    # what the fallback runs, public core ops first
    report = json.loads(
        opdrift(
            "coverage", "--backend", f"cpp={dlprim_src}", str(release_file("2.15.0")), "--format", "json"
        ).out
    )
    fails = {w["name"] for w in report["backends"][0]["work_items"] if w["today"] == "fails"}
    today = [lead in fails for lead, _ in items]
    assert today == sorted(today, reverse=True) and any(today) and not all(today)
    first = [lead for lead, _ in items if lead not in fails][:20]
    assert first and all(
        any("core" in snapshot.operators[n].facets.tags for n in family[lead]) and not lead.startswith("_")
        for lead in first
    ), first
    leads = [lead for lead, _ in items]
    # core ops dlprim lacks are one item each, their out= op (a structured delegator is no work of its
    # own), no longer behind 200 `_` names
    for name in ("acos", "argmin", "cumsum"):
        assert f"{name}.out" in leads[:200] and name not in leads, name
    assert "_cudnn_rnn" not in set().union(*family.values())  # other backends' ops are behind the count
    assert re.search(r"<summary>\d+ more only some backends need", run.out)


@pytest.mark.slow
def test_four_real_backends_fit_one_markdown_report(
    dlprim_src: Path, opdrift: Opdrift, release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    lists = {
        "xla": "pytorch-xla.xla_native_functions.yaml.xz",
        "torch-mlir": "torch-mlir.GeneratedTorchOps.td.xz",
        "op-plugin": "op-plugin.op_plugin_functions.yaml.xz",
    }
    args = []
    for kind, name in lists.items():
        path = tmp_path / name.removesuffix(".xz")
        path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
        args += ["--backend", f"{kind}={path}"]
    args += ["--backend", f"cpp={dlprim_src}"]
    run = opdrift(
        "coverage", *args, str(release_file("2.15.0")), "--torch-version", "2.15", "--format", "markdown"
    )
    assert run.code == 0, run.err
    assert len(run.out) <= GITHUB_LIMIT
    assert run.out.count("## Coverage of ") == 4
    for kind in ("xla", "torch-mlir", "op-plugin", "cpp"):
        assert f"## Coverage of `{kind}`" in run.out
    # op-plugin's alerts: kernel-breaking ones expanded, the rest folded with a count
    plugin = run.out.split("## Coverage of `op-plugin`")[1].split("## Coverage of ")[0]
    assert "### 🔧 Schema alerts: your kernel's C++ signature changed" in plugin
    assert re.search(r"<summary>\d+ more schema alerts break nothing you build", plugin)
    assert re.search(r"\*\*caller-only: .* your kernel does not \(\d+\)\*\*", plugin)


@pytest.mark.slow
def test_golden_coverage_of_the_real_backends(
    dlprim_src: Path,
    release_file: Callable[[str], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """The Markdown coverage report of the four real backends against 2.15.0, as a maintainer reads
    it, kept as a golden file (refresh with --update-golden). Paths are as the user gave them."""
    import shutil

    from opdrift.coverage.backends import read_backend
    from opdrift.coverage.check import compute_coverage
    from opdrift.render.coverage import render as render_coverage

    lists = {
        "xla": ("pytorch-xla.xla_native_functions.yaml.xz", "xla/xla_native_functions.yaml"),
        "op-plugin": ("op-plugin.op_plugin_functions.yaml.xz", "op-plugin/op_plugin_functions.yaml"),
    }
    for name, where in lists.values():
        (tmp_path / where).parent.mkdir(parents=True)
        (tmp_path / where).write_bytes(lzma.decompress((REAL / name).read_bytes()))
    shutil.copytree(dlprim_src, tmp_path / "dlprim" / "src")
    # torch-mlir as a checkout: its list and the decomposition table its FX importer passes to export
    with tarfile.open(REAL / "torch-mlir.checkout.tar.xz") as tar:
        tar.extractall(tmp_path / "torch-mlir", filter="data")
    # the release's own files: named as the release, so the work items rank by the model table that
    # answers for 2.15.0 (2.14.1's, which the header says)
    loaded = _load(release_file, "2.15.0")
    snapshot = dataclasses.replace(loaded, meta=dataclasses.replace(loaded.meta, torch_version="2.15.0"))
    monkeypatch.chdir(tmp_path)
    results = []
    read: list[tuple[BackendKind, tuple[str, str]]] = [
        ("xla", lists["xla"]),
        ("torch-mlir", ("", "torch-mlir")),
        ("op-plugin", lists["op-plugin"]),
        ("cpp", ("", "dlprim/src")),
    ]
    for kind, (_, where) in read:
        backend = read_backend(kind, where, torch_version="2.15" if kind == "op-plugin" else None)
        results.append((compute_coverage(snapshot, backend), None))
    text = render_coverage(results, "markdown", head=snapshot)
    assert len(text) <= GITHUB_LIMIT and str(tmp_path) not in text
    check_golden("coverage-real-2.15.0.md", text, updating(request))


@pytest.mark.slow
def test_with_a_base_only_new_or_changed_alerts_are_shown(
    opdrift: Opdrift, release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """op-plugin's alerts against 2.15.0 were (nearly) all raised at 2.14.1 already: with `--base` the
    report shows only what is news, and says how many it left out."""
    from opdrift.coverage.alerts import alert_key
    from opdrift.coverage.backends import read_backend
    from opdrift.coverage.change import compare_coverage
    from opdrift.coverage.check import compute_coverage

    path = tmp_path / "op_plugin_functions.yaml"
    path.write_bytes(lzma.decompress((REAL / "op-plugin.op_plugin_functions.yaml.xz").read_bytes()))
    backend = read_backend("op-plugin", str(path), torch_version="2.15")
    base = compute_coverage(_load(release_file, "2.14.1"), backend)
    head = compute_coverage(_load(release_file, "2.15.0"), backend)
    change = compare_coverage(base, head)
    old = {alert_key(a) for a in base.alerts}
    assert {alert_key(a) for a in change.new_alerts} == {alert_key(a) for a in head.alerts} - old
    assert change.old_alerts == len(head.alerts) - len(change.new_alerts) > 50
    argv = ["coverage", "--backend", f"op-plugin={path}", "--torch-version", "2.15", "--format", "markdown"]
    full = opdrift(*argv, str(release_file("2.15.0")))
    since = opdrift(*argv, "--base", str(release_file("2.14.1")), str(release_file("2.15.0")))
    assert full.code == since.code == 0, since.err
    assert f"{change.old_alerts} schema alerts the base already raised are not shown" in since.out
    assert since.out.count("- you implement ") == sum(a.kernel == "breaking" for a in change.new_alerts)
    assert full.out.count("- you implement ") > since.out.count("- you implement ")


@pytest.mark.slow
def test_a_boxed_fallback_is_found_and_said(
    dlprim_src: Path, opdrift: Opdrift, release_file: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """pytorch_dlprim registers `m.fallback(...)` in `TORCH_LIBRARY_IMPL(_, PrivateUse1, m)`: what it
    lacks runs there (on the CPU) meanwhile, and coverage says where."""
    from opdrift.coverage.backends import read_backend

    text = (dlprim_src / "tensor_ops.cpp").read_text()
    (line,) = [i for i, row in enumerate(text.splitlines(), start=1) if "m.fallback(" in row]
    backend = read_backend("cpp", str(dlprim_src))
    assert backend.fallback == f"{dlprim_src / 'tensor_ops.cpp'}:{line} (PrivateUse1)"
    run = opdrift(
        "coverage", "--backend", f"cpp={dlprim_src}", str(release_file("2.15.0")), "--format", "json"
    )
    (report,) = json.loads(run.out)["backends"]
    assert report["backend"]["fallback"] == backend.fallback
    text_run = opdrift("coverage", "--backend", f"cpp={dlprim_src}", str(release_file("2.15.0")))
    # relative to the tree given: where its maintainer finds it, not where this machine keeps it
    (said,) = [x for x in text_run.out.splitlines() if f" tensor_ops.cpp:{line} (PrivateUse1) " in x]
    assert re.search(r"\(\d+ run on CPU ", said)
    check_golden_entry("coverage.lines.txt", "dlprim: the boxed fallback", said + "\n", updating(request))
    assert str(dlprim_src) not in text_run.out


@pytest.mark.slow
def test_one_backend_from_several_lists(
    opdrift: Opdrift, release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """torch_npu registers `empty.memory_format` and friends outside op-plugin's yaml: a second list
    with the same NAME adds them to the one backend."""
    plugin = tmp_path / "op_plugin_functions.yaml"
    plugin.write_bytes(lzma.decompress((REAL / "op-plugin.op_plugin_functions.yaml.xz").read_bytes()))
    more = tmp_path / "elsewhere.txt"
    more.write_text("# registered by torch_npu itself\nempty.memory_format\nempty_strided\nas_strided\n")
    source = str(release_file("2.15.0"))
    alone = json.loads(
        opdrift(
            "coverage",
            "--backend",
            f"op-plugin={plugin}",
            "--torch-version",
            "2.15",
            "--format",
            "json",
            source,
        ).out
    )["backends"][0]
    run = opdrift(
        "coverage",
        "--backend",
        f"NPU:op-plugin={plugin}",
        "--backend",
        f"NPU:text={more}",
        "--torch-version",
        "2.15",
        "--format",
        "json",
        source,
    )
    assert run.code == 0, run.err
    (both,) = json.loads(run.out)["backends"]
    lacked = {u["name"] for u in alone["uncovered"]}
    assert {"empty.memory_format", "empty_strided", "as_strided"} <= lacked
    assert not {"empty.memory_format", "empty_strided", "as_strided"} & {u["name"] for u in both["uncovered"]}
    assert both["backend"]["path"] == f"NPU ({plugin} + {more})" and both["backend"]["profile"] == "eager"
    # the files of a combined backend are named relative to the list they came from, as for one list
    markdown = opdrift(
        "coverage", "--backend", f"NPU:op-plugin={plugin}", "--backend", f"NPU:text={more}",
        "--torch-version", "2.15", "--format", "markdown", source,
    ).out  # fmt: skip
    assert "(op\\_plugin\\_functions.yaml:" in markdown
    heading = markdown.splitlines()[0]
    # each list by its file's name, never the machine's path to it
    assert str(tmp_path) not in markdown
    assert heading == f"## Coverage of NPU (`op-plugin`: `op_plugin_functions.yaml` \\+ `{Path(more).name}`)"
    bad = opdrift("coverage", "--backend", f":text={more}", source)
    assert (
        bad.code == 2
        and bad.err.strip() == f"opdrift: error: --backend ':text={more}': empty NAME before ':'"
    )


def test_stale_entries_say_whether_upstream_removed_them(
    release_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """torch-mlir's 107 stale names are TorchScript built-ins no release registered: folded as noise.
    XLA still lists `cholesky` and `qr`, which 2.14 removed: those are registrations to delete."""
    from opdrift.coverage.backends import read_backend
    from opdrift.coverage.check import compute_coverage
    from opdrift.coverage.names import last_registered, table_releases
    from opdrift.render.coverage import coverage_view

    snapshot = _load(release_file, "2.15.0")
    views = {}
    real: tuple[tuple[BackendKind, str], ...] = (
        ("torch-mlir", "torch-mlir.GeneratedTorchOps.td.xz"),
        ("xla", "pytorch-xla.xla_native_functions.yaml.xz"),
    )
    for kind, name in real:
        path = tmp_path / name.removesuffix(".xz")
        path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
        views[kind] = coverage_view(compute_coverage(snapshot, read_backend(kind, str(path))), None, snapshot)
    mlir = views["torch-mlir"]
    assert (len(mlir.stale_never), len(mlir.stale_removed)) == (107, 0)
    assert {"add.t", "Int.Tensor", "size"} <= {n for n, _, _ in mlir.stale_never}
    assert [(n, last) for n, _, _, last in views["xla"].stale_removed] == [
        ("cholesky", "2.13.0"),
        ("qr", "2.13.0"),
    ]
    # The shipped table is the vendored wheel lists' (scripts/name_table.py): every release, every name.
    wheels = Path(__file__).parents[2] / "data" / "wheels"
    releases = table_releases()
    assert len(releases) == 21 and releases[0] == "1.9.0" and releases[-1] == "2.15.0"
    last: dict[str, str] = {}
    for version in releases:
        for name in lzma.decompress((wheels / version / "operators.txt.xz").read_bytes()).decode().split():
            last[name] = version
    assert all(last_registered(n) == v for n, v in last.items())
    assert last_registered("add.t") is None
    # a native function until 1.12 (RegistrationDeclarations.h of the 1.9.0-1.11.0 wheels lists it)
    assert last_registered("_cat") == last_registered("_cat.out") == "1.11.0"


def test_coverage_links_each_op_to_its_line_and_shows_paths_as_given(
    dlprim_src: Path, opdrift: Opdrift
) -> None:
    """Against a release snapshot, every op needing a kernel links to its entry at that release's tag;
    the backend's files are named relative to the tree the user gave."""
    from opdrift.snapshot import load_snapshot

    shipped = Path(__file__).resolve().parents[3] / "snapshots" / "v2.15.0.json"
    head = load_snapshot(str(shipped))
    run = opdrift("coverage", "--backend", f"cpp={dlprim_src}", str(shipped), "--format", "markdown")
    assert run.code == 0, run.err
    # the work item is the structured out= kernel, which `avg_pool3d` delegates to
    line = head.operators["avg_pool3d.out"].line
    url = (
        f"https://github.com/pytorch/pytorch/blob/v2.15.0/aten/src/ATen/native/native_functions.yaml#L{line}"
    )
    assert f"- [`avg_pool3d.out`]({url}) (pooling), serves `avg_pool3d`" in run.out
    assert "(loss\\_ops.cpp:" in run.out and str(dlprim_src) + "/" not in run.out


def test_an_op_with_a_default_kernel_is_every_backends_whatever_its_other_kernels(
    release_file: Callable[[str], Path],
) -> None:
    """`sum` and `clone` have sparse or nested kernels of their own, and a CompositeExplicitAutograd
    one for everything else: every backend needs them (a review found them folded away)."""
    snapshot = _load(release_file, "2.15.0")
    for name in ("sum", "clone", "abs", "matmul", "empty_like"):
        assert scope_of(snapshot.operators[name]).generic, name
    assert not scope_of(snapshot.operators["_coalesce"]).generic  # SparseCPU/SparseCUDA only


def test_a_fallthrough_or_an_autocast_fallback_is_no_boxed_fallback() -> None:
    from opdrift.coverage.cpp import read_cpp

    impl = 'TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("add.Tensor", &f); }\n'
    autocast = "TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }\n"
    through = "TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }\n"
    boxed = "TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {\n  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fb>());\n}\n"
    assert read_cpp(impl + autocast + through, "b.cpp").fallback is None
    assert read_cpp(impl + autocast + through + boxed, "b.cpp").fallback == "b.cpp:5 (PrivateUse1)"
