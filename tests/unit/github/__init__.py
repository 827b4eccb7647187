"""Unit tests of the `github` stage, a module for each of its modules."""
