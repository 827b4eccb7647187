"""What a model dispatches on another device than the CPU it was recorded on: the substitutions.

The corpus (`opdrift.usage.models`) ran on the CPU, and some of PyTorch's modules choose their path by the
input's device. On an eager backend's device they dispatch other operators than the CPU did, and
those are the ones its kernels (or its boxed CPU fallback) receive:

- ``nn.LSTM`` and ``nn.GRU``: aten/src/ATen/native/RNN.cpp at v2.14.1 (``lstm``, ``gru``; the cells
  ``LSTMCell`` and ``GRUCell``) runs oneDNN's ``mkldnn_rnn_layer`` for an LSTM on the CPU and the
  unfused GRU cell (``unsafe_chunk``, ``sigmoid_``, ``tanh_``); for an input that ``is_cuda()``,
  ``is_xpu()`` or ``is_privateuseone()`` each time step calls the fused cell,
  ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``, after an ``mm`` of the hidden state. Their
  backward (derivatives.yaml at v2.14.1, with grad mode off in ``backward()``) is
  ``_thnn_fused_lstm_cell_backward`` (CompositeImplicitAutograd, which calls
  ``_thnn_fused_lstm_cell_backward_impl``) and ``_thnn_fused_gru_cell_backward``. PyTorch has CUDA
  and XPU kernels for them, no CPU kernel: on a device whose backend lacks them, a boxed CPU fallback
  cannot run them, and ``nn.LSTM`` fails there. MPS takes its own path (``_lstm_mps``): not listed.
- ``scaled_dot_product_attention``: aten/src/ATen/native/transformers/attention.cpp at v2.14.1
  asks ``_fused_sdp_choice_stub`` for a fused kernel when the device registered one
  (``is_device_supported``): the CPU picks ``_scaled_dot_product_flash_attention_for_cpu``; a
  PrivateUse1 backend that registers no choice gets the math path, whose ops
  (``_scaled_dot_product_attention_math``, CompositeImplicitAutograd) reach it: ``bmm``,
  ``_safe_softmax`` and views; in training ``_softmax_backward_data`` too (derivatives.yaml's
  ``_safe_softmax``). CUDA and XPU choose their own fused kernels: not listed.

Each substitution was observed on torch 2.14.1 with an emulated PrivateUse1 device (a tensor subclass
whose TensorImpl says ``privateuseone:0``, tests/data/observed/device/observe_device.py):
what the device path dispatched is tests/data/observed/device/device-2.14.1.json, and
tests/unit/usage/test_device.py checks this table against it. Backward ops come from derivatives.yaml (the
emulation cannot run autograd on a device without a device guard).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

EAGER_PATHS = ("eager_inference", "eager_training")


@dataclass(frozen=True)
class Substitution:
    """On PATHS, a model that dispatched every op of ``when`` on the CPU dispatches ``adds`` on a
    device of ``keys`` instead of ``drops`` (each call of the first op of ``when`` counts for one of
    each added op). ``module``: the torch.nn module whose path it is, for the reports."""

    module: str
    when: tuple[str, ...]
    drops: tuple[str, ...]
    adds: tuple[str, ...]
    keys: tuple[str, ...]  # the dispatch keys whose devices take this path
    paths: tuple[str, ...]
    cite: str


_RNN_KEYS = ("CUDA", "XPU", "PrivateUse1")
_RNN = "aten/src/ATen/native/RNN.cpp@v2.14.1 LSTMCell/GRUCell: input.is_cuda() || input.is_xpu() || input.is_privateuseone()"
_SDPA = "aten/src/ATen/native/transformers/attention.cpp@v2.14.1 scaled_dot_product_attention: _fused_sdp_choice_stub.is_device_supported, else math"

SUBSTITUTIONS: tuple[Substitution, ...] = (
    Substitution(
        "nn.LSTM",
        ("mkldnn_rnn_layer",),
        ("mkldnn_rnn_layer",),
        ("_thnn_fused_lstm_cell", "mm", "t", "unbind.int"),
        _RNN_KEYS,
        EAGER_PATHS,
        _RNN,
    ),
    Substitution(
        "nn.LSTM",
        ("mkldnn_rnn_layer_backward",),
        ("mkldnn_rnn_layer_backward",),
        ("_thnn_fused_lstm_cell_backward_impl", "mm"),
        _RNN_KEYS,
        ("eager_training",),
        "derivatives.yaml@v2.14.1 _thnn_fused_lstm_cell: _thnn_fused_lstm_cell_backward (grad mode off)",
    ),
    # the CPU's unfused GRU cell: only a GRU dispatches these three together (the corpus' gru_lm)
    Substitution(
        "nn.GRU",
        ("unsafe_split.Tensor", "sigmoid_", "tanh_"),
        (),
        ("_thnn_fused_gru_cell", "mm", "unbind.int"),
        _RNN_KEYS,
        EAGER_PATHS,
        _RNN,
    ),
    Substitution(
        "nn.GRU",
        ("unsafe_split.Tensor", "sigmoid_backward", "tanh_backward"),
        (),
        ("_thnn_fused_gru_cell_backward",),
        _RNN_KEYS,
        ("eager_training",),
        "derivatives.yaml@v2.14.1 _thnn_fused_gru_cell: _thnn_fused_gru_cell_backward (grad mode off)",
    ),
    Substitution(
        "scaled_dot_product_attention",
        ("_scaled_dot_product_flash_attention_for_cpu",),
        ("_scaled_dot_product_flash_attention_for_cpu",),
        ("_safe_softmax", "_unsafe_view", "bmm", "clone", "expand", "mul.Scalar", "transpose.int", "view"),
        ("PrivateUse1",),
        EAGER_PATHS,
        _SDPA,
    ),
    Substitution(
        "scaled_dot_product_attention",
        ("_scaled_dot_product_flash_attention_for_cpu_backward",),
        ("_scaled_dot_product_flash_attention_for_cpu_backward",),
        ("bmm", "_softmax_backward_data", "mul.Scalar"),
        ("PrivateUse1",),
        ("eager_training",),
        "derivatives.yaml@v2.14.1 _safe_softmax: _softmax_backward_data; bmm's and mul's own",
    ),
)

Counts = Mapping[str, Mapping[str, Mapping[str, int]]]  # path → op → model → calls


def on_device(counts: Counts, key: str) -> Counts:
    """COUNTS (recorded on the CPU) as a device of dispatch KEY receives them: each substitution for
    KEY applied to each model that dispatched its ``when`` on one of its paths."""
    rules = [s for s in SUBSTITUTIONS if key in s.keys]
    if not rules:
        return counts
    out: dict[str, dict[str, dict[str, int]]] = {
        p: {op: dict(m) for op, m in ops.items()} for p, ops in counts.items()
    }
    for rule in rules:
        for path in rule.paths:
            ops = out.get(path)
            if ops is None:
                continue
            # read from the recorded counts: one rule's additions never trigger another
            recorded = counts.get(path, {})
            users = set.intersection(*(set(recorded.get(op, {})) for op in rule.when))
            for model in sorted(users):
                calls = recorded[rule.when[0]][model]
                for op in rule.drops:
                    ops.get(op, {}).pop(model, None)
                for op in rule.adds:
                    per_model = ops.setdefault(op, {})
                    per_model[model] = per_model.get(model, 0) + calls
    return MappingProxyType(
        {
            p: MappingProxyType({op: MappingProxyType(m) for op, m in ops.items() if m})
            for p, ops in out.items()
        }
    )
