"""What a model dispatches on an eager backend's device, not the CPU it was recorded on
(opdrift.usage.device): the table against what torch 2.14.1 did on an emulated PrivateUse1 device
(tests/data/observed/device), and pytorch_dlprim's real tree judged with it on the shipped 2.14.1
snapshot: ``nn.LSTM`` training fails on its device, and its coverage says so first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import Opdrift
from goldens import check_golden, check_golden_entry, updating
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from opdrift import pipeline
from opdrift.coverage.backends import read_backend
from opdrift.coverage.check import Coverage, compute_coverage
from opdrift.coverage.firstwork import first_work
from opdrift.coverage.workitems import cpu_only, device_key, has_cpu_kernel, model_usage, work_items
from opdrift.model import Snapshot
from opdrift.render.rank import work_item_rank_key
from opdrift.usage.device import SUBSTITUTIONS, on_device
from opdrift.usage.models import read_table

ROOT = Path(__file__).resolve().parents[3]
OBSERVED = json.loads(
    (ROOT / "tests" / "data" / "observed" / "device" / "device-2.14.1.json").read_text(encoding="utf-8")
)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return pipeline.load_snapshot(str(ROOT / "snapshots" / "v2.14.1.json"))


@pytest.fixture(scope="module")
def dlprim(dlprim_src: Path, snap: Snapshot) -> Coverage:
    return compute_coverage(snap, read_backend("cpp", str(dlprim_src)))


def test_each_inference_substitution_is_what_the_emulated_device_dispatched() -> None:
    assert OBSERVED["torch"].startswith("2.14.1")
    checked = 0
    for s in SUBSTITUTIONS:
        if "PrivateUse1" not in s.keys or "eager_inference" not in s.paths:
            continue
        case = OBSERVED["cases"][s.module]
        assert set(s.when) <= set(case["cpu"]), s
        assert set(s.adds) <= set(case["privateuseone"]), s
        assert set(s.drops) <= set(case["cpu"]) and not set(s.drops) & set(case["privateuseone"]), s
        checked += 1
    assert checked == 3
    # every op the device dispatched with no CPU kernel is one the table adds
    failing = {op for case in OBSERVED["cases"].values() for op in case["no_cpu_kernel"]}
    assert failing == {"_thnn_fused_lstm_cell", "_thnn_fused_gru_cell"}
    assert failing <= {op for s in SUBSTITUTIONS for op in s.adds}
    # nn.RNN takes the same path on both: nothing listed for it
    assert not OBSERVED["cases"]["nn.RNN"]["no_cpu_kernel"]
    assert "nn.RNN" not in {s.module for s in SUBSTITUTIONS}


def test_the_substitutions_reach_the_corpus_models_that_run_those_modules(snap: Snapshot) -> None:
    table = read_table("2.14.1")
    device = on_device(table.counts, "PrivateUse1")
    for path in ("eager_inference", "eager_training"):
        assert set(device[path]["_thnn_fused_lstm_cell"]) == {"lstm_lm", "bilstm_tagger"}
        # the GRU's CPU cell's three ops together: the GRU model only
        assert set(device[path]["_thnn_fused_gru_cell"]) == {"gru_lm"}
        assert "mkldnn_rnn_layer" not in device[path]
        assert "_scaled_dot_product_flash_attention_for_cpu" not in device[path]
        assert set(device[path]["bmm"]) >= set(
            table.counts[path]["_scaled_dot_product_flash_attention_for_cpu"]
        )
    assert set(device["eager_training"]["_thnn_fused_lstm_cell_backward_impl"]) == {
        "lstm_lm",
        "bilstm_tagger",
    }
    assert set(device["eager_training"]["_thnn_fused_gru_cell_backward"]) == {"gru_lm"}
    # none of them has a CPU kernel: a boxed CPU fallback cannot run them
    for op in ("_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_gru_cell"):
        assert not has_cpu_kernel(snap.operators[op]), op
    # MPS takes paths of its own; the CPU key is the corpus' own device
    assert on_device(table.counts, "MPS") is table.counts
    assert on_device(table.counts, "CPU") is table.counts
    assert device_key("cpp", "src") == "PrivateUse1" and device_key("dispatch", "MPS") == "MPS"


def test_dlprim_sees_lstm_training_fail_and_ranks_it_in_the_first_ten(
    dlprim: Coverage, snap: Snapshot, request: pytest.FixtureRequest
) -> None:
    ranked = sorted(work_items(dlprim, snap), key=work_item_rank_key)
    names = [i.name for i in ranked]
    lstm = ranked[names.index("_thnn_fused_lstm_cell")]
    assert names.index("_thnn_fused_lstm_cell") < 10
    assert lstm.today == "fails"
    assert lstm.models is not None and lstm.models.breaks == 2
    said = lstm.models_words
    assert said.startswith("breaks 2 models; ") and " 2 of 51 models (bilstm_tagger, lstm_lm)" in said
    check_golden_entry(
        "coverage.lines.txt", "models: what a work item breaks", said + "\n", updating(request)
    )
    assert names.index("_thnn_fused_gru_cell") < 10


def test_the_first_40_items_hold_what_common_models_send_to_dlprims_fallback(
    dlprim: Coverage, snap: Snapshot
) -> None:
    """The issue's done-means: training a common CNN, Transformer and RNN sends dlprim's fallback (or
    fails on) only what the first 40 work items hold."""
    ranked = sorted(work_items(dlprim, snap), key=work_item_rank_key)
    first = {n for i in ranked[:40] for n in (i.name, *i.members)}
    lacking = {n for i in ranked for n in (i.name, *i.members)}
    usage = model_usage(dlprim, read_table("2.14.1"))
    for model in (
        "resnet18",
        "mobilenet_v2",
        "hf_bert",
        "hf_gpt2",
        "nn_transformer_encoder",
        "lstm_lm",
        "gru_lm",
    ):
        sent = {op for op, users in usage.counts["eager_training"].items() if model in users} & lacking
        assert sent and sent <= first, (model, sorted(sent - first))


@pytest.mark.slow
def test_first_work_lets_the_most_models_run_without_fallback_step_by_step(
    dlprim: Coverage, snap: Snapshot, dlprim_src: Path, opdrift: Opdrift, request: pytest.FixtureRequest
) -> None:
    ranked = sorted(work_items(dlprim, snap), key=work_item_rank_key)
    usage = model_usage(dlprim, read_table("2.14.1"))
    fw = first_work(ranked, usage, ("eager_inference", "eager_training"), snap)
    # clip_grad_norm_'s linalg_vector_norm is in every training step: no model runs without fallback yet
    assert fw.of == 51 and fw.start == 0 and fw.steps[-1].runs == 51
    assert fw.steps[0].items == ("linalg_vector_norm.out",)
    runs = [s.runs for s in fw.steps]
    assert runs == sorted(runs) and all(s.unblocks for s in fw.steps)
    # each step's count is the models whose every lacking op is written by then
    lacking = {n: i.name for i in ranked for n in (i.name, *i.members)}
    written: set[str] = set()
    for step in fw.steps:
        written |= set(step.items)
        free = [
            m
            for m in usage.recorded("eager_inference") + usage.recorded("eager_training")
            if all(
                lacking[op] in written or cpu_only(snap.operators[op])
                for p in ("eager_inference", "eager_training")
                for op, users in usage.counts[p].items()
                if m in users and op in lacking
            )
        ]
        assert len(set(free)) == step.runs
    lstm = next(s for s in fw.steps if "lstm_lm" in s.unblocks)
    assert set(lstm.items) == {"_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl"}
    # the maintainer's report: a golden of dlprim's Markdown, and the JSON against its schema
    run = opdrift(
        "coverage",
        "--backend",
        f"cpp={dlprim_src}",
        str(ROOT / "snapshots" / "v2.14.1.json"),
        "--format",
        "markdown",
    )
    assert run.code == 0, run.err
    text = run.out.replace(str(dlprim_src), "DLPRIM/src")
    assert "### First work: 10 kernels to write, and 0 → 30 of 51 models run without fallback" in text
    check_golden("coverage-dlprim-2.14.1.md", text, updating(request))
    doc = json.loads(
        opdrift(
            "coverage",
            "--backend",
            f"cpp={dlprim_src}",
            str(ROOT / "snapshots" / "v2.14.1.json"),
            "--format",
            "json",
        ).out
    )
    first = doc["backends"][0]["first_work"]
    assert first["models"] == 51 and len(first["steps"]) == len(fw.steps)
    assert first["steps"][0] == {
        "items": ["linalg_vector_norm.out"],
        "unblocks": list(fw.steps[0].unblocks),
        "runs": 14,
    }
    schemas = {
        n: json.loads((ROOT / "schemas" / f"{n}.schema.json").read_text(encoding="utf-8"))
        for n in ("snapshot", "drift", "coverage")
    }
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas.values())
    Draft202012Validator(schemas["coverage"], registry=registry).validate(doc)
