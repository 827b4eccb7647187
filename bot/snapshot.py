"""The stored form of a classified snapshot: versioned JSON, deterministic bytes, written atomically
(`opdrift.files.write_atomic`).

Layout (format_version 2): a JSON object with sorted keys, ``decisions`` (base name → bucket, rule,
reason), ``entries``, ``format_version``, ``native_display``, ``operators`` (``name.overload`` → schema,
base, overload, bucket, rule, kind, facets, line), ``source`` (kind, path, revision, commit, date,
torch_version) and, only when the parse gave any, ``warnings`` (its warnings, one string each, so that
a report made from stored snapshots still lists them). Each operator and each decision sits on a line
of its own, so a snapshot committed to git diffs one operator per line, and a JSON error's line number
points at the operator concerned.

Facets and source metadata are (de)serialised field by field from their dataclasses, so a field
added to opdrift.model with a default is stored without touching this module, and older snapshots that
lack it load with the default. The one exception is the facet ``kernels`` (dispatch key → where its
kernel comes from, `opdrift.operators.kernels`), an object in the file. Version 1 files, which lack it,
are read and upgraded.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
from collections.abc import Mapping
from typing import Any, get_args

from opdrift.dispatchkeys import COMPOSITE_KEYS
from opdrift.errors import SchemaError, SnapshotError
from opdrift.files import write_atomic
from opdrift.model import Decision, Facets, OpKind, OpRecord, Snapshot, SourceKind, SourceMeta
from opdrift.operators.kernels import SOURCES, dense_composite, implied_sources
from opdrift.schema.grammar import parse_schema
from opdrift.shapes import (
    BOOLEAN,
    COUNT,
    LIST,
    OBJECT,
    OPT_BOOLEAN,
    OPT_STRING,
    STRING,
    STRINGS,
    Kind,
    Reader,
    one_of,
)

FORMAT_VERSION = 2
# Versions this opdrift reads: 1 lacks the per-key `kernels` facet, which is derived on load (`_upgrade_v1`).
READS_VERSIONS = (1, 2)
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024

# No native_functions.yaml comes near this many lines (2.15.0 has about 16,000); a line past it is a
# damaged or hand-made value, and the site and reports turn it into link anchors.
MAX_LINE = 10_000_000
# version.txt's spellings (2.14.1, 2.15.0a0, 2.15.0a0+git1234abc); it goes into release-tag links.
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,63}")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object names, as git prints them
_VARIANTS = frozenset({"function", "method"})  # what validate accepts from native_functions.yaml
_OP_KINDS = frozenset(get_args(OpKind))
_SOURCE_KINDS = frozenset(get_args(SourceKind))
_OP_FIELDS = ("base", "bucket", "facets", "kind", "line", "overload", "rule", "schema")
_DECISION_FIELDS = ("bucket", "reason", "rule")


# --- writing ----------------------------------------------------------------------------------


def _dump(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(", ", ": "))


def meta_json(meta: SourceMeta) -> dict[str, object]:
    """Source metadata as every JSON output writes it (snapshots, drift and coverage reports)."""
    return _fields(meta)


def _fields(record: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for f in dataclasses.fields(record):  # type: ignore[arg-type]
        value = getattr(record, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def _op_json(op: OpRecord) -> dict[str, object]:
    facets = _fields(op.facets)
    facets["kernels"] = dict(op.facets.kernels)  # key → source reads as an object, not pairs
    return {
        "base": op.base,
        "bucket": op.bucket,
        "facets": facets,
        "kind": op.kind,
        "line": op.line,
        "overload": op.overload,
        "rule": op.rule,
        "schema": op.schema,
    }


def _members(mapping: Mapping[str, str]) -> str:
    if not mapping:
        return "{}"
    body = ",\n".join(f"  {_dump(key)}: {mapping[key]}" for key in sorted(mapping))
    return "{\n" + body + "\n }"


def to_json(snapshot: Snapshot) -> str:
    """The snapshot as JSON text: same snapshot, same bytes. Ends with a newline."""
    operators = {name: _dump(_op_json(op)) for name, op in snapshot.operators.items()}
    decisions = {base: _dump(_fields(d)) for base, d in snapshot.decisions.items()}
    top = {
        "decisions": _members(decisions),
        "entries": _dump(snapshot.entries),
        "format_version": _dump(FORMAT_VERSION),
        "native_display": _dump(snapshot.native_display),
        "operators": _members(operators),
        "source": _dump(meta_json(snapshot.meta)),
    }
    if snapshot.warnings:  # written only when there are some: most files have none
        top["warnings"] = "[\n" + ",\n".join(f"  {_dump(w)}" for w in snapshot.warnings) + "\n ]"
    return "{\n" + ",\n".join(f" {_dump(k)}: {top[k]}" for k in sorted(top)) + "\n}\n"


# --- reading ----------------------------------------------------------------------------------


class _Reader(Reader[str | None]):
    """Validates the decoded JSON, naming the file, the place in it and (where known) its line.

    The `at` of every check is the key whose line the error names: an operator's or a decision's name
    inside its section, a top-level key outside (None: no line).
    """

    def __init__(self, text: str, display: str) -> None:
        super().__init__(self._error)
        self.text = text
        self.display = display
        self.section = ""  # "operators" or "decisions" while their members are read
        self._lines: dict[tuple[str, str], int] | None = None

    def line_of(self, key: str) -> int | None:
        # Files this module writes put each top-level key at one space of indent and each operator
        # and decision at two, on a line of its own; that is enough to find a key's line.
        if self._lines is None:
            self._lines = {}
            section = ""
            for number, line in enumerate(self.text.splitlines(), start=1):
                indent = len(line) - len(line.lstrip(" "))
                end = line.find('": ', indent)
                if indent not in (1, 2) or line[indent : indent + 1] != '"' or end < 0:
                    continue
                name = line[indent : end + 1]
                if indent == 1:
                    section = name
                    self._lines.setdefault(("", name), number)
                else:
                    self._lines.setdefault((section, name), number)
        section = _dump(self.section) if self.section else ""
        return self._lines.get((section, _dump(key)))

    def _error(self, key: str | None, message: str) -> SnapshotError:
        return SnapshotError(message, path=self.display, line=self.line_of(key) if key is not None else None)

    def fail_at(self, where: str, what: str, key: str | None = None) -> SnapshotError:
        return self._error(key, f"{where}: {what}")

    def dataclass_fields(self, cls: type[Any], value: object, where: str, key: str | None) -> dict[str, Any]:
        """Keyword arguments for dataclass CLS from a JSON object; absent fields keep their default."""
        data = self.read(OBJECT, value, where, key)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        extra = sorted(set(data) - set(fields))
        if extra:
            raise self.fail_at(where, f"unknown key {', '.join(extra)}", key)
        out: dict[str, Any] = {}
        for name, f in fields.items():
            if name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise self.fail_at(where, f"missing {name}", key)
                continue
            kind = _FIELD_KINDS.get(str(f.type))
            if kind is None:
                raise self.fail_at(where, f"{name}: this opdrift cannot load a field of type {f.type}", key)
            out[name] = self.read(kind, data[name], f"{where}.{name}", key)
        return out


# The kinds of the model's fields, keyed by their annotation text (the model uses `from __future__ import
# annotations`). A wrong field value is shown as written (repr), which says more than its type.
_FIELD_KINDS: dict[str, Kind[Any]] = {
    text: dataclasses.replace(kind, show=repr)
    for text, kind in (
        ("str", STRING),
        ("str | None", OPT_STRING),
        ("bool", BOOLEAN),
        ("bool | None", OPT_BOOLEAN),
        ("tuple[str, ...]", STRINGS),
        ("SourceKind", one_of(_SOURCE_KINDS)),
    )
}
_OP_KIND = dataclasses.replace(one_of(_OP_KINDS), show=repr)


def _is_kernel_table(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) and v in SOURCES for v in value.values())


_FIELD_KINDS["tuple[tuple[str, str], ...]"] = Kind(
    f"an object of dispatch key → {' | '.join(SOURCES)}",
    _is_kernel_table,
    lambda table: tuple(sorted(table.items())),
    show=repr,
)


def from_json(text: str, display: str) -> Snapshot:
    """Parse and validate a stored snapshot; any problem is a SnapshotError naming DISPLAY (and line)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SnapshotError(
            f"invalid JSON: {err.msg} (column {err.colno})", path=display, line=err.lineno
        ) from None
    except RecursionError:
        raise SnapshotError("invalid JSON: nested too deeply to be a snapshot", path=display) from None
    except ValueError as err:  # e.g. an integer longer than Python converts (4300 digits)
        raise SnapshotError(f"invalid JSON: {err}", path=display) from None
    r = _Reader(text, display)
    top = r.read(OBJECT, data, "snapshot", None)
    if "format_version" not in top:
        raise SnapshotError("no format_version: not an opdrift snapshot", path=display)
    version = top["format_version"]
    if version not in READS_VERSIONS or isinstance(version, bool):
        raise SnapshotError(
            f"unknown format_version {version!r} (this opdrift reads {', '.join(map(str, READS_VERSIONS))};"
            " a newer opdrift wrote it, or make it again with `opdrift snapshot SOURCE -o FILE`)",
            path=display,
        )
    r.exact_keys(
        top,
        ("decisions", "entries", "format_version", "native_display", "operators", "source"),
        "snapshot",
        None,
        optional=("warnings",),
    )
    warnings: tuple[str, ...] = ()
    if "warnings" in top:
        items = r.read(LIST, top["warnings"], "warnings", "warnings")
        warnings = tuple(r.read(STRING, w, f"warnings[{i}]", "warnings") for i, w in enumerate(items))
    meta = SourceMeta(**r.dataclass_fields(SourceMeta, top["source"], "source", "source"))
    entries = r.read(COUNT, top["entries"], "entries", "entries")
    native_display = r.read(STRING, top["native_display"], "native_display", "native_display")

    decisions: dict[str, Decision] = {}
    members = r.read(OBJECT, top["decisions"], "decisions", "decisions")
    r.section = "decisions"
    for base, value in members.items():
        where = f"decisions[{base!r}]"
        d = r.read(OBJECT, value, where, base)
        r.exact_keys(d, _DECISION_FIELDS, where, base)
        decisions[base] = Decision(
            **{k: r.read(STRING, d[k], f"{where}.{k}", base) for k in _DECISION_FIELDS}
        )

    _check_source(r, meta)
    operators: dict[str, OpRecord] = {}
    members = r.read(OBJECT, top["operators"], "operators", "operators")
    r.section = "operators"
    for name, value in members.items():
        operators[name] = _op_record(r, name, value, decisions)
    _check_references(r, operators, decisions)
    if version == 1:
        operators = _upgrade_v1(operators)
    return Snapshot(
        meta=meta,
        entries=entries,
        operators=operators,
        decisions=decisions,
        native_display=native_display,
        warnings=warnings,
    )


