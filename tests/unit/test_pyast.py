"""The attribute-chain reader the readers of Python source share (opdrift.pyast), on the forms real
registrations and decompositions write."""

from __future__ import annotations

import ast

import pytest

from opdrift.operators.export_table import aten_name
from opdrift.pyast import dotted


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("torch.ops.aten.add.Tensor", ["torch", "ops", "aten", "add", "Tensor"]),
        ("aten.relu", ["aten", "relu"]),
        ("lib", ["lib"]),
        ("torch.ops.aten.add.Tensor.default()", []),  # a call
        ("ops[0].add", []),  # a subscript inside
        ("'aten'.add", []),  # a constant at its root
    ],
)
def test_dotted_names_an_attribute_chain_and_nothing_else(source: str, names: list[str]) -> None:
    node = ast.parse(source, mode="eval").body
    assert dotted(node) == names


def test_a_chain_that_is_not_one_names_no_operator() -> None:
    assert aten_name(ast.parse("f().aten.add", mode="eval").body) is None
    assert aten_name(ast.parse("torch.ops.aten.add.default", mode="eval").body) == "add"
