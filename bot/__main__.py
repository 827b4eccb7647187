"""`python -m opdrift` runs the same thing as the `opdrift` console script."""

import sys

from opdrift.cli.app import main

sys.exit(main())
