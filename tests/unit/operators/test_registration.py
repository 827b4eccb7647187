"""RegistrationDeclarations.h (wheels before 1.12) → registered operators, on real headers."""

from __future__ import annotations

import json
import lzma
import zipfile
from functools import cache
from pathlib import Path

import pytest
from datafiles import DATA

from opdrift.errors import SchemaError, SourceError
from opdrift.model import SourceFiles, SourceMeta
from opdrift.operators import registration
from opdrift.operators.registration import UNKNOWN_BACKEND, operators_from_registrations, parse_registrations
from opdrift.schema.grammar import parse_schema
from opdrift.sources import read as sources

HEADER_VERSIONS = ["1.10.0", "2.14.1"]
IMPLICIT = {"CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor"}
COMPOSITE = {
    "CompositeImplicitAutograd",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
}


@cache
def header(version: str) -> str:
    return lzma.decompress(
        (DATA / "wheels" / version / "RegistrationDeclarations.h.xz").read_bytes()
    ).decode()


@cache
def torchgen_keys(version: str) -> dict[str, tuple[str, set[str]]]:
    """torchgen's own operator set (name → schema, dispatch keys), vendored by make_torchgen_expected.py."""
    rows = lzma.decompress((DATA / "torchgen" / f"{version}.tsv.xz").read_bytes()).decode().splitlines()
    out: dict[str, tuple[str, set[str]]] = {}
    for row in rows:
        name, schema, keys = row.split("\t")
        out[name] = (schema, set(filter(None, keys.split(","))))
    return out


def wheel_meta(version: str) -> SourceMeta:
    return SourceMeta(kind="wheel", path=f"torch-{version}.whl", torch_version=version)


@pytest.mark.parametrize("version", HEADER_VERSIONS)
def test_every_registration_line_becomes_one_operator(version: str) -> None:
    text = header(version)
    records = parse_registrations(text, "R.h")
    lines = text.splitlines()
    expected = [i for i, line in enumerate(lines, start=1) if ' // {"schema": "aten::' in line]
    assert [r.line for r in records] == expected
    for r in records:
        assert json.dumps(f"aten::{r.schema}") in lines[r.line - 1]  # JSON-escaped quotes decode
        assert r.name == r.schema.split("(", 1)[0]
    ops = operators_from_registrations(records, wheel_meta(version), "R.h")
    assert ops.entries == len(records) == len(ops.operators)
    assert [o.name for o in ops.operators] == sorted(r.name for r in records)
    assert ops.native_display == "R.h" and ops.meta == wheel_meta(version)


def test_2_14_1_header_lists_torchgens_operator_set() -> None:
    records = {r.name: r for r in parse_registrations(header("2.14.1"), "R.h")}
    expected = torchgen_keys("2.14.1")
    assert set(records) == set(expected)
    assert all(records[n].schema == expected[n][0] for n in records)


def test_flags_agree_with_torchgens_dispatch_keys() -> None:
    """The docstring's reading of the flags, checked against torchgen on 2.14.1."""
    expected = torchgen_keys("2.14.1")
    for r in parse_registrations(header("2.14.1"), "R.h"):
        keys = expected[r.name][1]
        if keys and keys <= IMPLICIT:
            assert not r.dispatch, r.name  # implicit-only ⇒ "dispatch": "False"
        if not r.dispatch:
            assert "CompositeImplicitAutograd" in keys, r.name
        if r.dispatch and not r.default:
            assert not keys & COMPOSITE, r.name  # backend kernels only


@pytest.mark.parametrize("version", HEADER_VERSIONS)
def test_operator_fields_follow_the_schema_and_flags(version: str) -> None:
    records = {r.name: r for r in parse_registrations(header(version), "R.h")}
    ops = operators_from_registrations(tuple(records.values()), wheel_meta(version), "R.h")
    for op in ops.operators:
        r = records[op.name]
        schema = parse_schema(r.schema)
        assert str(schema) == op.schema == r.schema
        assert (op.base, op.overload) == (schema.name.base, schema.name.overload)
        assert op.kind == schema.kind() and op.line == r.line
        if not r.dispatch:
            assert (op.composite, op.dispatch, op.backends) == ("CompositeImplicitAutograd", (), ())
        elif r.default:
            assert op.composite == "CompositeExplicitAutograd" and op.backends == ()
        else:
            assert op.composite is None and op.backends == (UNKNOWN_BACKEND,)
        if op.base.endswith("_") and not op.base.startswith("__"):
            assert op.kind == "inplace"


