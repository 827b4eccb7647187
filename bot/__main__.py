"""`python -m bot` runs the same thing as the `opdrift` console script."""

import sys

from bot.cli.app import main

sys.exit(main())
