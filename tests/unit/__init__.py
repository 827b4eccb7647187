"""Unit tests: one folder per stage of bot/ (bot/<stage>/x.py -> unit/<stage>/test_x.py), bot's top-level modules here."""
