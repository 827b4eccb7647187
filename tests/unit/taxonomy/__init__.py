"""Unit tests of the `taxonomy` stage, a module for each of its modules."""
