"""Entries → registered operators, checked against torchgen's own set for every release 2.0.0-2.15.0.

tests/data/torchgen/<version>.tsv.xz is torchgen's ``parse_native_yaml`` output, one operator a line
(name, schema, dispatch keys of its backend indices), written by tests/data/make_torchgen_expected.py.
"""

from __future__ import annotations

import lzma
from functools import cache

import pytest
import yaml
from datafiles import DATA, RELEASES, has_release_file, release_text
from goldens import check_golden_entry, updating

from opdrift.dispatchkeys import COMPOSITE_KEYS, STRUCTURED_KEYS
from opdrift.errors import EntryError, SchemaError, YamlError
from opdrift.model import OperatorSet, SourceMeta, TextFile
from opdrift.operators import native
from opdrift.operators.entries import read_entries
from opdrift.operators.native import build_operators, read_derivatives, read_tags

TORCHGEN = DATA / "torchgen"
EXPECTED_RELEASES = sorted(p.name.removesuffix(".tsv.xz") for p in TORCHGEN.glob("*.tsv.xz"))
META = SourceMeta(kind="yaml", path="native_functions.yaml")
CIA = "CompositeImplicitAutograd"


@cache
def expected(version: str) -> dict[str, tuple[str, frozenset[str]]]:
    text = lzma.decompress((TORCHGEN / f"{version}.tsv.xz").read_bytes()).decode("utf-8")
    rows = {}
    for line in text.splitlines():
        name, schema, keys = line.split("\t")
        rows[name] = (schema, frozenset(keys.split(",")) if keys else frozenset())
    return rows


@cache
def operators(version: str) -> OperatorSet:
    derivatives = (
        TextFile("derivatives.yaml", release_text(version, "derivatives.yaml"))
        if has_release_file(version, "derivatives.yaml")
        else None
    )
    return build_operators(
        read_entries(release_text(version), "native_functions.yaml"),
        meta=META,
        native_display="native_functions.yaml",
        tags=TextFile("tags.yaml", release_text(version, "tags.yaml")),
        derivatives=derivatives,
    )


def build(text: str, tags: str | None = None) -> OperatorSet:
    return build_operators(
        read_entries(text, "nf.yaml"),
        meta=META,
        native_display="nf.yaml",
        tags=None if tags is None else TextFile("tags.yaml", tags),
    )


def test_every_release_from_2_0_has_torchgen_data() -> None:
    wanted = [v for v in RELEASES if tuple(map(int, v.split("."))) >= (2, 0, 0)]
    assert EXPECTED_RELEASES and set(wanted) <= set(EXPECTED_RELEASES)


@pytest.mark.slow
@pytest.mark.parametrize("version", EXPECTED_RELEASES)
def test_registered_operators_equal_torchgen(version: str) -> None:
    want = expected(version)
    ops = operators(version)
    got = {op.name: op.schema for op in ops.operators}
    assert len(ops.operators) == len(got)  # no duplicates
    assert sorted(got) == sorted(want)
    assert got == {name: schema for name, (schema, _) in want.items()}


@pytest.mark.parametrize("version", EXPECTED_RELEASES)
@pytest.mark.slow
def test_dispatch_keys_agree_with_torchgen(version: str) -> None:
    want = expected(version)
    ops = {op.name: op for op in operators(version).operators}
    for name, op in ops.items():
        tg_keys = want[name][1]
        mine = {k for k, _ in op.dispatch}
        if op.composite == CIA and not op.dispatch:
            mine.add(CIA)  # implicit by omission: torchgen fills in the key
        if op.structured_delegate is None:
            assert mine == tg_keys, name
            continue
        # Delegated ops: torchgen's index holds only the keys the entry names; we add the
        # delegate's structured kernels, which torchgen keeps on the delegate.
        delegate_keys = want[op.structured_delegate][1]
        assert mine - STRUCTURED_KEYS == tg_keys, name
        assert mine & STRUCTURED_KEYS == delegate_keys & STRUCTURED_KEYS, name


def test_2_14_1_counts_and_facets() -> None:
    ops = operators("2.14.1")
    assert ops.entries == 2585
    assert len(ops.operators) == 3103
    by_name = {op.name: op for op in ops.operators}

    add = by_name["add.Tensor"]
    assert add.structured_delegate == "add.out"
    assert add.kind == "functional"
    assert {"CPU", "CUDA"} <= set(add.backends)
    assert dict(add.dispatch)["CPU"] == dict(by_name["add.out"].dispatch)["CPU"]
    assert add.composite is None
    assert by_name["add.out"].structured
    assert by_name["add.out"].kind == "out"
    assert "pointwise" in add.tags
    assert add.variants == ("function", "method")

    # no dispatch section: CompositeImplicitAutograd, by omission
    relu6 = by_name["relu6"]
    assert relu6.composite == CIA
    assert relu6.dispatch == ()

    # autogen'd operators carry their generating entry's line and CompositeExplicitAutograd
    gen = [op for op in ops.operators if op.autogen_from is not None]
    assert len(gen) == 3103 - 2585
    assert all(op.composite == "CompositeExplicitAutograd" and "generated" in op.tags for op in gen)
    foreach = by_name["_foreach_add.Scalar_out"]
    assert foreach.autogen_from == "_foreach_add_.Scalar"
    assert foreach.line == by_name["_foreach_add_.Scalar"].line
    assert foreach.kind == "out"

    assert all(op.composite in (*COMPOSITE_KEYS, None) for op in ops.operators)
    assert ops.warnings == ()
    assert ops.derivatives is not None
    assert "add.Tensor" in ops.derivatives
    assert "relu6" not in ops.derivatives


