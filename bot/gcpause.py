"""Pause Python's cycle collector while a parse stage builds its (large, acyclic) result."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cycle collector off, then restore it (nesting and errors included).

    Reading, building and classifying one native_functions.yaml allocates ~100k dicts, tuples and
    records that all outlive the stage and form no reference cycles, so the collector, triggered
    every 700 allocations, walks them again and again to free nothing: 10-15% of a cold parse.
    Reference counting still frees every temporary as usual; only the cycle search waits.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
