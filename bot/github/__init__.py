"""Reading GitHub's REST API: the gh: SOURCE (`ghsource`), a file or directory of any repository
(`ghfiles`), an upstream's pull requests for `watch` (`pulls`, their JSON checked by `pulljson`).

Every request goes through `api.Api` (retries by `retry`'s policy, which the publisher's client shares)
within `limits`' bounds, and what GitHub taught is kept in `ghcache`. With `opdrift.publish`, the only
stage that talks to the network; it posts nothing (that is `opdrift.publish`'s) and composes no stage.
"""