def test_comments_and_lines_are_kept() -> None:
    text = release_text("2.14.1")
    ops = {op.name: op for op in operators("2.14.1").operators}
    lines = text.splitlines()
    for name in ("add.Tensor", "arccos", "_foreach_add.Scalar"):
        op = ops[name]
        assert lines[op.line - 1].startswith(f"- func: {name}(") or lines[op.line - 1].startswith(
            f"- func: {name.split('.')[0]}"
        )
    assert ops["arccos"].comments == ("arccos, alias of acos",)
    assert ops["absolute"].comments[-1] == "Absolute, alias for abs"


def test_derivatives_absent_before_2_1() -> None:
    assert operators("2.0.0").derivatives is None


def test_read_tags_and_derivatives() -> None:
    tags = read_tags(TextFile("tags.yaml", release_text("2.14.1", "tags.yaml")))
    assert {"pointwise", "core", "view_copy", "inplace_view", "nondeterministic_seeded"} <= tags
    names = read_derivatives(TextFile("d.yaml", release_text("2.14.1", "derivatives.yaml")))
    assert len(names) == release_text("2.14.1", "derivatives.yaml").count("\n- name:")
    with pytest.raises(SchemaError) as info:
        read_derivatives(TextFile("d.yaml", "- name: abs(Tensor self) -> Tensor\n\n- name: bad(\n"))
    assert (info.value.path, info.value.line) == ("d.yaml", 3)


# --- edges, on small edited copies of real entries ------------------------------------------------

ADD = """\
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  structured_delegate: add.out
  variants: function, method
  dispatch:
    SparseCPU, SparseCUDA: add_sparse
  tags: [core, pointwise]

- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: add_out
    MPS: add_out_mps
    SparseCPU: add_out_sparse_cpu
"""
TAGS = "- tag: core\n  desc: x\n- tag: pointwise\n  desc: y\n"


def test_small_file_dispatch_expansion_and_delegate() -> None:
    ops = {op.name: op for op in build(ADD, TAGS).operators}
    assert dict(ops["add.out"].dispatch) == {
        "CPU": "add_out",
        "CUDA": "add_out",
        "MPS": "add_out_mps",
        "SparseCPU": "add_out_sparse_cpu",
    }
    # delegate's structured kernels, plus the op's own sparse ones; not the delegate's SparseCPU
    assert dict(ops["add.Tensor"].dispatch) == {
        "CPU": "add_out",
        "CUDA": "add_out",
        "MPS": "add_out_mps",
        "SparseCPU": "add_sparse",
        "SparseCUDA": "add_sparse",
    }


def test_unknown_key_is_kept_with_a_warning() -> None:
    text = ADD.replace("  tags: [core, pointwise]\n", "  tags: [core, pointwise]\n  shiny_new_key: yes\n")
    result = build(text, TAGS)
    op = next(op for op in result.operators if op.name == "add.Tensor")
    assert op.unknown_keys == (("shiny_new_key", "True"),)
    assert result.warnings == ("nf.yaml:1: unknown key 'shiny_new_key' kept",)


def test_unknown_tag_warns(request: pytest.FixtureRequest) -> None:
    result = build(ADD.replace("[core, pointwise]", "[core, sparkly]"), TAGS)
    (warning,) = result.warnings
    assert warning.startswith("nf.yaml:1: ") and "'sparkly'" in warning and "tags.yaml" in warning
    check_golden_entry("warnings.lines.txt", "native: unknown tag", warning + "\n", updating(request))


BAD_ENTRIES = [
    ("- variants: function\n", 1, "no `func:`"),
    (
        ADD.replace("  dispatch:\n    SparseCPU, SparseCUDA: add_sparse\n", "  dispatch: add_sparse\n"),
        1,
        "dispatch",
    ),
    (ADD.replace("  structured: True\n", "  structured: maybe\n"), 8, "structured"),
    (ADD.replace("variants: function, method", "variants: function, lambda"), 1, "variant"),
    (ADD.replace("structured_delegate: add.out", "structured_delegate: add.nope"), 1, "names no entry"),
    (ADD.replace("  tags: [core, pointwise]\n", "  tags: {a: b}\n"), 1, "tags"),
    (ADD.replace("  structured: True\n", "  structured: True\n  autogen: [add.x]\n"), 8, "autogen"),
    (ADD + ADD.split("\n\n")[1], 8, "duplicate operator 'add.out'"),
]


