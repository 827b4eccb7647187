"""The dispatch keys opdrift names: the one place a composite (alias) key and its sets are defined,
with the backend-key sets torchgen defines beside its `DispatchKey` (structured, ufunc, functional).

torchgen's `DispatchKey` enum is the model: one definition, spelled as native_functions.yaml spells
it. The composite keys are alias keys: a kernel registered to one serves many backends, so which a
record has decides who must write a kernel. Every set of them (the composite keys, those whose kernel
serves every dense backend, the order a dense backend falls back through, the catalogue's short
names, which backend keys each fills in for and in what order) derives from `COMPOSITE_TABLE`, so
a new alias key is a row here (`tests/unit/drift/test_flags.py` adds one to a copy of the package).

It sits beside `opdrift.model` rather than in `opdrift.operators` because the model's `Operator.backends`
needs the composite keys, and the model is below every stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

CIA = "CompositeImplicitAutograd"
CIA_NESTED = "CompositeImplicitAutogradNestedTensor"
CEA = "CompositeExplicitAutograd"
CEA_NON_FUNCTIONAL = "CompositeExplicitAutogradNonFunctional"


# Backend keys whose kernels a structured out= op shares with its functional/in-place delegators
# (torchgen.model.STRUCTURED_DISPATCH_KEYS).
STRUCTURED_KEYS = frozenset({"CPU", "CUDA", "MPS", "XPU", "MTIA"})
# The keys a ufunc_inner_loop fills in (torchgen.model.UFUNC_DISPATCH_KEYS).
UFUNC_KEYS = ("CPU", "CUDA")

# Backends that use functionalization in eager mode, so the dispatcher keeps NonFunctional
# composites away from them.
FUNCTIONAL_BACKEND_KEYS = frozenset({"XLA", "Lazy", "AutogradXLA", "AutogradLazy"})


def is_nested(key: str) -> bool:
    return key.startswith(("NestedTensor", "AutogradNestedTensor"))


def is_sparse(key: str) -> bool:
    # The Sparse functionality (SparseCPU, SparseCUDA, ...); SparseCsr is a functionality of its own,
    # which non_functional_backend_dispatch_keyset keeps.
    return key.startswith("Sparse") and not key.startswith("SparseCsr")


@dataclass(frozen=True)
class CompositeKey:
    """One alias key of the dispatcher that a native_functions.yaml entry may name.

    `rank`: the dispatcher's preference among the alias keys when a backend key has no kernel of its
    own (c10's OperatorEntry::computeDispatchTableEntryWithDebug, steps 2.1-2.4), and `serves`: which
    backend keys it fills in for. `generic`: its kernel serves every dense backend, so no backend has
    to write one. `dense`: it stands in for a dense backend (the record's `composite`; torchgen allows
    one per entry). `short`: the catalogue's name for it, where the column is narrow.
    """

    key: str
    short: str
    rank: int
    serves: Callable[[str], bool]
    generic: bool
    dense: bool


# In torchgen's order of the alias keys, which COMPOSITE_KEYS (and the snapshot's sources) keep.
COMPOSITE_TABLE: tuple[CompositeKey, ...] = (
    CompositeKey(CIA, "implicit", 3, lambda key: True, True, True),
    # a decomposition for nested tensors only: never a dense backend's
    CompositeKey(CIA_NESTED, "implicit (nested)", 2, is_nested, False, False),
    CompositeKey(CEA, "explicit", 1, lambda key: not is_nested(key), True, True),
    # since 2.1: served to MPS or a PrivateUse1 backend, never to XLA or Lazy (functionalized) nor to
    # the sparse and nested functionalities
    CompositeKey(
        CEA_NON_FUNCTIONAL,
        "explicit non-functional",
        0,
        lambda key: not is_nested(key) and not is_sparse(key) and key not in FUNCTIONAL_BACKEND_KEYS,
        True,
        True,
    ),
)

COMPOSITE_KEYS: tuple[str, ...] = tuple(k.key for k in COMPOSITE_TABLE)
# The dispatcher's order of preference among them.
BY_PREFERENCE: tuple[CompositeKey, ...] = tuple(sorted(COMPOSITE_TABLE, key=lambda k: k.rank))
# Keys whose kernel runs on every backend, so no backend has to write one.
GENERIC_KEYS: frozenset[str] = frozenset(k.key for k in COMPOSITE_TABLE if k.generic)
# The composite kinds that stand in for a dense backend without a kernel of its own, in the
# dispatcher's order of preference.
DENSE_COMPOSITES: tuple[str, ...] = tuple(k.key for k in BY_PREFERENCE if k.dense)
SHORT_NAMES: dict[str, str] = {k.key: k.short for k in COMPOSITE_TABLE}
