"""opdrift.operators.entries: the fast reader gives exactly what PyYAML gives, and declines what it cannot read."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import hypothesis_profiles  # noqa: F401 - the ci/dev example counts, before the decorators below
import pytest
import yaml
from datafiles import RELEASES, release_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opdrift import yamltext
from opdrift.errors import EntryError, YamlError
from opdrift.model import RawEntry
from opdrift.operators import entries as nativeyaml
from opdrift.operators import entries_yaml

_SOURCE = str(Path(nativeyaml.__file__).resolve())


def canon(value: object) -> object:
    """A form of a loaded value that compares types too (``True == 1`` and ``1 == 1.0`` in Python)."""
    if isinstance(value, dict):
        return ("map", [(canon(k), canon(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [canon(v) for v in value])
    return (type(value).__name__, value)


def view(entries: tuple[RawEntry, ...]) -> list[tuple[object, int, tuple[str, ...]]]:
    return [(canon(dict(e.data)), e.line, e.comments) for e in entries]


def fast(text: str) -> tuple[RawEntry, ...] | None:
    """The fast reader's result, or None when it declines the text."""
    try:
        return nativeyaml._read_entries_fast(text)
    except nativeyaml._Decline:
        return None


def outcome(read: Any, text: str) -> object:
    try:
        return view(read(text, "f.yaml"))
    except YamlError as err:
        return (type(err).__name__, str(err))


# ------------------------------------------------------------------------------------------ real data


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_fast_reader_equals_pyyaml_on_release(version: str) -> None:
    text = release_text(version)
    expected = view(entries_yaml.load_entries_yaml(text, version))
    got = fast(text)
    assert got is not None, "the fast reader declined a real release file"
    assert view(got) == expected
    assert view(nativeyaml.read_entries(text, version)) == expected
    # Every line points at its "- func:" and matches what a plain load gives, item for item.
    lines = text.split("\n")
    assert all(lines[e.line - 1].startswith("- func:") for e in got)
    assert [canon(e.data) for e in got] == [canon(d) for d in yaml.load(text, Loader=yamltext.Loader)]


def _by_func(entries: tuple[RawEntry, ...], func_prefix: str) -> RawEntry:
    return next(e for e in entries if str(e.data["func"]).startswith(func_prefix))


def test_comments_attach_as_pytorch_writes_them() -> None:
    text = release_text("2.14.1")
    entries = nativeyaml.read_entries(text, "2.14.1")
    # Directly above, column 0.
    assert _by_func(entries, "arccos(").comments == ("arccos, alias of acos",)
    assert _by_func(entries, "_cast_Byte(").comments == ("DEPRECATED. DO NOT USE",)
    # Column 0 with a blank line between comment and entry still announces the entry.
    assert _by_func(entries, "arccosh(").comments == ("arccosh, alias for acosh",)
    # Indented, directly above.
    assert _by_func(entries, "true_divide.Tensor(").comments == ("true_divide, an alias for div",)
    # Indented and then a blank line: a trailing note of the entry above (_reshape_alias's dispatch).
    assert _by_func(entries, "_mkldnn_reshape(").comments == ()
    # The entries right after an alias entry get nothing.
    assert _by_func(entries, "arccos_(").comments == ()
    # "#" alone inside a block is an empty line of the comment.
    assert "" in _by_func(entries, "set_data(").comments


def test_read_yaml_document_on_real_tags_and_errors() -> None:
    text = release_text("2.14.1", "tags.yaml")
    assert canon(yamltext.read_yaml_document(text, "tags.yaml")) == canon(yaml.safe_load(text))
    with pytest.raises(YamlError) as info:
        yamltext.read_yaml_document("- tag: a\n  desc: b\n - tag: c\n", "tags.yaml")
    assert info.value.path == "tags.yaml"
    assert info.value.line == 3


# ------------------------------------------------------------------------------------------ errors

