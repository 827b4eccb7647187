"""Run opdrift stopped at a writer's most fragile moment, to be killed there (tests only).

``python tests/killpoint.py POINT ARG...`` runs ``opdrift ARG...`` with `os.replace` wrapped: at POINT
the process says ``opdrift: paused at POINT`` on stderr and waits to be killed (SIGKILL, as a cancelled
CI job is). The points are renames, told apart by the temporary name being renamed (`opdrift.files`'
``.NAME.PID.XXXX.tmp``, `opdrift.site.write`'s ``.link``), so production code carries no hook.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

# point → (pause before or after the rename, the suffix of the name renamed)
POINTS = {
    "snapshot-rename": ("before", ".tmp"),  # an output's temporary file, about to replace the output
    "site-swap": ("before", ".link"),  # the new site's link, about to replace DIR
    "site-cleanup": ("after", ".link"),  # DIR replaced, the old site not yet removed
}


def _pause(point: str) -> None:
    print(f"opdrift: paused at {point}", file=sys.stderr, flush=True)
    time.sleep(600)


def main(argv: list[str]) -> int:
    point, *args = argv
    when, suffix = POINTS[point]
    replace = os.replace

    def paused_replace(src: Any, dst: Any, **kwargs: Any) -> None:
        ours = os.fspath(src).endswith(suffix)
        if ours and when == "before":
            _pause(point)
        replace(src, dst, **kwargs)
        if ours and when == "after":
            _pause(point)

    os.replace = paused_replace
    from opdrift.cli.app import main as opdrift

    return opdrift(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
