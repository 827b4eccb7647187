"""Backend profiles: what kind of backend a list belongs to decides which PyTorch kernels serve it.

PyTorch registers a composite operator's kernel under an alias key, and which backends that alias
reaches depends on the backend:

- ``eager``: a dense backend with its own dispatch key (PrivateUse1 backends such as pytorch_dlprim,
  MPS, XPU, Ascend's NPU). A CompositeImplicitAutograd op decomposes for it; both CompositeExplicit
  kinds give it a default kernel.
- ``functional``: XLA and Lazy, which run under functionalization (so a listed functional op covers
  its out and in-place variants). CompositeExplicitAutograd serves them, but PyTorch's
  ``non_functional_backend_dispatch_keyset`` leaves them out of CompositeExplicitAutogradNonFunctional:
  such an op needs their own kernel.
- ``export``: compilers of exported graphs (torch-mlir, ExecuTorch), which are functionalized too.
  What reaches them is what survives decomposition. CompositeImplicitAutograd always decomposes; a
  CompositeExplicitAutograd op reaches the graph unless the compiler's own decomposition table takes
  it, so "needs a lowering" is an upper bound for such an op.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from bot.coverage.oplist import BackendKind

Profile = Literal["eager", "functional", "export"]
PROFILES: tuple[Profile, ...] = ("eager", "functional", "export")

_EXPLICIT = "CompositeExplicitAutograd"
_NON_FUNCTIONAL = "CompositeExplicitAutogradNonFunctional"

# The composite kinds whose one kernel a backend of each profile runs unless it registers its own.
DEFAULT_KERNELS: Mapping[Profile, frozenset[str]] = {
    "eager": frozenset({_EXPLICIT, _NON_FUNCTIONAL}),
    "functional": frozenset({_EXPLICIT}),
    "export": frozenset(),
}

# Profiles whose backends run under functionalization (XLA and Lazy by design, an exported graph because
# export functionalizes it): the out and in-place variants of a functional op never reach them, so a
# listed functional op covers them.
FUNCTIONALIZED: frozenset[Profile] = frozenset({"functional", "export"})

# What each kind of op list is, unless `--profile` says otherwise: C++ registrations, op-plugin, XPU
# and a native dispatch key are eager backends; a plain list could be anything, and eager is the
# common case.
PROFILE_OF_KIND: Mapping[BackendKind, Profile] = {
    "torch-mlir": "export",
    "xla": "functional",
    "cpp": "eager",
    "op-plugin": "eager",
    "xpu": "eager",
    "dispatch": "eager",
    "text": "eager",
}