ERRORS = [
    ("", EntryError, None, "no entries"),
    ("# only a comment\n\n", EntryError, None, "no entries"),
    ("[]\n", EntryError, 1, "no entries"),
    ("func: a\n", EntryError, 1, "top level"),
    ("- func: a\n\n- just a scalar\n", EntryError, 3, "mapping"),
    ("- func: a\n  variants: b\n\n- variants: c\n  python_module: nn\n", EntryError, 4, "no `func:`"),
    ("- func: a\n  tags: [x, y\n- func: b\n", YamlError, 3, "flow sequence"),
    ("- func: a\n  dispatch:\n    CPU: x\n   CUDA: y\n", YamlError, 4, "invalid YAML"),
    ("- func: a\n  variants: b: c\n", YamlError, 2, "mapping values"),
    ("- func: a\n\tvariants: b\n", YamlError, 2, "invalid YAML"),
    ("- func: !mystery a\n", YamlError, 1, "constructor"),
    # YAML types it as a date, and there is no such day: PyYAML's ValueError carries no line
    ("- func: a\n  variants: b\n\n- func: c\n  when: 2026-02-30\n", YamlError, 5, "day is out of range"),
    # an explicit tag on text that does not fit it: PyYAML raises KeyError / AttributeError
    ("- func: a\n  python_module: !!bool foo\n", YamlError, 2, "cannot build the tagged value"),
    ("- func: a\n  python_module: !!timestamp bar\n", YamlError, 2, "cannot build the tagged value"),
    ('- func: a\n  python_module: !!int "-"\n', YamlError, 2, "cannot build the tagged value"),
]


@pytest.mark.parametrize(("text", "error", "line", "words"), ERRORS)
def test_errors_name_file_and_line(text: str, error: type[YamlError], line: int | None, words: str) -> None:
    with pytest.raises(error) as info:
        nativeyaml.read_entries(text, "native_functions.yaml")
    assert type(info.value) is error
    assert info.value.path == "native_functions.yaml"
    assert info.value.line == line
    assert words in info.value.message
    assert str(info.value).startswith(
        f"native_functions.yaml:{line}: " if line else "native_functions.yaml: "
    )


def test_broken_release_file_reports_the_broken_line() -> None:
    lines = release_text("2.14.1").split("\n")
    target = next(i for i, line in enumerate(lines) if line.startswith("- func: arccos("))
    lines[target + 1] = "  variants: function, method: oops"
    with pytest.raises(YamlError) as info:
        nativeyaml.read_entries("\n".join(lines), "v2.14.1:native_functions.yaml")
    assert info.value.line == target + 2


# ------------------------------------------------------------------------------------------ edges

ENTRY = "# a note\n- func: add(Tensor self) -> Tensor\n  variants: function, method\n  dispatch:\n    CPU: add_cpu\n"

