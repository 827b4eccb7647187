"""The kind table (`opdrift.coverage.kinds`): every list of kinds derives from it, and a kind is one row."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest
from clirun import ROOT
from datafiles import write_release
from goldens import check_golden_entry, updating
from package_copy import PackageCopy

from opdrift.cli import build_parser
from opdrift.coverage import backends, kinds
from opdrift.coverage.kinds import (
    BACKEND_KINDS,
    KIND_BY_ID,
    KIND_TABLE,
    PROFILE_OF_KIND,
    BackendKind,
    parse_kind,
)
from opdrift.coverage.oplist import BACKEND_KINDS as OPLIST_KINDS


def test_every_list_of_kinds_is_the_tables() -> None:
    assert BACKEND_KINDS == tuple(k.id for k in KIND_TABLE) == OPLIST_KINDS == backends.BACKEND_KINDS
    # the Literal mypy checks each kind against is the table's ids, in its order
    assert get_args(BackendKind) == BACKEND_KINDS
    assert [parse_kind(k) for k in BACKEND_KINDS] == list(BACKEND_KINDS) and parse_kind("XLA") is None
    assert dict(PROFILE_OF_KIND) == {k.id: k.profile for k in KIND_TABLE}
    assert PROFILE_OF_KIND["torch-mlir"] == "export" and PROFILE_OF_KIND["xla"] == "functional"
    for kind in KIND_TABLE:
        # a typed function of the kind table, which imports its stage only when called
        assert kind.reader.__module__ == "opdrift.coverage.kinds", kind.id
    # only a dispatch key names no file, and only a kind that writes C++ kernels has a default form
    assert [k.id for k in KIND_TABLE if k.in_pytorch] == ["dispatch"]
    assert all(k.writes_kernels for k in KIND_TABLE if k.kernel_form is not None)


def test_a_readers_stage_is_imported_when_a_list_is_read(tmp_path: Path) -> None:
    """The kind table's reader for `text` reads a list through the stage it imports when called."""
    listing = tmp_path / "ops.txt"
    listing.write_text("add.Tensor  # the one op\n", encoding="utf-8")
    found = KIND_BY_ID["text"].reader(str(listing), None)
    assert found.kind == "text" and [op.name for op in found.ops] == ["add.Tensor"]
    assert KIND_BY_ID["cpp"].reads_in_tree("src/ops.cpp") and not KIND_BY_ID["cpp"].reads_in_tree("a.py")
    assert KIND_BY_ID["torch-mlir"].reads_in_tree("python/torch_mlir/extras/fx_decomp_util.py")
    assert not KIND_BY_ID["xla"].reads_in_tree("xla_native_functions.yaml")


# --- no module but the kind table says what a kind is ------------------------------------------------

_KINDS = frozenset(BACKEND_KINDS)


