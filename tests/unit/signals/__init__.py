"""Unit tests of the `signals` stage, a module for each of its modules."""
