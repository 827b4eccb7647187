"""Snapshots: deterministic JSON, validated loading, atomic writes; on real operator sets."""

from __future__ import annotations

import dataclasses
import json
import lzma
import os
import random
import stat
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from datafiles import DATA, write_release
from pytorch_history import build_history

from opdrift import pipeline, snapshot
from opdrift.errors import SnapshotError, WriteError
from opdrift.files import write_atomic
from opdrift.model import Decision, Facets, OperatorSet, OpRecord, Snapshot, SourceMeta
from opdrift.operators.registration import operators_from_registrations, parse_registrations
from opdrift.snapshot import FORMAT_VERSION, from_json, load_snapshot, save_snapshot, to_json
from opdrift.sources import read as sources
from opdrift.taxonomy import classify as taxonomy


@cache
def real_operators(version: str) -> OperatorSet:
    text = lzma.decompress(
        (DATA / "wheels" / version / "RegistrationDeclarations.h.xz").read_bytes()
    ).decode()
    meta = SourceMeta(
        kind="wheel",
        path=f"torch-{version}-cp311-none-any.whl",
        torch_version=version,
    )
    display = f"{meta.path}:torch/include/ATen/RegistrationDeclarations.h"
    return operators_from_registrations(parse_registrations(text, display), meta, display)


def hand_built(version: str) -> Snapshot:
    """Real names, schemas and dispatch facts, with buckets from a stand-in rule (no taxonomy needed)."""
    ops = real_operators(version)
    decisions: dict[str, Decision] = {}
    records: dict[str, OpRecord] = {}
    for op in ops.operators:
        bucket = "private" if op.base.startswith("_") else "inplace" if op.base.endswith("_") else "misc"
        decisions[op.base] = Decision(
            bucket=bucket, rule=f"test.{bucket}", reason=f"{op.base} is {bucket} — ✓"
        )
        facets = Facets(
            composite=op.composite,
            dispatch=tuple(k for k, _ in op.dispatch),
            tags=("core", "pointwise") if op.base in ("add", "mul") else (),
            python_module="nn" if "pool" in op.base else None,
            structured=op.kind == "out",
            structured_delegate=f"{op.base}.out" if op.kind == "functional" and op.base == "add" else None,
            alias_of="abs" if op.base == "absolute" else None,
            has_derivative=None if op.base.startswith("_") else op.kind != "out",
            foreach=op.base.startswith("_foreach_"),
            autogen=op.overload.endswith("_out"),
            variants=("function", "method") if not op.base.startswith("_") else ("function",),
        )
        records[op.name] = OpRecord(
            name=op.name,
            base=op.base,
            overload=op.overload,
            schema=op.schema,
            bucket=bucket,
            rule=f"test.{bucket}",
            kind=op.kind,
            facets=facets,
            line=op.line,
        )
    meta = replace(ops.meta, commit="0" * 40, date="2021-10-21T10:00:00+00:00")
    return Snapshot(
        meta=meta,
        entries=ops.entries,
        operators=records,
        decisions=decisions,
        native_display=ops.native_display,
    )


@cache
def classified(version: str) -> Snapshot:
    return taxonomy.classify(real_operators(version))


SNAPSHOTS = {
    "hand-built 1.10.0": lambda: hand_built("1.10.0"),
    "classified 1.10.0": lambda: classified("1.10.0"),
    "classified 2.14.1": lambda: classified("2.14.1"),
}


@pytest.mark.parametrize("which", sorted(SNAPSHOTS))
@pytest.mark.slow
def test_round_trip_gives_the_same_snapshot_and_bytes(which: str) -> None:
    snap = SNAPSHOTS[which]()
    text = to_json(snap)
    back = from_json(text, "s.json")
    assert back == snap
    assert to_json(back) == text


def test_the_parse_warnings_are_kept_one_per_line_and_only_when_there_are_some() -> None:
    snap = classified("2.14.1")
    assert snap.warnings == () and '"warnings"' not in to_json(snap)  # a release gives none
    warned = replace(snap, warnings=("nf.yaml:541: unknown key 'grad_mode' kept", 'nf.yaml:9: "x"'))
    text = to_json(warned)
    assert (
        '\n "warnings": [\n  "nf.yaml:541: unknown key \'grad_mode\' kept",\n  "nf.yaml:9: \\"x\\""\n ]\n}\n'
        in text
    )
    assert from_json(text, "s.json") == warned


