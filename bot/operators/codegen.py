"""The codegen's rules per release: how each torchgen release named and chose the operators it generated.

`opdrift.operators.autogen` follows torchgen's ``add_generated_native_functions``, but that function
changed between releases, and a release's registered operators are what its own codegen made. Each
row below is the first release whose rules differ from the row before; a version between two rows
takes the earlier one. Checked against every release wheel's RegistrationDeclarations.h from 1.12.0
to 2.15.0 (tests/unit/operators/test_codegen.py, on lists vendored under tests/data/wheels/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from opdrift.errors import OpdriftError
from opdrift.versions import row_for

if TYPE_CHECKING:
    from opdrift.schema.kernel import Binding


class CodegenError(OpdriftError):
    """--codegen names a release whose rules the bot does not know."""


@dataclass(frozen=True)
class CodegenRules:
    """One release's rules for the operators its codegen adds to native_functions.yaml's entries."""

    since: str  # "X.Y": the first release with these rules
    # How a generated functional variant is named. "overload" (1.12): the in-place or mutable op's
    # name with the overload "functional" (or "<overload>_functional"), as 1.12's `autogen:` lines
    # spell it: `_foreach_abs.functional`. "base" (1.13 on): the plain base name, and for a mutable op
    # the base plus "_functional" (`_fused_moving_avg_obs_fq_helper_functional`); the grouping then
    # also strips that suffix (torchgen's Note [Overload Ambiguity With Functional Variants]).
    functional_naming: str
    # Whether a group gets its missing out= member only when an `autogen:` line asks for one (1.13
    # on); 1.12 generated an out= member for every group that could have one, and read `autogen:`
    # only to check it.
    out_on_request: bool
    # Whether a CompositeImplicitAutograd group tagged `core` still gets its generated operators
    # (2.6 on: `upsample_bilinear2d.vec_out`, `avg_pool1d.out`); before, every CIA group got none.
    core_composite_generates: bool
    # Whether `set_` counts as an ordinary in-place op rather than a view (2.3 on).
    set_is_not_a_view: bool
    # Which member a group's generated operators are made from when it has both a mutable and an
    # in-place one: the mutable (2.6 on) or the in-place (before).
    base_prefers_mutable: bool
    # Whether the out= argument made from a lone return is called `out` (1.13 on) or `out0`.
    lone_out_named_out: bool
    # The tags a generated operator copies from the entry it is generated from.
    inherited_tags: frozenset[str]
    # Whether the operators of a structured group (structured, or a structured_delegate) take a
    # Tensor[] as `const at::ITensorListRef &` (1.13 on: torchgen's context.py sets
    # use_ilistref_for_tensor_lists=f.part_of_structured_group). 1.12's torchgen had no such switch:
    # its RegistrationDeclarations.h declares `cat(TensorList tensors, int64_t dim)`, 1.13's
    # `cat(const ITensorListRef & tensors, int64_t dim)`, from the same yaml entry.
    ilistref_for_structured: bool
    # Whether a generated out= operator gets a CompositeExplicitAutograd kernel (1.13 on). 1.12's
    # generate_function registered none for it ("we'll generate a dispatcher entry for them, but
    # won't actually register any kernels"); its RegistrationDeclarations.h says "default": "False"
    # for each of the 98, while the generated functional operators got theirs.
    generated_out_has_kernel: bool


_ALL_TAGS = frozenset({"nondeterministic_seeded", "view_copy", "pt2_compliant_tag"})

_V113 = CodegenRules(
    since="1.13",
    functional_naming="base",
    out_on_request=True,
    core_composite_generates=False,
    set_is_not_a_view=False,
    base_prefers_mutable=False,
    lone_out_named_out=True,
    inherited_tags=frozenset({"nondeterministic_seeded"}),
    ilistref_for_structured=True,
    generated_out_has_kernel=True,
)
RULES: tuple[CodegenRules, ...] = (
    replace(
        _V113,
        since="1.12",
        functional_naming="overload",
        out_on_request=False,
        lone_out_named_out=False,
        inherited_tags=frozenset(),
        ilistref_for_structured=False,
        generated_out_has_kernel=False,
    ),
    _V113,
    replace(_V113, since="2.0", inherited_tags=frozenset({"nondeterministic_seeded", "view_copy"})),
    replace(_V113, since="2.2", inherited_tags=_ALL_TAGS),
    replace(_V113, since="2.3", inherited_tags=_ALL_TAGS, set_is_not_a_view=True),
    replace(
        _V113,
        since="2.6",
        inherited_tags=_ALL_TAGS,
        set_is_not_a_view=True,
        core_composite_generates=True,
        base_prefers_mutable=True,
    ),
)
NEWEST = RULES[-1]

# The releases whose registered operators were checked against their wheels; --codegen takes these.
KNOWN_RELEASES: tuple[str, ...] = ("1.12", "1.13", *(f"2.{minor}" for minor in range(16)))


def rules_for_version(version: str | None) -> CodegenRules:
    """The rules of torch VERSION ("2.14.1", "2.6.0a0+git…"), by `opdrift.versions.row_for`'s policy: the
    newest when it is unknown or no version, the oldest row for a pre-1.12 checkout."""
    return row_for(RULES, version, lambda rules: rules.since)


def rules_for_release(release: str) -> CodegenRules:
    """The rules `--codegen X.Y` names; an X.Y the bot has not checked is a CodegenError."""
    text = release.strip()
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", text)
    if m is None or f"{int(m.group(1))}.{int(m.group(2))}" not in KNOWN_RELEASES:
        raise CodegenError(
            f"--codegen {release!r}: no rules for that release; known: {', '.join(KNOWN_RELEASES)}"
        )
    return rules_for_version(text)


class GroupedEntry(Protocol):
    """What the binding reads of an entry: a registered `Operator` and a snapshot's `Facets` alike."""

    @property
    def structured(self) -> bool: ...
    @property
    def structured_delegate(self) -> str | None: ...
    @property
    def const_ref_mutable(self) -> bool | None: ...


def in_structured_group(entry: GroupedEntry) -> bool:
    """torchgen's ``part_of_structured_group``: ``structured: True``, or a ``structured_delegate``."""
    return entry.structured or entry.structured_delegate is not None


def kernel_binding(entry: GroupedEntry, rules: CodegenRules) -> Binding:
    """THE rule for how the codegen of RULES' release binds ENTRY's kernel beyond its schema (torchgen's
    ``native_function_manager``: ``use_ilistref_for_tensor_lists=f.part_of_structured_group`` from 1.13
    on, ``use_const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors``). The drift compares
    two releases' bindings, coverage a backend's against upstream's, and the work items declare by it.
    An unknown const-ref key (a version-1 snapshot's) reads as absent."""
    # Imported here: parsing a release (autogen reads this module's rules) never binds a kernel.
    from opdrift.schema.kernel import Binding

    return Binding(
        ilistref=rules.ilistref_for_structured and in_structured_group(entry),
        const_ref=bool(entry.const_ref_mutable),
    )