def _op_record(r: _Reader, name: str, value: object, decisions: Mapping[str, Decision]) -> OpRecord:
    where = f"operators[{name!r}]"
    o = r.read(OBJECT, value, where, name)
    r.exact_keys(o, _OP_FIELDS, where, name)
    base = r.read(STRING, o["base"], f"{where}.base", name)
    overload = r.read(STRING, o["overload"], f"{where}.overload", name)
    if name != (f"{base}.{overload}" if overload else base):
        raise r.fail_at(where, f"key does not match base {base!r} and overload {overload!r}", name)
    kind = r.read(_OP_KIND, r.read(STRING, o["kind"], f"{where}.kind", name), f"{where}.kind", name)
    bucket = r.read(STRING, o["bucket"], f"{where}.bucket", name)
    decision = decisions.get(base)
    if decision is None:
        raise r.fail_at(where, f"no decision for its base operator {base!r}", name)
    if decision.bucket != bucket:
        raise r.fail_at(
            where, f"bucket {bucket!r} differs from its base's decision {decision.bucket!r}", name
        )
    line = r.read(COUNT, o["line"], f"{where}.line", name)
    if line > MAX_LINE:
        raise r.fail_at(f"{where}.line", f"{line} is past the end of any native_functions.yaml", name)
    facets = Facets(**r.dataclass_fields(Facets, o["facets"], f"{where}.facets", name))
    if facets.composite is not None and facets.composite not in COMPOSITE_KEYS:
        raise r.fail_at(f"{where}.facets.composite", f"unknown composite kind {facets.composite!r}", name)
    unknown = [v for v in facets.variants if v not in _VARIANTS]
    if unknown:
        raise r.fail_at(f"{where}.facets.variants", f"unknown variant {unknown[0]!r}", name)
    schema = r.read(STRING, o["schema"], f"{where}.schema", name)
    # The drift compares schemas argument by argument: a hand-edited or damaged schema would otherwise
    # surface as a "BC-breaking change" in somebody's report instead of as the broken file it is.
    try:
        parsed = parse_schema(schema)
    except SchemaError as err:
        raise r.fail_at(f"{where}.schema", err.message, name) from None
    if parsed.name.name != name:
        raise r.fail_at(f"{where}.schema", f"names operator {parsed.name.name!r}", name)
    if parsed.kind() != kind:
        raise r.fail_at(where, f"kind {kind!r} differs from its schema's {parsed.kind()!r}", name)
    return OpRecord(
        name=name,
        base=base,
        overload=overload,
        schema=schema,
        bucket=bucket,
        rule=r.read(STRING, o["rule"], f"{where}.rule", name),
        kind=kind,  # equal to the parsed schema's kind (checked above), so an OpKind
        facets=facets,
        line=line,
    )


