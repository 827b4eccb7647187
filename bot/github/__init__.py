"""GitHub's read API: the gh: SOURCE, gh: files, an upstream's pull requests, and the bounds and caches
every request goes through."""
