"""The command line: one parser, one registry of commands, thin command modules."""

from opdrift.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
