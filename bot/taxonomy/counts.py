"""Base operators per bucket: the one count the stats table, the drift report and the history share."""

from __future__ import annotations

from collections.abc import Iterable

from opdrift.taxonomy.buckets import BUCKETS


def count_by_bucket(buckets: Iterable[str]) -> dict[str, int]:
    """Base operators per bucket, given each base operator's bucket once.

    Every bucket of the table is present (zeros included), in table order; a bucket outside the
    table (a stored snapshot's, say) follows, counted like the others.
    """
    counts = dict.fromkeys(BUCKETS, 0)
    for bucket in buckets:
        counts[bucket] = counts.get(bucket, 0) + 1
    return counts
