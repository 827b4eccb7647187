"""One question, one answer. Every operator of 2.15.0 against every real backend list
(tests/data/backends/real, see SOURCES.md there) through each view: coverage's JSON, the per-change
profiles of a drift that adds every operator, a subscription's lacking set, `explain`'s "without its
own" line and the site's coverage cell. All of them ask the work engine (`opdrift.work.engine`).

And `explain OP SOURCE --backend NAME:KIND=PATH` gives, for every (operator, backend) pair,
the verdict `coverage` gives: the same list read the same way, its Autograd-key registrations, its
decomposition table, the source's own release."""

from __future__ import annotations

import dataclasses
import json
import lzma
import random
import re
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import Opdrift
from datafiles import DATA, has_release_file, release_text
from goldens import check_golden, updating

from opdrift import pipeline
from opdrift.app.coverage import backend_groups, coverage_of, read_backends
from opdrift.app.prepare import backend_work
from opdrift.config.file import parse_config
from opdrift.coverage.backends import merge_backends, read_backend
from opdrift.coverage.check import OpCoverage, compute_coverage
from opdrift.coverage.jsonform import coverage_json
from opdrift.coverage.kinds import PROFILE_OF_KIND, BackendKind
from opdrift.coverage.oplist import BackendList
from opdrift.drift.changes import compute_drift
from opdrift.drift.needs import ProfileNeeds, export_path_for
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, VERSION_PATH, Snapshot
from opdrift.operators.export_table import core_aten_release
from opdrift.operators.kernels import PROFILES, Profile
from opdrift.render.explain import explain_json, explain_view
from opdrift.site.build import build_site
from opdrift.site.model import BackendColumn
from opdrift.work.rules import DECOMPOSES, NEEDS_KERNEL, words

REAL = DATA / "backends" / "real"


@pytest.fixture(scope="module")
def head(release_file: Callable[[str], Path]) -> Snapshot:
    return pipeline.load_snapshot(str(release_file("2.15.0")))


@pytest.fixture(scope="module")
def specs(
    tmp_path_factory: pytest.TempPathFactory, dlprim_src: Path
) -> dict[str, list[tuple[BackendKind, str]]]:
    """NAME → its (kind, path) lists: the real lists of tests/data/backends/real, unpacked once."""
    tmp = tmp_path_factory.mktemp("real")

    def unxz(name: str) -> str:
        path = tmp / name.removesuffix(".xz")
        path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
        return str(path)

    with tarfile.open(REAL / "torch-mlir.checkout.tar.xz") as tar:
        tar.extractall(tmp / "torch-mlir", filter="data")
    return {
        "xla": [("xla", unxz("pytorch-xla.xla_native_functions.yaml.xz"))],
        "dlprim": [("cpp", str(dlprim_src))],
        "npu": [
            ("op-plugin", unxz("op-plugin.op_plugin_functions.yaml.xz")),
            ("torch-npu", unxz("torch_npu.npu_native_functions.yaml.xz")),
        ],
        "torch-mlir": [("torch-mlir", str(tmp / "torch-mlir"))],
        "xpu": [("xpu", unxz("torch-xpu-ops.xpu_functions.yaml.xz"))],
    }


@pytest.fixture(scope="module")
def lists(
    specs: dict[str, list[tuple[BackendKind, str]]],
) -> dict[str, tuple[list[tuple[BackendKind, str]], BackendList]]:
    """NAME → (its (kind, path) lists, the backend read from them)."""
    out = {}
    for name, kinds in specs.items():
        read = [read_backend(k, p, torch_version="2.15.0") for k, p in kinds]
        out[name] = (kinds, read[0] if len(read) == 1 else merge_backends(name, read))
    return out


def _profiles_by_drift(head: Snapshot) -> dict[str, frozenset[Profile]]:
    """The per-change profiles of a drift from nothing to HEAD: every operator is added."""
    empty = dataclasses.replace(head, operators={}, decisions={}, entries=0)
    drift = compute_drift(empty, head)
    found = {c.record.name: frozenset(c.profiles) for c in drift.changes if c.kind == "added"}
    assert len(found) == len(head.operators)
    return found


