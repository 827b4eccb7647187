"""The schema grammar: lossless round trip on every real schema, generated schemas, and bad input."""

from __future__ import annotations

import json
import lzma
from functools import cache

import hypothesis_profiles  # noqa: F401 - the ci/dev example counts, before the decorators below
import pytest
import yaml
from datafiles import DATA, RELEASES, release_text
from hypothesis import given, settings
from hypothesis import strategies as st

from opdrift.errors import SchemaError
from opdrift.schema.defaults import NONE, DefaultValue, read_default, same_default
from opdrift.schema.grammar import parse_schema
from opdrift.schema.model import (
    Annotation,
    Argument,
    Arguments,
    BaseType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    Type,
    make_function_schema,
    make_operator_name,
)

REGISTRATION_DECLARATIONS = DATA / "wheels" / "2.14.1" / "RegistrationDeclarations.h.xz"


@cache
def release_funcs(version: str) -> tuple[str, ...]:
    entries = yaml.load(release_text(version), Loader=yaml.CSafeLoader)
    return tuple(e["func"] for e in entries)


@cache
def registration_schemas() -> tuple[str, ...]:
    text = lzma.decompress(REGISTRATION_DECLARATIONS.read_bytes()).decode("utf-8")
    schemas = []
    for line in text.splitlines():
        _, sep, meta = line.partition("// {")
        if sep:
            schemas.append(json.loads("{" + meta)["schema"].removeprefix("aten::"))
    return tuple(schemas)


# --- real data -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_every_release_schema_round_trips(version: str) -> None:
    funcs = release_funcs(version)
    assert len(funcs) > 2000
    for func in funcs:
        assert str(parse_schema(func)) == func


@pytest.mark.parametrize("version", ["1.12.0", "2.14.1", "2.15.0"])
def test_fast_constructors_build_what_the_dataclasses_build(version: str) -> None:
    """The parser's slot-setting constructors give every field the value __init__ would."""
    names = [parse_schema(func).name for func in release_funcs(version)]
    names += [
        make_operator_name(b, o)
        for b, o in [("__iand__", "Scalar"), ("__and__", ""), ("__x__", ""), ("_", "")]
    ]
    for name in names:
        usual = OperatorName(name.base, name.overload)
        assert (name.name, name.is_dunder, name.is_inplace) == (usual.name, usual.is_dunder, usual.is_inplace)
        assert name == usual and hash(name) == hash(usual)
    schema = parse_schema(release_funcs(version)[0])
    usual_schema = FunctionSchema(schema.name, schema.arguments, schema.returns)
    built = make_function_schema(schema.name, schema.arguments, schema.returns)
    assert built == usual_schema and hash(built) == hash(usual_schema) and str(built) == str(usual_schema)


def test_registration_declarations_round_trip() -> None:
    schemas = registration_schemas()
    assert len(schemas) == 3103  # the 2.14.1 registered-operator count
    for s in schemas:
        assert str(parse_schema(s)) == s


def test_structure_of_real_schemas() -> None:
    funcs = {parse_schema(f).name.name: parse_schema(f) for f in release_funcs("2.14.1")}
    add_out = funcs["add.out"]
    assert add_out.name == OperatorName("add", "out")
    assert [a.name for a in add_out.arguments.positional] == ["self", "other"]
    assert [a.name for a in add_out.arguments.kwarg_only] == ["alpha"]
    assert add_out.arguments.kwarg_only[0].default == "1"
    assert add_out.arguments.out == (Argument("out", BaseType("Tensor"), None, Annotation(("a",), True, ())),)
    assert add_out.kind() == "out"
    assert funcs["add.Tensor"].kind() == "functional"
    assert funcs["add_.Tensor"].kind() == "inplace"
    assert funcs["__iand__.Tensor"].kind() == "inplace"  # torchgen's augmented-assignment rule
    assert funcs["__and__.Tensor"].kind() == "functional"

    view = funcs["view"]
    assert view.returns_alias_of_input()
    assert view.arguments.positional[1].type == ListType(BaseType("SymInt"), None)
    assert not funcs["add.Tensor"].returns_alias_of_input()
    assert not funcs["add_.Tensor"].returns_alias_of_input()  # a write alias is not a view
    assert funcs["unbind.int"].returns_alias_of_input()  # Tensor(a)[]

    conv = funcs["convolution"]
    bias = conv.arguments.get("bias")
    assert bias is not None
    assert bias.type == OptionalType(BaseType("Tensor"))
    assert len(conv.tensor_inputs()) == 3

    qr = funcs["linalg_qr.out"]
    assert [r.name for r in qr.returns] == ["Q", "R"]
    assert qr.returns[1].annotation == Annotation(("b",), True, ())

    assert funcs["_fused_moving_avg_obs_fq_helper"].kind() == "other"  # mutates running stats


