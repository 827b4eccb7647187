"""Issue 21, item 8: one question, one answer. Every operator of 2.15.0 against every real backend list
(tests/data/backends/real, see SOURCES.md there) through each view: coverage's JSON, the per-change
profiles of a drift that adds every operator, a subscription's lacking set, `explain`'s "without its
own" line and the site's coverage cell. All of them ask the work engine (`bot.work.engine`)."""

from __future__ import annotations

import dataclasses
import lzma
import re
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from datafiles import DATA

from bot import pipeline
from bot.app.prepare import backend_work
from bot.coverage.backends import merge_backends, read_backend
from bot.coverage.check import compute_coverage, coverage_json
from bot.coverage.kinds import PROFILE_OF_KIND
from bot.coverage.oplist import BackendList
from bot.drift.changes import compute_drift
from bot.drift.needs import ProfileNeeds, export_path_for
from bot.model import Snapshot
from bot.operators.kernels import PROFILES, Profile
from bot.publish.config import parse_config
from bot.render.explain import explain_view
from bot.site.build import build_site
from bot.site.model import BackendColumn

REAL = DATA / "backends" / "real"


@pytest.fixture(scope="module")
def head(release_file: Callable[[str], Path]) -> Snapshot:
    return pipeline.load_snapshot(str(release_file("2.15.0")))


@pytest.fixture(scope="module")
def lists(
    tmp_path_factory: pytest.TempPathFactory, dlprim_src: Path
) -> dict[str, tuple[list[tuple[str, str]], BackendList]]:
    """NAME → (its (kind, path) lists, the backend read from them)."""
    tmp = tmp_path_factory.mktemp("real")

    def unxz(name: str) -> str:
        path = tmp / name.removesuffix(".xz")
        path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
        return str(path)

    with tarfile.open(REAL / "torch-mlir.checkout.tar.xz") as tar:
        tar.extractall(tmp / "torch-mlir", filter="data")
    specs = {
        "xla": [("xla", unxz("pytorch-xla.xla_native_functions.yaml.xz"))],
        "dlprim": [("cpp", str(dlprim_src))],
        "npu": [
            ("op-plugin", unxz("op-plugin.op_plugin_functions.yaml.xz")),
            ("torch-npu", unxz("torch_npu.npu_native_functions.yaml.xz")),
        ],
        "torch-mlir": [("torch-mlir", str(tmp / "torch-mlir"))],
        "xpu": [("xpu", unxz("torch-xpu-ops.xpu_functions.yaml.xz"))],
    }
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


def test_every_view_gives_one_answer_for_every_op_and_real_list(
    head: Snapshot, lists: dict[str, tuple[list[tuple[str, str]], BackendList]], tmp_path: Path
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
            table = export_path_for("2.15.0", backend.decompositions)
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


def test_subscriptions_and_the_watch_agree_with_coverage_on_every_gap_category(
    head: Snapshot,
    lists: dict[str, tuple[list[tuple[str, str]], BackendList]],
    release_file: Callable[[str], Path],
) -> None:
    """Issue 29: 2.14.1 → 2.15.0 against every real single-kind list. A subscription's lacks and its
    ops only some backends need are coverage's new gaps, split by the engine's one scope rule; its
    recorded-schema changes are coverage's new schema alerts; the watch regroups the same lists."""
    from bot.app.subscriptions import backend_gaps
    from bot.app.watch_judge import impacts_of
    from bot.coverage.check import compare_coverage
    from bot.work.engine import scope

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
        also = {x.field: set(x.ops) for x in impact.also}
        assert set(impact.lacking) == ops and also.get("some_need", set()) == some, name
        assert also.get("schema_changed", set()) == schema, name
        told += 1
    assert told >= 3  # XLA, torch-mlir and XPU lack a new op 2.15.0 adds
