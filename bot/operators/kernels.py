"""Which kernel a dispatch key runs for an operator, and what a backend of each profile must write.

PyTorch decides an operator's kernel per dispatch key, not per operator. An entry's dispatch table
names kernels under backend keys (``CPU``, ``SparseCUDA``) and under alias keys, the composite kinds,
and the dispatcher fills every other key from the aliases in a fixed order
(``OperatorEntry::computeDispatchTableEntryWithDebug``):

1. a kernel registered for the key itself (the operator's own, or, for the functional and in-place
   members of a structured group, the out= delegate's structured kernel);
2. CompositeExplicitAutogradNonFunctional, for the keys of ``non_functional_backend_dispatch_keyset``:
   every backend but Sparse, XLA and Lazy (XLA and Lazy run under functionalization);
3. CompositeExplicitAutograd, for the keys of ``backend_dispatch_keyset``, which leaves out the
   NestedTensor keys (c10's note "NestedTensor Not Included in Backend Keys");
4. CompositeImplicitAutogradNestedTensor for a NestedTensor key, then CompositeImplicitAutograd for
   any key: the operator decomposes into others;
5. nothing: calling it there fails, so a backend on that key must register a kernel.

So ``zeros_like`` (CompositeExplicitAutograd, CompositeImplicitAutogradNestedTensor) gives every dense
backend the explicit default kernel and decomposes only for nested tensors; ``slice_scatter``
(CompositeExplicitAutogradNonFunctional since 2.1) serves MPS or a PrivateUse1 backend, but not XLA.

A snapshot records, for each key of an operator's table, where that key's kernel comes from
(`SOURCES`); `kernel_for` answers for any key, and `profile_kernel` for a backend of a profile that
is not in the table at all, which is what an out-of-tree backend is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from opdrift.dispatchkeys import BY_PREFERENCE, CIA, COMPOSITE_KEYS, DENSE_COMPOSITES, STRUCTURED_KEYS
from opdrift.model import Facets

OWN = "own"
DELEGATE = "structured_delegate"
# Where a key's kernel comes from: the operator's own, its structured delegate's, or an alias key's.
SOURCES = (OWN, DELEGATE, *COMPOSITE_KEYS)

Profile = Literal["eager", "functional", "export"]
PROFILES: tuple[Profile, ...] = ("eager", "functional", "export")

# The key a backend of each profile dispatches on, when it has no entry in the yaml (PrivateUse1 is
# what out-of-tree eager backends such as pytorch_dlprim or Ascend's NPU register under).
PROFILE_KEY: Mapping[Profile, str] = {"eager": "PrivateUse1", "functional": "XLA", "export": "PrivateUse1"}

# Profiles whose backends run under functionalization (XLA and Lazy by design, an exported graph because
# export functionalizes it): the out and in-place variants of a functional op never reach them, so the
# functional op covers them.
FUNCTIONALIZED: frozenset[Profile] = frozenset({"functional", "export"})

KernelTable = Mapping[str, str]  # dispatch key → one of SOURCES


def kernel_sources(keys: Iterable[str], delegated: Iterable[str] = ()) -> tuple[tuple[str, str], ...]:
    """The (key, source) pairs of a dispatch table, sorted by key: alias keys are their own source,
    DELEGATED backend keys run the structured delegate's kernel, the rest the operator's own."""
    from_delegate = frozenset(delegated)
    return tuple(
        (key, key if key in SOURCES else DELEGATE if key in from_delegate else OWN)
        for key in sorted(set(keys))
    )


def table_of(facets: Facets) -> dict[str, str]:
    """The kernel table of a record: its `kernels` facet, or, for facets that lack one (a version-1
    snapshot, a record built in code), the table its dispatch keys and composite kind imply: the
    structured keys of a structured_delegate operator are the delegate's, other backend keys its own.
    """
    if facets.kernels:
        return dict(facets.kernels)
    return dict(implied_sources(facets))


def implied_sources(facets: Facets) -> tuple[tuple[str, str], ...]:
    keys = set(facets.dispatch)
    if facets.composite is not None:
        keys.add(facets.composite)
    delegated = STRUCTURED_KEYS.intersection(keys) if facets.structured_delegate else ()
    return kernel_sources(keys, delegated)


def dense_composite(keys: Iterable[str]) -> str | None:
    """The composite kind a dense backend without a kernel of its own runs, or None.

    ``CompositeImplicitAutogradNestedTensor`` is never it: that decomposition is for nested tensors.
    """
    present = frozenset(keys)
    return next((kind for kind in DENSE_COMPOSITES if kind in present), None)


def kernel_for(table: KernelTable, key: str) -> str | None:
    """Where the kernel that dispatch key KEY runs comes from, or None when it has none: its own or
    its delegate's, else the first alias key of the table that serves KEY, in the dispatcher's order
    (`opdrift.dispatchkeys.BY_PREFERENCE`)."""
    source = table.get(key)
    if source is not None and source in (OWN, DELEGATE):
        return source
    for alias in BY_PREFERENCE:
        if alias.key in table and alias.serves(key):
            return alias.key
    return None


def composite_for(table: KernelTable, key: str) -> str | None:
    """The composite kind that serves dispatch key KEY, or None: when nothing does, and when KEY runs
    a backend kernel of the table's (then it is no composite's doing)."""
    found = kernel_for(table, key)
    return None if found in (OWN, DELEGATE) else found


def profile_kernel(table: KernelTable, profile: Profile) -> str | None:
    """The composite kind that serves a backend of PROFILE which registers nothing for the operator.

    For ``export`` this is only the kernel table's part (CIA may decompose, nothing else stands in);
    what really reaches an exported graph depends on the release and the compiler's decomposition
    table, which `opdrift.operators.exported.export_fate` judges.
    """
    if profile == "export":
        return CIA if CIA in table else None
    return composite_for(table, PROFILE_KEY[profile])
