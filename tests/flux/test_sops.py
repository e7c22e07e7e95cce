"""The example's Secrets are really SOPS-encrypted, and wave-bot's moves keep them decryptable.

SOPS authenticates the whole document (the unencrypted fields too) with a MAC, so a mover that
re-serialised a file, or touched one byte of it, would leave Flux a Secret it cannot decrypt. Every
check here runs the real `sops` binary with the example's demo key.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import responses

from conftest import EXAMPLE, git, installed_tool, service, write_files
from support.actionkit import BRANCH, action_env, push_pr_branch, run_action
from support.fakes import SERVERS, TOKEN
from support.sopskit import DEMO_KEY, decrypt, demo_recipient, load, sops

SECRETS = sorted(p.relative_to(EXAMPLE).as_posix() for p in (EXAMPLE / "apps").rglob("*.sops.yaml"))
# gitea gaining a database moves gitea one wave later, and gitea-actions (anchored above it) too.
GITEA_NEEDS_A_DB = {"catalog/gitea.yaml": service("gitea", "gitea-db")}
MOVED = {
    "apps/wave-0/gitea-bootstrap-secret.sops.yaml": "apps/wave-1/gitea-bootstrap-secret.sops.yaml",
    "apps/wave-1/gitea-actions-runner-secret.sops.yaml": "apps/wave-2/gitea-actions-runner-secret.sops.yaml",
}
PRUNE_DISABLED = "  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n"


@pytest.fixture
def protected_repo(example_repo: Path) -> Path:
    """The example after the hazard report's safe procedure: the namespaces and the volume that
    this move would delete carry the prune opt-out on main, so the move itself passes the checks."""
    for path, objects in {"apps/wave-0/gitea.yaml": (("Namespace", "gitea"), ("PersistentVolumeClaim", "gitea-data")),
                          "apps/wave-1/gitea-actions.yaml": (("Namespace", "gitea-actions"),)}.items():
        text = (example_repo / path).read_text()
        for kind, name in objects:
            head = f"kind: {kind}\nmetadata:\n  name: {name}\n"
            assert text.count(head) == 1, (path, kind, name)
            text = text.replace(head, head + PRUNE_DISABLED)
        (example_repo / path).write_text(text)
    git(example_repo, "commit", "-q", "-am", "protect what the gitea move would delete")
    git(example_repo, "push", "-q", "origin", "main")
    return example_repo


def test_the_example_ships_its_secrets_and_a_loudly_labelled_demo_key() -> None:
    assert len(SECRETS) == 6
    assert set(MOVED) <= set(SECRETS)
    key = DEMO_KEY.read_text()
    assert key.startswith("# !!! DEMO KEY - PUBLIC - NEVER USE IT FOR REAL SECRETS !!!")
    assert "AGE-SECRET-KEY-1" in key
    assert load((EXAMPLE / ".sops.yaml").read_text())["creation_rules"][0]["age"] == demo_recipient()
    assert "public demo key" in (EXAMPLE / "README.md").read_text()


@pytest.mark.parametrize("rel", SECRETS)
def test_every_example_secret_decrypts_with_the_demo_key(rel: str) -> None:
    encrypted = load((EXAMPLE / rel).read_text())
    plain = decrypt(EXAMPLE / rel)
    assert "sops" not in plain
    assert [a["recipient"] for a in encrypted["sops"]["age"]] == [demo_recipient()]
    assert (plain["kind"], plain["metadata"]) == ("Secret", encrypted["metadata"])
    assert plain["stringData"].keys() == encrypted["stringData"].keys()
    for key, value in encrypted["stringData"].items():
        assert value.startswith("ENC[AES256_GCM,"), key
        assert isinstance(plain["stringData"][key], str) and plain["stringData"][key], key
        assert not plain["stringData"][key].startswith("ENC["), key


def test_one_changed_byte_breaks_the_mac(tmp_path: Path) -> None:
    """What the decrypt checks would catch: a document edited after encryption (here only its
    unencrypted name) no longer decrypts."""
    copy = tmp_path / "secret.sops.yaml"
    text = (EXAMPLE / SECRETS[0]).read_text()
    name = load(text)["metadata"]["name"]
    copy.write_text(text.replace(f"name: {name}", f"name: {name[:-1]}X", 1))
    result = sops("decrypt", str(copy))
    assert result.returncode != 0 and "MAC mismatch" in result.stderr


def test_the_examples_sops_config_encrypts_new_secrets_to_the_demo_key(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE / ".sops.yaml", tmp_path / ".sops.yaml")
    write_files(tmp_path, {"apps/tautulli-secret.sops.yaml":
                           "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tautulli\n  namespace: tautulli\n"
                           "stringData:\n  api-key: 0123456789abcdef\n"})
    # sops finds .sops.yaml from the working directory, as a user running it in the example would.
    result = sops("encrypt", "--in-place", "apps/tautulli-secret.sops.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    encrypted = load((tmp_path / "apps/tautulli-secret.sops.yaml").read_text())
    assert [a["recipient"] for a in encrypted["sops"]["age"]] == [demo_recipient()]
    assert encrypted["metadata"]["name"] == "tautulli"  # only data/stringData are encrypted
    assert encrypted["stringData"]["api-key"].startswith("ENC[")
    assert decrypt(tmp_path / "apps/tautulli-secret.sops.yaml")["stringData"] == {"api-key": "0123456789abcdef"}


def test_secrets_still_decrypt_after_apply_moved_them(protected_repo: Path, tmp_path: Path) -> None:
    before = {rel: (protected_repo / rel).read_bytes() for rel in SECRETS}
    write_files(protected_repo, GITEA_NEEDS_A_DB)
    result = subprocess.run([str(installed_tool("wave-bot")), "apply", str(protected_repo)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

    after = {p.relative_to(protected_repo).as_posix() for p in (protected_repo / "apps").rglob("*.sops.yaml")}
    assert after == {MOVED.get(rel, rel) for rel in SECRETS}
    for rel in SECRETS:
        now = MOVED.get(rel, rel)
        assert (protected_repo / now).read_bytes() == before[rel], f"{rel} -> {now} changed its bytes"
        assert decrypt(protected_repo / now)["metadata"] == load(before[rel].decode())["metadata"]


@pytest.mark.parametrize("platform", ["github", "gitea"])
def test_secrets_still_decrypt_in_the_commit_the_bot_pushed(
    platform: str, protected_repo: Path, tmp_path: Path
) -> None:
    origin = protected_repo.parent / "homelab-origin.git"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        server = SERVERS[platform](rsps)
        base, head = push_pr_branch(protected_repo, server.pulls[7], GITEA_NEEDS_A_DB, "gitea: use a CNPG database",
                                    git)
        workspace = tmp_path / "workspace"
        git(tmp_path, "clone", "-q", str(origin), str(workspace))
        git(workspace, "checkout", "-q", "--detach", head)
        code, log = run_action(action_env(platform, server.pulls[7], tmp_path, workspace, api_url=server.api,
                                          token=TOKEN))
    assert code == 0, log

    pushed = git(origin, "rev-parse", BRANCH).strip()
    assert git(origin, "rev-parse", f"{pushed}~1").strip() == head  # the bot's own commit on the PR head
    tree = set(git(origin, "ls-tree", "-r", "--name-only", pushed).split())
    pushed_secrets = {p for p in tree if p.startswith("apps/") and p.endswith(".sops.yaml")}
    assert pushed_secrets == {MOVED.get(rel, rel) for rel in SECRETS}
    for rel in SECRETS:
        now = MOVED.get(rel, rel)
        # the same blob: git stored the moved file byte for byte
        assert git(origin, "rev-parse", f"{pushed}:{now}") == git(origin, "rev-parse", f"{base}:{rel}"), rel
        checked_out = tmp_path / "pushed" / now
        checked_out.parent.mkdir(parents=True, exist_ok=True)
        checked_out.write_bytes(subprocess.run(["git", "cat-file", "blob", f"{pushed}:{now}"], cwd=origin,
                                               capture_output=True, check=True).stdout)
        assert decrypt(checked_out)["kind"] == "Secret"

