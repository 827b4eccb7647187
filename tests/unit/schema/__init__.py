"""Unit tests of the `schema` stage, a module for each of its modules."""
