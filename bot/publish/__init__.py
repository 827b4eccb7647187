"""The publishing stage, the only one that talks to the network: GitHub posts, Actions outputs, CI files.

`github` is the client (settings, retries, secrets); `pr_comment` and `weekly_issue` are the two
posts; `actions` writes the job summary and annotation lines; `config` reads the bot's config file;
`workflow` holds the CI steps' helpers and `artifact` checks downloaded artifacts. What `comment` and
`issue` settle before rendering, and subscription matching, are use cases: `bot.app`.
"""
