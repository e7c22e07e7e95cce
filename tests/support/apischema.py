"""The forges' own API descriptions as validators for what the tests pretend the forges send.

tests/apispec/ holds trimmed copies of GitHub's OpenAPI description (@octokit/openapi), GitHub's
webhook schemas (@octokit/openapi-webhooks) and Gitea's swagger (see tests/apispec/regenerate.py).
`response_errors` checks an answer of one REST operation, `event_errors` an event payload; both
return human-readable problems, empty when the JSON is what the real forge could have sent.

Two dialects are made JSON Schema before use, without changing what they mean:
- OpenAPI 3.0 (GitHub REST) writes "may be null" as `nullable: true`;
- Gitea's swagger is generated from Go structs and cannot say which fields are pointers, slices or
  maps, all of which Go encodes as `null` when unset (`"milestone": null`, `"assignees": null`,
  `"merged_at": null`). A property that is an object, an array or a date-time there accepts null;
  strings, numbers and booleans keep their type.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPECS = Path(__file__).resolve().parent.parent / "apispec"
URIS = {"github-rest": "urn:apispec:github-rest", "github-webhooks": "urn:apispec:github-webhooks",
        "gitea": "urn:apispec:gitea"}
# Answers no operation documents but every endpoint can give: GitHub's and Gitea's error objects.
# Not Gitea's 422: a request its form binding rejects gets a list of binding errors, undescribed.
FALLBACK_ERROR = {"github": ("github-rest", "#/components/schemas/basic-error"),
                  "gitea": ("gitea", "#/definitions/APIError")}
NO_FALLBACK = {("gitea", 422)}
# The REST calls the bot makes, by the fake servers' route names (tests/support/fakes.py).
OPERATIONS = {
    "github": {"pull": ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
               "list": ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
               "create": ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
               "edit": ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
               "user": ("get", "/user")},
    "gitea": {"pull": ("get", "/repos/{owner}/{repo}/pulls/{index}"),
              "list": ("get", "/repos/{owner}/{repo}/issues/{index}/comments"),
              "create": ("post", "/repos/{owner}/{repo}/issues/{index}/comments"),
              "edit": ("patch", "/repos/{owner}/{repo}/issues/comments/{id}"),
              "user": ("get", "/user")},
}
# What Gitea's webhook payload structs (modules/structs/hook.go) hold that its swagger describes.
GITEA_EVENT_PARTS = {"pull_request": {"pull_request": "PullRequest", "repository": "Repository", "sender": "User"},
                     "workflow_dispatch": {"repository": "Repository", "sender": "User"}}
GITEA_EVENT_KEYS = {"pull_request": {"action", "number", "pull_request", "repository", "sender"},
                    "workflow_dispatch": {"workflow", "ref", "inputs", "repository", "sender"}}


def _nullable(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` as JSON Schema."""
    if isinstance(node, dict):
        converted = {k: _nullable(v) for k, v in node.items() if not (k == "nullable" and v is True)}
        return {"anyOf": [converted, {"type": "null"}]} if node.get("nullable") is True else converted
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    return node