def _explained(head: Snapshot) -> Iterator[tuple[str, Profile, bool]]:
    """(operator, profile, needs work) as `explain` words it, for every operator."""
    for base in sorted({r.base for r in head.operators.values()}):
        for rec in explain_view(head, base).records:
            (line,) = (f for f in rec.facets if f.startswith("without its own: "))
            for part in line.removeprefix("without its own: ").split("; "):
                m = re.match(r"(\w+) \([^)]*\): (.*)$", part)
                assert m is not None, part
                yield rec.name, m.group(1), m.group(2).startswith("needs a")  # type: ignore[misc]


@pytest.mark.slow
def test_every_view_gives_one_answer_for_every_op_and_real_list(
    head: Snapshot, lists: dict[str, tuple[list[tuple[BackendKind, str]], BackendList]], tmp_path: Path
) -> None:
    profiles = _profiles_by_drift(head)
    needs = {p: {n for n, ps in profiles.items() if p in ps} for p in PROFILES}
    # explain, for a backend of each profile that lists nothing
    explained: dict[str, set[str]] = {p: set() for p in PROFILES}
    for name, profile, needed in _explained(head):
        if needed:
            explained[profile].add(name)
    assert explained == needs
    # coverage of an empty list of each profile: the drift's profiles exactly
    for p in PROFILES:
        cov = compute_coverage(head, BackendList("text", "none", ()), p)
        assert {o["name"] for o in coverage_json(cov)["uncovered"]} == needs[p], p  # type: ignore[attr-defined]
    assert len(needs["eager"]) < 1000  # structured delegators are no work of their own (was 1248)

    coverages = []
    for name, (kinds, backend) in lists.items():
        cov = compute_coverage(head, backend)
        lacking = {o["name"] for o in coverage_json(cov)["uncovered"]}  # type: ignore[attr-defined]
        # what a list lacks is work its profile's backends must do: never an op the drift says is no
        # work for that profile (_philox_randint_ "for eager" and lacked by XLA; _cdist_backward.out)
        profile = PROFILE_OF_KIND[backend.kind]
        expected = needs[profile]
        if backend.decompositions is not None:
            # torch-mlir's checkout passes its own table: the drift's export profile is PyTorch's
            # Core-ATen table's, so the same engine with that table is what the list is held to
            table = export_path_for(
                "2.15.0",
                backend.decompositions,
                backend.decompositions_origin,
                backend.decompositions_core_except,
            )
            own = ProfileNeeds(head.operators, export=table)
            expected = {n for n, rec in head.operators.items() if "export" in own(rec)}
        assert lacking <= expected, (name, sorted(lacking - expected)[:10])
        assert lacking, name
        coverages.append((BackendColumn(name, backend.kind, name, cov.profile), cov))
        # a subscription to the list lacks the same operators
        if len(kinds) == 1:
            kind, path = kinds[0]
            config = parse_config(
                f'subscriptions:\n  - who: ["@x"]\n    backend: {{kind: {kind}, path: "{path}"}}\n',
                "opdrift.yml",
            )
            (subscribed,) = backend_work(config, head)[0].values()
            assert subscribed == lacking, name
    # the site: each overload's profiles are the drift's, its coverage cells the coverage's
    site = build_site([head], coverages)
    by_name = {name: {o.name for o in cov.uncovered} for name, cov in ((s.name, c) for s, c in coverages)}
    seen = 0
    for op in site.ops:
        for ov in op.overloads:
            assert set(ov.profiles) == profiles[ov.name], ov.name
            for cell in ov.coverage:
                # a training-only op is neither served nor needed: not covered, and not a need
                served = ov.name not in by_name[cell.backend] and cell.rule != "training_only"
                assert cell.covered == served, (cell.backend, ov.name)
                seen += 1
    assert seen == len(head.operators) * len(lists)


# --- explain --backend: coverage's verdict for each (operator, backend) pair -----------------------