# Each text is valid YAML the fast reader must decline (PyYAML then reads it).
DECLINED = {
    "tab in a comment": ENTRY + "#\tnote\n- func: b\n",
    "anchor and alias": "- func: a\n  dispatch: &d\n    CPU: k\n- func: b\n  dispatch: *d\n",
    "merge key": "- func: a\n  dispatch: &d\n    CPU: k\n- func: b\n  dispatch:\n    <<: *d\n",
    "literal block scalar": "- func: a\n  doc: |\n    text\n",
    "folded block scalar": "- func: a\n  doc: >\n    text\n",
    "multi-line plain scalar": "- func: a(Tensor self,\n    Tensor other) -> Tensor\n",
    "multi-line plain at column 2": "- func: a\n  variants: function,\n    method\n",
    "multi-line quoted scalar": "- func: 'a(Tensor self,\n    Tensor other)'\n",
    "non-empty flow mapping": "- func: a\n  dispatch: {CPU: k}\n",
    "nested flow list": "- func: a\n  tags: [[core]]\n",
    "multi-line flow list": "- func: a\n  tags: [core,\n    pointwise]\n",
    "trailing comma in flow list": "- func: a\n  tags: [core, ]\n",
    "double-quoted escape": '- func: "a\\tb"\n',
    "doubled single quote": "- func: 'it''s'\n",
    "document start marker": "---\n- func: a\n",
    "document end marker": "- func: a\n...\n",
    "directive": "%YAML 1.1\n---\n- func: a\n",
    "explicit tag": "- func: !!str a\n",
    "complex key": "- func: a\n  ? variants\n  : function\n",
    "three-space indentation": "- func: a\n  dispatch:\n     CPU: k\n",
    "six-space nesting": "- func: a\n  dispatch:\n    CPU:\n      x: y\n",
    "indented block list": "- func: a\n  tags:\n    - core\n",
    "item with extra spaces": "-   func: a\n    variants: b\n",
    "quoted key": "- 'func': a\n",
    "lone carriage return": "- func: a\r  variants: b\n",
    "next line (NEL)": "- func: a\n  variants: b\x85  c\n",
    "line separator": "- func: a\u2028- func: b\n",
    "byte-order mark": "\ufeff- func: a\n",
    "value key": "- func: a\n  variants: =\n",
    # numbers other than plain decimal integers, and dates: typed by PyYAML (opdrift.yamlplain)
    "float": "- func: a\n  f: 1.5\n",
    "octal": "- func: a\n  o: 0o17\n",
    "hexadecimal": "- func: a\n  h: 0x1F\n",
    "date": "- func: a\n  date: 2001-12-14\n",
    "sexagesimal": "- func: a\n  sexa: 1:20\n",
    "very long key": "- func: a\n  " + "k" * 2000 + ": v\n",
    "top-level flow list": "[{func: a}]\n",
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_fast_reader_declines_and_pyyaml_reads(name: str) -> None:
    text = DECLINED[name]
    assert fast(text) is None
    assert outcome(nativeyaml.read_entries, text) == outcome(entries_yaml.load_entries_yaml, text)


# Each text is read by the fast reader itself and must equal PyYAML.
ACCEPTED = {
    "func with # and quotes": "- func: f(str s=\"a#b\", str t='x') -> Tensor  # trailing\n  variants: function\n",
    "func with brackets": "- func: f(int[2] a=[0,1], Tensor?[] b) -> (Tensor a, Tensor[] b)\n",
    "quoted func with colon": "- func: 'ns::f(Tensor a) -> Tensor'\n- func: \"g: h\"\n",
    "typed scalars": (
        "- func: a\n  structured: True\n  n: 12\n  zero: 0\n  nothing: null\n"
        "  tilde: ~\n  yes: yes\n  off: off\n  no_keys: ok\n"
    ),
    "typed keys": "- func: a\n  dispatch:\n    True: k\n    12: j\n    null: m\n",
    "flow lists": "- func: a\n  tags: [core, pointwise]\n  l: ['a', \"b\", 1, True, x y]\n  e: []\n  s: [ ]\n",
    "block list": "- func: a\n  precomputed:\n  - dim -> int dim\n  - 'q'\n  - 3\n  - [x, y]\n  variants: f\n",
    "empty flow map": "- func: a\n  dispatch: {}  # none yet\n  variants: f\n",
    "empty values": "- func:\n  variants:\n  dispatch:\n    CPU:\n    CUDA: k\n- func: b\n  last:\n",
    "nested under func": "- func:\n    CPU: k\n",
    "block list under func": "- func:\n  - a\n",
    "duplicate keys": "- func: a\n  variants: f\n  tags: x\n  variants: g\n",
    "comments everywhere": (
        "# header\n\n# about a\n- func: a  # c\n  # inside\n  dispatch:   # c\n    # deeper\n    CPU: k # c\n"
        "      # much deeper comment\n  variants: f\n    # trailing indented\n\n#x\n#\n- func: b\n"
    ),
    "colon inside a value": "- func: a\n  url: http://x.org/a\n  t: a :b\n",
    "trailing spaces": "- func: a   \n  variants: f  \n  dispatch:  \n    CPU: k \n\n   \n",
    "unicode": "# é café\n- func: f(Tensor 张量) -> Tensor\n  note: naïve ✓\n",
    "no final newline": "- func: a\n  variants: f",
    "crlf": ENTRY.replace("\n", "\r\n") + "- func: b\r\n",
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_fast_reader_accepts_and_equals_pyyaml(name: str) -> None:
    text = ACCEPTED[name]
    got = fast(text)
    assert got is not None, "the fast reader declined"
    assert view(got) == view(entries_yaml.load_entries_yaml(text, "f.yaml"))


def test_crlf_gives_the_same_entries_as_lf() -> None:
    text = release_text("2.14.1")
    crlf = fast(text.replace("\n", "\r\n"))
    assert crlf is not None
    assert view(crlf) == view(entries_yaml.load_entries_yaml(text, "f"))


@contextmanager
def count_lines_run() -> Iterator[list[int]]:
    """Count the Python lines executed inside bot/operators/entries.py: a measure of work that ignores the clock."""
    counter = [0]

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code.co_filename != _SOURCE:
            return None

        def local(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                counter[0] += 1
            return local

        return local

    sys.settrace(tracer)
    try:
        yield counter
    finally:
        sys.settrace(None)


def test_huge_file_stays_linear() -> None:
    lines = release_text("2.14.1").split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("- func:")]
    chunk = "\n".join(lines[starts[0] : starts[120]]) + "\n"
    work = {}
    for copies in (2, 16):
        text = chunk * copies
        with count_lines_run() as counter:
            got = nativeyaml.read_entries(text, "big.yaml")
        work[copies] = counter[0]
        assert len(got) == 120 * copies
        assert fast(text) is not None
        # Every copy's entries sit where its lines are.
        step = chunk.count("\n")
        assert got[120].line == got[0].line + step
    # Eight times the text may cost up to eight times the work (and a little setup), never more.
    assert work[16] <= 8.5 * work[2]


# ------------------------------------------------------------------------------------------ property

_word = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
# Scalars that make safe_dump quote, escape or type: the reader must read them or decline.
_scalar = st.one_of(
    _word,
    st.sampled_from(["True", "False", "yes", "no", "null", "~", "1", "0x1f", "1.5", ".inf", "2001-12-14"]),
    st.sampled_from(["a: b", "#x", "a #b", "-x", "'q'", '"d"', "[x]", "{y}", "*z", "&w", "!v", "", " sp "]),
    st.text(st.characters(codec="utf-8"), max_size=12),
    st.integers(-5, 5),
    st.booleans(),
)
_func = st.builds(
    lambda name, args: f"{name}({', '.join(args)}) -> Tensor",
    _word,
    st.lists(
        st.sampled_from(["Tensor self", 'str s="a#b"', "int[2] x=[0,1]", "Tensor(a!) out", "*"]), max_size=3
    ),
)
_entry = st.fixed_dictionaries(
    {"func": st.one_of(_func, _scalar)},
    optional={
        "variants": _scalar,
        "dispatch": st.dictionaries(st.one_of(_word, st.sampled_from(["CPU, CUDA", "True", "1"])), _scalar),
        "tags": st.one_of(_scalar, st.lists(_scalar, max_size=3)),
        "precomputed": st.lists(_scalar, max_size=3),
        "structured": st.booleans(),
    },
)
_comment = st.lists(st.text("abc #:-'\"é ", max_size=10), max_size=2)


# Three quarters of the profile's count (300 in `ci`, tests/conftest.py): each example is a yaml document.
@settings(max_examples=settings().max_examples * 3 // 4, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.lists(st.tuples(_entry, _comment, st.booleans()), min_size=1, max_size=5),
    flow=st.sampled_from([False, None]),
)
def test_fast_equals_pyyaml_on_dumped_entries(
    entries: list[tuple[dict[str, object], list[str], bool]], flow: bool | None
) -> None:
    parts = []
    for data, comments, blank in entries:
        block = "".join(f"#{c}\n" for c in comments) + ("\n" if blank else "")
        dumped = yaml.safe_dump(
            [data], default_flow_style=flow, sort_keys=False, width=10_000, allow_unicode=True
        )
        parts.append(block + dumped)
    text = "".join(parts)
    expected = outcome(entries_yaml.load_entries_yaml, text)
    got = fast(text)
    if got is not None:
        assert view(got) == expected
    assert outcome(nativeyaml.read_entries, text) == expected


def test_native_like_dump_takes_the_fast_path() -> None:
    """safe_dump's block style, the style PyTorch writes, is read by the fast reader itself."""
    entries = [
        {
            "func": "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
            "variants": "function, method",
        },
        {
            "func": "relu(Tensor self) -> Tensor",
            "dispatch": {"CPU, CUDA": "relu", "MPS": "relu_mps"},
            "tags": ["core"],
        },
        {
            "func": "cat(Tensor[] tensors, int dim=0) -> Tensor",
            "structured": True,
            "precomputed": ["dim -> int dim"],
        },
    ]
    text = yaml.safe_dump(entries, default_flow_style=False, sort_keys=False, width=10_000)
    got = fast(text)
    assert got is not None
    assert [dict(e.data) for e in got] == entries
