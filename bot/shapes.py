"""Reading untrusted JSON/YAML shapes (snapshots, timelines, caches, config files), one field at a time.

A `Kind` says what a value must be (a string, a non-negative integer, a list of strings...): a test, a
conversion, and the words a message uses for it ("a non-negative integer"). A `Reader` applies kinds
to values and, on a mismatch, raises the *caller's* error: each file format has its own exception,
its own way to say where (a JSON path and a line looked up from a key, a YAML node's line) and its own
sentence shape, and those stay exactly as users have seen them. The checks themselves are shared, so
"an integer" means the same everywhere (never a bool, which Python counts as an int).

Kinds work on any decoded value; a YAML reader that keeps nodes (for their lines) defines kinds over
nodes (``Kind("a mapping", lambda n: isinstance(n, yaml.MappingNode), ...)``) and uses the same
`Reader`. A caller that must not raise (a cache that treats a damaged record as a miss) uses
`Kind.accepts` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
At = TypeVar("At")  # what the caller's error points at: a key (to find its line), a YAML node, a file


def type_name(value: object) -> str:
    """How a message names the type of a wrong JSON value: "an object", "a list", "null"..."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Kind(Generic[T]):
    """What a value must be: `expected` names it in messages, `test` accepts it, `convert` makes it T."""

    expected: str
    test: Callable[[Any], bool]
    convert: Callable[[Any], T] = _same
    show: Callable[[Any], str] = type_name  # how a message shows a value that is not of this kind

    def accepts(self, value: object) -> bool:
        return self.test(value)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_strings(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


STRING: Kind[str] = Kind("a string", lambda v: isinstance(v, str))
OPT_STRING: Kind[str | None] = Kind("a string or null", lambda v: v is None or isinstance(v, str))
BOOLEAN: Kind[bool] = Kind("true or false", lambda v: isinstance(v, bool))
OPT_BOOLEAN: Kind[bool | None] = Kind("true, false or null", lambda v: v is None or isinstance(v, bool))
INTEGER: Kind[int] = Kind("an integer", _is_int, show=repr)
OPT_INTEGER: Kind[int | None] = Kind("an integer or null", lambda v: v is None or _is_int(v), show=repr)
COUNT: Kind[int] = Kind("a non-negative integer", lambda v: _is_int(v) and v >= 0, show=repr)
STRINGS: Kind[tuple[str, ...]] = Kind("a list of strings", _is_strings, tuple)
OBJECT: Kind[dict[str, Any]] = Kind("an object", lambda v: isinstance(v, dict))
LIST: Kind[list[Any]] = Kind("a list", lambda v: isinstance(v, list))
COUNTS: Kind[dict[str, int]] = Kind(
    "an object of integers",
    lambda v: isinstance(v, dict) and all(isinstance(k, str) and _is_int(n) for k, n in v.items()),
)


def one_of(values: Collection[str]) -> Kind[str]:
    """A string from a closed set, named in messages as ``one of a, b, c`` (sorted)."""
    allowed = frozenset(values)
    return Kind(f"one of {', '.join(sorted(allowed))}", lambda v: isinstance(v, str) and v in allowed)


def expected_got(where: str, kind: Kind[Any], value: object) -> str:
    """The sentence of JSON readers: ``operators['add'].line: expected a non-negative integer, got -1``."""
    return f"{where}: expected {kind.expected}, got {kind.show(value)}"


def must_be(where: str, kind: Kind[Any], value: object) -> str:
    """The sentence of hand-written files: ``weekly: chart must be true or false``."""
    return f"{where} must be {kind.expected}"


class Reader(Generic[At]):
    """Applies kinds to untrusted values; a mismatch raises ``fail(at, message)``.

    `message` builds the sentence from (where, kind, value): `expected_got` or `must_be`, or the
    caller's own. `where` is the human path of the value (``source.kind``, ``subscription 2: who``);
    `at` is whatever the caller's error needs to point at the place (a key whose line it looks up, a
    YAML node, a file name).
    """

    def __init__(
        self,
        fail: Callable[[At, str], Exception],
        message: Callable[[str, Kind[Any], object], str] = expected_got,
    ) -> None:
        self.fail = fail
        self.message = message

    def read(self, kind: Kind[T], value: object, where: str, at: At) -> T:
        if not kind.test(value):
            raise self.fail(at, self.message(where, kind, value))
        return kind.convert(value)

    def field(self, kind: Kind[T], mapping: Mapping[str, object], key: str, where: str, at: At) -> T:
        """``mapping[key]`` read as KIND; an absent key reads as None (so only optional kinds pass)."""
        return self.read(kind, mapping.get(key), where, at)

    def exact_keys(
        self,
        mapping: Mapping[str, object],
        required: Collection[str],
        where: str,
        at: At,
        optional: Collection[str] = (),
    ) -> None:
        """Every required key present and no key outside required + optional, else ``missing a, b`` or
        ``unknown key x, y`` (the missing in the order given, the unknown sorted)."""
        missing = [k for k in required if k not in mapping]
        if missing:
            raise self.fail(at, f"{where}: missing {', '.join(missing)}")
        extra = sorted(set(mapping) - set(required) - set(optional))
        if extra:
            raise self.fail(at, f"{where}: unknown key {', '.join(extra)}")
