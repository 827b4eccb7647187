"""opdrift.shapes: the shared kinds and reader behind snapshot and config validation."""

from __future__ import annotations

import pytest

from opdrift.errors import OpdriftError
from opdrift.shapes import (
    COUNT,
    COUNTS,
    INTEGER,
    OBJECT,
    OPT_INTEGER,
    OPT_STRING,
    STRING,
    STRINGS,
    Reader,
    must_be,
    one_of,
)


def _reader(**kwargs: object) -> Reader[str]:
    return Reader(lambda at, message: OpdriftError(f"{at}: {message}"), **kwargs)  # type: ignore[arg-type]


def test_kinds_accept_what_they_name_and_never_a_bool_as_an_integer() -> None:
    assert STRING.accepts("") and not STRING.accepts(None)
    assert OPT_STRING.accepts(None) and not OPT_STRING.accepts(1)
    assert INTEGER.accepts(-1) and not INTEGER.accepts(True)
    assert OPT_INTEGER.accepts(None) and not OPT_INTEGER.accepts(False)
    assert COUNT.accepts(0) and not COUNT.accepts(-1)
    assert STRINGS.accepts([]) and not STRINGS.accepts(["a", 1]) and not STRINGS.accepts("ab")
    assert COUNTS.accepts({"a": 1}) and not COUNTS.accepts({"a": True})
    assert one_of(("b", "a")).expected == "one of a, b"


def test_reader_converts_and_words_mismatches_as_the_caller_asks() -> None:
    r = _reader()
    assert r.read(STRINGS, ["a"], "x", "f") == ("a",)
    with pytest.raises(OpdriftError, match=r"^f: ops\.line: expected a non-negative integer, got -1$"):
        r.read(COUNT, -1, "ops.line", "f")
    with pytest.raises(OpdriftError, match=r"^f: source: expected an object, got a list$"):
        r.read(OBJECT, [], "source", "f")
    with pytest.raises(OpdriftError, match=r"^t: `sha` must be a string$"):
        _reader(message=must_be).field(STRING, {}, "sha", "`sha`", "t")


def test_exact_keys_names_the_missing_in_order_then_the_unknown_sorted() -> None:
    r = _reader()
    with pytest.raises(OpdriftError, match=r"^f: d: missing rule, bucket$"):
        r.exact_keys({}, ("rule", "bucket"), "d", "f")
    with pytest.raises(OpdriftError, match=r"^f: d: unknown key y, z$"):
        r.exact_keys({"a": 1, "z": 0, "y": 0, "w": 0}, ("a",), "d", "f", optional=("w",))
    r.exact_keys({"a": 1, "w": 2}, ("a",), "d", "f", optional=("w",))
