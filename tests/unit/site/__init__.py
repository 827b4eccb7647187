"""Unit tests of the `site` stage, a module for each of its modules."""