def test_has_dimname_in_old_release() -> None:
    named = [parse_schema(f) for f in release_funcs("2.12.0")]
    assert any(s.has_dimname() for s in named)
    assert not any(parse_schema(f).has_dimname() for f in release_funcs("2.14.1"))


def test_fixed_size_and_nested_types() -> None:
    s = parse_schema("f(Tensor?[] a, SymInt[1]? b, int[2] c=1, Dimname[]? d=None) -> Tensor")
    types = [a.type for a in s.arguments.positional]
    assert types[0] == ListType(OptionalType(BaseType("Tensor")), None)
    assert types[1] == OptionalType(ListType(BaseType("SymInt"), 1))
    assert types[2] == ListType(BaseType("int"), 2)
    assert types[3].base == "Dimname"


def test_wildcard_annotation() -> None:
    s = parse_schema("f(Tensor(a -> *) self) -> Tensor(a)")
    assert s.arguments.positional[0].annotation == Annotation(("a",), False, ("*",))
    assert s.returns_alias_of_input()  # split/chunk: the views escape into a list
    assert str(s) == "f(Tensor(a -> *) self) -> Tensor(a)"


# --- generated schemas ---------------------------------------------------------------------------

IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
OVERLOAD = st.from_regex(r"[A-Za-z0-9_]{1,8}", fullmatch=True)
ALIAS = st.from_regex(r"[a-z][a-z0-9]{0,2}", fullmatch=True)
BASES = st.sampled_from(
    ["Tensor", "int", "SymInt", "Scalar", "float", "bool", "str", "Dimname", "ScalarType", "Layout",
     "Device", "MemoryFormat", "Generator", "Storage", "Stream", "SymBool", "__torch__.torch.classes.x.Y"]
)  # fmt: skip
DEFAULTS = st.one_of(
    st.sampled_from(["None", "True", "False", "0", "-1", "1e-05", "contiguous_format", "[]", "[-2,-1]"]),
    st.from_regex(r"'(?:[^'\\\n]|\\.){0,6}'", fullmatch=True),
    st.from_regex(r'"(?:[^"\\\n]|\\.){0,6}"', fullmatch=True),
)


@st.composite
def types(draw: st.DrawFn) -> BaseType | OptionalType | ListType:
    t: BaseType | OptionalType | ListType = BaseType(draw(BASES))
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            t = OptionalType(t)
        else:
            t = ListType(t, draw(st.one_of(st.none(), st.integers(1, 12))))
    return t


@st.composite
def alias_annotations(draw: st.DrawFn, write: bool | None = None) -> Annotation:
    is_write = draw(st.booleans()) if write is None else write
    before = tuple(draw(st.lists(ALIAS, min_size=1, max_size=1 if is_write else 2)))
    after: tuple[str, ...] = draw(
        st.one_of(st.just(()), st.just(("*",)), st.lists(ALIAS, min_size=1, max_size=2).map(tuple))
    )
    return Annotation(before, is_write, after)


@st.composite
def arguments_(draw: st.DrawFn, *, out: bool = False, kwarg: bool = False) -> Argument:
    if out:
        return Argument(draw(IDENT), BaseType("Tensor"), None, draw(alias_annotations(write=True)))
    t = draw(types())
    ann = None
    if t.base == "Tensor" and draw(st.booleans()):
        ann = draw(alias_annotations(write=False if kwarg else None))
    default = draw(st.one_of(st.none(), DEFAULTS))
    return Argument(draw(IDENT), t, default, ann)


@st.composite
def returns_(draw: st.DrawFn) -> Return:
    t = draw(types())
    ann = draw(alias_annotations()) if t.base == "Tensor" and draw(st.booleans()) else None
    return Return(draw(st.one_of(st.none(), IDENT)), t, ann)


@st.composite
def schemas(draw: st.DrawFn) -> FunctionSchema:
    name = OperatorName(draw(IDENT), draw(st.one_of(st.just(""), OVERLOAD)))
    args = Arguments(
        tuple(draw(st.lists(arguments_(), max_size=5))),
        tuple(draw(st.lists(arguments_(kwarg=True), max_size=3))),
        tuple(draw(st.lists(arguments_(out=True), max_size=2))),
    )
    rets = draw(st.lists(returns_(), max_size=3))
    return FunctionSchema(name, args, tuple(rets))


@given(schemas())
def test_generated_schemas_round_trip(schema: FunctionSchema) -> None:
    text = str(schema)
    parsed = parse_schema(text)
    assert parsed == schema
    assert str(parsed) == text


