"""Coverage ranks a backend's work by the real models it serves (opdrift.usage.models's shipped tables):
what breaks models first, then what models use, then today's rules. Real lists: pytorch_dlprim's
tree (tests/data/backends/real), the MPS key of native_functions.yaml, the shipped 2.14.1 snapshot
and the vendored 2.15.0 release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import Opdrift
from goldens import check_golden_entry, updating
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from opdrift import pipeline
from opdrift.coverage.backends import read_backend
from opdrift.coverage.check import Coverage, compute_coverage
from opdrift.coverage.workitems import WorkItem, cpu_only, model_usage, work_items
from opdrift.model import Snapshot
from opdrift.render.rank import work_item_rank_key
from opdrift.usage.models import read_table

ROOT = Path(__file__).resolve().parents[3]
EAGER = ("eager_inference", "eager_training")


@pytest.fixture(scope="module")
def snap_2141() -> Snapshot:
    return pipeline.load_snapshot(str(ROOT / "snapshots" / "v2.14.1.json"))


@pytest.fixture(scope="module")
def dlprim(dlprim_src: Path, snap_2141: Snapshot) -> Coverage:
    return compute_coverage(snap_2141, read_backend("cpp", str(dlprim_src)))


@pytest.fixture(scope="module")
def mps(snap_2141: Snapshot) -> Coverage:
    # the MPS key has no boxed CPU fallback: what it lacks fails on the device
    return compute_coverage(snap_2141, read_backend("dispatch", "MPS"))


def _direct(item: WorkItem, snap: Snapshot, coverage: Coverage | None = None) -> set[str]:
    """The models of the 2.14.1 table that dispatch any of the item's ops on an eager path, counted
    with the table's own `used_by`, CPU-only ops aside, as the backend's device receives them."""
    table = model_usage(coverage, read_table("2.14.1")) if coverage is not None else read_table("2.14.1")
    return {
        m
        for n in (item.name, *item.members)
        if not cpu_only(snap.operators[n])
        for path in EAGER
        for m in table.used_by(n, path)
    }


@pytest.mark.slow
def test_an_items_model_counts_are_the_tables(dlprim: Coverage, snap_2141: Snapshot) -> None:
    items = work_items(dlprim, snap_2141)
    table = read_table("2.14.1")
    everyone = set(table.recorded("eager_inference")) | set(table.recorded("eager_training"))
    used = [i for i in items if i.models is not None and i.models.used_by]
    assert len(used) > 20
    for item in items:
        assert item.models is not None and item.models.release == "2.14.1"
        assert item.models.of == len(everyone) == 51
        users = _direct(item, snap_2141, dlprim)
        assert item.models.used_by == len(users), item.name
        assert set(item.models.names) <= users and len(item.models.names) == min(3, len(users))
    norm = next(i for i in items if i.name == "linalg_vector_norm.out")
    # clip_grad_norm_ in every training step calls it
    assert norm.models is not None and norm.models.used_by == 51
    # dlprim's CPU fallback runs what the models use on the CPU; what breaks them is what its device
    # dispatches instead, which has no CPU kernel (opdrift.usage.device, tests/unit/usage/test_device.py)
    assert {i.name for i in items if i.models is not None and i.models.breaks} == {
        "_thnn_fused_lstm_cell",
        "_thnn_fused_lstm_cell_backward_impl",
        "_thnn_fused_gru_cell",
        "_thnn_fused_gru_cell_backward",
    }


def test_model_breaking_items_lead_then_used_ones_then_todays_order(
    mps: Coverage, snap_2141: Snapshot
) -> None:
    ranked = sorted(work_items(mps, snap_2141), key=work_item_rank_key)
    reach = [i.models for i in ranked]
    assert all(m is not None for m in reach)
    breaks = [m.breaks for m in reach if m is not None]
    used = [m.used_by for m in reach if m is not None]
    assert breaks[0] > 0 and breaks == sorted(breaks, reverse=True)
    # without a fallback every item fails today: the models that use one break on it
    assert all(i.today == "fails" for i in ranked) and breaks == used
    mha = next(i for i in ranked if i.name == "_native_multi_head_attention")
    assert mha.models is not None and mha.models.breaks == len(_direct(mha, snap_2141)) == 2
    # the items no model reaches keep the order they had before the models
    rest = [i for i in ranked if i.models is not None and not i.models.used_by]
    assert rest and rest == sorted(rest, key=lambda i: work_item_rank_key(i)[2:])
    assert ranked.index(rest[0]) == sum(1 for u in used if u)


def test_a_cpu_only_op_is_not_counted_for_another_device(mps: Coverage, snap_2141: Snapshot) -> None:
    """The corpus ran on the CPU, where scaled_dot_product_attention picks its CPU kernel: an MPS
    model dispatches MPS's variant, so `_for_cpu` breaks no MPS model."""
    items = {i.name: i for i in work_items(mps, snap_2141)}
    sdpa = items["_scaled_dot_product_flash_attention_for_cpu"]
    assert read_table("2.14.1").used_by(sdpa.name, "eager_inference")  # the table has it
    assert sdpa.models is not None and sdpa.models.cpu_only and not sdpa.models.used_by


@pytest.mark.slow
def test_an_op_newer_than_the_table_has_no_data_yet(
    dlprim_src: Path, opdrift: Opdrift, request: pytest.FixtureRequest
) -> None:
    run = opdrift(
        "coverage",
        "--backend",
        f"cpp={dlprim_src}",
        str(ROOT / "snapshots" / "v2.15.0.json"),
        "--format",
        "json",
    )
    assert run.code == 0, run.err
    doc = json.loads(run.out)
    backend = doc["backends"][0]
    model_data = dict(backend["model_data"])
    caveat = model_data.pop("caveat")
    assert model_data == {"release": "2.14.1", "models": 51, "paths": list(EAGER)}
    assert "2.14.1" in caveat and "2.15.0" in caveat
    snap_2141 = pipeline.load_snapshot(str(ROOT / "snapshots" / "v2.14.1.json"))
    new = [w for w in backend["work_items"] if w["name"] not in snap_2141.operators]
    assert new
    for w in new:
        assert w["models"]["no_data_yet"] is True and "used_by" not in w["models"], w
    assert any(w["models"].get("used_by") for w in backend["work_items"])
    text = opdrift("coverage", "--backend", f"cpp={dlprim_src}", str(ROOT / "snapshots" / "v2.15.0.json")).out
    (said,) = [x for x in text.splitlines() if caveat in x]  # the JSON's caveat, and what it covers
    assert "; 51 models on eager_inference, eager_training" in said
    check_golden_entry(
        "coverage.lines.txt", "models: a table of an older release", said + "\n", updating(request)
    )
    # `_philox_randint_`, which 2.15.0 added, is no model's yet: not "used by none of 51"
    snap_215 = pipeline.load_snapshot(str(ROOT / "snapshots" / "v2.15.0.json"))
    items = {
        i.name: i
        for i in work_items(compute_coverage(snap_215, read_backend("cpp", str(dlprim_src))), snap_215)
    }
    assert "_philox_randint_" in {w["name"] for w in new}
    assert items["_philox_randint_"].models_words == "no model data yet (newer than torch 2.14.1)"
    # the JSON validates against its schema
    schemas = {
        n: json.loads((ROOT / "schemas" / f"{n}.schema.json").read_text(encoding="utf-8"))
        for n in ("snapshot", "drift", "coverage")
    }
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas.values())
    Draft202012Validator(schemas["coverage"], registry=registry).validate(doc)
