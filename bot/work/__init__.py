"""The work stage: what a backend must write or lower for each operator, and why (`engine`).

One engine answers for every view: coverage of a backend's lists, the drift's per-change profiles (a
backend of that profile with an empty list), subscriptions, `explain` and the site.
"""