def parse_or_error(text: str, path: str | None, line: int | None) -> FunctionSchema | SchemaError:
    """Any exception other than SchemaError propagates and fails the test."""
    try:
        return parse_schema(text, path=path, line=line)
    except SchemaError as err:
        return err


@given(st.text(max_size=80))
def test_arbitrary_text_raises_only_schema_error(text: str) -> None:
    result = parse_or_error(text, None, None)
    if isinstance(result, SchemaError):
        assert repr(text) in result.message
    else:
        assert str(result) == text


# Three quarters of the profile's count (300 in `ci`): each example parses a whole generated schema.
@settings(max_examples=settings().max_examples * 3 // 4)
@given(schemas(), st.integers(0, 200), st.text(min_size=1, max_size=3))
def test_mutated_schemas_raise_only_schema_error(schema: FunctionSchema, at: int, junk: str) -> None:
    text = str(schema)
    at %= len(text) + 1
    mutated = text[:at] + junk + text[at:]
    result = parse_or_error(mutated, "native_functions.yaml", 7)
    if isinstance(result, SchemaError):
        assert (result.path, result.line) == ("native_functions.yaml", 7)
    else:
        assert str(result) == mutated


# --- bad input -----------------------------------------------------------------------------------

MALFORMED = [
    "",
    "add",
    "add(Tensor self) -> ",
    "add(Tensor self)",
    "add(Tensor self) ->Tensor",
    "add(Tensor self)  -> Tensor",
    "add(Tensor  self) -> Tensor",
    "add(Tensor self,Tensor other) -> Tensor",
    "add(Tensor self, ) -> Tensor",
    "add(Tensr self) -> Tensor",  # unknown type
    "add(Tensor) -> Tensor",  # argument without a name
    "add(Tensor self=) -> Tensor",
    "add(Tensor self, *) -> Tensor",  # '*' with nothing after it
    "add(Tensor self, *, *, int a) -> Tensor",
    "add(Tensor self, *, Tensor(a!) out, int b) -> Tensor(a!)",  # non-mutable after out
    "add(int(a) x) -> Tensor",  # annotation on a non-Tensor
    "add(Tensor(A) x) -> Tensor",
    "add(Tensor(a!!) x) -> Tensor",
    "add(Tensor(a) x) -> (Tensor)",  # single return in parentheses
    "add(Tensor x) -> (Tensor, Tensor",
    "add(Tensor x) -> Tensor, Tensor",
    "add(Tensor x) -> Tensor junk more",
    "add(int[0] x) -> Tensor",
    "add(int[02] x) -> Tensor",
    "add(str x='unterminated) -> Tensor",
    'add(str x="a) -> Tensor',
    "add(int[] x=[1) -> Tensor",
    "add.(Tensor x) -> Tensor",
    ".out(Tensor x) -> Tensor",
    "aten::add(Tensor x) -> Tensor",
    "add(Tensor x) -> Tensor\n",
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_schema_is_a_schema_error(text: str) -> None:
    with pytest.raises(SchemaError) as info:
        parse_schema(text, path="native_functions.yaml", line=42)
    err = info.value
    assert err.path == "native_functions.yaml"
    assert err.line == 42
    assert repr(text) in err.message
    assert str(err).startswith("native_functions.yaml:42: ")


def test_non_string_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="must be a string"):
        parse_schema(123, line=3)  # type: ignore[arg-type]


# --- defaults read as values (opdrift.schema.defaults) -------------------------------------------------


def _type(text: str) -> Type:
    (arg,) = parse_schema(f"f({text} x) -> Tensor").arguments.positional
    return arg.type


def _value(text: str, typ: str) -> DefaultValue | None:
    return read_default(text, _type(typ))


def _ints(*xs: int) -> DefaultValue:
    return DefaultValue("list", tuple(DefaultValue("int", x) for x in xs))


@pytest.mark.parametrize(
    ("typ", "text", "expected"),
    [
        # A number is a float for a float argument, or when the text has "." or "e"; else an int.
        ("float", "1e-05", DefaultValue("float", 1e-05)),
        ("float", "1.0e-05", DefaultValue("float", 1e-05)),
        ("float", "1", DefaultValue("float", 1.0)),
        ("Scalar", "1", DefaultValue("int", 1)),
        ("Scalar", "1.0", DefaultValue("float", 1.0)),
        ("Scalar", "-1", DefaultValue("int", -1)),
        ("float?", "1", DefaultValue("int", 1)),  # the optional's kind, not float's, types the number
        ("SymInt", "-100", DefaultValue("int", -100)),
        ("Scalar", "2j", DefaultValue("complex", 2j)),
        ("bool", "True", DefaultValue("bool", True)),
        ("bool?", "False", DefaultValue("bool", False)),
        ("Tensor?", "None", NONE),
        ("int[1]?", "None", NONE),
        # The enum names parseSingleConstant knows are their enum's int.
        ("int", "Mean", DefaultValue("int", 1)),
        ("ScalarType?", "long", DefaultValue("int", 4)),
        ("MemoryFormat", "contiguous_format", DefaultValue("int", 0)),
        # Either quote; parseStringLiteral's escapes.
        ("str", "'fro'", DefaultValue("str", "fro")),
        ("str", '"fro"', DefaultValue("str", "fro")),
        ("str", r'"\"' + "'" + r'\\"', DefaultValue("str", "\"'\\")),
        ("str", r"'\"\'\\'", DefaultValue("str", "\"'\\")),
        ("str", r"'\101'", DefaultValue("str", "A")),
        ("Device", '"cpu"', DefaultValue("device", "cpu")),
        # Lists of ints, floats or bools; a fixed-size list broadcasts one constant to its size.
        ("int[2]", "1", _ints(1, 1)),
        ("SymInt[3]", "0", _ints(0, 0, 0)),
        ("int[2]", "[1,1]", _ints(1, 1)),
        ("int[2]", "[1, 1]", _ints(1, 1)),
        ("int[1]", "[-2,-1]", _ints(-2, -1)),
        ("int[]", "[]", _ints()),
        ("int[]", "None", NONE),
        (
            "float[]",
            "[1, 0.5]",
            DefaultValue("list", (DefaultValue("float", 1.0), DefaultValue("float", 0.5))),
        ),
        (
            "bool[3]",
            "[True,False,True]",
            DefaultValue("list", tuple(DefaultValue("bool", b) for b in (True, False, True))),
        ),
    ],
)
def test_a_default_reads_as_pytorch_reads_it(typ: str, text: str, expected: DefaultValue) -> None:
    assert _value(text, typ) == expected


@pytest.mark.parametrize(
    ("typ", "text"),
    [
        ("float", "inf"),  # the lexer reads `inf` as a name, and no default of that name exists
        ("float", "-inf"),
        ("int", "+1"),
        ("int", "1E5"),  # PyTorch's stoll would read the 1 alone: not modelled, so compared as text
        ("int", "9223372036854775808"),  # past int64
        ("float", "1e400"),  # past a double: std::stod throws
        ("float", "1e-400"),
        ("int", "dim"),
        ("ScalarType?", "float32"),  # a dtype name PyTorch takes for ScalarType only: not modelled
        ("str", r"'\r'"),  # not one of parseStringLiteral's escapes
        ("int[1]?", "[1]"),  # an optional takes one constant, never a list
        ("int[]", "1"),  # broadcasting needs a fixed size
        ("int[2]", "[1,]"),
        ("int[2]", "[1.0,1]"),  # an int list takes ints only
        ("Tensor[]", "[]"),  # lists of int, float and bool only
        ("Tensor", "0"),
        ("Device", "cpu"),
        ("Stream", "0"),
    ],
)
def test_a_default_pytorch_rejects_or_that_is_not_modelled_reads_as_none(typ: str, text: str) -> None:
    assert _value(text, typ) is None


def test_defaults_compare_as_values_and_fall_back_to_text() -> None:
    f, i2, s = _type("float"), _type("int[2]"), _type("Scalar")
    assert same_default("1e-05", f, "1.0e-05", f)
    assert same_default("1", i2, "[1,1]", i2)
    assert not same_default("1e-05", f, "1e-06", f)
    assert not same_default("1", s, "1.0", s)  # an int and a float are different IValues
    assert not same_default("[1,1]", i2, "[1,1,1]", i2)
    assert same_default("inf", f, "inf", f)  # unreadable on both sides: the same text
    assert not same_default("inf", f, "1e400", f)
    # Each side is read with its own argument's type: `int[2] stride=1` and `int[] stride=[1,1]`.
    assert same_default("1", i2, "[1,1]", _type("int[]"))


def test_the_parse_memo_tables_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long history walk meets new schema, argument, type and annotation texts forever; every memo
    table of the parse must stay within its bound (list sizes and alias names make types and
    annotations as open-ended as schemas)."""
    from opdrift.schema import grammar

    monkeypatch.setattr(grammar, "_CACHE_LIMIT", 8)
    grammar.clear_caches()
    tables = {name: value for name, value in vars(grammar).items() if name.endswith("_cache")}
    assert len(tables) == 6
    for i in range(50):
        parse_schema(f"f{i}(int[{i + 1}] x, Tensor(a{i}!) y) -> Tensor(a{i}!)")
    assert {name: len(t) <= 8 for name, t in tables.items()} == dict.fromkeys(tables, True)
    grammar.clear_caches()