def test_layout_is_sorted_one_record_per_line_with_trailing_newline() -> None:
    snap = classified("2.14.1")
    text = to_json(snap)
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text.isascii()
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert data["format_version"] == FORMAT_VERSION
    assert list(data["operators"]) == sorted(snap.operators)
    assert list(data["decisions"]) == sorted(snap.decisions)
    assert data["entries"] == snap.entries == 3103
    assert data["source"] == {
        "kind": "wheel",
        "path": snap.meta.path,
        "revision": None,
        "commit": None,
        "date": None,
        "torch_version": "2.14.1",
    }
    lines = text.splitlines()
    # braces of the document and its two maps, one line per top-level scalar, one per record
    assert len(lines) == len(snap.operators) + len(snap.decisions) + 2 + 2 * 2 + 4
    op_line = next(line for line in lines if line.startswith('  "add.Tensor": '))
    record = json.loads(op_line.split(": ", 1)[1].rstrip(","))
    assert list(record) == ["base", "bucket", "facets", "kind", "line", "overload", "rule", "schema"]
    assert (record["base"], record["overload"], record["kind"]) == ("add", "Tensor", "functional")
    assert record["schema"] == snap.operators["add.Tensor"].schema
    assert list(record["facets"]) == sorted(record["facets"])
    assert '  "relu": ' in text  # the default overload is keyed by the bare name


def test_same_snapshot_in_any_order_gives_the_same_bytes() -> None:
    snap = hand_built("1.10.0")
    names = list(snap.operators)
    random.Random(7).shuffle(names)
    bases = list(snap.decisions)
    random.Random(8).shuffle(bases)
    shuffled = replace(
        snap,
        operators={n: snap.operators[n] for n in names},
        decisions={b: snap.decisions[b] for b in bases},
    )
    assert to_json(shuffled) == to_json(snap)


@pytest.mark.parametrize("version", ["1.12.0", "2.15.0"])
@pytest.mark.slow
def test_stored_snapshot_reads_back_as_the_source_classified(tmp_path: Path, version: str) -> None:
    """Reading a snapshot back gives the same classification as its source."""
    native = write_release(version, tmp_path / version)
    fresh = pipeline.load_snapshot(str(native))
    assert fresh.meta.kind == "yaml" and len(fresh.operators) > 2000
    stored = tmp_path / f"{version}.json"
    save_snapshot(stored, fresh)
    assert pipeline.load_snapshot(str(stored)) == fresh
    save_snapshot(tmp_path / "again.json", pipeline.load_snapshot(str(native)))
    assert (tmp_path / "again.json").read_bytes() == stored.read_bytes()  # same input, same bytes


def test_git_revision_snapshot_keeps_its_source_metadata(tmp_path: Path) -> None:
    history = build_history(tmp_path / "pytorch", first="2.13.0", last="2.14.1")
    spec = f"{history.path}@v2.13.0"
    fresh = pipeline.load_snapshot(spec)
    tagged = next(c for c in history.commits if c.tag == "v2.13.0")
    assert fresh.meta == SourceMeta(
        kind="git", path=spec, revision="v2.13.0", commit=tagged.sha, date=tagged.date, torch_version="2.13.0"
    )
    stored = tmp_path / "s.json"
    save_snapshot(stored, fresh)
    assert json.loads(stored.read_text())["source"] == dataclasses.asdict(fresh.meta)
    assert load_snapshot(stored) == fresh


# --- validation -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def text() -> str:
    return to_json(hand_built("1.10.0"))


def line_number(text: str, prefix: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if line.startswith(prefix))


def edit_operator(text: str, name: str, change: dict[str, object]) -> str:
    data = json.loads(text)
    record = data["operators"][name]
    for path, value in change.items():
        target = record
        *parents, last = path.split(".")
        for p in parents:
            target = target[p]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value
    data["operators"][name] = record
    return to_json_like(data)


_DELETE = object()


