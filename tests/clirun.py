"""Running `opdrift` from tests: in-process (the `opdrift` fixture in conftest) or as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Run:
    """What one `opdrift` run gave: its exit code and what it printed."""

    code: int
    out: str
    err: str


Opdrift = Callable[..., Run]  # the `opdrift` fixture: opdrift(*argv) -> Run


def opdrift_process(
    *argv: str, optimize: bool = False, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Run:
    """`python [-O] -m bot ARGV` as a separate process, the way CI and users run it."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    base["PYTHONPATH"] = str(ROOT)
    flags = ["-O"] if optimize else []
    done = subprocess.run(
        [sys.executable, *flags, "-m", "opdrift", *argv],
        capture_output=True,
        text=True,
        env=base | (env or {}),
        cwd=cwd or ROOT,
        timeout=300,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)
