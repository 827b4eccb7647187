"""What GitHub's pull-request JSON says, checked (`opdrift.github.pulls` lists and compares; this reads).

An item of a listing or a single pull request becomes a `PullRef` only when every field it needs is
there and in GitHub's form (a title stays data: whatever its author wrote); its ``html_url`` must be
the upstream's own pull request. `landed` is how PyTorch's merge and revert bots are read. What a
listing's answer is stored as on disk is the slim form (`slim_pull`): the fields `pull_ref` reads.
"""

from __future__ import annotations

import datetime
import email.utils
import re
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from opdrift.errors import SourceError
from opdrift.github.api import json_at
from opdrift.model import PullRef, PullState

SHA = re.compile(r"[0-9a-f]{40}")
# The labels PyTorch's merge bot adds (`landed`): ``Merged`` on the first landing, ``MergedX1``,
# ``MergedX2``... on later ones; the revert bot's ``Reverted``, ``RevertedX1``... Matched lower case.
_MERGED_LABEL = re.compile(r"merged(?:x\d+)?")
_REVERTED_LABEL = re.compile(r"reverted(?:x\d+)?")
# GitHub's form: sorts as it reads. ASCII digits only (``\d`` takes any script's: ``٢٠٢٦`` too).
WHEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
MAX_NUMBER = 10**10  # the state's bound on a pull request number (`opdrift.app.watch_state`)
_PULL_URL = re.compile(r"https://(?P<host>[A-Za-z0-9.-]+)/(?P<repo>[A-Za-z0-9._/-]+)/pull/(?P<n>[0-9]+)")


def pull_ref(item: Any, repo: str, api_url: str) -> PullRef:
    """ITEM, a pull request of REPO as the API at API_URL answered it (listed, fetched or stored
    slim), as a PullRef: every field checked (a SourceError names the first that is not)."""
    number = json_at(item, "number")
    if not isinstance(number, int) or isinstance(number, bool) or not 0 < number < MAX_NUMBER:
        raise SourceError("GitHub's pull request has no number", path=repo)

    def bad(what: str) -> SourceError:
        return SourceError(f"GitHub's pull request #{number} has {what}", path=repo)

    title, login = json_at(item, "title"), json_at(item, "user", "login")
    state, merged_at, draft = json_at(item, "state"), json_at(item, "merged_at"), json_at(item, "draft")
    labels = json_at(item, "labels")
    updated, url = json_at(item, "updated_at"), json_at(item, "html_url")
    head, base = json_at(item, "head", "sha"), json_at(item, "base", "sha")
    if not isinstance(title, str) or not isinstance(login, str):
        raise bad("no title or author")
    if state not in ("open", "closed") or not (merged_at is None or isinstance(merged_at, str)):
        raise bad("no state")
    if labels is None:
        labels = []
    if not isinstance(labels, list) or not all(isinstance(json_at(lb, "name"), str) for lb in labels):
        raise bad("labels that are not named")
    if not isinstance(updated, str) or not WHEN.fullmatch(updated):
        raise bad("no updated_at in GitHub's form")
    if not isinstance(url, str) or not own_url(url, number, repo, api_url):
        raise bad(f"an html_url that is not a link to {repo}'s pull request #{number}")
    if (
        not isinstance(head, str)
        or not SHA.fullmatch(head)
        or not isinstance(base, str)
        or not SHA.fullmatch(base)
    ):
        raise bad("no head or base commit sha")
    names = [json_at(lb, "name") for lb in labels]
    is_landed = landed(state, merged_at, names)
    shown: PullState = "merged" if is_landed else "open" if state == "open" else "closed"
    return PullRef(
        number=number,
        title=title,
        author=login,
        draft=draft is True,
        state=shown,
        updated_at=updated,
        html_url=url,
        head_sha=head,
        base_sha=base,
    )


def own_url(url: str, number: int, repo: str, api_url: str) -> bool:
    """Whether URL is pull request NUMBER of REPO, the upstream (as the state reads it back), on
    github.com when API_URL is api.github.com's. Another API (GitHub Enterprise Server, a test's
    server) names its own web host, which the API's URL does not tell."""
    m = _PULL_URL.fullmatch(url)
    public = (urlsplit(api_url).hostname or "").lower() == "api.github.com"
    return (
        m is not None
        and len(url) <= 200
        and (not public or m["host"].lower() == "github.com")
        and m["repo"].lower() == repo.lower()
        and int(m["n"]) == number
    )


def landed(state: str, merged_at: str | None, labels: Collection[str]) -> bool:
    """Whether a pull request landed: GitHub merged it (``merged_at``), or it is closed and carries
    more ``Merged*`` labels than ``Reverted*`` ones.

    PyTorch's merge bot (pytorch/pytorch .github/scripts/trymerge.py) pushes the commits to main
    itself, the message carrying ``Pull Request resolved: .../pull/N``; the push closes the pull
    request (merged_at stays null, pytorch/pytorch#102559) and the bot then adds ``Merged`` in a
    separate call (pytorch/pytorch#77005), ``MergedX1``, ``MergedX2``... on later landings. A revert
    adds ``Reverted`` (``RevertedX1``...) and reopens the pull request, and no label is ever taken
    off (pytorch/test-infra#8085): merged, reverted, then abandoned leaves a closed pull request that
    still carries ``Merged``. Label names compare case-insensitively, as GitHub's do."""
    if merged_at:
        return True
    if state != "closed":
        return False
    lower = [name.lower() for name in labels]
    merges = sum(1 for name in lower if _MERGED_LABEL.fullmatch(name))
    reverts = sum(1 for name in lower if _REVERTED_LABEL.fullmatch(name))
    return merges > reverts


def http_date(value: str | None) -> str | None:
    """An HTTP Date header in GitHub's ``updated_at`` form; None when it is absent or not a date."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_names(files: list[Any], repo: str) -> set[str]:
    """The paths a file list names: each file's, and a rename's old one (a rename away touches it)."""
    names = set()
    for item in files:
        name, old = json_at(item, "filename"), json_at(item, "previous_filename")
        if not isinstance(name, str) or not (old is None or isinstance(old, str)):
            raise SourceError("GitHub's file list has an entry with no filename", path=repo)
        names.add(name)
        if old is not None:
            names.add(old)
    return names


def stored_answer(value: Any) -> tuple[str, str | None, Any] | None:
    if not isinstance(value, dict) or "data" not in value:
        return None
    etag, link = value.get("etag"), value.get("link")
    if not isinstance(etag, str) or not etag or not (link is None or isinstance(link, str)):
        return None
    return etag, link, value["data"]


# The fields of a pull request `pull_ref` reads: all a list page's answer is stored as.
KEPT = ("number", "title", "state", "merged_at", "draft", "updated_at", "html_url", "labels")


def slim_pull(item: Any) -> Any:
    if not isinstance(item, dict):
        return item  # `pull_ref` refuses it, fresh or stored
    kept = {k: item[k] for k in KEPT if k in item and k != "labels"}
    labels = item.get("labels")
    # A label's name is all `pull_ref` reads (GitHub's label objects carry urls, colours, descriptions).
    kept["labels"] = [{"name": json_at(lb, "name")} for lb in labels] if isinstance(labels, list) else labels
    kept["user"] = {"login": json_at(item, "user", "login")}
    kept["head"] = {"sha": json_at(item, "head", "sha")}
    kept["base"] = {"sha": json_at(item, "base", "sha")}
    return kept


def slim_pulls(data: Any) -> Any:
    return [slim_pull(item) for item in data] if isinstance(data, list) else data
