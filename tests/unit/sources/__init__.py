"""Unit tests of the `sources` stage, a module for each of its modules."""
