"""Unit tests of the `cli` stage, a module for each of its modules."""
