"""`python -m bot` runs the same thing as the `opdrift` console script."""

import sys

from bot.cli import main

sys.exit(main())
