"""The Flux Kustomization CRD (tests/data, kustomize-controller's own) as a validator of what wave-bot
writes or tells a user to write.

The structural schema alone would let through what the API server drops or refuses: it does not
require `apiVersion` or `kind`, and it prunes unknown fields silently (a misspelt `prune` would
vanish and Flux would default it to false). So the apiVersion must be one the CRD serves, the kind
its own, and no field may be unknown to the schema.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from bot.yamlio import documents as yamlio

CRD_FILE = Path(__file__).resolve().parent.parent / "data" / "flux-kustomization-crd.yaml"
_CRD = yamlio.load(CRD_FILE.read_bytes(), str(CRD_FILE))[0].value
VERSIONS = {f"{_CRD['spec']['group']}/{v['name']}": v["schema"]["openAPIV3Schema"]
            for v in _CRD["spec"]["versions"] if v.get("served")}
KIND = _CRD["spec"]["names"]["kind"]
SCHEMA = VERSIONS[f"{_CRD['spec']['group']}/v1"]


def _unknown(value: Any, schema: dict[str, Any], at: str) -> list[str]:
    if isinstance(value, dict) and "properties" in schema:
        out = [f"{at}.{k}" for k in value if k not in schema["properties"]]
        return out + [u for k, v in value.items() if k in schema["properties"]
                      for u in _unknown(v, schema["properties"][k], f"{at}.{k}")]
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [u for i, v in enumerate(value) for u in _unknown(v, schema["items"], f"{at}[{i}]")]
    return []


def validate(value: Any) -> dict[str, Any]:
    """`value` as the API server would accept it (AssertionError or ValidationError otherwise)."""
    assert isinstance(value, dict), value
    assert value.get("apiVersion") in VERSIONS, f"apiVersion {value.get('apiVersion')!r} is not served"
    assert value.get("kind") == KIND, f"kind {value.get('kind')!r} is not {KIND}"
    schema = VERSIONS[value["apiVersion"]]
    jsonschema.validate(value, schema)
    # metadata is the API server's own (ObjectMeta): the CRD leaves it open.
    unknown = [u for u in _unknown(value, schema, "") if not u.startswith(".metadata.")]
    assert not unknown, f"fields the CRD does not know (the API server prunes them): {unknown}"
    return value
