"""GitHub's REST objects as GitHub writes them, one builder per object type, for tests/fake_github.py.

Each builder gives every field GitHub's OpenAPI description requires of its schema
(tests/data/github/SOURCES.md; tests/integration/test_openapi_conformity.py checks every answer of the session
against it), with the URLs GitHub derives from the API root and the web root, as its real answers
recorded in PyGithub's tests/ReplayData show them (Repository.testCompare: a comparison and its
commits; Repository.setUp: a repository; PullRequest.setUp: a pull request and its ``_links``;
RateLimitOverview.setUp: the rate limit). What the fake does not track (followers, stars, a
repository's size) is zero or null, as on a new account or repository.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

Json = dict[str, Any]

# When the fake's accounts and repositories were made: GitHub's `created_at` of a user and a repository.
CREATED = "2020-01-01T00:00:00Z"
_UNSIGNED = {"verified": False, "reason": "unsigned", "signature": None, "payload": None, "verified_at": None}


def simple_user(api: str, web: str, login: str, uid: int, *, bot: bool = False) -> Json:
    """``simple-user``: an account as it appears inside other objects (an issue's author, an owner)."""
    url = f"{api}/users/{quote(login)}"
    return {
        "login": login,
        "id": uid,
        "node_id": f"U_{uid}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{web}/{quote(login)}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": "Bot" if bot else "User",
        "user_view_type": "public",
        "site_admin": False,
    }


def public_user(user: Json) -> Json:
    """``public-user``: GET /user (a token's own account, as an app's token sees it) and GET
    /users/NAME: the simple form plus the profile."""
    profile = dict.fromkeys(("name", "company", "blog", "location", "email", "hireable", "bio"))
    counts = dict.fromkeys(("public_repos", "public_gists", "followers", "following"), 0)
    return {**user, **profile, **counts, "created_at": CREATED, "updated_at": CREATED}


def repository(api: str, web: str, full_name: str, rid: int, owner: Json, *, full: bool = False) -> Json:
    """``repository`` (inside a pull request's head and base), or with FULL ``full-repository``
    (GET /repos/O/R). A public repository on ``main``."""
    url = f"{api}/repos/{full_name}"
    name = full_name.split("/")[1]
    urls = {
        f"{k}_url": f"{url}/{v}"
        for k, v in (
            ("archive", "{archive_format}{/ref}"), ("assignees", "assignees{/user}"),
            ("blobs", "git/blobs{/sha}"), ("branches", "branches{/branch}"),
            ("collaborators", "collaborators{/collaborator}"), ("comments", "comments{/number}"),
            ("commits", "commits{/sha}"), ("compare", "compare/{base}...{head}"),
            ("contents", "contents/{+path}"), ("contributors", "contributors"),
            ("deployments", "deployments"), ("downloads", "downloads"), ("events", "events"),
            ("forks", "forks"), ("git_commits", "git/commits{/sha}"), ("git_refs", "git/refs{/sha}"),
            ("git_tags", "git/tags{/sha}"), ("hooks", "hooks"), ("issue_comment", "issues/comments{/number}"),
            ("issue_events", "issues/events{/number}"), ("issues", "issues{/number}"), ("keys", "keys{/key_id}"),
            ("labels", "labels{/name}"), ("languages", "languages"), ("merges", "merges"),
            ("milestones", "milestones{/number}"), ("notifications", "notifications{?since,all,participating}"),
            ("pulls", "pulls{/number}"), ("releases", "releases{/id}"), ("stargazers", "stargazers"),
            ("statuses", "statuses/{sha}"), ("subscribers", "subscribers"), ("subscription", "subscription"),
            ("tags", "tags"), ("teams", "teams"), ("trees", "git/trees{/sha}"),
        )
    }  # fmt: skip
    answer: Json = {
        "id": rid,
        "node_id": f"R_{rid}",
        "name": name,
        "full_name": full_name,
        "owner": owner,
        "private": False,
        "visibility": "public",
        "html_url": f"{web}/{full_name}",
        "description": None,
        "fork": False,
        "url": url,
        **urls,
        "git_url": f"git://{web.split('://', 1)[-1]}/{full_name}.git",
        "ssh_url": f"git@{web.split('://', 1)[-1]}:{full_name}.git",
        "clone_url": f"{web}/{full_name}.git",
        "svn_url": f"{web}/{full_name}",
        "mirror_url": None,
        "homepage": None,
        "language": None,
        "license": None,
        "size": 0,
        **dict.fromkeys(("forks", "forks_count", "stargazers_count", "watchers", "watchers_count"), 0),
        **dict.fromkeys(("open_issues", "open_issues_count"), 0),
        "default_branch": "main",
        **dict.fromkeys(("has_issues", "has_projects", "has_wiki", "has_downloads"), True),
        **dict.fromkeys(("has_pages", "archived", "disabled"), False),
        "pushed_at": CREATED,
        "created_at": CREATED,
        "updated_at": CREATED,
    }
    if full:
        answer.update(has_discussions=False, network_count=0, subscribers_count=0)
    return answer


def label(api: str, full_name: str, lid: int, name: str, color: str, description: str) -> Json:
    """``label``."""
    return {
        "id": lid,
        "node_id": f"LA_{lid}",
        "url": f"{api}/repos/{full_name}/labels/{quote(name, safe='')}",
        "name": name,
        "color": color,
        "description": description or None,
        "default": False,
    }


def issue(
    api: str, web: str, full_name: str, iid: int, number: int, *, user: Json, pull: bool, now: str
) -> Json:
    """``issue`` (a pull request's too, with its ``pull_request`` links), open, without labels."""
    url = f"{api}/repos/{full_name}/issues/{number}"
    answer: Json = {
        "id": iid,
        "node_id": f"I_{iid}",
        "number": number,
        "title": "",
        "body": "",
        "state": "open",
        "state_reason": None,
        "locked": False,
        "user": user,
        "labels": [],
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": 0,
        "url": url,
        "repository_url": f"{api}/repos/{full_name}",
        "comments_url": f"{url}/comments",
        "events_url": f"{url}/events",
        "labels_url": f"{url}/labels{{/name}}",
        "html_url": f"{web}/{full_name}/{'pull' if pull else 'issues'}/{number}",
        "created_at": now,
        "updated_at": now,
        "closed_at": None,
        "author_association": "NONE",
    }
    if pull:
        html = f"{web}/{full_name}/pull/{number}"
        answer["pull_request"] = {
            "url": f"{api}/repos/{full_name}/pulls/{number}",
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "merged_at": None,
        }
    return answer


def issue_comment(api: str, issue_json: Json, cid: int, body: str, user: Json, now: str) -> Json:
    """``issue-comment``."""
    repo_url = issue_json["repository_url"]
    return {
        "id": cid,
        "node_id": f"IC_{cid}",
        "url": f"{repo_url}/issues/comments/{cid}",
        "html_url": f"{issue_json['html_url']}#issuecomment-{cid}",
        "issue_url": issue_json["url"],
        "body": body,
        "user": user,
        "created_at": now,
        "updated_at": now,
        "author_association": "NONE",
    }


def pull(
    issue_json: Json,
    *,
    user: Json | None,
    draft: bool,
    updated_at: str,
    merged_at: str | None,
    head: Json,
    base: Json,
    full: bool = False,
    changed_files: int = 0,
) -> Json:
    """``pull-request-simple`` (GET pulls), or with FULL ``pull-request`` (GET pulls/N), from its
    issue; HEAD and BASE from `branch`."""
    url = issue_json["pull_request"]["url"]
    html = issue_json["html_url"]
    repo_url = issue_json["repository_url"]
    links = {
        "self": url, "html": html, "issue": issue_json["url"], "comments": issue_json["comments_url"],
        "review_comments": f"{url}/comments", "review_comment": f"{repo_url}/pulls/comments{{/number}}",
        "commits": f"{url}/commits", "statuses": f"{repo_url}/statuses/{head['sha']}",
    }  # fmt: skip
    answer: Json = {
        "id": issue_json["id"],
        "node_id": f"PR_{issue_json['id']}",
        "number": issue_json["number"],
        "state": issue_json["state"],
        "locked": False,
        "title": issue_json["title"],
        "body": issue_json["body"] or None,
        "user": user,
        "draft": draft,
        # A label without a description: null in an issue, "" in a pull request (the schemas say so).
        "labels": [{**lb, "description": lb["description"] or ""} for lb in issue_json["labels"]],
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "created_at": issue_json["created_at"],
        "updated_at": updated_at,
        "closed_at": issue_json["closed_at"],
        "merged_at": merged_at,
        "merge_commit_sha": None,
        "url": url,
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": issue_json["url"],
        "commits_url": links["commits"],
        "review_comments_url": links["review_comments"],
        "review_comment_url": links["review_comment"],
        "comments_url": issue_json["comments_url"],
        "statuses_url": links["statuses"],
        "head": head,
        "base": base,
        "_links": {k: {"href": v} for k, v in links.items()},
        "author_association": "NONE",
        "auto_merge": None,
    }
    if full:
        answer.update(
            merged=merged_at is not None,
            mergeable=None,
            mergeable_state="unknown",
            merged_by=None,
            maintainer_can_modify=False,
            comments=issue_json["comments"],
            review_comments=0,
            commits=1,
            additions=changed_files,
            deletions=changed_files,
            changed_files=changed_files,
        )
    return answer


def branch(repo_json: Json, ref: str, sha: str) -> Json:
    """A pull request's ``head`` or ``base``: a branch of a repository at a commit."""
    owner = repo_json["owner"]
    return {"label": f"{owner['login']}:{ref}", "ref": ref, "sha": sha, "user": owner, "repo": repo_json}


def commit(
    api: str, web: str, full_name: str, sha: str, *, date: str, message: str, parent: str | None, tree: str
) -> Json:
    """``commit`` (GET commits/REF, and a comparison's commits). The author and committer are a git
    identity no account matches, which GitHub writes as null."""
    url = f"{api}/repos/{full_name}"
    person = {"name": "Dev", "email": "dev@localhost", "date": date}
    return {
        "sha": sha,
        "node_id": f"C_{sha[:12]}",
        "url": f"{url}/commits/{sha}",
        "html_url": f"{web}/{full_name}/commit/{sha}",
        "comments_url": f"{url}/commits/{sha}/comments",
        "commit": {
            "url": f"{url}/git/commits/{sha}",
            "author": person,
            "committer": person,
            "message": message,
            "tree": {"sha": tree, "url": f"{url}/git/trees/{tree}"},
            "comment_count": 0,
            "verification": dict(_UNSIGNED),
        },
        "author": None,
        "committer": None,
        "parents": [] if parent is None else [_parent(api, web, full_name, parent, "commits")],
    }


def git_commit(
    api: str, web: str, full_name: str, sha: str, *, date: str, message: str, parent: str | None, tree: str
) -> Json:
    """``git-commit`` (GET git/commits/SHA)."""
    url = f"{api}/repos/{full_name}"
    person = {"name": "Dev", "email": "dev@localhost", "date": date}
    return {
        "sha": sha,
        "node_id": f"C_{sha[:12]}",
        "url": f"{url}/git/commits/{sha}",
        "html_url": f"{web}/{full_name}/commit/{sha}",
        "author": person,
        "committer": person,
        "message": message,
        "tree": {"sha": tree, "url": f"{url}/git/trees/{tree}"},
        "parents": [] if parent is None else [_parent(api, web, full_name, parent, "git/commits")],
        "verification": dict(_UNSIGNED),
    }


def _parent(api: str, web: str, full_name: str, sha: str, kind: str) -> Json:
    return {
        "sha": sha,
        "url": f"{api}/repos/{full_name}/{kind}/{sha}",
        "html_url": f"{web}/{full_name}/commit/{sha}",
    }


def comparison(
    api: str,
    web: str,
    full_name: str,
    basehead: str,
    *,
    base: Json,
    head: str,
    merge_base: Json,
    commits: list[Json],
    ahead_by: int,
    behind_by: int,
) -> Json:
    """``commit-comparison`` without its files (the caller adds them to the first page); COMMITS
    are the page's, AHEAD_BY counts them all."""
    status = (
        "identical" if not ahead_by and not behind_by
        else "ahead" if not behind_by else "behind" if not ahead_by else "diverged"
    )  # fmt: skip
    html = f"{web}/{full_name}/compare/{basehead}"
    owner = full_name.split("/")[0]
    return {
        "url": f"{api}/repos/{full_name}/compare/{basehead}",
        "html_url": html,
        "permalink_url": f"{web}/{full_name}/compare/{owner}:{base['sha'][:7]}...{owner}:{head[:7]}",
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "base_commit": base,
        "merge_base_commit": merge_base,
        "status": status,
        "ahead_by": ahead_by,
        "behind_by": behind_by,
        "total_commits": ahead_by,
        "commits": commits,
    }


def diff_entry(api: str, web: str, full_name: str, at: str, path: str, sha: str | None, status: str) -> Json:
    """``diff-entry``: one file of a comparison or of a pull request, as of commit AT."""
    return {
        "sha": sha,
        "filename": path,
        "status": status,
        "additions": 1,
        "deletions": 1,
        "changes": 2,
        "blob_url": f"{web}/{full_name}/blob/{at}/{quote(path)}",
        "raw_url": f"{web}/{full_name}/raw/{at}/{quote(path)}",
        "contents_url": f"{api}/repos/{full_name}/contents/{quote(path)}?ref={at}",
    }


def content_file(
    api: str, web: str, full_name: str, ref: str, path: str, sha: str, content: Mapping[str, Any]
) -> Json:
    """``content-file``: GET contents/PATH of a file; CONTENT holds its size, encoding and content."""
    url = f"{api}/repos/{full_name}/contents/{quote(path)}?ref={ref}"
    git = f"{api}/repos/{full_name}/git/blobs/{sha}"
    html = f"{web}/{full_name}/blob/{ref}/{quote(path)}"
    return {
        "type": "file",
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        **content,
        "url": url,
        "git_url": git,
        "html_url": html,
        "download_url": f"{web}/{full_name}/raw/{ref}/{quote(path)}",
        "_links": {"self": url, "git": git, "html": html},
    }


def blob(api: str, full_name: str, sha: str, size: int, content: str) -> Json:
    """``blob``: GET git/blobs/SHA, base64."""
    return {
        "sha": sha,
        "node_id": f"B_{sha[:12]}",
        "url": f"{api}/repos/{full_name}/git/blobs/{sha}",
        "size": size,
        "encoding": "base64",
        "content": content,
    }


def rate_limit(limit: int, used: int, reset: int) -> Json:
    """``rate-limit-overview``: GET /rate_limit (which is not counted); the core limit is the fake's."""
    core = {"limit": limit, "used": used, "remaining": max(limit - used, 0), "reset": reset}
    search = {"limit": 30, "used": 0, "remaining": 30, "reset": reset}
    graphql = {"limit": limit, "used": 0, "remaining": limit, "reset": reset}
    return {"resources": {"core": core, "search": search, "graphql": graphql}, "rate": dict(core)}
