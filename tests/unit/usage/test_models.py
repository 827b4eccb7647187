"""The model corpus's shipped tables (data/models-2.14.1.tsv.xz and 2.13.0's beside bot/usage/models.py), as it reads them.

The tables were recorded by scripts/model_corpus.py on a real torch 2.14.1 and 2.13.0 (docs/models.md);
these tests never run a model nor install torch: they read what shipped and check that it says what a
real run says (convolution and addmm everywhere, an LSTM on the CPU dispatching what the CPU runs),
that a release without its own table borrows the nearest and says so, and that an operator newer
than a table gets "no data yet" rather than "unused".
"""

from __future__ import annotations

import importlib.util
import json
import lzma
import sys
from pathlib import Path
from types import ModuleType

import pytest

from opdrift.coverage.names import first_registered, last_registered
from opdrift.operators.kernels import PROFILES
from opdrift.usage.models import (
    DATA,
    PATHS,
    ModelTableError,
    Status,
    parse_table,
    paths_for,
    read_table,
    shipped_releases,
    usage_for,
)
from opdrift.versions import parse_version

ROOT = Path(__file__).resolve().parents[3]


def test_a_table_ships_for_each_recorded_release_and_each_is_small() -> None:
    assert shipped_releases() == ("2.13.0", "2.14.1")
    for release in shipped_releases():
        path = DATA / f"models-{release}.tsv.xz"
        assert path.stat().st_size < 1_000_000
        usage = read_table(release)
        assert usage.release == release
        env = usage.environment
        for key in ("torch", "python", "platform", "date", "script_commit", "transformers", "diffusers"):
            assert env.get(key), f"{release}: the header does not record {key}"
        assert env["torch"].startswith(release)


def test_the_2_14_1_corpus_is_broad_and_every_run_is_accounted_for() -> None:
    usage = read_table("2.14.1")
    assert len(usage.models) >= 40
    assert len(usage.families()) >= 6
    assert {"torchvision-classification", "timm", "transformers", "diffusers", "rnn", "recommender"} <= set(
        usage.families()
    )
    # One run per model and path, never dropped: a failure carries its reason.
    assert {(r.model, r.path) for r in usage.runs} == {(m.name, p) for m in usage.models for p in PATHS}
    for run in usage.runs:
        assert run.status == "ok" or run.note, run
    # Most runs succeed on every path (the failures are listed in docs/models.md).
    for path in PATHS:
        assert len(usage.recorded(path)) >= 30, (path, [(r.model, r.note) for r in usage.failed(path)])


def test_the_2_13_0_corpus_says_which_families_it_could_not_run() -> None:
    """PyPI's torchvision does not install beside this torch 2.13.0 build: its models and timm's are
    recorded as skipped, with the reason, and the others ran."""
    usage = read_table("2.13.0")
    assert usage.environment["torchvision"] == "absent"
    skipped = {r.model for r in usage.runs if r.status == "skipped"}
    families = {m.name: m.family for m in usage.models}
    assert skipped and {families[m] for m in skipped} <= {
        "timm",
        "torchvision-classification",
        "torchvision-detection",
        "torchvision-segmentation",
        "torchvision-video",
    }
    assert all("torchvision" in r.note or "timm" in r.note for r in usage.runs if r.status == "skipped")
    ran = {m.name for m in usage.models} - skipped
    assert len(ran) >= 20 and {"hf_llama", "lstm_lm", "dlrm_small", "diffusers_unet2d_condition"} <= ran


def test_the_workhorses_are_used_by_many_models() -> None:
    usage = read_table("2.14.1")
    assert len(usage.used_by("convolution", "eager_inference")) >= 20
    assert len(usage.used_by("addmm", "eager_inference")) >= 15
    assert len(usage.used_by("convolution", "export_core")) >= 20
    # Core ATen has no addmm-only path: export keeps addmm (core) but torch-mlir's table expands it.
    assert len(usage.used_by("addmm", "export_core")) >= 10
    assert usage.used_by("addmm", "export_torch_mlir") == ()
    # The backward of a convolution reaches an eager backend in training only.
    assert usage.used_by("convolution_backward", "eager_inference") == ()
    assert len(usage.used_by("convolution_backward", "eager_training")) >= 20
    # The ranking puts them near the top of inference; in training every model runs the optimizer's
    # ops (AdamW's single-tensor step on the CPU: lerp_, addcmul_, addcdiv_), which lead.
    top = [op for op, _ in usage.ops("eager_inference")[:10]]
    assert "convolution" in top and "addmm" in top
    assert len(usage.used_by("lerp_.Scalar", "eager_training")) == len(usage.models)
    # torch.nn's transformer takes its fused inference fast path in eval mode under no_grad.
    assert "nn_transformer_encoder" in usage.used_by("_transformer_encoder_layer_fwd", "eager_inference")
    assert "nn_transformer_encoder" not in usage.used_by("_transformer_encoder_layer_fwd", "eager_training")


