"""The watch state's model counts (opdrift.app.watch_models): written, read back, and refused when forged."""

from __future__ import annotations

import pytest

from opdrift.app.watch_models import models_data, with_models
from opdrift.coverage.workitems import ModelReach
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
