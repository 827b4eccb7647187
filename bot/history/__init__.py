"""The history stage: the per-commit walk over a repository's operator files, and what uses it.

The walk reads each commit through the sources stage, re-decides only what changed, and records one
timeline point per commit; `attribution` finds which commit made each change of a report.
"""
