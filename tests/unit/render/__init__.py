"""Unit tests of the `render` stage, a module for each of its modules."""