def to_json_like(data: dict[str, object]) -> str:
    """Re-lay an edited document out the way snapshot.to_json does (one record per line)."""
    out = ["{"]
    keys = sorted(data)
    for i, key in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        value = data[key]
        if key in ("operators", "decisions") and isinstance(value, dict):
            out.append(f' "{key}": {{')
            members = sorted(value)
            for j, m in enumerate(members):
                mc = "," if j < len(members) - 1 else ""
                out.append(f"  {json.dumps(m)}: {json.dumps(value[m], sort_keys=True)}{mc}")
            out.append(f" }}{comma}")
        else:
            out.append(f" {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}")
    out.append("}")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"kind": "weird"},
            r"operators\['add.Tensor'\].kind: expected one of functional, inplace, other, out",
        ),
        ({"facets.tags": "core"}, r"operators\['add.Tensor'\].facets.tags: expected a list of strings"),
        ({"facets.structured": 1}, r"\.facets\.structured: expected true or false, got 1"),
        ({"facets.surprise": True}, r"operators\['add.Tensor'\].facets: unknown key surprise"),
        ({"line": -3}, r"\.line: expected a non-negative integer, got -3"),
        ({"line": True}, r"\.line: expected a non-negative integer, got True"),
        ({"overload": "Scalar"}, r"key does not match base 'add' and overload 'Scalar'"),
        ({"bucket": "misc2"}, r"bucket 'misc2' differs from its base's decision 'misc'"),
        ({"schema": _DELETE}, r"operators\['add.Tensor'\]: missing schema"),
        ({"facets": []}, r"operators\['add.Tensor'\].facets: expected an object, got a list"),
        (
            {"schema": "add.Tensor(Tensr self) -> Tensor"},
            r"\.schema: malformed schema .*unknown type 'Tensr'",
        ),
        ({"schema": "sub.Tensor(Tensor self) -> Tensor"}, r"\.schema: names operator 'sub.Tensor'"),
        ({"kind": "out"}, r"kind 'out' differs from its schema's 'functional'"),
    ],
)
@pytest.mark.slow
def test_malformed_operator_names_the_operator_and_its_line(
    text: str, change: dict[str, object], message: str
) -> None:
    bad = edit_operator(text, "add.Tensor", change)
    with pytest.raises(SnapshotError, match=message) as err:
        from_json(bad, "s.json")
    assert err.value.path == "s.json"
    assert err.value.line == line_number(bad, '  "add.Tensor": ')


def test_missing_facet_field_takes_its_default(text: str) -> None:
    """Facets added to the model later (with a default) must not break older snapshots."""
    back = from_json(edit_operator(text, "add.Tensor", {"facets.foreach": _DELETE}), "s.json")
    assert back.operators["add.Tensor"].facets.foreach is False


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("format_version"), "no format_version: not an opdrift snapshot"),
        (lambda d: d.update(format_version=3), r"unknown format_version 3 \(this opdrift reads 1, 2;"),
        (lambda d: d.update(format_version="1"), "unknown format_version '1'"),
        (lambda d: d.update(format_version=True), "unknown format_version True"),
        (lambda d: d.pop("entries"), "snapshot: missing entries"),
        (lambda d: d.update(extra=1), "snapshot: unknown key extra"),
        (lambda d: d.update(entries=-1), "entries: expected a non-negative integer"),
        (
            lambda d: d["source"].update(kind="tarball"),
            r"source.kind: expected one of checkout, git, snapshot",
        ),
        (lambda d: d["source"].pop("path"), "source: missing path"),
        (lambda d: d.update(operators=[]), "operators: expected an object, got a list"),
        (
            lambda d: d["decisions"].pop("add"),
            r"operators\['add(\.\w+)?'\]: no decision for its base operator 'add'",
        ),
        (lambda d: d["decisions"]["add"].update(rule=3), r"decisions\['add'\].rule: expected a string"),
        (lambda d: d.update(warnings="x"), "warnings: expected a list, got a string"),
        (lambda d: d.update(warnings=["ok", 3]), r"warnings\[1\]: expected a string"),
    ],
)
@pytest.mark.slow
def test_malformed_document(text: str, edit: object, message: str) -> None:
    data = json.loads(text)
    edit(data)  # type: ignore[operator]
    with pytest.raises(SnapshotError, match=message) as err:
        from_json(to_json_like(data), "s.json")
    assert err.value.path == "s.json"


def test_json_syntax_error_names_the_line(text: str) -> None:
    lines = text.splitlines(keepends=True)
    broken_at = line_number(text, '  "add.Tensor": ')
    lines[broken_at - 1] = lines[broken_at - 1].replace('"schema": "', '"schema": ', 1)
    with pytest.raises(SnapshotError, match="invalid JSON") as err:
        from_json("".join(lines), "s.json")
    assert (err.value.path, err.value.line) == ("s.json", broken_at)