def test_1_10_wheel_lands_near_the_posts_figures() -> None:
    """docs/taxonomy.md: late 2021 master had 2055 entries and 1215 base operators; 1.10.0 is from then."""
    ops = operators_from_registrations(
        parse_registrations(header("1.10.0"), "R.h"), wheel_meta("1.10.0"), "R.h"
    )
    bases = {o.base for o in ops.operators}
    assert abs(ops.entries - 2055) / 2055 < 0.1
    assert abs(len(bases) - 1215) / 1215 < 0.1


def test_pre_1_12_wheel_reads_through_sources(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-1.10.0-cp39-none-macosx_10_9_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("torch/__init__.py", "")
        z.writestr(sources.WHEEL_REGISTRATIONS, header("1.10.0"))
        z.writestr("torch-1.10.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 1.10.0\n")
    files = sources.read_source(str(wheel))
    assert files.meta.kind == "wheel" and files.meta.torch_version == "1.10.0"
    assert files.native_functions is None and files.registration_declarations is not None
    assert files.registration_declarations.display == f"{wheel}:{sources.WHEEL_REGISTRATIONS}"
    ops = registration.operators_from_files(files)
    assert ops.meta == files.meta
    assert len(ops.operators) == header("1.10.0").count(' // {"schema": ')
    assert ops.native_display == files.registration_declarations.display


def decl(
    schema: str = "aten::relu(Tensor self) -> Tensor", dispatch: str = "True", default: str = "False"
) -> str:
    comment = json.dumps({"schema": schema, "dispatch": dispatch, "default": default})
    return f"at::Tensor relu(const at::Tensor & self); // {comment}"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("at::Tensor relu(const at::Tensor & self);", "expected a declaration ending in a // {"),
        ("at::Tensor relu(); // {not json}", "malformed JSON comment"),
        (
            'at::Tensor relu(); // {"schema": "relu() -> Tensor", "dispatch": "True", "default": "True"}',
            "aten::",
        ),
        (decl(dispatch="yes"), "'dispatch' must be \"True\" or \"False\", got 'yes'"),
        ('x(); // {"schema": "aten::x() -> Tensor", "dispatch": "True"}', "'default' must be"),
        (
            'x(); // {"dispatch": "True", "default": "True"}',
            "'schema' must be a string starting with 'aten::', got None",
        ),
    ],
)
def test_malformed_lines_name_their_line(bad: str, message: str) -> None:
    text = "// header comment\n\n" + decl() + "\n" + bad + "\n"
    with pytest.raises(SourceError, match=message) as err:
        parse_registrations(text, "R.h")
    assert (err.value.path, err.value.line) == ("R.h", 4)


def test_header_without_registrations() -> None:
    with pytest.raises(SourceError, match="no operator registrations"):
        parse_registrations("// only comments\n#if 1\n#endif\n", "R.h")


def test_duplicate_operator_is_refused() -> None:
    records = parse_registrations(decl() + "\n" + decl() + "\n", "R.h")
    with pytest.raises(SourceError, match=r"relu registered twice \(first at line 1\)") as err:
        operators_from_registrations(records, wheel_meta("1.10.0"), "R.h")
    assert err.value.line == 2


def test_bad_schema_is_a_schema_error_at_its_line() -> None:
    records = parse_registrations(decl() + "\n" + decl("aten::bad(Tensor self -> Tensor") + "\n", "R.h")
    with pytest.raises(SchemaError) as err:
        operators_from_registrations(records, wheel_meta("1.10.0"), "R.h")
    assert (err.value.path, err.value.line) == ("R.h", 2)


def test_operators_from_files_needs_the_header() -> None:
    files = SourceFiles(meta=wheel_meta("1.10.0"))
    with pytest.raises(SourceError, match=r"no RegistrationDeclarations\.h"):
        registration.operators_from_files(files)
