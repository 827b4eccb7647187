"""The history stage: the per-commit walk over a repository's operator files, and what uses it.

`walk` lists the commits (through `opdrift.sources.gitlog`) and gives one timeline point per commit, with
its figures and its drift from the previous good point; `blocks`, `entrymap` and `reach` find what a
commit's edit touched, `engine` re-decides only that (through the taxonomy's own decision), `cache`
keeps results on disk, `timeline` holds the records and their JSON form, and `attribution` names the
commits behind a report's changes.
"""
