"""The coverage stage: a downstream backend's own op list against a snapshot.

One reader module per backend format (`torch_mlir`, `yaml_lists`, `cpp`; plain text in `backends`)
turns a backend's file into an `oplist.BackendList`; `check` compares it with the snapshot: covered,
needs a kernel, stale, schema alerts.
"""
