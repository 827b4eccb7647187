"""The buckets of the taxonomy: the one place a bucket is defined.

Everything else (the rule table's targets, the overrides' and config's allowed values, the stats
table's rows and labels, the table in docs/buckets.md) is derived from `BUCKET_TABLE`, so adding a bucket means
adding a row here and a `Rule` that sends operators to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Bucket:
    """One bucket. `group` says where the post put it: beside "core" (top) or inside it (core)."""

    id: str
    label: str  # as the stats table shows it
    group: Literal["top", "core"]


# In the post's order, which is the stats table's row order.
BUCKET_TABLE: tuple[Bucket, ...] = (
    Bucket("convolution", "convolution", "top"),
    Bucket("pooling", "pooling", "top"),
    Bucket("batch_norm", "batch norm", "top"),
    Bucket("private", "private", "top"),
    Bucket("inplace", "in-place", "top"),
    Bucket("backward", "backward", "top"),
    Bucket("weird", "weird", "top"),
    Bucket("alias", "alias", "core"),
    Bucket("composite_reduction", "composite reduction", "core"),
    Bucket("primitive_pointwise", "primitive pointwise", "core"),
    Bucket("composite_pointwise", "composite pointwise", "core"),
    Bucket("composite_matmul", "composite matmul", "core"),
    Bucket("view", "view/reshape", "core"),
    Bucket("factory", "factory", "core"),
    Bucket("named", "named", "core"),
    Bucket("complex", "complex", "core"),
    Bucket("linalg", "linalg", "core"),
    Bucket("sparse", "sparse", "core"),
    Bucket("fft", "FFT", "core"),
    Bucket("rnn", "RNN", "core"),
    Bucket("quantization", "quantization", "core"),
    Bucket("scatter_gather", "scatter + gather", "core"),
    Bucket("fbgemm", "fbgemm", "core"),
    Bucket("misc", "misc", "core"),
)

TOP_BUCKETS: tuple[str, ...] = tuple(b.id for b in BUCKET_TABLE if b.group == "top")
CORE_BUCKETS: tuple[str, ...] = tuple(b.id for b in BUCKET_TABLE if b.group == "core")
BUCKETS: tuple[str, ...] = TOP_BUCKETS + CORE_BUCKETS
LABELS: dict[str, str] = {b.id: b.label for b in BUCKET_TABLE}
