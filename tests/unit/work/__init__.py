"""Unit tests of the `work` stage, a module for each of its modules."""
