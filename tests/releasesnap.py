"""Snapshots of the vendored releases and of the 1.10.0 wheel, classified in-process and cached per session.

Several test modules check figures of the same real releases; parsing 2.14.1 takes about a second,
so the snapshots are built once here rather than in each module.
"""

from __future__ import annotations

import lzma
from functools import cache

from datafiles import DATA, has_release_file, release_text

from opdrift import pipeline
from opdrift.model import OperatorSet, Snapshot, SourceFiles, SourceMeta, TextFile
from opdrift.operators.registration import operators_from_registrations, parse_registrations
from opdrift.taxonomy.classify import classify

WHEEL_1_10 = DATA / "wheels" / "1.10.0" / "RegistrationDeclarations.h.xz"


@cache
def release_operators(version: str) -> OperatorSet:
    """A vendored release parsed the way the CLI parses a bare yaml SOURCE (tags and derivatives too)."""

    def text_file(name: str) -> TextFile | None:
        if not has_release_file(version, name):
            return None
        return TextFile(display=f"v{version}:{name}", text=release_text(version, name))

    native = text_file("native_functions.yaml")
    files = SourceFiles(
        meta=SourceMeta(kind="yaml", path=f"v{version}", torch_version=version),
        native_functions=native,
        tags=text_file("tags.yaml"),
        derivatives=text_file("derivatives.yaml"),
    )
    return pipeline.operators_from_files(files)


@cache
def release_snapshot(version: str) -> Snapshot:
    """`release_operators(version)` classified."""
    return classify(release_operators(version))


@cache
def wheel_1_10_snapshot() -> Snapshot:
    """The 1.10.0 wheel's RegistrationDeclarations.h (the post's late-2021 figures) classified."""
    text = lzma.decompress(WHEEL_1_10.read_bytes()).decode("utf-8")
    display = "torch-1.10.0:RegistrationDeclarations.h"
    records = parse_registrations(text, display)
    meta = SourceMeta(kind="wheel", path="torch-1.10.0.whl", torch_version="1.10.0")
    return classify(operators_from_registrations(records, meta, display))
