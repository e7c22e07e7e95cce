"""Naming rules the bot relies on: Kubernetes names, repo-relative paths and app file names."""
from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Iterable
from typing import TypeGuard

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
YAML_SUFFIXES = (".yaml", ".yml")


def is_dns_label(name: object) -> TypeGuard[str]:
    """True for a valid Kubernetes DNS-1123 label (which also rules out `/`, `..` and spaces)."""
    return isinstance(name, str) and _DNS_LABEL.fullmatch(name) is not None


def is_yaml_name(name: str) -> bool:
    return name.endswith(YAML_SUFFIXES)


def file_stem(name: str) -> str:
    """`nextcloud-db-app.sops.yaml` -> `nextcloud-db-app`: drop `.yaml`/`.yml`, then `.sops`."""
    for suffix in YAML_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name[: -len(".sops")] if name.endswith(".sops") else name


def is_safe_relpath(path: str) -> bool:
    """A normalised, relative, POSIX path that stays inside the repository."""
    if not path or path.startswith("/") or "\\" in path or "\0" in path:
        return False
    return posixpath.normpath(path) == path and path != ".." and not path.startswith("../")


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest candidate, else an empty string."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def shown(value: object, limit: int = 60) -> str:
    """`value` quoted for a message, cut short: a hostile 900 KiB name must not become the message."""
    text = repr(value) if not isinstance(value, str) else "'" + value.replace("\n", "\\n") + "'"
    return text if len(text) <= limit else text[: limit - 2] + "…" + text[-1]
