"""What the command runners share: exit codes, warnings on stderr, loading SOURCEs, writing output,
workflow outputs, and the one read of GITHUB_TOKEN.

Imported by `main` before any command runs, so it imports no stage at module level: each helper
imports what it needs when called.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from opdrift.text import one_line

if TYPE_CHECKING:
    import argparse

    from opdrift.drift.warnings import SourceWarning
    from opdrift.github.api import ApiSettings
    from opdrift.model import Snapshot, SourceFiles
    from opdrift.operators.codegen import CodegenRules
    from opdrift.taxonomy.overrides import Overrides

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_ERROR = 2


# The warnings this run has printed. A run reads the same file many times (the watch judges each
# pull request against every backend list), and each read would repeat the file's warnings: one line
# per distinct warning per run is what a reader can act on. `main` starts each run with an empty set.
_WARNED: ContextVar[set[str] | None] = ContextVar("opdrift_warned", default=None)


def start_run() -> None:
    """Forget the warnings printed so far: the next run prints each of its own once."""
    _WARNED.set(set())


def warn(message: str) -> None:
    """Print a warning on stderr, once per distinct message in a run."""
    line = f"opdrift: warning: {one_line(message)}"
    seen = _WARNED.get()
    if seen is not None:
        if line in seen:
            return
        seen.add(line)
    print(line, file=sys.stderr)


def note(message: str) -> None:
    """A line for stderr that is not a warning (acknowledgement notes, attribution summaries)."""
    print(f"opdrift: {message}", file=sys.stderr)


def codegen_rules(args: argparse.Namespace) -> CodegenRules | None:
    """The rules --codegen names (None when not given); an unknown X.Y is a CodegenError."""
    release = getattr(args, "codegen", None)
    if release is None:
        return None
    from opdrift.operators.codegen import rules_for_release

    return rules_for_release(release)


def read_any_source(spec: str) -> SourceFiles:
    """SOURCE → files, ``gh:OWNER/NAME@REF`` included (read over GitHub's REST API, so its module and
    requests are imported only for such a spec), with GITHUB_TOKEN, GITHUB_API_URL and XDG_CACHE_HOME."""
    if not spec.startswith("gh:"):
        from opdrift.sources.read import read_source

        return read_source(spec)
    from opdrift.github.ghsource import read_github_source

    return read_github_source(spec, _api_settings())


def _api_settings() -> ApiSettings:
    """The REST API's settings for reading ``gh:`` specs: GITHUB_API_URL, GITHUB_TOKEN, XDG_CACHE_HOME."""
    from opdrift.github.api import ApiSettings
    from opdrift.github.ghcache import default_cache_dir
    from opdrift.github.retry import DEFAULT_API_URL

    return ApiSettings(
        api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
        token=github_token(),
        cache_dir=default_cache_dir(os.environ),
    )


@contextmanager
def fetch_gh_files(spec: str, want: Callable[[str], bool]) -> Iterator[Path]:
    """A ``gh:OWNER/NAME@REF:PATH`` file or directory (of a directory, the files `want` accepts)
    copied into a private temporary directory for the block's time, with the settings of ``gh:``
    SOURCEs; what it skipped goes to stderr."""
    from opdrift.github.ghfiles import materialised

    with materialised(spec, _api_settings(), want, warn=warn) as fetched:
        yield fetched.root


def load(spec: str, overrides: Overrides | None = None, codegen: CodegenRules | None = None) -> Snapshot:
    """SOURCE → Snapshot for a command, with the parse's warnings shown on stderr."""
    from opdrift import pipeline

    return pipeline.load_snapshot(spec, overrides, warn=warn, codegen=codegen, read=read_any_source)


def load_pair(
    base_spec: str, head_spec: str, overrides: Overrides | None, codegen: CodegenRules | None = None
) -> tuple[Snapshot, Snapshot, tuple[SourceWarning, ...]]:
    """BASE and HEAD, and the parse warnings HEAD has and BASE had not: what a report lists.

    Snapshots keep their parse's warnings, so this holds for stored snapshots too (the action
    diffs the two snapshots it made first).
    """
    from opdrift.drift.warnings import new_warnings

    base = load(base_spec, overrides, codegen)
    head = load(head_spec, overrides, codegen)
    found = new_warnings(head.warnings, head.native_display, base.warnings, base.native_display)
    return base, head, found


def write_output(text: str, output: str | None) -> None:
    """Print to stdout, or write FILE atomically so an interrupted run never leaves half a file."""
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    from opdrift.files import write_atomic

    write_atomic(output, text)


def emit_outputs(values: dict[str, str], *, echo: bool = True) -> None:
    """Print NAME=VALUE lines (unless not `echo`), and append them to $GITHUB_OUTPUT when Actions set it."""
    from opdrift.publish import workflow

    if echo:
        sys.stdout.write(workflow.output_lines(values))
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        workflow.write_outputs(target, values)


def github_token() -> str | None:
    """$GITHUB_TOKEN without surrounding whitespace, None when unset or blank: the one place it is read."""
    return os.environ.get("GITHUB_TOKEN", "").strip() or None
