"""Which backend profile each kind of op list is, unless ``--profile`` says otherwise.

The profiles themselves (``eager``, ``functional``, ``export``) and which PyTorch kernels serve each
are the kernel model's (`bot.operators.kernels`): drift reports and coverage read the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.coverage.oplist import BackendKind
from bot.operators.kernels import Profile

# C++ registrations, op-plugin and torch_npu's own list, XPU and a native dispatch key are eager backends; torch-mlir compiles
# exported graphs; XLA runs under functionalization. A plain list could be anything, and eager is
# the common case.
PROFILE_OF_KIND: Mapping[BackendKind, Profile] = {
    "torch-mlir": "export",
    "xla": "functional",
    "cpp": "eager",
    "op-plugin": "eager",
    "torch-npu": "eager",
    "xpu": "eager",
    "dispatch": "eager",
    "text": "eager",
}