@pytest.mark.parametrize("bad", ["", "[]", "null", '{"format_version": 1}', "[" * 100_000])
def test_not_a_snapshot(bad: str) -> None:
    with pytest.raises(SnapshotError):
        from_json(bad, "s.json")


# --- files ------------------------------------------------------------------------------------


def test_save_and_load_through_a_file_and_sources(tmp_path: Path) -> None:
    snap = classified("1.10.0")
    path = tmp_path / "1.10.0.json"
    save_snapshot(path, snap)
    files = sources.read_source(str(path))
    assert files.meta.kind == "snapshot"
    assert load_snapshot(files.meta.path) == snap
    assert path.read_text(encoding="utf-8") == to_json(snap)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_overwrite_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("old")
    path.chmod(0o600)
    write_atomic(path, "new\n")
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o600


def litter(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != "s.json")


def test_failed_rename_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.json"
    path.write_text("old snapshot\n")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(WriteError, match="cannot write: No space left on device") as err:
        save_snapshot(path, hand_built("1.10.0"))
    assert err.value.path == str(path)
    assert path.read_text() == "old snapshot\n"
    assert litter(tmp_path) == []


def test_interrupt_midway_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.json"
    path.write_text("old snapshot\n")
    seen: list[int] = []

    def interrupted(fd: int) -> None:
        seen.append(os.fstat(fd).st_size)  # the new text is in the temp file by now
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_snapshot(path, hand_built("1.10.0"))
    assert seen and seen[0] > 100_000
    assert path.read_text() == "old snapshot\n"
    assert litter(tmp_path) == []


def test_serialisation_failure_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("old snapshot\n")
    snap = hand_built("1.10.0")
    broken = dict(snap.operators)
    broken["add.Tensor"] = replace(broken["add.Tensor"], line=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        save_snapshot(path, replace(snap, operators=broken))
    with pytest.raises(UnicodeEncodeError):
        write_atomic(path, "half a surrogate \ud800")
    assert path.read_text() == "old snapshot\n"
    assert litter(tmp_path) == []


def test_write_into_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="cannot write") as err:
        write_atomic(tmp_path / "no" / "s.json", "{}\n")
    assert err.value.path == str(tmp_path / "no" / "s.json")


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no such file"):
        load_snapshot(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{\n "format_version": 1,\n "x": "\xff"\n}\n')
    with pytest.raises(SnapshotError, match="not UTF-8") as err:
        load_snapshot(bad)
    assert err.value.line == 3


def test_every_model_field_type_is_loadable() -> None:
    """A field added to Facets or SourceMeta must have a type the loader knows."""
    for cls in (Facets, SourceMeta):
        for f in dataclasses.fields(cls):
            assert str(f.type) in snapshot._FIELD_KINDS, f"{cls.__name__}.{f.name}: {f.type}"


def test_output_onto_a_link_a_fifo_or_a_directory(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"  # the link stays, its target is replaced
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomic(fifo, "through the pipe\n")
        assert os.read(reader, 100) == b"through the pipe\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still a FIFO, not a file renamed over it
    with pytest.raises(WriteError, match="is a directory"):
        write_atomic(tmp_path, "x")
    with pytest.raises(WriteError, match="cannot write"):
        write_atomic(tmp_path / ("a" * 300), "x")  # a name too long for the file system


def test_output_onto_dev_stdout_goes_through_the_open_descriptor(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Even when stdout is a file: reopening it would write at offset 0 over what comes next."""
    print("before", flush=True)
    write_atomic("/dev/stdout", "the report\n")
    print("after", flush=True)
    assert capfd.readouterr().out == "before\nthe report\nafter\n"


def test_a_huge_integer_or_file_is_a_snapshot_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = to_json(classified("2.14.1"))
    digits = text.replace('"entries": 3103', '"entries": ' + "9" * 5000)
    assert digits != text
    with pytest.raises(SnapshotError, match="invalid JSON"):
        from_json(digits, "s.json")
    path = tmp_path / "s.json"
    path.write_text(text)
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", 1000)
    with pytest.raises(SnapshotError, match="over the limit"):
        load_snapshot(path)
