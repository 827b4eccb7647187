"""The model corpus scripts/model_corpus.py runs: each model built in code, random weights, small inputs.

Nothing is downloaded: torchvision and timm models from their builders with weights=None,
transformers and diffusers models from configs written here (small sizes of the real architecture),
and the RNN, recommender and torch.nn models defined here. A model's library is imported when it is
built, so that a torch without torchvision records those models as skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


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


def _hf(
    config_name: str, model_name: str, inputs: Callable[[], dict[str, Any]], **config: Any
) -> Callable[[], Case]:
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
        "ViTConfig",
        "ViTForImageClassification",
        _pixels,
        **_SMALL,
        image_size=32,
        patch_size=8,
        num_labels=10,
    )
)


@model("hf_clip", "transformers", "transformers")
def _clip() -> Case:
    import transformers

    text = {**_SMALL, "vocab_size": 1000, "max_position_embeddings": 32}
    vision = {**_SMALL, "image_size": 32, "patch_size": 8}
    cfg = transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=32)
    return Case(
        transformers.CLIPModel(cfg), (), {"input_ids": _tokens(length=8), "pixel_values": _image(2, 32)}
    )


def _diffusers(class_name: str, inputs: Callable[[], tuple[Any, ...]], **config: Any) -> Callable[[], Case]:
    def build() -> Case:
        import diffusers

        net = getattr(diffusers, class_name)(**config)
        return Case(net, inputs())

    return build


def _unet_cond_inputs() -> tuple[Any, ...]:
    import torch

    return (torch.randn(2, 4, 16, 16), torch.tensor([10, 500]), torch.randn(2, 8, 32))


def _unet_inputs() -> tuple[Any, ...]:
    import torch

    return (torch.randn(2, 3, 16, 16), torch.tensor([10, 500]))


_UNET = {"sample_size": 16, "layers_per_block": 1, "block_out_channels": (32, 64), "norm_num_groups": 8}

model("diffusers_unet2d_condition", "diffusers", "diffusers")(
    _diffusers(
        "UNet2DConditionModel",
        _unet_cond_inputs,
        **_UNET,
        in_channels=4,
        out_channels=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
    )
)
model("diffusers_unet2d", "diffusers", "diffusers")(
    _diffusers(
        "UNet2DModel",
        _unet_inputs,
        **_UNET,
        in_channels=3,
        out_channels=3,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
    )
)
model("diffusers_vae", "diffusers", "diffusers")(
    _diffusers(
        "AutoencoderKL",
        lambda: (_image(2, 32),),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(32, 64),
        latent_channels=4,
        norm_num_groups=8,
    )
)


def _rnn_lm(kind: str, bidirectional: bool = False) -> Callable[[], Case]:
    def build() -> Case:
        import torch
        from torch import nn

        class LanguageModel(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embed = nn.Embedding(1000, 64)
                rnn = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
                self.rnn = rnn(
                    64, 64, num_layers=2, batch_first=True, bidirectional=bidirectional, dropout=0.1
                )
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
