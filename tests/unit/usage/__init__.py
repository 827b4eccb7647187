"""Unit tests of the `usage` stage, a module for each of its modules."""