# Releases the pairs are sampled in: before and after 2.6's CIA rule of the export path, the oldest the
# Core-ATen table holds, and 2.15.0, which that table lacks (its nearest release before is 2.14.1).
RELEASES = ("2.1.0", "2.6.0", "2.13.0", "2.15.0")


def _checkout(root: Path, version: str) -> str:
    """Release VERSION's operator files at their paths in a PyTorch checkout, with its version.txt: a
    SOURCE whose torch version is known, so that each release is judged by its own tables."""
    for name, path in (
        ("native_functions.yaml", NATIVE_PATH),
        ("tags.yaml", TAGS_PATH),
        ("derivatives.yaml", DERIVATIVES_PATH),
    ):
        if has_release_file(version, name):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(release_text(version, name), encoding="utf-8")
    (root / VERSION_PATH).write_text(f"{version}\n", encoding="utf-8")
    return str(root)


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("checkouts")
    return {v: _checkout(root / v, v) for v in RELEASES}


def _backend_args(specs: dict[str, list[tuple[BackendKind, str]]]) -> list[str]:
    """Every real list as `--backend NAME:KIND=PATH`, plus torch-mlir's bare .td (judged with PyTorch's
    own table, as coverage judges it) and a native dispatch key."""
    args = [f"{name}:{kind}={path}" for name, kinds in specs.items() for kind, path in kinds]
    (mlir,) = specs["torch-mlir"]
    td = Path(mlir[1]) / "include/torch-mlir/Dialect/Torch/IR/GeneratedTorchOps.td"
    return [*args, f"torch-mlir-td:torch-mlir={td}", "mps:dispatch=MPS"]


def _verdict(o: OpCoverage) -> dict[str, object]:
    """An operator's verdict as coverage gives it, in explain's JSON words."""
    status = "training_only" if o.rule == "training_only" else "covered" if o.covered else "needs_kernel"
    return {
        "name": o.name,
        "status": status,
        "rule": o.rule,
        "via": o.via or None,
        "alternative": o.alternative or None,
    }


def _sample(ops: list[dict[str, object]], seed: str) -> list[str]:
    """A few operators of every rule coverage used for a backend (so each rule is asked), plus cdist."""
    rng = random.Random(seed)
    by_rule: dict[object, list[str]] = {}
    for o in ops:
        by_rule.setdefault(o["rule"], []).append(str(o["name"]))
    picked = {"cdist"}
    for names in by_rule.values():
        picked.update(rng.sample(names, min(3, len(names))))
    return sorted(picked)


@pytest.mark.slow
def test_explain_gives_coverage_verdict_for_sampled_pairs_of_real_lists_and_releases(
    specs: dict[str, list[tuple[BackendKind, str]]], checkouts: dict[str, str]
) -> None:
    args = _backend_args(specs)
    pairs = 0
    rules_seen: set[object] = set()
    for version, source in checkouts.items():
        run = coverage_of(
            source,
            args,
            base_source=None,
            profile=None,
            torch_version=None,
            load=pipeline.load_snapshot,
            warn=print,
        )
        head = run.head
        assert head.meta.torch_version == version
        covered = {cov.name: cov for cov, _ in run.results}
        assert list(covered) == [a.split(":", 1)[0] for a in args if not a.startswith("npu:torch-npu")]
        expected = {name: {o.name: _verdict(o) for o in cov.ops} for name, cov in covered.items()}
        # explain reads the same arguments the way its command line does, once per source
        backends = read_backends(head, backend_groups(args), torch_version=None, warn=print)
        wanted: dict[str, set[str]] = {}
        for name, verdicts in expected.items():
            for op in _sample(list(verdicts.values()), f"{version} {name}"):
                wanted.setdefault(op, set()).add(name)
        for op, names in sorted(wanted.items()):
            # the JSON explain prints, read back as a script would read it
            doc: dict[str, Any] = json.loads(json.dumps(explain_json(explain_view(head, op, backends))))
            by_backend = {b["backend"]["name"]: b for b in doc["backends"]}
            assert list(by_backend) == list(covered)
            for name in names:
                cov, b = covered[name], by_backend[name]
                # the backend as coverage reports it: profile, and for export the table it is judged with
                assert b["backend"]["profile"] == cov.profile, (version, name)
                assert b["backend"].get("decompositions", "") == cov.decompositions, (version, name)
                (one,) = (v for v in b["operators"] if v["name"] == op)
                got = {k: one[k] for k in ("name", "status", "rule", "via", "alternative")}
                assert got == expected[name][op], (version, name, op)
                rules_seen.add(got["rule"])
                pairs += 1
    assert pairs > 300
    # every rule of the engine was asked somewhere (listed variants, the Autograd key, export's table)
    assert rules_seen == {
        "listed",
        "decomposes",
        "default_kernel",
        "structured_delegate",
        "backend_codegen",
        "autograd_key",
        "training_only",
        "needs_kernel",
    }


