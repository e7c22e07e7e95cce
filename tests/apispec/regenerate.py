"""Regenerate the trimmed API descriptions in this folder from the forges' official ones.

The tests check every recorded answer and event payload against these copies (tests/support/apischema.py,
tests/actions/test_apispec.py, and the fake servers in tests/support/fakes.py as they answer). Each copy keeps only
what wave-bot touches: the operations below, the webhook events the tests build, and every
component they reach through `$ref` (kept as `$ref`s, with the same JSON pointers as the source,
so that a copy reads like its source and can be diffed against a newer one).

Sources:

- GitHub REST: npm `@octokit/openapi`, `generated/api.github.com.json` (OpenAPI 3.0.3);
- GitHub webhooks: npm `@octokit/openapi-webhooks`, `generated/api.github.com.json` (OpenAPI 3.1);
- Gitea: the Swagger 2.0 description Gitea serves at `<server>/swagger.v1.json` (the rendered
  `templates/swagger/v1_json.tmpl` of a Gitea checkout; pass `--gitea-version` for the record).

Usage, from the project root:

    python tests/apispec/regenerate.py                    # npm-installs the pinned octokit packages
    python tests/apispec/regenerate.py --github-openapi PATH --github-webhooks PATH
    python tests/apispec/regenerate.py --gitea PATH/swagger.v1.json --gitea-version 1.24.0

With no `--github-*` paths the script runs `npm install` of the versions below into a temporary
directory (nothing is written to the project but the trimmed copies). Gitea is regenerated only
when `--gitea` is given. Then run `pytest tests/actions/test_apispec.py` and fix the fixtures it reports.
"""
from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OCTOKIT_OPENAPI = "23.0.2"
OCTOKIT_WEBHOOKS = "12.1.0"

# (method, path) of every REST call wave-bot makes, as each description spells the path.
GITHUB_OPERATIONS = [
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/user"),
]
# Errors every endpoint can answer with, documented or not (a 401 for a bad token, say).
GITHUB_EXTRA = ["#/components/schemas/basic-error", "#/components/schemas/validation-error"]
# The events the action runs on, with each pull_request action the bot acts on or skips in tests.
GITHUB_WEBHOOKS = ["pull-request-opened", "pull-request-synchronize", "pull-request-reopened",
                   "pull-request-labeled", "workflow-dispatch"]
GITEA_OPERATIONS = [
    ("get", "/repos/{owner}/{repo}/pulls/{index}"),
    ("get", "/repos/{owner}/{repo}/issues/{index}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{index}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{id}"),
    ("get", "/user"),
]
# Gitea's error bodies, and what its webhook payloads are made of (the payloads themselves are
# Go structs the swagger does not describe).
GITEA_EXTRA = ["#/definitions/APIError", "#/definitions/PullRequest", "#/definitions/Repository",
               "#/definitions/User"]


def pointer(doc: Any, ref: str) -> Any:
    """The node a local `$ref` ("#/a/b~1c") points at."""
    if not ref.startswith("#/"):
        raise SystemExit(f"only local $refs are supported, got {ref!r}")
    node = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def without_examples(node: Any) -> Any:
    """`node` without OpenAPI Example Objects (maps of named examples): they are documentation, and
    large. JSON Schema's own `examples` keyword (a list) is kept."""
    if isinstance(node, dict):
        return {k: without_examples(v) for k, v in node.items() if not (k == "examples" and isinstance(v, dict))}
    if isinstance(node, list):
        return [without_examples(v) for v in node]
    return node


def place(out: dict[str, Any], ref: str, value: Any) -> None:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/")]
    node = out
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def trim(doc: dict[str, Any], roots: Iterable[str], keep: Iterable[str], source: dict[str, str]) -> dict[str, Any]:
    """A copy of `doc` with only the nodes at `roots` (JSON pointers) and everything they reference."""
    head = {k: doc[k] for k in ("openapi", "swagger", "info", "basePath") if k in doc}
    out: dict[str, Any] = copy.deepcopy(head)
    out["info"] = {**out.get("info", {}), "x-trimmed-from": source}
    pending = [*roots, *keep]
    seen: set[str] = set()
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        try:
            node = without_examples(pointer(doc, ref))
        except (KeyError, TypeError):
            raise SystemExit(f"{source.get('file', 'the source')} has no {ref}") from None
        place(out, ref, node)
        pending.extend(refs(node))
    return out


def escape(path: str) -> str:
    return path.replace("~", "~0").replace("/", "~1")


def operation_refs(paths_key: str, operations: Iterable[tuple[str, str]]) -> list[str]:
    return [f"#/{paths_key}/{escape(path)}/{method}" for method, path in operations]


def write(name: str, trimmed: dict[str, Any]) -> None:
    path = HERE / name
    path.write_text(json.dumps(trimmed, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path.relative_to(HERE.parent.parent)} ({path.stat().st_size // 1024} KiB)")


def npm_install(target: Path) -> Path:
    specs = [f"@octokit/openapi@{OCTOKIT_OPENAPI}", f"@octokit/openapi-webhooks@{OCTOKIT_WEBHOOKS}"]
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(target), *specs], check=True)
    return target / "node_modules" / "@octokit"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--github-openapi", type=Path, help="@octokit/openapi's generated/api.github.com.json")
    parser.add_argument("--github-webhooks", type=Path,
                        help="@octokit/openapi-webhooks's generated/api.github.com.json")
    parser.add_argument("--gitea", type=Path, help="Gitea's swagger.v1.json (or a rendered v1_json.tmpl)")
    parser.add_argument("--gitea-version", default="", help="the Gitea version (or commit) --gitea comes from")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="apispec-") as tmp:
        if args.github_openapi is None or args.github_webhooks is None:
            octokit = npm_install(Path(tmp))
            args.github_openapi = args.github_openapi or octokit / "openapi/generated/api.github.com.json"
            args.github_webhooks = args.github_webhooks or octokit / "openapi-webhooks/generated/api.github.com.json"
        rest = load(args.github_openapi)
        write("github-rest.json", trim(rest, operation_refs("paths", GITHUB_OPERATIONS), GITHUB_EXTRA,
                                       {"package": f"@octokit/openapi@{rest['info']['version']}",
                                        "file": "generated/api.github.com.json"}))
        hooks = load(args.github_webhooks)
        write("github-webhooks.json", trim(hooks, [f"#/webhooks/{name}/post" for name in GITHUB_WEBHOOKS], [],
                                           {"package": f"@octokit/openapi-webhooks@{hooks['info']['version']}",
                                            "file": "generated/api.github.com.json"}))
    if args.gitea is not None:
        gitea = load(args.gitea)
        write("gitea.json", trim(gitea, operation_refs("paths", GITEA_OPERATIONS), GITEA_EXTRA,
                                 {"file": "templates/swagger/v1_json.tmpl", "version": args.gitea_version}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
