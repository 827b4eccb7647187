"""Checks on the repository itself: layout, architecture, docs, changelog, citations, module sizes."""
