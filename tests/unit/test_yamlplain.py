"""opdrift.yamlplain: a plain scalar is typed exactly as PyYAML types it, or left to PyYAML."""

from __future__ import annotations

import hypothesis_profiles  # noqa: F401 - the ci/dev example counts, before the decorators below
import pytest
import yaml
from datafiles import RELEASES, release_text
from hypothesis import given
from hypothesis import strategies as st

from opdrift.yamlplain import TYPED_START, Untyped, plain_scalar


def pyyaml_reads(text: str) -> object:
    """TEXT as PyYAML reads a plain scalar: its implicit resolver picks the tag, its safe constructor
    builds the value."""
    tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return yaml.constructor.SafeConstructor().construct_object(yaml.ScalarNode(tag, text))


def agrees(text: str) -> None:
    try:
        got = plain_scalar(text)
    except Untyped:
        return  # the reader declines: PyYAML reads the file
    expected = pyyaml_reads(text)
    assert (type(got), got) == (type(expected), expected), text


# Every word PyYAML's bool and null resolvers know, their near misses, and one scalar of each kind
# the readers leave to PyYAML.
WORDS = [
    *(
        [
            "yes",
            "Yes",
            "YES",
            "no",
            "No",
            "NO",
            "true",
            "True",
            "TRUE",
            "false",
            "False",
            "FALSE",
            "on",
            "On",
            "ON",
            "off",
            "Off",
            "OFF",
        ]
    ),
    *(["~", "null", "Null", "NULL"]),
    *(["yES", "tRUE", "nULL", "Nulls", "nothing", "y", "n", "~x", "on_off", "Off_", "truer", "nullable"]),
    *(
        [
            "1",
            "10",
            "-1",
            "+1",
            "0x1f",
            "03",
            "1²",
            "0o17",
            "0b101",
            "1_000",
            "1:20",
            "1.5",
            ".5",
            ".inf",
            "-.inf",
            ".nan",
            "1e3",
            "2001-12-14",
            "<<",
            "=",
            "0",
        ]
    ),
]


@pytest.mark.parametrize("text", WORDS)
def test_each_word_is_typed_as_pyyaml_types_it(text: str) -> None:
    agrees(text)


def test_numbers_and_timestamps_are_left_to_pyyaml() -> None:
    assert plain_scalar("3") == 3 and plain_scalar("0") == 0  # plain decimal integers are typed here
    for text in ("03", "1_000", "+1", "0x1f", "1:20", "1.5", ".inf", "2001-12-14", "<<", "="):
        with pytest.raises(Untyped):
            plain_scalar(text)


@given(st.text("yYnNtTfFoOlLrRuUeEsSaA~-+0123456789.<=_:xb", min_size=1, max_size=10))
def test_generated_scalars_are_typed_as_pyyaml_types_them(text: str) -> None:
    agrees(text)


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_every_plain_word_of_a_release_is_typed_and_none_is_left_to_pyyaml(version: str) -> None:
    """Each `key: value` word of native_functions.yaml that some resolver looks at: typed here, as PyYAML
    types it (none is a number, so the fast reader never declines a release for a scalar)."""
    words = set()
    for line in release_text(version).split("\n"):
        if line.lstrip(" ").startswith("#"):
            continue
        key, sep, value = line.strip(" -").partition(": ")
        for word in (key, value.split(" #")[0].strip()) if sep else ():
            if word and word[0] in TYPED_START:
                words.add(word)
    assert words  # True, False, the kernels named n... and o...
    for word in sorted(words):
        plain_scalar(word)  # raises Untyped for a number: none expected
        agrees(word)
