"""Unit tests of the `drift` stage, a module for each of its modules."""
