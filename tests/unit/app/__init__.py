"""Unit tests of the `app` stage, a module for each of its modules."""
