"""PyTorch's Python side as taxonomy signals: the reader, the shipped table, and what they decide."""

from __future__ import annotations

import zipfile
from collections import Counter
from pathlib import Path

import pytest
from datafiles import RELEASES_DIR, release_text
from goldens import check_golden_entry, updating
from releasesnap import release_snapshot, wheel_1_10_snapshot

from opdrift import pipeline
from opdrift.drift.changes import compute_drift
from opdrift.model import OpSignal, Signals
from opdrift.render.explain import explain
from opdrift.signals import table
from opdrift.signals.pyside import read_python_side
from opdrift.taxonomy.buckets import TOP_BUCKETS
from opdrift.work.rules import DECOMPOSES, words

RELEASES = sorted(p.name for p in RELEASES_DIR.iterdir() if (p / "native_functions.yaml.xz").exists())

# The forms the real files use (torch 1.12.0 and 2.14.1 wheels), cut down.
PRIMS = """
tan = _make_elementwise_unary_prim("tan", impl_aten=torch.tan, doc="")
bessel_i1 = _make_elementwise_unary_prim("bessel_i1", impl_aten=torch.special.i1, doc="")
_helper = _make_prim(schema="helper(Tensor a) -> Tensor")
"""
REFS = """
@_make_elementwise_unary_reference(ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
def tan(a):
    return prims.tan(a)

@_make_elementwise_unary_reference(ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT)
def sigmoid(a):
    return true_divide(1, add(1, exp(neg(a))))

@register_decomposition(aten.addcmul)
@out_wrapper()
def addcmul(self, tensor1, tensor2, *, value=1):
    return self + value * tensor1 * tensor2

lgamma = _make_elementwise_unary_reference(prims.lgamma, type_promotion_kind=None)
swap_axes = sigmoid
"""
SPECIAL = """
@_make_elementwise_unary_reference(ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT, aten_op=aten.special_i1)
def i1(a):
    return prims.bessel_i1(a)

expit = _make_alias(torch.sigmoid, "expit")
"""
DECOMPOSITIONS = """
@register_decomposition([aten.silu, aten.silu.out])
@pw_cast_for_opmath
def silu(self):
    return self * torch.sigmoid(self)

@register_decomposition(aten.sigmoid)
def sigmoid_is_also_here(self):
    return max(1, 2)
"""
DOCS = '''
add_docstr(
    torch.arccos,
    r"""
arccos(input: Tensor, *, out: Optional[Tensor]) -> Tensor

Alias for :func:`torch.acos`.
""",
)
add_docstr(torch.concat, r"""concat(tensors, dim=0, *, out=None) -> Tensor

Alias of :func:`torch.cat`.
""")
add_docstr(torch.cat, r"""cat(tensors) -> Tensor
Concatenates. See also :func:`torch.concat`, an alias of it.
""")
'''
OVERRIDES = """
        torch.concatenate: lambda tensors, dim=0, out=None: -1,  # alias for torch.cat
        torch.concat: lambda tensors, dim=0, out=None: -1,  # alias for torch.concat
"""
NORMALIZE = (
    "static const std::unordered_map<Symbol, Symbol> alias_map = {\n  {aten::absolute, aten::abs},\n};"
)


def _read(**overrides: str) -> Signals:
    files = {
        "torch/_prims/__init__.py": PRIMS,
        "torch/_refs/__init__.py": REFS,
        "torch/_refs/special/__init__.py": SPECIAL,
        "torch/_decomp/decompositions.py": DECOMPOSITIONS,
        "torch/_torch_docs.py": DOCS,
        "torch/overrides.py": OVERRIDES,
        "torch/csrc/jit/passes/normalize_ops.cpp": NORMALIZE,
        **overrides,
    }
    signals, warnings = read_python_side(((p, f"src:{p}", t) for p, t in files.items()), "src")
    assert warnings == ()
    return signals


