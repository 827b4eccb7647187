"""Unit tests of the `history` stage, a module for each of its modules."""
