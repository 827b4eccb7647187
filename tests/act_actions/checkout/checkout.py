"""actions/checkout's fetch and checkout, on a local origin: $ACT_ORIGINS/OWNER/NAME."""

import os
import subprocess
from pathlib import Path


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


env = os.environ
repository = env["REPOSITORY"] or env["GITHUB_REPOSITORY"]
origin = Path(env["ACT_ORIGINS"], repository)
if not origin.exists():
    origin = origin.with_name(origin.name + ".git")
dest = Path(env["GITHUB_WORKSPACE"], env["DEST"])
dest.mkdir(parents=True, exist_ok=True)
if not (dest / ".git").exists():
    git("init", "-q", cwd=dest)
    git("remote", "add", "origin", f"file://{origin}", cwd=dest)
own = repository == env["GITHUB_REPOSITORY"]
ref = env["REF"] or (env.get("GITHUB_SHA", "") if own else "") or "HEAD"
fetch = ["fetch", "-q", "--no-tags"]
if env["FILTER"]:
    fetch.append(f"--filter={env['FILTER']}")
if env["DEPTH"] != "0":
    fetch.append(f"--depth={env['DEPTH']}")
    git(*fetch, "origin", ref, cwd=dest)
else:
    # fetch-depth 0, as actions/checkout does it: every branch and tag, then the ref itself.
    git(*fetch, "origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*", cwd=dest)
    git(*fetch, "origin", ref, cwd=dest)
if env["SPARSE"].strip():
    cone = [] if env["CONE"] == "true" else ["--no-cone"]
    git("sparse-checkout", "set", *cone, *env["SPARSE"].split(), cwd=dest)
branch = env.get("GITHUB_REF_NAME", "") if own and not env["REF"] else ""
if branch:
    git("checkout", "-q", "-f", "-B", branch, "FETCH_HEAD", cwd=dest)
else:
    git("checkout", "-q", "-f", "--detach", "FETCH_HEAD", cwd=dest)
print(f"checked out {repository}@{git('rev-parse', 'HEAD', cwd=dest)[:12]} into {dest}")
