"""opdrift: track PyTorch's ATen operator surface commit by commit."""

__version__ = "0.1.0"
