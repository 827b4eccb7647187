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
