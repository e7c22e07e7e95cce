"""What the run needs to know of each forge before talking to it: how its runner shows itself, where
its API lives by default, and who commits. One record per forge, chosen once from `PLATFORMS`.

Kept apart from the implementations so that reading the event imports neither PyGithub nor requests.
"""
from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from bot.errors import WaveBotError


@dataclass(frozen=True)
class Platform:
    name: str
    marker: str | None  # the variable its runner sets to "true"; None: the forge assumed when none is set
    api_path: str | None  # the API under the server URL; None: `api_url` as it is
    api_url: str
    committer: str  # the commit author's name
    committer_email: str  # its address; {host} is the server's host name

    def default_api(self, server_url: str) -> str:
        return f"{server_url}{self.api_path}" if self.api_path is not None else self.api_url

    def email(self, server_url: str) -> str:
        host = urllib.parse.urlsplit(server_url).hostname or "gitea.invalid"
        return self.committer_email.format(host=host)


PLATFORMS: dict[str, Platform] = {
    # The id-prefixed noreply address is the one GitHub links to its Actions bot.
    "github": Platform("github", None, None, "https://api.github.com", "github-actions[bot]",
                       "41898282+github-actions[bot]@users.noreply.github.com"),
    "gitea": Platform("gitea", "GITEA_ACTIONS", "/api/v1", "", "flux-wave-bot", "flux-wave-bot@noreply.{host}"),
}


def is_true(value: str | None) -> bool:
    return (value or "").lower() == "true"


def platform(name: str) -> Platform:
    found = PLATFORMS.get(name)
    if found is None:
        raise WaveBotError(f"unknown forge platform {name!r}", hint=f"use one of: {', '.join(sorted(PLATFORMS))}")
    return found


def detect(env: Mapping[str, str]) -> Platform:
    """The forge whose runner set its marker; GitHub when none did (it sets only GITHUB_* variables)."""
    marked = [p for p in PLATFORMS.values() if p.marker is not None and is_true(env.get(p.marker))]
    return marked[0] if marked else next(p for p in PLATFORMS.values() if p.marker is None)


def in_actions(env: Mapping[str, str]) -> bool:
    """Whether an Actions runner started us: every runner sets GITHUB_ACTIONS (Gitea's too, plus its
    own marker) and hands over the event payload in GITHUB_EVENT_PATH. One rule for `run`'s gate and
    for the CLI's `::error::` annotations."""
    markers = ["GITHUB_ACTIONS", *(p.marker for p in PLATFORMS.values() if p.marker)]
    return any(is_true(env.get(m)) for m in markers) or bool(env.get("GITHUB_EVENT_PATH"))
