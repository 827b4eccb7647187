"""Named errors a user can act on.

The CLI turns every `OpdriftError` into one line, ``path:line: message``, and exit code 2.
Validation raises these instead of using ``assert``, because ``python -O`` strips asserts.
"""

from __future__ import annotations


class OpdriftError(Exception):
    """A problem with the user's input or environment, printed as one line."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    def where(self) -> str:
        if self.path is None:
            return ""
        if self.line is None:
            return f"{self.path}: "
        return f"{self.path}:{self.line}: "

    def __str__(self) -> str:
        return f"{self.where()}{self.message}"


class SourceError(OpdriftError):
    """A SOURCE could not be found or read (missing file, bad revision, wheel without the files)."""


class GitError(SourceError):
    """git failed: unknown revision, not a repository, or a missing path at that revision."""


class YamlError(OpdriftError):
    """native_functions.yaml (or tags.yaml / derivatives.yaml) is not valid YAML or not shaped as expected."""


class EntryError(YamlError):
    """One entry of native_functions.yaml is malformed (no func, wrong value types, bad autogen)."""


class SchemaError(OpdriftError):
    """A function schema string does not follow the grammar."""


class SnapshotError(OpdriftError):
    """A stored snapshot is unreadable, of an unknown format version, or inconsistent."""


class WriteError(OpdriftError):
    """An output file (a snapshot, a report, a gated list, init's files) cannot be written."""


class ConfigError(OpdriftError):
    """The bot's config, overrides or allow-list file is malformed."""


class PublishError(OpdriftError):
    """GitHub refused or failed a request in a way the user must fix (401, 403, 404, exhausted retries)."""


class WorkflowError(OpdriftError):
    """A workflow step was given values it cannot act on (bad PR number, unknown revision, no repository)."""


class ApiLimitError(OpdriftError):
    """A GitHub API answer went past a bound: a URL off the configured API root, a body over the size
    cap, more pages or requests than a call may make, or no complete answer before the deadline."""
