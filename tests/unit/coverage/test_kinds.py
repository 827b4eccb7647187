"""The kind table (`bot.coverage.kinds`): every list of kinds derives from it, and a kind is one row."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clirun import ROOT
from datafiles import write_release
from package_copy import PackageCopy

from bot.cli import build_parser
from bot.coverage import backends
from bot.coverage.kinds import BACKEND_KINDS, KIND_TABLE, PROFILE_OF_KIND
from bot.coverage.oplist import BACKEND_KINDS as OPLIST_KINDS


def test_every_list_of_kinds_is_the_tables() -> None:
    assert BACKEND_KINDS == tuple(k.id for k in KIND_TABLE) == OPLIST_KINDS == backends.BACKEND_KINDS
    assert dict(PROFILE_OF_KIND) == {k.id: k.profile for k in KIND_TABLE}
    assert PROFILE_OF_KIND["torch-mlir"] == "export" and PROFILE_OF_KIND["xla"] == "functional"
    for kind in KIND_TABLE:
        module, _, function = kind.reader.partition(":")
        assert module == "bot.coverage.backends" and callable(getattr(backends, function)), kind.id


def test_the_docs_name_the_tables_kinds_in_its_order(capsys: pytest.CaptureFixture[str]) -> None:
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
    assert (
        "default: the KIND's (torch-mlir: export, xla: functional, executorch: export, the others: eager)"
        in help_text
    )


@pytest.mark.slow
def test_adding_a_kind_touches_only_the_kind_table(tmp_path: Path, package_copy: PackageCopy) -> None:
    """A copy of the package with one more `Kind` row (a plain list judged as a functional backend)
    reads it, judges it by its profile, and offers it in --help and in the unknown-kind error."""
    anchor = "KIND_TABLE: tuple[KindRow, ...] = (\n"
    row = (
        '    KindRow("lazy-text", f"{_READERS}:read_text_file", "functional", "int64_t", "a text file",'
        ' "one op per line"),\n'
    )
    package_copy.edit("coverage/kinds.py", anchor, anchor + row)
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
