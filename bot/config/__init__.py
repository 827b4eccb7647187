"""The bot's config file, parsed and checked (`file`): subscriptions, labels, allow-list, overrides,
weekly, and the backends' lists it names (`backend_specs`, their default names in `backend_names`),
its YAML nodes read by kind (`nodes`). `opdrift.app` matches it; the publisher never reads it.
"""
