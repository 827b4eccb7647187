"""The publishing stage: GitHub posts, Actions outputs, CI files.

`github` is the posting client (settings, retries, secrets); `pr_comment`, `weekly_issue`,
`manual_issue` and `watch_issue` are the posts; `actions` writes the job summary and annotation lines;
`workflow` holds the CI steps' helpers, `artifact` checks downloaded artifacts and `doctor` tries the
workflows' calls. Reading GitHub (gh: sources and files, pull requests, the bounds every request
keeps) is `opdrift.github`'s; the config file is `opdrift.config`'s. What `comment` and `issue` settle before
rendering, and subscription matching, are use cases: `opdrift.app`.
"""
