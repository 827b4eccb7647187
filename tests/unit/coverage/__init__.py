"""Unit tests of the `coverage` stage, a module for each of its modules."""