def test_the_lstm_on_the_cpu_dispatches_what_the_cpu_runs() -> None:
    """_thnn_fused_lstm_cell is the fused cell of CUDA's LSTM; on the CPU torch runs lstm.input
    through oneDNN (mkldnn_rnn_layer) or cell by cell, and the table records that, not the GPU's."""
    usage = read_table("2.14.1")
    for path in ("eager_inference", "eager_training"):
        assert "lstm_lm" not in usage.used_by("_thnn_fused_lstm_cell", path)
    assert "lstm_lm" in usage.used_by("mkldnn_rnn_layer", "eager_inference")
    assert "lstm_lm" in usage.used_by("mkldnn_rnn_layer_backward", "eager_training")
    # A compiler gets the composite lstm.input from export (torch-mlir's table keeps it) ...
    assert "lstm_lm" in usage.used_by("lstm.input", "export_torch_mlir")
    # ... and Core ATen decomposes it into the cell's matmuls.
    assert "lstm_lm" not in usage.used_by("lstm.input", "export_core")
    assert "lstm_lm" in usage.used_by("addmm", "export_core") or "lstm_lm" in usage.used_by(
        "mm", "export_core"
    )


def test_the_embedding_bag_reaches_backends_from_the_recommenders() -> None:
    usage = read_table("2.14.1")
    assert {"dlrm_small", "embeddingbag_two_tower"} <= set(usage.used_by("_embedding_bag", "eager_inference"))
    assert "dlrm_small" in usage.used_by("_embedding_bag_backward", "eager_training") or "dlrm_small" in (
        usage.used_by("_embedding_bag_dense_backward", "eager_training")
    )


def test_every_aten_name_in_a_table_was_registered_by_its_release() -> None:
    """The names are spelled as native_functions.yaml spells them (``add.Tensor``, ``add`` for the
    default overload): each is one the release registered, by the shipped names table."""
    for release in shipped_releases():
        usage = read_table(release)
        mine = parse_version(release)
        for path in PATHS:
            for op, _ in usage.ops(path):
                if "::" in op:  # torchvision::nms and higher-order operators are not ATen's
                    continue
                first, last = parse_version(first_registered(op)), parse_version(last_registered(op))
                assert first is not None and last is not None, (release, path, op)
                assert mine is not None and first <= mine <= last, (release, path, op)


def test_a_release_without_a_table_uses_the_nearest_and_says_so() -> None:
    exact = usage_for("2.14.1")
    assert exact.exact and exact.caveat() == "" and exact.usage.release == "2.14.1"
    assert usage_for("2.13.0+cpu").exact
    for asked, got in (
        ("2.14.0", "2.14.1"),
        ("2.15.0", "2.14.1"),
        ("2.16.0a0", "2.14.1"),
        ("2.6.0", "2.13.0"),
    ):
        choice = usage_for(asked)
        assert choice.usage.release == got, asked
        assert not choice.exact
        assert choice.caveat() == f"model data from torch {got} (torch {asked} has no table of its own)"
    with pytest.raises(ModelTableError):
        usage_for("not a version")


def test_an_op_newer_than_the_table_has_no_data_yet() -> None:
    usage = read_table("2.14.1")
    # A name 2.15.0 registered first: the 2.14.1 corpus could not have run it.
    newer = [
        op
        for op in ("_scaled_addmm", "_philox_randint", "_scaled_addmm.out")
        if first_registered(op) == "2.15.0"
    ]
    assert newer, "the names table lost the 2.15.0 names this test relies on"
    for op in newer:
        answer = usage.lookup(op, "eager_training", first_registered(op))
        assert answer.status is Status.NO_DATA_YET and answer.models == () and answer.release == "2.14.1"
    # A name nobody registered: nothing to say either.
    assert usage.lookup("add.t", "eager_inference", first_registered("add.t")).status is Status.NO_DATA_YET
    # An old op no model dispatched is "unused", which is a claim.
    # And a 2.14.1 name is a claim for the 2.14.1 table but no data for 2.13.0's.
    assert first_registered("linalg_polar") == "2.14.1"
    assert usage.lookup("linalg_polar", "eager_training", "2.14.1").status is Status.UNUSED
    assert (
        read_table("2.13.0").lookup("linalg_polar", "eager_training", "2.14.1").status is Status.NO_DATA_YET
    )
    unused = usage.lookup("cholesky_inverse", "eager_training", first_registered("cholesky_inverse"))
    assert unused.status is Status.UNUSED
    used = usage.lookup("convolution", "eager_inference", first_registered("convolution"))
    assert used.status is Status.USED and used.calls >= len(used.models) >= 20


