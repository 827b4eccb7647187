"""pytest configuration. Test helpers live in plain modules (datafiles, ...) beside the tests."""

from __future__ import annotations

import sys
from pathlib import Path

# The helper modules sit beside the tests; make them importable whatever the rootdir.
sys.path.insert(0, str(Path(__file__).parent))