def _literals(node: ast.expr) -> list[str]:
    """The string constants of NODE: itself, or the items of a tuple, list or set display."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


def _holds_kind(node: ast.expr, kind_names: set[str]) -> bool:
    """Whether NODE is where this codebase keeps a backend kind: a name or attribute called `kind`
    or `*_kind` (`spec.kind`, `cov.backend_kind`; a change's kind shares the name, never a value), or
    a name bound by iterating over the table's lists (`for k in BACKEND_KINDS`)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name is not None and (name == "kind" or name.endswith("_kind") or name in kind_names)


def kind_comparisons(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each place SOURCE tells a backend kind by a string of its own: a comparison of
    a kind with a kind's id (``spec.kind == "dispatch"``, ``kind in ("xla", "cpp")``), or a table
    keyed or made of several kinds' ids (a set of the kinds a removal breaks)."""
    tree = ast.parse(source)
    kind_names = {
        t.id
        for n in ast.walk(tree)
        if isinstance(n, (ast.For, ast.comprehension)) and "KIND" in ast.unparse(n.iter)
        for t in ast.walk(n.target)
        if isinstance(t, ast.Name)
    }
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(_holds_kind(s, kind_names) for s in sides):
                for side in sides:
                    if hit := [s for s in _literals(side) if s in _KINDS]:
                        yield n.lineno, f"compares a kind with {', '.join(map(repr, hit))}"
        elif isinstance(n, ast.MatchValue) and (hit := [s for s in _literals(n.value) if s in _KINDS]):
            yield n.lineno, f"matches a kind against {hit[0]!r}"
        elif (
            isinstance(n, (ast.Tuple, ast.List, ast.Set))
            and len(hit := [s for s in _literals(n) if s in _KINDS]) > 1
        ):
            yield n.lineno, f"lists the kinds {', '.join(map(repr, hit))}"
        elif (
            isinstance(n, ast.Dict)
            and len(hit := [k.value for k in n.keys if isinstance(k, ast.Constant) and k.value in _KINDS]) > 1
        ):
            yield n.lineno, f"keys a table by the kinds {', '.join(map(repr, hit))}"


def test_no_module_but_the_kind_table_tells_a_kind_by_its_name() -> None:
    """Every property of a kind is a column of `KIND_TABLE`: a module asks the row
    (``KIND_BY_ID[spec.kind].in_pytorch``), never compares the kind with an id of its own, which
    mypy could check but no reader of the table would find."""
    table = Path(kinds.__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted((ROOT / "bot").rglob("*.py"))
        if path.resolve() != table
        for line, what in kind_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_scan_finds_a_kind_told_by_its_name_and_nothing_else() -> None:
    """The scan above can fail: each way a module could tell a kind by its id is found, and the
    other vocabularies that share a word (a change's kind, a yaml key, a format) are not."""
    told = """
if spec.kind == "dispatch": pass
if cov.backend_kind != "torch-mlir": pass
if kind in ("dispatch", "torch-mlir"): pass
listed = [k for k in BACKEND_KINDS if k != "dispatch"]
BREAKS = frozenset({"xla", "op-plugin", "torch-npu"})
NAMES = {"xla": "xla", "op-plugin": "op-plugin"}
match kind:
    case "cpp": pass
"""
    assert sorted({line for line, _ in kind_comparisons(told)}) == [2, 3, 4, 5, 6, 7, 9]
    other = """
if change.kind == "removed" or c.kind in ("added", "renamed"): pass
if key == "dispatch": pass
markdown = fmt != "text"
if files.meta.kind == "snapshot": pass
"""
    assert list(kind_comparisons(other)) == []


def test_the_docs_name_the_tables_kinds_in_its_order(
    capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    page = (ROOT / "docs" / "coverage.md").read_text(encoding="utf-8")
    table = page.split("| KIND | PATH | what is read |", 1)[1].split("\n\n", 1)[0]
    assert tuple(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE)) == BACKEND_KINDS
    cfg = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    listed = re.search(r"`kind` is one of ((?:`[a-z-]+`,? ?)+)", cfg)
    assert listed is not None and tuple(re.findall(r"`([a-z-]+)`", listed.group(1))) == BACKEND_KINDS
    with pytest.raises(SystemExit):
        build_parser().parse_args(["coverage", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for kind in KIND_TABLE:
        assert f"{kind.id} ({' '.join(kind.path.split())})" in help_text
    # each kind's default profile, as the table has it (golden: the wording)
    defaults = re.search(r"default: the KIND's \(([^)]*)\)", help_text)
    assert defaults is not None
    said = dict(part.split(": ") for part in defaults.group(1).split(", "))
    common = said.pop("the others")
    assert {k.id: said.get(k.id, common) for k in KIND_TABLE} == {k.id: k.profile for k in KIND_TABLE}
    assert said == {"torch-mlir": "export", "xla": "functional", "executorch": "export"}
    check_golden_entry(
        "cli-help.lines.txt", "coverage: default profiles", defaults.group(0) + "\n", updating(request)
    )


@pytest.mark.slow
def test_adding_a_kind_touches_only_the_kind_table(tmp_path: Path, package_copy: PackageCopy) -> None:
    """A copy of the package with one more `Kind` row (a plain list judged as a functional backend)
    reads it, judges it by its profile, and offers it in --help and in the unknown-kind error."""
    anchor = "KIND_TABLE: tuple[KindRow, ...] = (\n"
    row = '    KindRow("lazy-text", _read_text, "functional", "int64_t", "a text file", "one op per line"),\n'
    package_copy.edit("coverage/kinds.py", anchor, anchor + row)
    literal = "BackendKind: TypeAlias = Literal[\n"
    package_copy.edit("coverage/kinds.py", literal, literal + '    "lazy-text",\n')
    native = write_release("2.15.0", tmp_path / "r")
    listing = tmp_path / "ops.txt"
    listing.write_text("add.Tensor\nrelu\n", encoding="utf-8")

    def run(*argv: str) -> tuple[int, str, str]:
        done = package_copy.opdrift(*argv)
        return done.code, done.out, done.err

    code, out, err = run("coverage", "--backend", f"lazy-text={listing}", str(native), "--format", "json")
    assert code == 0, err
    (report,) = json.loads(out)["backends"]
    assert report["backend"]["kind"] == "lazy-text" and report["backend"]["profile"] == "functional"
    # judged as a functional backend: add.Tensor listed, add_.Tensor and add.out its variants
    uncovered = {o["name"] for o in report["uncovered"]}
    assert not {"add.Tensor", "add_.Tensor", "add.out", "relu", "relu_"} & uncovered
    help_text = " ".join(run("coverage", "--help")[1].split())
    assert "lazy-text (a text file)" in help_text and "lazy-text: functional" in help_text
    code, _, err = run("coverage", "--backend", f"nosuch={listing}", str(native))
    assert code == 2 and "lazy-text" in err
