"""One source label for every report and title: the same name, the same sha length."""

from __future__ import annotations

import pytest

from opdrift.model import SourceMeta
from opdrift.render.view import SHA_SHOWN, source_label

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("meta", "long", "short"),
    [
        (SourceMeta("yaml", "releases/2.14.1/native_functions.yaml"), "2.14.1/native_functions.yaml", "2.14.1"),
        (SourceMeta("wheel", "dist/torch-2.14.1.whl", torch_version="2.14.1"), "2.14.1", "2.14.1"),
        (SourceMeta("snapshot", "snapshots/main.json"), "main.json", "main"),
        (SourceMeta("git", "pytorch@v2.15.0", revision="v2.15.0", commit=SHA), f"v2.15.0 ({SHA[:10]})", SHA[:10]),
        (SourceMeta("checkout", "pytorch", commit=SHA), f"pytorch ({SHA[:10]})", SHA[:10]),
    ],
)  # fmt: skip
def test_long_and_short_labels_agree(meta: SourceMeta, long: str, short: str) -> None:
    assert source_label(meta) == long
    assert source_label(meta, short=True) == short
    assert SHA_SHOWN == 10