def test_the_reader_finds_primitives_references_and_decompositions() -> None:
    ops = _read().ops
    assert ops["tan"] == OpSignal(("prims.tan",), "torch/_refs/__init__.py", True, True, True)
    assert ops["sigmoid"].decomposes_to == ("add", "exp", "neg", "true_divide")
    # a reference beats a decomposition of the same op: it is written on top of the primitives
    assert ops["sigmoid"].where == "torch/_refs/__init__.py"
    assert ops["addcmul"].decomposes_to == ("add", "mul")  # Python's operators are ATen operators
    assert not ops["addcmul"].pointwise_ref  # out_wrapper is not an elementwise wrapper
    assert ops["lgamma"] == OpSignal(("prims.lgamma",), "torch/_refs/__init__.py", True, True, False)
    assert ops["special_i1"].decomposes_to == ("prims.bessel_i1",)  # aten_op= names the ATen op
    # pw_cast_for_opmath also wraps pads and upsampling: it is not a pointwise structure
    assert ops["silu"] == OpSignal(("mul", "sigmoid"), "torch/_decomp/decompositions.py", False, False, False)
    assert "_helper" not in ops and ops["bessel_i1"].prim


def test_the_reader_finds_aliases_in_every_file_and_skips_self_references() -> None:
    aliases = _read().aliases
    assert aliases["arccos"].target == "acos" and aliases["arccos"].where == ("torch/_torch_docs.py",)
    assert aliases["concat"].target == "cat"  # "alias for torch.concat" about concat itself is skipped
    assert aliases["concatenate"].where == ("torch/overrides.py",)
    assert aliases["absolute"].target == "abs"
    assert aliases["special_expit"].target == "sigmoid"
    assert aliases["swap_axes"].target == "sigmoid"
    assert "cat" not in aliases  # "an alias of it" in cat's own docs does not make cat an alias


def test_a_file_that_does_not_parse_is_a_warning_with_its_line() -> None:
    files = [
        ("torch/_refs/__init__.py", "w:torch/_refs/__init__.py", "def f(:\n"),
        ("torch/_prims/__init__.py", "p", PRIMS),
    ]
    signals, warnings = read_python_side(files, "w")
    assert len(warnings) == 1 and warnings[0].startswith("w:torch/_refs/__init__.py:1: ")
    assert signals.ops["tan"].prim  # the other files still count


def test_the_table_round_trips_and_picks_the_nearest_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = Signals("a", ops={"sigmoid": OpSignal(("exp",), "f.py", True, True, False)})
    two = Signals(
        "b", ops={"sigmoid": OpSignal(("exp",), "f.py", True, True, False), "tan": OpSignal(prim=True)}
    )
    text = table.write_table(
        [(table.Release("2.0.0", "w0", "00"), one), (table.Release("2.2.0", "w2", "22"), two)], ["h"]
    )
    assert "op\tsigmoid\t0-1\trp\tf.py\texp" in text  # one line for a fact of both releases
    monkeypatch.setattr(table, "_text", lambda: text)
    table.clear_caches()
    try:
        assert table.pick_release("1.10.0") == 0
        assert table.pick_release("2.1.0") == 0
        assert table.pick_release("2.2.0a0+git123") == 1  # a pre-release takes its own minor
        assert table.pick_release(None) == 1
        old = table.shipped_signals("2.0.0")
        assert old is not None and set(old.ops) == {"sigmoid"}
        new = table.shipped_signals("9.0.0")
        assert new is not None and new.ops["tan"].prim and new.origin == "opdrift's table, torch 2.2.0"
    finally:
        table.clear_caches()


def test_the_shipped_table_records_facts_with_provenance_never_buckets() -> None:
    releases = table.releases()
    assert releases[0].version == "1.12.0" and len(releases) >= 14
    assert all(len(r.sha256) == 64 and r.wheel.startswith(f"torch-{r.version}") for r in releases)
    lines = [line for line in table._text().splitlines() if line and not line.startswith("#")]
    assert {line.split("\t")[0] for line in lines} == {"release", "op", "alias"}
    text = "\n".join(lines)
    assert "pointwise\t" not in text and "composite_" not in text and "primitive_" not in text


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.slow
def test_every_release_has_both_kinds_of_pointwise(version: str) -> None:
    counts = Counter(d.bucket for d in release_snapshot(version).decisions.values())
    assert counts["primitive_pointwise"] >= 20, counts
    assert counts["composite_pointwise"] >= 20, counts