@pytest.mark.slow
def test_explain_cdist_with_torch_mlirs_table_and_the_release_of_the_source(
    specs: dict[str, list[tuple[BackendKind, str]]],
    checkouts: dict[str, str],
    opdrift: Opdrift,
    request: pytest.FixtureRequest,
) -> None:
    """cdist is CompositeImplicitAutograd: PyTorch's default table decomposes it (what explain said of any
    export backend), torch-mlir's fx_decomp_util.py does not, so it reaches torch-mlir's graph and coverage
    says it needs a lowering. And a 2.15.0 source with torch-mlir's checkout was judged with PyTorch
    2.14.1's table; with the checkout it is torch-mlir's, with the bare .td the table of the source's own
    release (the nearest the shipped table holds at or before it: 2.15.0 → 2.14.1, 2.13.0 → 2.13.0)."""
    args = _backend_args(specs)
    mlir = [a for a in args if a.startswith("torch-mlir")]
    for version in ("2.15.0", "2.13.0"):
        source = checkouts[version]
        cov = json.loads(
            opdrift("coverage", *(f"--backend={a}" for a in mlir), source, "--format", "json").out
        )
        run = opdrift("explain", "cdist", source, *(f"--backend={a}" for a in mlir), "--format", "json")
        assert run.code == 0, run.err
        doc = json.loads(run.out)
        assert [b["backend"] for b in doc["backends"]] == [c["backend"] for c in cov["backends"]]
        checkout, td = doc["backends"]
        # the table by its path in torch-mlir's tree, never this machine's path to the checkout
        decompositions = checkout["backend"]["decompositions"]
        assert decompositions.startswith("python/torch_mlir/extras/fx_decomp_util.py ")
        assert "DEFAULT_DECOMPOSITIONS" in decompositions
        assert (
            td["backend"]["decompositions"]
            == f"PyTorch {core_aten_release(version).version}'s Core-ATen table"
        )
        assert core_aten_release(version).version == {"2.15.0": "2.14.1", "2.13.0": "2.13.0"}[version]
        # cdist: torch-mlir's table leaves it in the graph, PyTorch's decomposes it; coverage agrees
        assert {"name": "cdist", "bucket": "composite_reduction", "alternative": None} in cov["backends"][0][
            "uncovered"
        ]
        assert not any(o["name"] == "cdist" for o in cov["backends"][1]["uncovered"])
        (v_mlir,) = checkout["operators"]
        (v_td,) = td["operators"]
        assert (v_mlir["status"], v_mlir["rule"]) == ("needs_kernel", "needs_kernel")
        assert "fx_decomp_util.py" in v_mlir["why"] and "DEFAULT_DECOMPOSITIONS" in v_mlir["why"]
        assert (v_td["status"], v_td["rule"]) == ("covered", "decomposes")
    # the text and Markdown formats say the same; their wording is in the golden file
    source = checkouts["2.15.0"]
    text = opdrift("explain", "cdist", source, *(f"--backend={a}" for a in mlir)).out
    # an export backend's need is a lowering (`opdrift.work.rules`)
    need = words(NEEDS_KERNEL, profile="export")
    assert f"\n  cdist: {need} (needs_kernel): " in text
    assert f"\n  cdist: covered (decomposes): {words(DECOMPOSES)}\n" in text
    markdown = opdrift(
        "explain", "cdist", source, *(f"--backend={a}" for a in mlir), "--format", "markdown"
    ).out
    assert f"| `cdist` | {need} | `needs_kernel` | " in markdown
    assert f"| `cdist` | covered | `decomposes` | {words(DECOMPOSES)} |" in markdown
    # the backend by its NAME, paths relative to its own root, never a machine path
    root = str(Path(mlir[0].partition("=")[2]).parent)
    assert root not in text and root not in markdown
    (header,) = [line for line in text.splitlines() if line.startswith("backend torch-mlir  [")]
    assert "python/torch_mlir/extras/fx_decomp_util.py" in header and "export" in header
    assert "`GeneratedTorchOps.td`" in markdown
    shown = opdrift("coverage", *(f"--backend={a}" for a in mlir), source).out
    assert root not in shown
    assert shown.startswith("torch-mlir (torch-mlir: torch-mlir) against ")
    # the checkout's table first, then the bare .td's
    decomposed = next(line for line in shown.splitlines() if "decomposed by" in line)
    assert "python/torch_mlir/extras/fx_decomp_util.py" in decomposed
    backends = " ".join(f"--backend={a.partition('=')[0]}=PATH" for a in mlir)
    said = "\n".join(
        [
            f"$ opdrift explain cdist SOURCE {backends}",
            text.replace(source, "SOURCE"),
            "$ ... --format markdown",
            markdown.replace(source, "SOURCE"),
            "$ opdrift coverage ... (the line of what a table decomposes)",
            decomposed,
        ]
    )
    assert source not in said
    check_golden("explain-cdist-torch-mlir.txt", said, updating(request))


