"""What the readers of Python source share (the Python side's facts, `opdrift.signals.pyside`; a backend's
Python registrations, `opdrift.coverage.pyreg`; the Core-ATen table, `opdrift.operators.export_table`)."""

from __future__ import annotations

import ast


def dotted(node: ast.expr) -> list[str]:
    """The names of an attribute chain: ``torch.ops.aten.add.Tensor`` → ["torch", "ops", "aten", "add",
    "Tensor"], ``x`` → ["x"]; [] for anything else (a call, a subscript, a constant anywhere in it)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []
