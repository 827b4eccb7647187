"""The use cases (comment, issue, coverage, site): each composes the stages for one command.

The command line hands parsed arguments over as plain values; this layer loads the sources (through
the reader it is given), computes drift and coverage, matches subscriptions, decides what to post, and
hands rendered bodies to `opdrift.publish`, which only talks to GitHub and follows Actions conventions.
"""