def _check_source(r: _Reader, meta: SourceMeta) -> None:
    """The source's commit goes into links (blob URLs, the site's pages) and its date into titles: a
    value of another shape is a damaged or hand-made file, not something to print."""
    if meta.commit is not None and not _SHA.fullmatch(meta.commit):
        raise r.fail_at("source.commit", f"expected a full hex commit sha, got {meta.commit!r}", "source")
    if meta.torch_version is not None and not _VERSION.fullmatch(meta.torch_version):
        raise r.fail_at(
            "source.torch_version", f"expected a version such as 2.14.1, got {meta.torch_version!r}", "source"
        )
    if meta.date:  # "" is what git's unreadable committer line gives (sources.git)
        try:
            dt.datetime.fromisoformat(meta.date)
        except ValueError:
            raise r.fail_at(
                "source.date", f"expected an ISO 8601 date, got {meta.date!r}", "source"
            ) from None


def _check_references(
    r: _Reader, operators: Mapping[str, OpRecord], decisions: Mapping[str, Decision]
) -> None:
    """What a facet names must be in the snapshot: the drift and the site follow these names."""
    for name, rec in operators.items():
        delegate = rec.facets.structured_delegate
        if delegate is not None and delegate not in operators:
            raise r.fail_at(
                f"operators[{name!r}].facets.structured_delegate",
                f"names no operator of the snapshot ({delegate!r})",
                name,
            )
        alias = rec.facets.alias_of
        if alias is not None and alias not in decisions:
            raise r.fail_at(
                f"operators[{name!r}].facets.alias_of",
                f"names no base operator of the snapshot ({alias!r})",
                name,
            )


