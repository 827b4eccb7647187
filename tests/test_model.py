"""The records' cheap constructor must build exactly what the dataclass's own __init__ builds."""

from __future__ import annotations

import dataclasses

import pytest

from bot.model import (
    Decision,
    Facets,
    Operator,
    OpRecord,
    fast_constructor,
    new_decision,
    new_facets,
    new_op_record,
    new_operator,
)


def test_fast_constructors_equal_the_dataclass_constructors() -> None:
    op_args = dict(
        name="add.Tensor",
        base="add",
        overload="Tensor",
        schema="add.Tensor(Tensor self) -> Tensor",
        kind="functional",
        line=7,
    )
    fast, slow = new_operator(**op_args), Operator(**op_args)  # type: ignore[arg-type]
    assert fast == slow
    assert hash(fast) == hash(slow)
    assert repr(fast) == repr(slow)
    assert type(fast) is Operator
    assert fast.variants == ("function",)  # defaults are the dataclass's own

    facets = new_facets(composite="CompositeImplicitAutograd", tags=("core",))
    assert facets == Facets(composite="CompositeImplicitAutograd", tags=("core",))
    decision = new_decision("misc", "core.misc", "no earlier rule matched")
    assert decision == Decision("misc", "core.misc", "no earlier rule matched")
    record = new_op_record(
        "relu", "relu", "", "relu(Tensor self) -> Tensor", "misc", "core.misc", "functional", facets, 3
    )
    assert record == OpRecord(
        "relu", "relu", "", "relu(Tensor self) -> Tensor", "misc", "core.misc", "functional", facets, 3
    )


def test_fast_constructed_records_stay_frozen() -> None:
    decision = new_decision("misc", "core.misc", "why")
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.bucket = "view"  # type: ignore[misc]


def test_fast_constructor_refuses_what_it_cannot_build() -> None:
    @dataclasses.dataclass
    class Mutable:
        x: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        x: int

    @dataclasses.dataclass(frozen=True)
    class WithPost:
        x: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True)
    class WithFactory:
        x: tuple[int, ...] = dataclasses.field(default_factory=tuple)

    for cls in (Mutable, Slotted, WithPost, WithFactory):
        with pytest.raises(TypeError):
            fast_constructor(cls)
    with pytest.raises(TypeError):
        new_decision("misc")  # type: ignore[call-arg]  # missing arguments still fail
