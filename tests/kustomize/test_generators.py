"""bot.kustomize.generators: the ConfigMaps and Secrets a kustomization generates are named as kubectl names them."""
from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from bot.kustomize.build import build
from bot.kustomize.spec import Unsupported
from bot.repo.git import GitTree

from conftest import installed_tool

KUSTOMIZATION = """namespace: media
configMapGenerator:
  - name: files
    files: [settings.conf, renamed=settings.conf]
    literals: ["HTML=<b>&amp;</b>", "QUOTED='x'"]
  - name: env
    envs: [app.env]
  - name: fixed
    literals: [a=b]
    options:
      disableNameSuffixHash: true
      labels:
        app: fixed
secretGenerator:
  - name: token
    literals: [token=s3cr3t]
  - name: tls
    type: kubernetes.io/tls
    files: [tls.crt=settings.conf, tls.key=app.env]
"""


def test_generated_names_and_hashes_are_kubectls(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"app/kustomization.yaml": KUSTOMIZATION, "app/settings.conf": "port: 80 # <&>\n",
                      "app/app.env": "# comment\nMODE=fast\n\nLEVEL=\"3\"\n"})
    result = subprocess.run([str(installed_tool("kubectl")), "kustomize", str(repo / "app")], capture_output=True,
                            text=True, check=True)
    expected = [(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
                for d in yaml.safe_load_all(result.stdout)]
    got = [(o.id.kind, o.id.namespace, o.id.name) for o in build(GitTree(str(repo), "HEAD"), "app").objects]
    assert sorted(got) == sorted(expected)
    assert len({n for _, _, n in got}) == 5 and ("ConfigMap", "media", "fixed") in got


def test_a_merge_generator_is_not_guessed(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"app/kustomization.yaml": "configMapGenerator:\n  - name: x\n    behavior: merge\n"
                                                "    literals: [a=b]\n"})
    with pytest.raises(Unsupported) as caught:
        build(GitTree(str(repo), "HEAD"), "app")
    assert "behavior: merge" in caught.value.message and caught.value.path == "app/kustomization.yaml"

