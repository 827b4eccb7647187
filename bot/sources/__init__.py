"""The sources stage, one end of the pipeline: where operator definitions come from.

A SOURCE (a checkout, ``DIR@REV``, a torch wheel, a bare yaml, a stored snapshot) becomes
`SourceFiles` here. This is the only stage that reads those files and the only one that runs git:
`git.run_git` for single commands, `git.GitReader` for many reads, `repo` for what the workflows ask
of a repository.
"""