def test_each_profile_maps_to_its_paths() -> None:
    assert {p: paths_for(p) for p in PROFILES} == {
        "eager": ("eager_inference", "eager_training"),
        "functional": ("functional",),
        "export": ("export_core",),
    }
    assert paths_for("export", torch_mlir=True) == ("export_torch_mlir",)
    usage = read_table("2.14.1")
    # An eager backend serves inference and training: its models are the union of both paths'.
    eager = set(usage.used_on("convolution_backward", paths_for("eager")))
    assert eager == set(usage.used_by("convolution_backward", "eager_training")) and eager
    both = set(usage.used_by("addmm", "eager_inference")) | set(usage.used_by("addmm", "eager_training"))
    assert set(usage.used_on("addmm", paths_for("eager"))) == both
    with pytest.raises(ValueError, match="unknown path"):
        read_table("2.14.1").used_by("add", "eager")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("# not ours\n", 1),
        ("# opdrift-model-corpus 1\n# torch: 2.14.1\nmodel\tm\n", 3),
        ("# opdrift-model-corpus 1\n# torch: 2.14.1\nop\teager_inference\tadd\tm\t1\n", 3),
        ("# opdrift-model-corpus 1\n# torch: 2.14.1\nmodel\tm\tf\nrun\teager\tm\tok\t1\t\n", 4),
        (
            "# opdrift-model-corpus 1\n# torch: 2.14.1\nmodel\tm\tf\nrun\tfunctional\tm\tfailed\t1\tboom\n"
            "op\tfunctional\tadd\tm\t1\n",
            5,
        ),
        (
            "# opdrift-model-corpus 1\n# torch: 2.14.1\nmodel\tm\tf\nrun\tfunctional\tm\tok\t1\t\nop\tfunctional\tadd\tm\tx\n",
            5,
        ),
    ],
)
def test_a_damaged_table_is_named_with_its_line(text: str, line: int) -> None:
    with pytest.raises(ModelTableError) as caught:
        parse_table(text, where="t.tsv")
    assert caught.value.path == "t.tsv" and caught.value.line == line


def test_a_table_without_a_torch_version_is_refused() -> None:
    with pytest.raises(ModelTableError, match="no torch version"):
        parse_table("# opdrift-model-corpus 1\nmodel\tm\tf\n")


def _script() -> ModuleType:
    """scripts/model_corpus.py, whose table writer needs no torch (it imports torch only to run)."""
    spec = importlib.util.spec_from_file_location("model_corpus", ROOT / "scripts" / "model_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_corpus"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["model_corpus"]
    return module


def test_the_script_writes_what_the_reader_reads(tmp_path: Path) -> None:
    """The writer's records → table → reader round trip, on records shaped as a run writes them
    (a resumed run adds a second environment record: both commits are kept)."""
    script = _script()
    env = {"kind": "env", "format": "x", "torch": "2.14.1", "python": "3.11.7", "script_commit": "aaa"}
    records = [
        env,
        {"kind": "model", "model": "lstm_lm", "family": "rnn"},
        *(
            {
                "kind": "run",
                "model": "lstm_lm",
                "path": p,
                "status": "ok",
                "note": "",
                "ops": {"mm": 3},
                "cpu_s": 1.5,
            }
            for p in PATHS[:-1]
        ),
        {
            "kind": "run",
            "model": "lstm_lm",
            "path": "functional",
            "status": "failed",
            "note": "Boom:\tx",
            "ops": {},
        },
        {**env, "script_commit": "bbb"},
    ]
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "models-2.14.1.tsv.xz"
    script.table(source, out)
    usage = parse_table(lzma.decompress(out.read_bytes()).decode())
    assert usage.release == "2.14.1" and usage.environment["script_commit"] == "aaa, bbb"
    assert usage.used_by("mm", "export_core") == ("lstm_lm",)
    assert usage.used_by("mm", "functional") == ()
    assert [(r.status, r.note) for r in usage.failed("functional")] == [("failed", "Boom: x")]
    assert script.PATHS == PATHS


def failures_section() -> str:
    """docs/models.md's list of what failed, from the shipped tables: a failed run, and a functional
    run that could record the inference graph only."""
    lines = []
    for release in reversed(shipped_releases()):
        usage = read_table(release)
        for run in sorted(usage.runs, key=lambda r: (r.model, PATHS.index(r.path))):
            if run.status == "failed" or run.note.startswith("inference only"):
                what = "failed" if run.status == "failed" else "recorded inference only"
                lines.append(f"- {release}, `{run.model}`, `{run.path}` {what}: `{run.note}`")
    return "\n".join(lines)


def test_the_docs_list_every_failure_of_the_shipped_tables() -> None:
    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    listed = page.split("<!-- failures:begin -->\n", 1)[1].split("<!-- failures:end -->", 1)[0]
    assert listed.strip() == failures_section(), (
        "run `python tests/unit/usage/test_models.py` to regenerate it"
    )


if __name__ == "__main__":
    path = ROOT / "docs" / "models.md"
    head, rest = path.read_text(encoding="utf-8").split("<!-- failures:begin -->\n", 1)
    tail = rest.split("<!-- failures:end -->", 1)[1]
    path.write_text(
        f"{head}<!-- failures:begin -->\n{failures_section()}\n<!-- failures:end -->{tail}", encoding="utf-8"
    )