def _upgrade_v1(operators: Mapping[str, OpRecord]) -> dict[str, OpRecord]:
    """Version 1 records as version 2 has them: the per-key `kernels` facet and the dense composite.

    Version 1 kept every dispatch key, composite kinds included, but not where a backend key's kernel
    came from, and its `composite` was the first composite key in a fixed order (so ``zeros_like``,
    CompositeExplicitAutograd plus a NestedTensor decomposition, read as the nested one). A backend
    key of a structured_delegate operator that the dispatcher fills from the delegate (the structured
    keys) is the delegate's; the rest are the operator's own. Whether the operator takes mutable
    tensors as const refs is unknown.
    """
    out: dict[str, OpRecord] = {}
    for name, rec in operators.items():
        f = rec.facets
        facets = dataclasses.replace(
            f,
            composite=dense_composite(f.dispatch),
            kernels=implied_sources(dataclasses.replace(f, composite=None)),
            const_ref_mutable=None,  # not recorded: a kernel comparison takes the other side's
        )
        out[name] = dataclasses.replace(rec, facets=facets)
    return out


def save_snapshot(path: str | os.PathLike[str], snapshot: Snapshot) -> None:
    write_atomic(path, to_json(snapshot))


def load_snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """Read and validate the snapshot stored at PATH."""
    display = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            # A real snapshot is about 1.5 MB; a huge file would exhaust memory before JSON could object.
            data = fh.read(MAX_SNAPSHOT_BYTES + 1)
        if len(data) > MAX_SNAPSHOT_BYTES:
            raise SnapshotError(f"over the limit of {MAX_SNAPSHOT_BYTES // (1024 * 1024)} MiB", path=display)
    except FileNotFoundError:
        raise SnapshotError("no such file", path=display) from None
    except OSError as err:
        raise SnapshotError(f"cannot read: {err.strerror or err}", path=display) from err
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise SnapshotError(f"not UTF-8 text at offset {err.start}", path=display, line=line) from None
    return from_json(text, display)
