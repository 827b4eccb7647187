"""The change flags: the one place a flag is defined.

A flag is a question a backend asks of every change (must I write a kernel? does it break callers?).
Each row says how it is tested on a `Change` and everything the outputs need: the report's lead
section (emoji, title, hint), the bucket lists' badge, the drift JSON's keys, whether a subscription
may name it, whether an annotation says it, and the lowest ``--fail-on`` level that fails on it. The
view, the JSON report, the config's allowed facets, the annotations, the policy and the docs' facet
list all derive from `FLAG_TABLE`, so adding a flag means adding a row here
(`tests/unit/drift/test_flags.py` adds one to a copy of the package and runs the report on it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from opdrift.drift.changes import Change
from opdrift.work.rules import NEEDS_KERNEL, words

# The --fail-on levels, nested: each fails on everything the ones before it do.
FailOn = Literal["breaking", "kernel", "any", "never"]
FAIL_ON: tuple[FailOn, ...] = ("breaking", "kernel", "any", "never")
DEFAULT_FAIL_ON: FailOn = "breaking"


@dataclass(frozen=True)
class Flag:
    """One change flag.

    `id` is the lead section's key, the JSON summary's key and the name a subscription's `facets`
    uses. `per_change`: the JSON report carries it as a boolean on each change (`kernel_breaking` is
    read there from `kernel`, the verdict). `folded_into`: shown as one counted line inside that
    flag's section instead of a section of its own. `scoped`: the section lists apart the operators
    only some backends need (`opdrift.taxonomy.scope`): work on kernels is not every backend's news, a
    caller's break is. `badge` and `text_badge`: the words a bucket list's line adds (Markdown,
    terminal), None for none. `fail_on`: the lowest ``--fail-on`` level that fails on it.
    """

    id: str
    emoji: str
    title: str
    hint: str
    test: Callable[[Change], bool]
    fail_on: FailOn
    per_change: bool = True
    subscribable: bool = True
    annotate: bool = True
    scoped: bool = False
    folded_into: str | None = None
    badge: Callable[[Change], str] | None = None
    text_badge: str | None = None

    def __call__(self, change: Change) -> bool:
        return self.test(change)

    @property
    def words(self) -> str:
        """The flag in an annotation's message: ``needs kernel``."""
        return self.id.replace("_", " ")


# In the report's order: what a backend must do first.
FLAG_TABLE: tuple[Flag, ...] = (
    Flag(
        "needs_kernel",
        "⚠️",
        "Needs a kernel",
        "new operators, or ones that lost the decomposition or default kernel PyTorch gave a kind of "
        "backend; each line says which: eager, functional (XLA, Lazy), export (exported graphs)",
        lambda c: bool(c.needs_kernel_for),
        "kernel",
        scoped=True,
        # the engine's sentence for a need (`opdrift.work.rules`), for the profiles that have it
        badge=lambda c: f"⚠️ {words(NEEDS_KERNEL)} ({', '.join(c.needs_kernel_for)})",
        text_badge="needs kernel",
    ),
    Flag(
        "breaking",
        "❌",
        "BC-breaking",
        "removals, renames and schema changes that break existing callers",
        lambda c: c.breaking,
        "breaking",
        badge=lambda c: "❌ breaking",
        text_badge="breaking",
    ),
    Flag(
        "kernel_breaking",
        "🔧",
        "Kernel signature changed",
        "the C++ signature that every out-of-tree kernel is compiled against changed (its int64_t "
        "form too), even where callers are unaffected: update those kernels",
        # `opdrift.schema.kernel`: the int64_t form changed, so every out-of-tree kernel must follow
        lambda c: c.kernel == "breaking",
        "kernel",
        per_change=False,
        scoped=True,
    ),
    Flag(
        "new_core",
        "⭐",
        "New core ops",
        "operators that joined the core ATen opset",
        lambda c: c.new_core,
        "any",
        badge=lambda c: "⭐ core",
        text_badge="core",
    ),
    Flag(
        "now_decomposes",
        "♻️",
        "Now decompose",
        "now CompositeImplicitAutograd: a backend kernel becomes optional",
        lambda c: c.now_decomposes,
        "any",
    ),
    # Only the SymInt form changed: only kernels written with c10::SymInt must follow, see
    # Note [SymInt kernels from 1.13]. No level of
    # its own in --fail-on: a run over PyTorch's yaml cannot know which form a backend wrote (1.12 →
    # 2.15 has 484 such changes), and no annotation: they are counted on one line under 🔧.
    Flag(
        "kernel_symint",
        "🔧",
        "SymInt form changed",
        "only the SymInt form of the kernel's C++ signature changed",
        lambda c: c.kernel == "symint",
        "any",
        per_change=False,
        annotate=False,
        folded_into="kernel_breaking",
    ),
)

FLAGS: dict[str, Flag] = {f.id: f for f in FLAG_TABLE}
# What a subscription's `facets` may name.
FACETS: tuple[str, ...] = tuple(f.id for f in FLAG_TABLE if f.subscribable)
# The flags an annotation's message names, most urgent first.
ANNOTATED: tuple[Flag, ...] = tuple(f for f in FLAG_TABLE if f.annotate)
# The flags that have a lead section of their own, and the one folded into each.
SECTIONS: tuple[Flag, ...] = tuple(f for f in FLAG_TABLE if f.folded_into is None)
# The published JSON summary's order: most severe first (by --fail-on level), the flags a change
# carries as booleans before those read from another key; a new flag lands by the same rule.
SUMMARY_ORDER: tuple[Flag, ...] = tuple(
    sorted(FLAG_TABLE, key=lambda f: (not f.per_change, FAIL_ON.index(f.fail_on)))
)


def folded(flag: Flag) -> tuple[Flag, ...]:
    """The flags counted on a line inside FLAG's section."""
    return tuple(f for f in FLAG_TABLE if f.folded_into == flag.id)


def fails(flag: Flag, level: FailOn) -> bool:
    """Whether ``--fail-on LEVEL`` fails on a change with FLAG (``never`` fails on nothing)."""
    return level != "never" and FAIL_ON.index(flag.fail_on) <= FAIL_ON.index(level)
