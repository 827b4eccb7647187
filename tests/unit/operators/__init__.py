"""Unit tests of the `operators` stage, a module for each of its modules."""