def test_composite_pointwise_is_a_real_bucket_on_2_14_1() -> None:
    decisions = release_snapshot("2.14.1").decisions
    composite = sorted(b for b, d in decisions.items() if d.bucket == "composite_pointwise")
    assert 40 <= len(composite) <= 130, len(composite)  # the post counted 87; before the signals, 10
    for op in ("silu", "gelu", "logit", "xlogy", "sigmoid", "elu"):
        assert decisions[op].bucket == "composite_pointwise", decisions[op]
        assert "written in terms of " in decisions[op].reason and "torch/_" in decisions[op].reason
    for op in ("tan", "lgamma", "special_i1"):
        assert decisions[op].bucket == "primitive_pointwise", decisions[op]
        assert "primitive prims." in decisions[op].reason


def test_the_1_10_wheel_stays_near_the_posts_top_level_figures() -> None:
    counts = Counter(d.bucket for d in wheel_1_10_snapshot().decisions.values())
    post = {"convolution": 67, "pooling": 42, "private": 233, "inplace": 183, "backward": 78, "weird": 40}
    for bucket, figure in post.items():
        assert abs(counts[bucket] - figure) <= figure * 0.1, (bucket, counts[bucket])
    core = sum(n for b, n in counts.items() if b not in TOP_BUCKETS)
    assert abs(core - 557) <= 55.7, core
    assert counts["composite_pointwise"] > 0 and counts["primitive_pointwise"] > 0


def test_native_names_say_it_is_the_posts_rule() -> None:
    decision = release_snapshot("2.14.1").decisions["native_layer_norm"]
    assert decision.rule == "weird.native"
    assert decision.reason == "name contains `native`: the post's backend-specific rule"


def test_concat_keeps_its_alias_when_its_comment_goes() -> None:
    # 2.13.0 deleted the "# alias for torch.cat" comments; the docs still say so
    assert "alias for torch.cat" in release_text("2.12.0").lower()
    assert "alias for torch.cat" not in release_text("2.13.0").lower()
    base, head = release_snapshot("2.12.0"), release_snapshot("2.13.0")
    for op in ("concat", "concatenate"):
        assert head.decisions[op].bucket == "alias" and head.operators[op].facets.alias_of == "cat"
        assert "torch/_torch_docs.py" in head.decisions[op].reason
    drift = compute_drift(base, head)
    for change in drift.changed:
        if change.name.split(".")[0] in ("concat", "concatenate"):
            assert change.category == "alias"
            assert all(d.code != "alias_of_changed" for d in change.details), change


def test_explain_shows_the_signal_and_its_file(request: pytest.FixtureRequest) -> None:
    text = explain(release_snapshot("2.14.1"), "silu")
    assert "rule:    core.pointwise.composite" in text
    (line,) = [x for x in text.splitlines() if "mul, sigmoid (" in x]
    assert "torch/_decomp/decompositions.py" in line and "2.14.1" in line
    check_golden_entry(
        "explain.lines.txt", "silu: its decomposition's signal", line + "\n", updating(request)
    )
    assert "decomposes_to: mul, sigmoid" in text
    # silu is in PyTorch's Core-ATen table, so an exported graph never holds it
    assert (
        f"export (an exported graph): {words(DECOMPOSES)} (PyTorch 2.14.1's Core-ATen table names it)" in text
    )


def test_a_wheel_source_uses_its_own_python_side(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-2.14.1-cp311-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("torchgen/packaged/ATen/native/native_functions.yaml", release_text("2.14.1"))
        z.writestr("torchgen/packaged/ATen/native/tags.yaml", release_text("2.14.1", "tags.yaml"))
        z.writestr("torch/_prims/__init__.py", 'sin = _make_elementwise_unary_prim("sin")\n')
        z.writestr("torch/_decomp/decompositions.py", DECOMPOSITIONS)
        # in this wheel tan is written in terms of sin and cos: its own files decide, not the table
        z.writestr(
            "torch/_refs/__init__.py",
            "@_make_elementwise_unary_reference(K)\ndef tan(a):\n    return div(sin(a), cos(a))\n",
        )
    from opdrift.sources.read import read_source
    from opdrift.taxonomy.classify import classify

    snap = classify(pipeline.operators_from_files(read_source(str(wheel))))
    assert snap.decisions["tan"].bucket == "composite_pointwise"
    assert snap.decisions["tan"].reason.endswith(f"(torch/_refs/__init__.py; {wheel.name})")
    assert snap.decisions["silu"].bucket == "composite_pointwise"
