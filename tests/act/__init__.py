"""The example workflows run in act, one module per workflow (test_act.py says how to write one)."""