def test_subscriptions_and_the_watch_agree_with_coverage_on_every_gap_category(
    head: Snapshot,
    lists: dict[str, tuple[list[tuple[BackendKind, str]], BackendList]],
    release_file: Callable[[str], Path],
) -> None:
    """2.14.1 → 2.15.0 against every real single-kind list. A subscription's lacks and its
    ops only some backends need are coverage's new gaps, split by the engine's one scope rule; its
    recorded-schema changes are coverage's new schema alerts; the watch regroups the same lists."""
    from opdrift.app.subscriptions import backend_gaps
    from opdrift.app.watch_judge import impacts_of
    from opdrift.coverage.change import compare_coverage
    from opdrift.work.engine import scope

    base = pipeline.load_snapshot(str(release_file("2.14.1")))
    changes = compute_drift(base, head).changes
    changed = {c.name for c in changes if c.kind == "changed"}
    told = 0
    for name, (kinds, backend) in lists.items():
        if len(kinds) != 1:
            continue
        kind, path = kinds[0]
        config = parse_config(
            f'subscriptions:\n  - who: ["@x"]\n    backend: {{kind: {kind}, path: "{path}"}}\n', "opdrift.yml"
        )
        lacking, implemented = backend_work(config, head)
        gaps = backend_gaps(config, changes, lacking, implemented)
        gap = gaps[0] if gaps else None
        cov = compare_coverage(compute_coverage(base, backend), compute_coverage(head, backend))
        new = set(cov.new_uncovered)
        ops, some = (set(gap.ops), set(gap.some_need)) if gap else (set(), set())
        assert ops | some == new, name
        assert some == {n for n in new if not scope(head.operators[n]).generic}, name
        alerted = {a.name for a in cov.new_alerts} & changed
        schema = set(gap.schema_changed) if gap else set()
        assert schema == (alerted if kind == "torch-mlir" else set()), name
        # the watch: the same lists for the backend, none dropped but a gap of ops some backends need
        impacts = impacts_of(config, changes, lacking, implemented)
        if gap is None or not gap.warns():
            assert impacts == (), name
            continue
        (impact,) = impacts
        also = {g.field: set(ops) for g, ops, _ in impact.also()}
        assert set(impact.ops) == ops and also.get("some_need", set()) == some, name
        assert also.get("schema_changed", set()) == schema, name
        told += 1
    assert told >= 3  # XLA, torch-mlir and XPU lack a new op 2.15.0 adds
