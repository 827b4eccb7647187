"""The watch state's model counts (opdrift.app.watch_models): written, read back, and refused when forged."""

from __future__ import annotations

import pytest

from opdrift.app.watch_models import models_data, with_models
from opdrift.coverage.workitems import ModelReach, Through
from opdrift.render.context import BackendGap, BrokenKernel

_IMPACT = BackendGap(
    (),
    "xla",
    "xla.yaml",
    ("rrelu_with_noise_functional",),
    (BrokenKernel("mean.dim", "int64_t", (), models=ModelReach(25, 47, (), 0, "2.14.1")),),
    ops_models=ModelReach(0, 23, (), 0, "2.14.1", no_data_yet=True),
)


def test_the_counts_read_back_as_written() -> None:
    bare = BackendGap(
        (), _IMPACT.kind, _IMPACT.where, _IMPACT.ops, (BrokenKernel("mean.dim", "int64_t", ()),)
    )
    data = models_data(_IMPACT)["models"]
    back = with_models(bare, data)
    assert back.ops_models is not None and back.ops_models.short_words() == "no model data yet"
    (b,) = back.broken
    assert b.models is not None and b.models.short_words() == "used by 25 of 47 models"
    assert models_data(bare) == {}  # no counts: nothing written, a state of before reads the same


def test_the_ops_a_count_is_reached_through_read_back_and_a_count_of_before_reads_without() -> None:
    """dlprim's broken mean.out, reached only through mean.dim; a count written before `through` existed
    (three items) reads as it did, and a `through` that does not read drops the count."""
    reach = ModelReach(27, 51, (), 0, "2.14.1", through=Through(25, ("mean.dim", "a", "b"), 2))
    impact = BackendGap((), "cpp", "dlprim/src", (), (BrokenKernel("mean.out", "int64_t", (), models=reach),))
    bare = BackendGap((), "cpp", "dlprim/src", (), (BrokenKernel("mean.out", "int64_t", ()),))
    data = models_data(impact)["models"]
    assert data == {"release": "2.14.1", "breaks": {"mean.out": [27, 51, 0, [25, 2, "mean.dim", "a", "b"]]}}
    (b,) = with_models(bare, data).broken
    assert b.models == reach
    (old,) = with_models(bare, {"release": "2.14.1", "breaks": {"mean.out": [27, 51, 0]}}).broken
    assert old.models is not None and old.models.through is None and old.models.used_by == 27
    for forged in ([28, 0, "mean.dim"], [25, 0], [25, 0, "a", "b", "c", "d"], [25, 0, "<b>"], "mean.dim"):
        (x,) = with_models(bare, {"release": "2.14.1", "breaks": {"mean.out": [27, 51, 0, forged]}}).broken
        assert x.models is None, forged


@pytest.mark.parametrize(
    "forged",
    [
        {"release": "2.14.1</sub>@all", "needs": [1, 2, 0]},  # shown unescaped: digits and dots only
        {
            "release": "2.14.1",
            "needs": [3, 2, 0],
            "breaks": {"mean.dim": [1, 2]},
        },  # more users than models
        {"release": "2.14.1", "needs": [True, 2, 0], "breaks": {"mean.dim": [1, 2, 9]}},
        {"release": "2.14.1", "needs": "many", "breaks": ["mean.dim"]},
        "2.14.1",
    ],
)
def test_a_forged_count_is_dropped_and_the_row_kept(forged: object) -> None:
    bare = BackendGap((), "xla", "xla.yaml", ("a",), (BrokenKernel("mean.dim", "int64_t", ()),))
    back = with_models(bare, forged)
    assert back == bare and back.ops_models is None and back.broken[0].models is None
