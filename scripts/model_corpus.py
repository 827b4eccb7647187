"""Run a corpus of real models on a real torch and record every ATen overload each path dispatches.

    # 1. run the corpus (hours of CPU on a laptop core; one record per model and path, resumable):
    nice -n 15 TORCH_ENV/bin/python scripts/model_corpus.py run -o /tmp/corpus-2.14.1.jsonl
    # 2. turn the records into the shipped table (any python; no torch needed):
    python scripts/model_corpus.py table /tmp/corpus-2.14.1.jsonl -o bot/usage/data/models-2.14.1.tsv.xz
    # one check of the eager recorder against torch.profiler (prints a comparison):
    TORCH_ENV/bin/python scripts/model_corpus.py profiler-check resnet18

TORCH_ENV is a virtual environment with the torch release to record and the model libraries the
corpus builds from (torchvision, timm, transformers, diffusers); a family whose library is missing
is recorded as skipped, with the reason. Nothing is downloaded: every model is built from its
definition or a config written here, with random weights (HF_HUB_OFFLINE=1 is set).

Paths recorded per model (what reaches each kind of backend, `bot.usage.models`):

- eager_inference: eval mode under no_grad, the ops a TorchDispatchMode sees (below Autograd, the
  key an eager backend's kernels are registered at);
- eager_training: one step: forward, a loss, backward, clip_grad_norm_, AdamW.step, as above;
- export_core: torch.export.export, then run_decompositions() with PyTorch's Core-ATen table;
- export_torch_mlir: the same exported program, run_decompositions with torch-mlir's table (the
  DEFAULT_DECOMPOSITIONS list of python/torch_mlir/extras/fx_decomp_util.py, read from the vendored
  checkout tests/data/backends/real/torch-mlir.checkout.tar.xz and built with get_decompositions);
- functional: the functionalized joint forward+backward graph aot_export_module traces (what a
  functional backend such as XLA receives; no decomposition table); the inference graph when the
  joint trace fails, and the record says so.

A path that fails is recorded as failed with a one-line reason, never dropped. The script never runs
in the tests: they read the shipped tables only.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import datetime
import json
import lzma
import os
import platform
import signal
import subprocess
import sys
import tarfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MLIR_CHECKOUT = ROOT / "tests" / "data" / "backends" / "real" / "torch-mlir.checkout.tar.xz"
MLIR_FILE = "python/torch_mlir/extras/fx_decomp_util.py"
PATHS = ("eager_inference", "eager_training", "export_core", "export_torch_mlir", "functional")
FORMAT = "opdrift-model-corpus 1"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# ---------------------------------------------------------------------------------------------
# The corpus: each model is built in code, with random weights and small inputs.


@dataclass(frozen=True)
class Case:
    """What one model runs: the module, its inference arguments, its training arguments (detection
    models take targets in training), and the loss of an output."""

    module: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    train_args: tuple[Any, ...] | None = None
    train_kwargs: dict[str, Any] | None = None


@dataclass(frozen=True)
class Spec:
    name: str
    family: str
    build: Callable[[], Case]
    needs: str  # the library the family is built from (its version goes in the table's header)


CORPUS: list[Spec] = []


def model(name: str, family: str, needs: str) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    def register(build: Callable[[], Case]) -> Callable[[], Case]:
        CORPUS.append(Spec(name, family, build, needs))
        return build

    return register


def _image(batch: int = 2, size: int = 64) -> Any:
    import torch

    return torch.randn(batch, 3, size, size)


def _tv_classifier(name: str, size: int = 64, **kw: Any) -> Callable[[], Case]:
    def build() -> Case:
        import torchvision

        return Case(torchvision.models.get_model(name, weights=None, **kw), (_image(2, size),))

    return build


for _name in (
    "resnet18",
    "resnet50",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "efficientnet_b0",
    "convnext_tiny",
    "regnet_y_400mf",
    "densenet121",
    "squeezenet1_1",
    "shufflenet_v2_x0_5",
    "mnasnet0_5",
    "swin_t",
):
    model(_name, "torchvision-classification", "torchvision")(_tv_classifier(_name))


@model("vit_tiny", "torchvision-classification", "torchvision")
def _vit() -> Case:
    from torchvision.models.vision_transformer import VisionTransformer

    vit = VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128, num_classes=10
    )
    return Case(vit, (_image(2, 32),))


def _detection(builder: str, masks: bool = False, **kw: Any) -> Callable[[], Case]:
    def build() -> Case:
        import torch
        import torchvision

        net = getattr(torchvision.models.detection, builder)(weights=None, weights_backbone=None, **kw)
        images = [torch.rand(3, 128, 128), torch.rand(3, 128, 128)]
        targets = []
        for _ in images:
            target = {"boxes": torch.tensor([[10.0, 20.0, 70.0, 90.0]]), "labels": torch.tensor([1])}
            if masks:
                mask = torch.zeros(1, 128, 128, dtype=torch.uint8)
                mask[:, 20:90, 10:70] = 1
                target["masks"] = mask
            targets.append(target)
        return Case(net, (images,), train_args=(images, targets))

    return build


model("fasterrcnn_mobilenet_v3", "torchvision-detection", "torchvision")(
    _detection("fasterrcnn_mobilenet_v3_large_320_fpn")
)
model("retinanet_resnet50_fpn", "torchvision-detection", "torchvision")(
    _detection("retinanet_resnet50_fpn", min_size=128, max_size=128)
)
model("ssdlite320_mobilenet_v3", "torchvision-detection", "torchvision")(
    _detection("ssdlite320_mobilenet_v3_large")
)
model("maskrcnn_resnet50_fpn", "torchvision-detection", "torchvision")(
    _detection("maskrcnn_resnet50_fpn", masks=True, min_size=128, max_size=128)
)


def _segmentation(name: str) -> Callable[[], Case]:
    def build() -> Case:
        import torchvision

        net = torchvision.models.get_model(name, weights=None, weights_backbone=None, num_classes=21)
        return Case(net, (_image(2, 64),))

    return build


for _name in ("deeplabv3_mobilenet_v3_large", "fcn_resnet50", "lraspp_mobilenet_v3_large"):
    model(_name, "torchvision-segmentation", "torchvision")(_segmentation(_name))


def _video(name: str) -> Callable[[], Case]:
    def build() -> Case:
        import torch
        import torchvision

        net = torchvision.models.get_model(name, weights=None, num_classes=10)
        return Case(net, (torch.randn(2, 3, 4, 32, 32),))

    return build


for _name in ("r3d_18", "r2plus1d_18"):
    model(_name, "torchvision-video", "torchvision")(_video(_name))


def _timm(name: str, **kw: Any) -> Callable[[], Case]:
    def build() -> Case:
        import timm

        net = timm.create_model(name, pretrained=False, num_classes=10, **kw)
        return Case(net, (_image(2, kw.get("img_size", 64)),))

    return build


model("timm_vit_tiny", "timm", "timm")(_timm("vit_tiny_patch16_224", img_size=64))
model("timm_convnextv2_atto", "timm", "timm")(_timm("convnextv2_atto"))
model("timm_mobilevitv2_050", "timm", "timm")(_timm("mobilevitv2_050"))
model("timm_ghostnet_100", "timm", "timm")(_timm("ghostnet_100"))
model("timm_efficientformerv2_s0", "timm", "timm")(_timm("efficientformerv2_s0", img_size=64))
model("timm_levit_128s", "timm", "timm")(_timm("levit_128s", img_size=64))


def _tokens(batch: int = 2, length: int = 16, vocab: int = 1000) -> Any:
    import torch

    return torch.randint(0, vocab, (batch, length))


def _hf(config_name: str, model_name: str, inputs: Callable[[], dict[str, Any]], **config: Any) -> Callable[[], Case]:
    def build() -> Case:
        import transformers

        cfg = getattr(transformers, config_name)(**config)
        net = getattr(transformers, model_name)(cfg)
        return Case(net, (), inputs())

    return build


_SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}
_LM = {"vocab_size": 1000, "max_position_embeddings": 64, "use_cache": False}

model("hf_bert", "transformers", "transformers")(
    _hf("BertConfig", "BertForMaskedLM", lambda: {"input_ids": _tokens()}, **_SMALL, **_LM)
)
model("hf_deberta_v2", "transformers", "transformers")(
    _hf("DebertaV2Config", "DebertaV2ForMaskedLM", lambda: {"input_ids": _tokens()}, **_SMALL, **_LM)
)
model("hf_gpt2", "transformers", "transformers")(
    _hf(
        "GPT2Config",
        "GPT2LMHeadModel",
        lambda: {"input_ids": _tokens()},
        vocab_size=1000,
        n_positions=64,
        n_embd=64,
        n_layer=2,
        n_head=2,
        use_cache=False,
    )
)
_DECODER = {**_SMALL, **_LM, "num_attention_heads": 4, "num_key_value_heads": 2}
model("hf_llama", "transformers", "transformers")(
    _hf("LlamaConfig", "LlamaForCausalLM", lambda: {"input_ids": _tokens()}, **_DECODER)
)
model("hf_qwen2", "transformers", "transformers")(
    _hf("Qwen2Config", "Qwen2ForCausalLM", lambda: {"input_ids": _tokens()}, **_DECODER)
)
model("hf_mixtral_moe", "transformers", "transformers")(
    _hf(
        "MixtralConfig",
        "MixtralForCausalLM",
        lambda: {"input_ids": _tokens()},
        **_DECODER,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
)
model("hf_t5", "transformers", "transformers")(
    _hf(
        "T5Config",
        "T5ForConditionalGeneration",
        lambda: {"input_ids": _tokens(), "decoder_input_ids": _tokens(length=8)},
        vocab_size=1000,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_heads=4,
        use_cache=False,
    )
)


def _whisper_inputs() -> dict[str, Any]:
    import torch

    return {"input_features": torch.randn(2, 80, 100), "decoder_input_ids": _tokens(length=8)}


model("hf_whisper", "transformers", "transformers")(
    _hf(
        "WhisperConfig",
        "WhisperForConditionalGeneration",
        _whisper_inputs,
        vocab_size=1000,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        num_mel_bins=80,
        max_source_positions=50,
        max_target_positions=64,
        use_cache=False,
        # Whisper's defaults name GPT-2's token ids (50256 …), outside a small vocabulary.
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
    )
)


def _audio() -> dict[str, Any]:
    import torch

    return {"input_values": torch.randn(2, 4000)}


model("hf_wav2vec2", "transformers", "transformers")(
    _hf(
        "Wav2Vec2Config",
        "Wav2Vec2ForCTC",
        _audio,
        **_SMALL,
        conv_dim=(32, 32, 32),
        conv_stride=(5, 2, 2),
        conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        vocab_size=32,
    )
)


def _pixels() -> dict[str, Any]:
    return {"pixel_values": _image(2, 32)}


model("hf_vit", "transformers", "transformers")(
    _hf(
        "ViTConfig", "ViTForImageClassification", _pixels, **_SMALL, image_size=32, patch_size=8, num_labels=10
    )
)


@model("hf_clip", "transformers", "transformers")
def _clip() -> Case:
    import transformers

    text = {**_SMALL, "vocab_size": 1000, "max_position_embeddings": 32}
    vision = {**_SMALL, "image_size": 32, "patch_size": 8}
    cfg = transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=32)
    return Case(transformers.CLIPModel(cfg), (), {"input_ids": _tokens(length=8), "pixel_values": _image(2, 32)})


@model("diffusers_unet2d_condition", "diffusers", "diffusers")
def _unet_cond() -> Case:
    import diffusers
    import torch

    net = diffusers.UNet2DConditionModel(
        sample_size=16,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
        norm_num_groups=8,
    )
    args = (torch.randn(2, 4, 16, 16), torch.tensor([10, 500]), torch.randn(2, 8, 32))
    return Case(net, args)


@model("diffusers_unet2d", "diffusers", "diffusers")
def _unet() -> Case:
    import diffusers
    import torch

    net = diffusers.UNet2DModel(
        sample_size=16,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
    )
    return Case(net, (torch.randn(2, 3, 16, 16), torch.tensor([10, 500])))


@model("diffusers_vae", "diffusers", "diffusers")
def _vae() -> Case:
    import diffusers

    net = diffusers.AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(32, 64),
        latent_channels=4,
        norm_num_groups=8,
    )
    return Case(net, (_image(2, 32),))


def _rnn_lm(kind: str, bidirectional: bool = False) -> Callable[[], Case]:
    def build() -> Case:
        import torch
        from torch import nn

        class LanguageModel(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embed = nn.Embedding(1000, 64)
                rnn = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
                self.rnn = rnn(64, 64, num_layers=2, batch_first=True, bidirectional=bidirectional, dropout=0.1)
                self.head = nn.Linear(128 if bidirectional else 64, 1000)

            def forward(self, tokens: torch.Tensor) -> torch.Tensor:
                out, _ = self.rnn(self.embed(tokens))
                return torch.nn.functional.log_softmax(self.head(out), dim=-1)

        return Case(LanguageModel(), (_tokens(),))

    return build


model("lstm_lm", "rnn", "torch")(_rnn_lm("lstm"))
model("gru_lm", "rnn", "torch")(_rnn_lm("gru"))
model("bilstm_tagger", "rnn", "torch")(_rnn_lm("lstm", bidirectional=True))
model("elman_rnn_lm", "rnn", "torch")(_rnn_lm("rnn"))


@model("dlrm_small", "recommender", "torch")
def _dlrm() -> Case:
    import torch
    from torch import nn

    class DLRM(nn.Module):
        """DLRM's shape: a bottom MLP on dense features, one EmbeddingBag per sparse feature, the
        pairwise dot interaction, a top MLP (Naumov et al. 2019, facebookresearch/dlrm)."""

        def __init__(self) -> None:
            super().__init__()
            self.bottom = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 16), nn.ReLU())
            self.tables = nn.ModuleList(nn.EmbeddingBag(500, 16, mode="sum") for _ in range(4))
            self.top = nn.Sequential(nn.Linear(16 + 10, 64), nn.ReLU(), nn.Linear(64, 1))

        def forward(self, dense: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
            x = self.bottom(dense)
            features = [x] + [t(indices[i], offsets[i]) for i, t in enumerate(self.tables)]
            t = torch.stack(features, dim=1)
            z = torch.bmm(t, t.transpose(1, 2))
            li, lj = torch.tril_indices(5, 5, offset=-1)
            inter = z[:, li, lj]
            return torch.sigmoid(self.top(torch.cat([x, inter], dim=1)))

    indices = torch.randint(0, 500, (4, 12))
    offsets = torch.tensor([[0, 3, 5, 9]] * 4)
    return Case(DLRM(), (torch.randn(4, 13), indices, offsets))


@model("embeddingbag_two_tower", "recommender", "torch")
def _two_tower() -> Case:
    import torch
    from torch import nn

    class TwoTower(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.user = nn.EmbeddingBag(300, 32, mode="mean")
            self.item = nn.EmbeddingBag(300, 32, mode="max")
            self.proj = nn.Linear(32, 32)

        def forward(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
            u = torch.nn.functional.normalize(self.proj(self.user(users)), dim=-1)
            v = torch.nn.functional.normalize(self.proj(self.item(items)), dim=-1)
            return (u * v).sum(-1)

    return Case(TwoTower(), (torch.randint(0, 300, (4, 6)), torch.randint(0, 300, (4, 6))))


@model("nn_transformer_encoder", "torch.nn", "torch")
def _encoder() -> Case:
    import torch
    from torch import nn

    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    return Case(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), (torch.randn(2, 16, 64),))


@model("nn_transformer_seq2seq", "torch.nn", "torch")
def _seq2seq() -> Case:
    import torch
    from torch import nn

    net = nn.Transformer(64, 4, 2, 2, 128, batch_first=True)
    return Case(net, (torch.randn(2, 16, 64), torch.randn(2, 8, 64)))


@model("conv_autoencoder_upsample", "torch.nn", "torch")
def _autoencoder() -> Case:
    import torch
    from torch import nn

    net = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1),
        nn.GroupNorm(4, 16),
        nn.SiLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        nn.LeakyReLU(0.1),
        nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1),
        nn.InstanceNorm2d(16),
        nn.ELU(),
        nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.Conv2d(16, 3, 3, padding=1),
        nn.Tanh(),
    )
    return Case(net, (torch.randn(2, 3, 32, 32),))


# ---------------------------------------------------------------------------------------------
# Recording.


def op_name(func: Any) -> str:
    """An OpOverload as native_functions.yaml spells it: ``add.Tensor``, ``add`` for the default
    overload; another namespace keeps its prefix (``torchvision::roi_align``)."""
    schema = func._schema
    ns, _, name = schema.name.partition("::")
    full = name if schema.overload_name == "" else f"{name}.{schema.overload_name}"
    return full if ns == "aten" else f"{ns}::{full}"


def _leaves(out: Any) -> Iterator[Any]:
    import torch

    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, dict) or hasattr(out, "to_tuple"):
        for value in (out.values() if isinstance(out, dict) else out.to_tuple()):
            yield from _leaves(value)
    elif isinstance(out, (list, tuple)):
        for value in out:
            yield from _leaves(value)


def loss_of(out: Any) -> Any:
    """A scalar to train on: the mean of every floating output (a detection model's losses in
    training are such outputs)."""
    terms = [t.mean() for t in _leaves(out) if t.is_floating_point()]
    if not terms:
        raise RuntimeError("no floating output to train on")
    return sum(terms[1:], terms[0])


def _recorder() -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.counts: Counter[str] = Counter()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.counts[op_name(func)] += 1
            return func(*args, **(kwargs or {}))

    return Recorder()


def eager_inference(case: Case) -> tuple[Counter[str], str]:
    import torch

    net = case.module.eval()
    rec = _recorder()
    with torch.no_grad(), rec:
        net(*case.args, **case.kwargs)
    return rec.counts, ""


def eager_training(case: Case) -> tuple[Counter[str], str]:
    import torch

    net = case.module.train()
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    args = case.train_args if case.train_args is not None else case.args
    kwargs = case.train_kwargs if case.train_kwargs is not None else case.kwargs
    rec = _recorder()
    with rec:
        loss = loss_of(net(*args, **kwargs))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    return rec.counts, "forward, backward, clip_grad_norm_, AdamW.step, with torch's defaults on the CPU"


def graph_counts(gm: Any) -> Counter[str]:
    import torch

    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if isinstance(node.target, torch._ops.OpOverload):
            counts[op_name(node.target)] += 1
        elif isinstance(node.target, torch._ops.HigherOrderOperator):
            counts[f"higher_order::{node.target.name()}"] += 1
    return counts


def torch_mlir_table() -> dict[Any, Any]:
    """torch-mlir's FX importer table: its DEFAULT_DECOMPOSITIONS list read from the vendored file
    (as ast, so that its torch.ops.aten.X[.overload] names are resolved in this torch) and the two
    it appends when this torch has them."""
    import torch
    from torch._decomp import get_decompositions

    with tarfile.open(MLIR_CHECKOUT) as tar:
        member = tar.extractfile(MLIR_FILE)
        if member is None:
            raise RuntimeError(f"{MLIR_FILE} missing from {MLIR_CHECKOUT}")
        tree = ast.parse(member.read().decode())
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            text = ast.unparse(node)
            if text.startswith("torch.ops.aten.") and not isinstance(node.ctx, ast.Store):
                names.append(text.removeprefix("torch.ops.aten."))
    ops = []
    for name in dict.fromkeys(names):
        base, _, overload = name.partition(".")
        if not hasattr(torch.ops.aten, base):
            continue  # the file's own hasattr guards
        packet = getattr(torch.ops.aten, base)
        ops.append(getattr(packet, overload) if overload else packet)
    return get_decompositions(ops)


class Exported:
    """One torch.export per model, decomposed twice."""

    def __init__(self) -> None:
        self.program: Any = None
        self.error: str | None = None


def export_core(case: Case, exported: Exported) -> tuple[Counter[str], str]:
    return graph_counts(_exported(case, exported).run_decompositions().graph_module), ""


def export_torch_mlir(case: Case, exported: Exported) -> tuple[Counter[str], str]:
    program = _exported(case, exported).run_decompositions(torch_mlir_table())
    return graph_counts(program.graph_module), "torch-mlir fx_decomp_util.py DEFAULT_DECOMPOSITIONS"


def _exported(case: Case, exported: Exported) -> Any:
    import torch

    if exported.error is not None:
        raise RuntimeError(exported.error)
    if exported.program is None:
        try:
            exported.program = torch.export.export(case.module.eval(), case.args, case.kwargs)
        except Exception as err:
            exported.error = f"torch.export.export: {one_line(err)}"
            raise RuntimeError(exported.error) from None
    return exported.program


def functional(case: Case, exported: Exported) -> tuple[Counter[str], str]:
    import torch
    from torch._functorch.aot_autograd import aot_export_module

    net = case.module
    kw_names = tuple(case.kwargs)

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, *flat: Any) -> Any:
            n = len(flat) - len(kw_names)
            out = self.net(*flat[:n], **dict(zip(kw_names, flat[n:])))
            return (loss_of(out),)

    flat = (*case.args, *case.kwargs.values())
    try:
        # The joint trace wants a gradient for every parameter it is given: one eager step finds
        # those the loss never reaches (BERT's pooler under a masked-LM head) and freezes them.
        step = Step().train()
        step(*flat)[0].backward()
        unused = [p for p in net.parameters() if p.requires_grad and p.grad is None]
        for p in unused:
            p.requires_grad_(False)
        net.zero_grad(set_to_none=True)
        gm, _ = aot_export_module(step, flat, trace_joint=True, output_loss_index=0)
        note = "joint forward+backward (aot_export_module, functionalized)"
        return graph_counts(gm), note + (f"; {len(unused)} parameters without a gradient frozen" if unused else "")
    except Exception as err:
        joint_error = one_line(err)
    # The joint trace runs on fake tensors and stops at data-dependent Python (an .item()); export's
    # own graph is functional too, but inference only and with composite-implicit ops kept.
    program = _exported(case, exported)
    note = f"inference only: torch.export's functional IR (joint trace failed: {joint_error})"
    return graph_counts(program.graph_module), note[:400]


def one_line(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}".strip().splitlines()
    return (text[0] if text else type(err).__name__)[:300]


class Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Timeout(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def environment(packages: list[str]) -> dict[str, str]:
    from importlib import metadata

    env = {
        "format": FORMAT,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "script_commit": _commit(),
        "device": "cpu",
        "threads": "1",
    }
    for package in packages:
        try:
            env[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            env[package] = "absent"
    return env


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "scripts/model_corpus.py"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


PACKAGES = ["torch", "torchvision", "timm", "transformers", "diffusers", "numpy"]


def run(out_path: Path, only: set[str] | None, limit: int) -> None:
    import importlib

    import torch

    torch.set_num_threads(1)
    done: set[tuple[str, str]] = set()
    if out_path.exists():
        for line in out_path.read_text().splitlines():
            record = json.loads(line)
            if record.get("kind") == "run":
                done.add((record["model"], record["path"]))
    with out_path.open("a") as out:

        def write(record: dict[str, Any]) -> None:
            out.write(json.dumps(record, sort_keys=True) + "\n")
            out.flush()

        write({"kind": "env", **environment(PACKAGES)})
        for spec in CORPUS:
            if only and spec.name not in only:
                continue
            if all((spec.name, p) in done for p in PATHS):
                continue
            write({"kind": "model", "model": spec.name, "family": spec.family})
            try:
                if spec.needs != "torch":
                    importlib.import_module(spec.needs)
            except ImportError as err:
                for path in PATHS:
                    write(_record(spec, path, "skipped", f"{spec.needs} not installed: {one_line(err)}"))
                continue
            exported = Exported()
            # Export first: it runs the model in eval mode on fresh weights; training comes last.
            order = ("eager_inference", "export_core", "export_torch_mlir", "functional", "eager_training")
            for path in order:
                if (spec.name, path) in done:
                    continue
                torch.manual_seed(0)
                cpu, wall = time.process_time(), time.perf_counter()
                try:
                    with time_limit(limit):
                        case = spec.build()
                        if path == "eager_inference":
                            counts, note = eager_inference(case)
                        elif path == "eager_training":
                            counts, note = eager_training(case)
                        elif path == "functional":
                            counts, note = functional(case, exported)
                        elif path == "export_core":
                            counts, note = export_core(case, exported)
                        else:  # the program export_core exported, decomposed by another table
                            counts, note = export_torch_mlir(case, exported)
                    record = _record(spec, path, "ok", note, counts)
                except Exception as err:
                    record = _record(spec, path, "failed", one_line(err))
                    print(f"{spec.name} {path}: {traceback.format_exc(limit=-3)}", file=sys.stderr)
                record["cpu_s"] = round(time.process_time() - cpu, 2)
                record["wall_s"] = round(time.perf_counter() - wall, 2)
                write(record)
                print(f"{spec.name:32} {path:18} {record['status']:7} {record['cpu_s']:7.1f}s", flush=True)
            exported.program = None


def _record(
    spec: Spec, path: str, status: str, note: str, counts: Counter[str] | None = None
) -> dict[str, Any]:
    return {
        "kind": "run",
        "model": spec.name,
        "family": spec.family,
        "path": path,
        "status": status,
        "note": note,
        "ops": dict(sorted((counts or {}).items())),
    }


# ---------------------------------------------------------------------------------------------
# The shipped table.


def clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def table(records_path: Path, out_path: Path) -> None:
    """The records → the shipped TSV.xz: `#` header lines (the environment), then

        model   NAME  FAMILY
        run     PATH  MODEL  STATUS  CPU_SECONDS  NOTE      (one per model and path)
        op      PATH  OP  MODEL  COUNT
    """
    env: dict[str, str] = {}
    models: dict[str, str] = {}
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for line in records_path.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "env":  # a resumed run adds one: keep the first, and every commit
            commits = env.get("script_commit", "").split(", ") if env else []
            env = env or {k: str(v) for k, v in record.items() if k != "kind"}
            commits.append(str(record["script_commit"]))
            env["script_commit"] = ", ".join(dict.fromkeys(c for c in commits if c))
        elif record["kind"] == "model":
            models[record["model"]] = record["family"]
        else:
            runs[(record["model"], record["path"])] = record
    lines = [f"# {FORMAT}", "# Generated by scripts/model_corpus.py; see docs/models.md."]
    lines += [f"# {key}: {clean(value)}" for key, value in env.items() if key != "format"]
    lines += [f"model\t{name}\t{family}" for name, family in sorted(models.items())]
    ops: list[str] = []
    for (name, path), record in sorted(runs.items(), key=lambda kv: (PATHS.index(kv[0][1]), kv[0][0])):
        cpu = record.get("cpu_s", 0)
        lines.append(f"run\t{path}\t{name}\t{record['status']}\t{cpu}\t{clean(record['note'])}")
        ops += [f"op\t{path}\t{op}\t{name}\t{count}" for op, count in record["ops"].items()]
    lines += sorted(ops, key=lambda line: line.split("\t")[1:4])
    data = lzma.compress(("\n".join(lines) + "\n").encode(), preset=9 | lzma.PRESET_EXTREME)
    out_path.write_bytes(data)
    print(f"{out_path}: {len(models)} models, {len(runs)} runs, {len(ops)} op rows, {len(data)} bytes")


def profiler_check(name: str) -> None:
    """The eager recorder against torch.profiler on one model's inference: the profiler sees every
    dispatcher call, the composite ones above Autograd too (aten::linear, aten::conv2d); the mode
    sees what reaches a backend kernel below it. Prints both name sets' differences."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    spec = next(s for s in CORPUS if s.name == name)
    torch.manual_seed(0)
    case = spec.build()
    counts, _ = eager_inference(case)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        case.module.eval()(*case.args, **case.kwargs)
    seen: Counter[str] = Counter()
    for event in prof.events():
        if event.name.startswith("aten::"):
            seen[event.name.removeprefix("aten::")] += 1
    mode = Counter()
    for op, n in counts.items():
        mode[op.split(".")[0]] += n
    result = {
        "model": name,
        "mode_ops": len(mode),
        "profiler_ops": len(seen),
        "only_in_mode": sorted(set(mode) - set(seen)),
        "only_in_profiler": sorted(set(seen) - set(mode)),
        "count_differences": {op: [mode[op], seen[op]] for op in sorted(set(mode) & set(seen)) if mode[op] != seen[op]},
    }
    print(json.dumps(result, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run the corpus, appending records (resumes where it stopped)")
    p_run.add_argument("-o", type=Path, required=True)
    p_run.add_argument("--only", nargs="*", help="these models only")
    p_run.add_argument("--limit", type=int, default=900, help="seconds per model and path")
    p_table = sub.add_parser("table", help="records → the shipped .tsv.xz")
    p_table.add_argument("records", type=Path)
    p_table.add_argument("-o", type=Path, required=True)
    sub.add_parser("list", help="the corpus")
    p_check = sub.add_parser("profiler-check", help="the eager recorder against torch.profiler")
    p_check.add_argument("model")
    args = parser.parse_args()
    if args.command == "run":
        run(args.o, set(args.only) if args.only else None, args.limit)
    elif args.command == "table":
        table(args.records, args.o)
    elif args.command == "list":
        for spec in CORPUS:
            print(f"{spec.name}\t{spec.family}")
    else:
        profiler_check(args.model)


if __name__ == "__main__":
    main()