@pytest.mark.parametrize(("text", "line", "words"), BAD_ENTRIES)
def test_malformed_entries_name_their_line(text: str, line: int, words: str) -> None:
    with pytest.raises(EntryError, match=words) as info:
        build(text, TAGS)
    assert info.value.path == "nf.yaml"
    # the nf.yaml line of the entry's `- func:`; for the duplicate, the second copy
    if "duplicate" in words:  # reported at the second copy
        line = text.count("\n", 0, text.rindex("- func: add.out")) + 1
    assert info.value.line == line


def test_bad_schema_names_its_line() -> None:
    with pytest.raises(SchemaError) as info:
        build(ADD.replace("Scalar alpha=1, Tensor(a!) out", "Scalar alpha=1,Tensor(a!) out"), TAGS)
    assert (info.value.path, info.value.line) == ("nf.yaml", 8)


def test_a_functional_out_of_step_with_its_family_is_kept_with_a_warning(
    request: pytest.FixtureRequest,
) -> None:
    """add.Tensor no longer groups with add_.Tensor and add.out, so autogen would make a second one:
    torchgen keeps both (PyTorch then fails at registration). The entry is what the PR changed, so the
    report keeps it, and says why the codegen will object."""
    old = "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"
    text = release_text("2.14.1")
    line = text[: text.index(old)].count("\n") + 1
    changed = old.replace("alpha=1)", "alpha=1, bool foo=False)")
    opset = build(text.replace(old, changed))
    (add,) = [op for op in opset.operators if op.name == "add.Tensor"]
    assert (add.schema, add.line, add.autogen_from) == (changed[len("- func: ") : -1], line, None)
    (warning,) = [w for w in opset.warnings if "does not group" in w]
    assert warning.startswith(f"nf.yaml:{line}: add.Tensor ") and "add_.Tensor" in warning
    check_golden_entry(
        "warnings.lines.txt", "native: an op out of its group", warning + "\n", updating(request)
    )
    assert not any("does not group" in w for w in build(text).warnings)


def test_bad_tags_file_is_a_yaml_error() -> None:
    with pytest.raises(YamlError):
        read_tags(TextFile("tags.yaml", "- nottag: x\n"))


def test_an_alias_bomb_under_an_unknown_key_is_refused() -> None:
    """Ten levels of YAML aliases are 643 bytes and 10**10 items once expanded: no file opdrift reads
    has a use for aliases, so the entry is refused at the line holding the first repeat."""
    levels = ["  l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    text = "- func: relu(Tensor self) -> Tensor\n  bomb:\n" + "\n".join("  " + ln for ln in levels) + "\n"
    with pytest.raises(YamlError, match="aliases are not allowed") as info:
        build(text)
    assert info.value.line == 4


def test_derivatives_with_crlf_and_trailing_comments() -> None:
    text = (
        "- name: abs(Tensor self) -> Tensor\r\n  self: grad\r\n- name: relu(Tensor self) -> Tensor  # why\n"
    )
    assert read_derivatives(TextFile("d.yaml", text)) == frozenset({"abs", "relu"})


@pytest.mark.parametrize("version", RELEASES)
def test_tags_yaml_is_read_as_pytorch_writes_it_and_as_pyyaml_reads_it(version: str) -> None:
    """Every release's tags.yaml takes the line reader (PyYAML is not needed to read it), with the
    names PyYAML reads."""
    text = release_text(version, "tags.yaml")
    expected = frozenset(item["tag"] for item in yaml.safe_load(text))
    assert native._tag_names(text) == expected
    assert read_tags(TextFile("tags.yaml", text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "- tag: a\n  desc: |\n     x\n   y\n",  # a description line indented less than its first
        "- tag: a\n  desc: x\n",  # a plain description
        "- tag: a\n  desc: |\n    x\n  desc: |\n    y\n",  # a key twice
        "- tag: a # note\n",  # a comment after the name
        "- tag: true\n",  # a bool, not a name
        "- tag: a\n\tdesc: |\n",  # a tab
        "---\n- tag: a\n",  # a document marker
        "- tag: a\n- tag: b\n  other: 1\n",  # a key the reader does not know
        "",  # nothing: PyYAML says what an empty file is
        # other line breaks: YAML ends the description there, and `evil` is a tag
        "- tag: a\n  desc: |\n      text\u2028- tag: evil\n",
        "- tag: a\n  desc: |\n      text\x85- tag: evil\n",
        "- tag: a\n  desc: |\n      text\r- tag: evil\n",
        "- tag: a\n  desc: |\n      te\x00xt\n",  # a character YAML forbids
        "- tag: a\n  desc: |\n          \n      text\n",  # spaces alone, deeper than the text
    ],
)
def test_tags_yaml_of_another_shape_goes_to_pyyaml(text: str) -> None:
    """The line reader declines, and read_tags answers what PyYAML reads: the names, or a refusal."""
    assert native._tag_names(text) is None
    try:
        data = yaml.safe_load(text)
        expected: object = sorted(item["tag"] for item in data or [])
        if not all(isinstance(item, dict) and isinstance(item["tag"], str) for item in data or []):
            expected = "refused"
    except (yaml.YAMLError, TypeError, KeyError):
        expected = "refused"
    try:
        got: object = sorted(read_tags(TextFile("tags.yaml", text)))
    except YamlError:
        got = "refused"
    assert got == expected
