"""Hypothesis example counts per tier, imported by the property tests before their decorators run.

`ci` (the full run, and the default) keeps the counts the property tests were written with; `dev` is
the edit-test loop. Pick one with HYPOTHESIS_PROFILE=dev or Hypothesis's own `--hypothesis-profile=dev`
(tests/conftest.py imports this module first then). No deadline in either: on a shared 2-core machine a
slow example is load, not a regression. A module of its own rather than conftest.py so that a run
without a property test does not import Hypothesis (about a second of collection).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", max_examples=400, deadline=None)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
