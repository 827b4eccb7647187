"""Hostile inputs a fork's pull request controls (issue 22, findings 2, 3, 7, 11, 12): each ends fast, in
one `opdrift: error:` line (exit 2) or a normal run with a warning, never a traceback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from clirun import Opdrift, Run
from datafiles import release_text

from bot.errors import OpdriftError, SchemaError, YamlError
from bot.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, TextFile
from bot.operators.native import read_derivatives
from bot.schema.grammar import parse_schema
from bot.signals.pyside import read_python_side
from bot.yamltext import check_unique_keys, value_error

BUDGET = 2.0  # seconds: the bound for each hostile file on a 2-core machine

NATIVE = (
    "- func: abs(Tensor self) -> Tensor\n"
    "  variants: function, method\n"
    "  dispatch:\n"
    "    CPU: abs_cpu\n"
    "- func: neg(Tensor self) -> Tensor\n"
)
# Nine levels of ten aliases each: 500 bytes that reach 10^9 nodes through the aliases.
BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
)


def _indented(text: str) -> str:
    return "  " + text.rstrip("\n").replace("\n", "\n  ") + "\n"


def checkout(root: Path, files: dict[str, str]) -> str:
    """A PyTorch checkout holding NATIVE (unless FILES replaces it) and FILES."""
    for path, text in {NATIVE_PATH: NATIVE, **files}.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return str(root)


def timed(opdrift: Opdrift, *argv: str) -> tuple[Run, float]:
    start = time.perf_counter()
    run = opdrift(*argv)
    return run, time.perf_counter() - start


def one_error_line(run: Run) -> str:
    assert run.code == 2, run
    assert "Traceback" not in run.err
    lines = run.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("opdrift: error: "), run.err
    return lines[0]


# --- finding 2: alias bombs and quadratic patterns ----------------------------------------------


@pytest.mark.parametrize(
    "path",
    [NATIVE_PATH, TAGS_PATH],
)
def test_alias_bomb_is_refused_fast(opdrift: Opdrift, tmp_path: Path, path: str) -> None:
    if path == NATIVE_PATH:
        text = "- func: foo(Tensor self) -> Tensor\n" + _indented(BOMB) + "  when: 2026-02-30\n"
    else:
        text = "- tag: core\n" + _indented(BOMB) + "  when: 2026-02-30\n"
    assert len(text) < 700
    run, took = timed(opdrift, "stats", checkout(tmp_path, {path: text}))
    line = one_error_line(run)
    assert f"{path}:3: YAML anchors and aliases are not allowed" in line
    assert took < BUDGET


def test_value_error_and_unique_keys_visit_each_node_once() -> None:
    text = BOMB + "when: 2026-02-30\nwhen: 2026-02-28\n"
    start = time.perf_counter()
    err = value_error(ValueError("day is out of range for month"), text, "f.yaml")
    assert err.line == 11
    with pytest.raises(YamlError, match="duplicate key 'when'"):
        check_unique_keys(yaml.compose(text, Loader=yaml.SafeLoader), "f.yaml")
    assert time.perf_counter() - start < BUDGET


def test_config_files_refuse_aliases(tmp_path: Path) -> None:
    allow = tmp_path / "allow.yaml"
    allow.write_text("acknowledged: &a\n  - x\nagain: *a\n", encoding="utf-8")
    from bot.drift.allowlist import load_allowlist

    with pytest.raises(OpdriftError, match="aliases are not allowed"):
        load_allowlist(str(allow))


@pytest.mark.parametrize(
    "tail",
    [" " * 50_000 + "x", " " * 50_000 + "\t#", "  #" + " " * 50_000 + "x"],
    ids=["spaces-then-text", "spaces-then-comment", "comment-then-spaces"],
)
def test_derivatives_long_line_is_linear(tail: str) -> None:
    text = "- name: abs(Tensor self) -> Tensor" + tail + "\n  self: grad\n"
    start = time.perf_counter()
    if "#" not in tail:
        with pytest.raises(SchemaError) as info:
            read_derivatives(TextFile(display="derivatives.yaml", text=text))
        assert info.value.line == 1
    else:
        assert read_derivatives(TextFile(display="derivatives.yaml", text=text)) == frozenset({"abs"})
    assert time.perf_counter() - start < BUDGET


def test_derivatives_of_a_release_still_read() -> None:
    text = release_text("2.14.1", "derivatives.yaml")
    names = read_derivatives(TextFile(display="d", text=text))
    assert {"abs", "mm"} <= names and len(names) > 600


def test_overrides_many_newlines_are_linear() -> None:
    text = (
        "\n" * 60_000
        + "    torch.concat: lambda tensors, dim=0: -1,  # alias for torch.cat\n"
        + " \n" * 30_000
    )
    start = time.perf_counter()
    signals, warnings = read_python_side([("torch/overrides.py", "o.py", text)], "t")
    assert time.perf_counter() - start < BUDGET
    assert signals.aliases["concat"].target == "cat" and not warnings


def test_derivatives_line_in_a_checkout_ends_fast(opdrift: Opdrift, tmp_path: Path) -> None:
    derivatives = "- name: abs(Tensor self) -> Tensor" + " " * 50_000 + "x\n  self: grad\n"
    run, took = timed(opdrift, "stats", checkout(tmp_path, {DERIVATIVES_PATH: derivatives}))
    assert f"{DERIVATIVES_PATH}:1: malformed schema" in one_error_line(run)
    assert took < BUDGET


# --- finding 3: deep nesting -------------------------------------------------------------------


def test_deeply_nested_type_is_a_schema_error(opdrift: Opdrift, tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="nested more than 16 deep"):
        parse_schema("foo(Tensor" + "?" * 1000 + " self) -> Tensor")
    native = "- func: foo(Tensor" + "?" * 1000 + " self) -> Tensor\n"
    run, took = timed(opdrift, "stats", checkout(tmp_path, {NATIVE_PATH: native}))
    assert f"{NATIVE_PATH}:1: malformed schema" in one_error_line(run)
    assert took < BUDGET
    # What PyTorch writes still parses.
    assert str(parse_schema("f(Tensor?[] a, int[]? b) -> Tensor")) == "f(Tensor?[] a, int[]? b) -> Tensor"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("torch/_refs/__init__.py", "x = " + "+".join(["1"] * 3000) + "\n"),
        ("torch/_decomp/decompositions.py", "x = " + "-" * 10_000 + "1\n"),
    ],
    ids=["refs-3000-terms", "decomp-10000-minus"],
)
def test_python_side_too_deep_is_a_warning(opdrift: Opdrift, tmp_path: Path, path: str, text: str) -> None:
    run, took = timed(opdrift, "stats", checkout(tmp_path, {path: text}))
    assert run.code == 0 and "Traceback" not in run.err, run
    assert f"{path}:1: nested too deeply for this reader to parse; its facts are skipped" in run.err
    assert took < BUDGET
