"""The drift stage: base snapshot vs head snapshot → typed, fingerprinted changes.

`changes` computes them, `allowlist` acknowledges some until an expiry date, `warnings` picks the
parse warnings HEAD has and BASE had not, and `policy` decides which changes fail a run.
"""
