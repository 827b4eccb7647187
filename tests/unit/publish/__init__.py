"""Unit tests of the `publish` stage, a module for each of its modules."""