def _discriminated(node: Any) -> Any:
    """OpenAPI's `discriminator` enforced: with `user_view_type: public` the object must be a
    public-user, not whichever of the `oneOf` alternatives happens to fit (JSON Schema ignores it)."""
    if isinstance(node, list):
        return [_discriminated(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _discriminated(v) for k, v in node.items()}
    mapping = node.get("discriminator", {}).get("mapping") if isinstance(node.get("discriminator"), dict) else None
    if "oneOf" in node and mapping:
        prop = node["discriminator"]["propertyName"]
        out["allOf"] = [*out.get("allOf", []), *(
            {"if": {"properties": {prop: {"const": value}}, "required": [prop]}, "then": {"$ref": target}}
            for value, target in mapping.items())]
    return out


# Where the descriptions are known to be wrong about the real API, each with the upstream report:
# a PR whose head repository (a fork) was deleted has `"head": {"repo": null, ...}`, in REST
# answers and in webhook payloads alike (github/rest-api-description#424, #1811).
DELETED_HEAD = "#/components/schemas/pull-request/properties/head/properties/repo"
MAY_BE_NULL = {"github-rest": [DELETED_HEAD], "github-webhooks": [DELETED_HEAD],
               # Go pointers to strings that Gitea leaves unset (modules/structs/pull.go: MergedCommitID *string)
               "gitea": ["#/definitions/PullRequest/properties/merge_commit_sha"]}


def _patched(doc: dict[str, Any], name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(doc))
    for pointer in MAY_BE_NULL[name]:
        *parents, last = pointer[2:].split("/")
        node = out
        for part in parents:
            node = node[part]
        node[last] = {"anyOf": [node[last], {"type": "null"}]}
    return out


def _go_nil(node: Any) -> Any:
    """Gitea's Go-generated schemas with Go's nil encodings allowed (see the module docstring)."""
    if isinstance(node, list):
        return [_go_nil(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _go_nil(v) for k, v in node.items()}
    if isinstance(node.get("properties"), dict):
        for name, prop in out["properties"].items():
            if "$ref" in prop or prop.get("type") in ("object", "array") or prop.get("format") == "date-time":
                out["properties"][name] = {"anyOf": [prop, {"type": "null"}]}
    return out


@functools.cache
def spec(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SPECS / f"{name}.json").read_text())
    return data


@functools.cache
def _registry() -> Registry:
    prepare = {"github-rest": lambda d: _discriminated(_nullable(d)), "github-webhooks": lambda d: d,
               "gitea": _go_nil}
    resources = [(URIS[name], Resource(contents=fix(_patched(spec(name), name)), specification=DRAFT202012))
                 for name, fix in prepare.items()]
    return Registry().with_resources(resources)


@functools.cache
def _validator(name: str, pointer: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": URIS[name] + pointer}, registry=_registry(), format_checker=FormatChecker())


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _follow(name: str, pointer: str) -> tuple[str, Any]:
    """The node at `pointer` in spec `name`, following a `$ref` that the node itself is."""
    node: Any = spec(name)
    for part in pointer[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    if isinstance(node, dict) and "$ref" in node:
        return _follow(name, node["$ref"])
    return pointer, node


def _fallback(platform: str, status: int) -> tuple[str, str] | None:
    return FALLBACK_ERROR[platform] if status >= 400 and (platform, status) not in NO_FALLBACK else None


def response_schema(platform: str, route: str, status: int) -> tuple[str, str] | None:
    """(spec, JSON pointer) of the schema a `status` answer to `route` must match: the operation's
    own, else the forge's error object for an error status; None when nothing describes the body."""
    method, path = OPERATIONS[platform][route]
    name = "github-rest" if platform == "github" else "gitea"
    responses = spec(name)["paths"][path][method]["responses"]
    if str(status) not in responses:
        return _fallback(platform, status)
    where, response = _follow(name, f"#/paths/{_escape(path)}/{method}/responses/{status}")
    if platform == "github":
        if "application/json" not in response.get("content", {}):
            return _fallback(platform, status)
        return name, f"{where}/content/application~1json/schema"
    if "schema" not in response:
        return _fallback(platform, status)
    return name, f"{where}/schema"


def _errors(name: str, pointer: str, instance: Any, label: str) -> list[str]:
    found = sorted(_validator(name, pointer).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{label}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in found]


def response_errors(platform: str, route: str, status: int, body: Any) -> list[str]:
    """What in `body` (parsed JSON) the real API could not answer to `route` with `status`."""
    target = response_schema(platform, route, status)
    if target is None:
        return []
    return _errors(*target, body, f"{platform} {route} {status}")


def request_errors(platform: str, route: str, body: Any) -> list[str]:
    """What in a request body (parsed JSON) sent to `route` the real API would not accept."""
    method, path = OPERATIONS[platform][route]
    where = f"#/paths/{_escape(path)}/{method}"
    if platform == "github":
        return _errors("github-rest", f"{where}/requestBody/content/application~1json/schema", body,
                       f"github {route} request")
    parameters = spec("gitea")["paths"][path][method].get("parameters", [])
    (index,) = [i for i, parameter in enumerate(parameters) if parameter["in"] == "body"]
    return _errors("gitea", f"{where}/parameters/{index}/schema", body, f"gitea {route} request")


def webhook_pointer(event: str, action: str | None) -> str:
    key = "workflow-dispatch" if event == "workflow_dispatch" else f"pull-request-{action}"
    return f"#/webhooks/{key}/post/requestBody/content/application~1json/schema"


def event_errors(platform: str, event: str, payload: dict[str, Any]) -> list[str]:
    """What in an event payload the platform could not have sent for `event`."""
    if platform == "github":
        return _errors("github-webhooks", webhook_pointer(event, payload.get("action")), payload,
                       f"github {event} event")
    problems = [f"gitea {event} event: missing {key!r}" for key in sorted(GITEA_EVENT_KEYS[event] - payload.keys())]
    for key, definition in GITEA_EVENT_PARTS[event].items():
        if key in payload:
            problems += _errors("gitea", f"#/definitions/{definition}", payload[key], f"gitea {event} event {key}")
    return problems
