"""The one reader of the tables shipped in the package (opdrift.shipped), on the real tables: each table,
with one line damaged, is refused with an error naming the file as the installed package holds it
(opdrift/<stage>/data/…) and the damaged line; the CLI prints that as one line."""

from __future__ import annotations

import lzma
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from clirun import Opdrift

from opdrift import shipped
from opdrift.coverage import names, schema_history
from opdrift.errors import OpdriftError
from opdrift.operators import export_table
from opdrift.signals import table as signals
from opdrift.usage import models

PACKAGE = Path(shipped.__file__).parent


def _clear() -> None:
    names._table.cache_clear()
    names._members.cache_clear()
    schema_history._table.cache_clear()
    schema_history._structured_table.cache_clear()
    signals.clear_caches()
    export_table.shipped_releases.cache_clear()
    models.read_table.cache_clear()


@pytest.fixture
def tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of every shipped table, which the readers read instead of the package's."""
    for data in PACKAGE.glob("*/data"):
        shutil.copytree(data, tmp_path / data.relative_to(PACKAGE))
    monkeypatch.setattr(shipped, "ROOT", tmp_path)
    _clear()
    yield tmp_path
    _clear()


def _damage(root: Path, table: shipped.ShippedTable, kind: str) -> int:
    """Cut the last field off the first line of KIND in TABLE's copy; that line's number."""
    file = root / table.path.split("/", 1)[1]
    packed = file.suffix == ".xz"
    lines = (lzma.decompress(file.read_bytes()) if packed else file.read_bytes()).decode().split("\n")
    index = next(i for i, line in enumerate(lines) if line.split("\t")[0] == kind)
    lines[index] = lines[index].rsplit("\t", 1)[0]
    data = "\n".join(lines).encode()
    file.write_bytes(lzma.compress(data) if packed else data)
    return index + 1


MODELS_2_14 = shipped.ShippedTable("opdrift.usage", "data/models-2.14.1.tsv.xz", "model table", OpdriftError)

# (the table, the kind of line damaged, a call that reads it, the error it raises)
CASES: list[tuple[shipped.ShippedTable, str, Callable[[], object], type[OpdriftError]]] = [
    (names.NAMES, "op", lambda: names.last_registered("add"), names.NameTableError),
    (schema_history.SCHEMAS, "op", schema_history.table_releases, schema_history.SchemaTableError),
    (
        schema_history.STRUCTURED,
        "structured",
        schema_history.structured_releases,
        schema_history.SchemaTableError,
    ),
    (signals.SIGNALS, "op", lambda: signals.shipped_signals("2.14.1"), signals.SignalTableError),
    (signals.SIGNALS, "release", signals.releases, signals.SignalTableError),
    (export_table.CORE_ATEN, "decomposes", export_table.shipped_releases, export_table.ExportTableError),
    (MODELS_2_14, "op", lambda: models.read_table("2.14.1"), models.ModelTableError),
]


@pytest.mark.parametrize(
    ("table", "kind", "read", "error"), CASES, ids=[f"{c[0].name}:{c[1]}" for c in CASES]
)
def test_a_damaged_line_of_each_shipped_table_is_named_by_its_installed_path_and_line(
    tables: Path,
    table: shipped.ShippedTable,
    kind: str,
    read: Callable[[], object],
    error: type[OpdriftError],
) -> None:
    read()  # the copy reads as the package's does
    _clear()
    line = _damage(tables, table, kind)
    with pytest.raises(error) as caught:
        read()
    assert table.path.startswith("opdrift/") and table.path.endswith(table.name)
    assert (caught.value.path, caught.value.line) == (table.path, line)
    assert str(caught.value) == f"{table.path}:{line}: malformed line {kind!r}"


def test_an_unreadable_table_names_its_path(tables: Path) -> None:
    (tables / "coverage" / "data" / "names.tsv.xz").write_bytes(b"not xz")
    with pytest.raises(names.NameTableError) as caught:
        names.last_registered("add")
    assert caught.value.path == "opdrift/coverage/data/names.tsv.xz" and caught.value.line is None
    assert caught.value.message.startswith("cannot read opdrift's name table: ")


def test_a_table_over_the_bound_is_refused(tables: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shipped, "MAX_BYTES", 1000)
    with pytest.raises(export_table.ExportTableError, match="larger than 1000 bytes"):
        export_table.shipped_releases()


def test_the_cli_prints_a_damaged_table_as_one_line(tables: Path, opdrift: Opdrift, tmp_path: Path) -> None:
    """`opdrift gates` reads the name, schema and structured-group tables."""
    line = _damage(tables, names.NAMES, "op")
    backend = tmp_path / "op_plugin_functions.yaml"
    backend.write_text("all_version: [v2.13]\nofficial:\n  - func: abs(Tensor self) -> Tensor\n")
    run = opdrift("gates", "--backend", f"op-plugin={backend}", "--torch-version", "2.13")
    assert run.code == 2
    assert run.err == f"opdrift: error: opdrift/coverage/data/names.tsv.xz:{line}: malformed line 'op'\n"


@pytest.mark.parametrize(
    ("field", "runs"),
    [("3", (range(3, 4),)), ("0-2,5,7-9", (range(0, 3), range(5, 6), range(7, 10)))],
)
def test_release_runs_reads_each_run(field: str, runs: tuple[range, ...]) -> None:
    assert shipped.release_runs(field) == runs


@pytest.mark.parametrize("field", ["", "a", "1-", "1-b", "-3"])
def test_release_runs_refuses_a_text_that_is_no_run(field: str) -> None:
    with pytest.raises(ValueError, match="invalid literal for int"):
        shipped.release_runs(field)


def test_read_rows_passes_over_blank_lines_and_hands_comments_on() -> None:
    seen: list[list[str]] = []
    comments: list[str] = []
    shipped.read_rows("# a\n\nx\t1\n#b\ny\n", seen.append, path="t", error=OpdriftError)
    assert seen == [["x", "1"], ["y"]]
    shipped.read_rows("# a\nx\n", seen.append, path="t", error=OpdriftError, comment=comments.append)
    assert comments == ["# a"]


@pytest.mark.parametrize(
    ("indices", "field"), [([3], "3"), ([0, 1, 2, 5, 7, 8, 9], "0-2,5,7-9"), ([0, 2, 4], "0,2,4")]
)
def test_release_runs_are_written_as_they_are_read(indices: list[int], field: str) -> None:
    assert shipped.write_release_runs(indices) == field
    assert [i for run in shipped.release_runs(field) for i in run] == indices


def test_no_release_is_no_run() -> None:
    with pytest.raises(ValueError, match="no release"):
        shipped.write_release_runs([])
