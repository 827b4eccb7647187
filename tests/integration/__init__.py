"""Integration tests: several stages at once (the CLI end to end, the action, real HTTP, processes, git histories, a browser)."""
