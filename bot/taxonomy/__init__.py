"""The taxonomy stage: every base operator of an `OperatorSet` gets one bucket, decided by the rule table.

`buckets` is the one place a bucket is defined; `rules` is the readable rule table (first match wins),
built from the named tests of `matchers` on a `baseop.BaseOp`; `classify` runs it and applies the
user's `overrides` (the one file this stage reads, through `opdrift.sources`); `counts` and `stats`
count the result.
"""
