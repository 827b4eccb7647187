"""opdrift: track PyTorch's ATen operator surface commit by commit."""

from opdrift.version import version as _version

# From the git tag through setuptools-scm (bot/version.py); reports and caches carry it.
__version__ = _version()
