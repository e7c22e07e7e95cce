"""Real Flux as the oracle: etcd, kube-apiserver, kube-controller-manager and kustomize-controller on
loopback, playing a repository's revisions as source-controller would serve them.

The binaries are the ones `oracle/build` makes from the published Go modules (versions in
oracle/versions); without them `require_binaries()` skips, or fails where WAVE_BOT_REQUIRE_LIVEFLUX=1
(.ci/run sets it after building them).

What runs, and what stands in for what does not:
- etcd (one member, loopback, no fsync), kube-apiserver (a static token with system:masters,
  AlwaysAllow, an audit log of every delete), kube-controller-manager with only the namespace,
  garbage-collector and PVC-protection controllers, and kustomize-controller out of cluster
  (KUBECONFIG, a short --requeue-dependency).
- source-controller does not run: each revision is a tar.gz of the repository's files served over
  local HTTP, and the harness writes the GitRepository `flux-system` status as source-controller
  would (artifact url, revision `main@sha1:…`, `sha256:` digest, lastUpdateTime; Ready=True).
- No kubelet, scheduler, volume binder or workload controller runs: nothing becomes a Pod. While
  it waits for a revision, the harness writes the status those would: every Deployment and StatefulSet rolled out
  and available, every claim Bound, and every HelmRelease, Flux source (but the GitRepository it
  serves) and object of a permissive CRD Ready at its generation, as their controllers would; so
  kustomize-controller's health checks (`wait: true`, `healthChecks`, kstatus) pass once an object
  is applied. What this cannot show: a Kustomization
  held back by a workload that never becomes healthy (its dependents then wait on it). A Flux
  Kustomization that never becomes Ready (its source is missing) does hold back the wave that
  health-checks it, as in a real cluster: `play(..., health_timeout="15s")` caps such waves'
  `spec.timeout` in what is served, so their health checks fail in seconds rather than minutes
  (when they fail changes nothing that is applied or pruned, only how long the test waits).
- Kinds the control plane does not serve get a permissive CRD (any spec; cluster-scoped for a
  `Cluster*` or `*Class` kind or one whose objects the repository never gives a namespace, nor
  applies where one is set, else namespaced; every version a revision names), named by the
  repository's objects: `HelmRelease` among them, whose release helm-controller would install and
  uninstall: it does not run, so a chart's objects never exist and their uninstall is not observed.
- Test fixtures abbreviate some objects (a Deployment or a claim without a spec) that the API
  server would refuse; the artifact fills the smallest valid spec in where one is missing (nothing
  of identity, labels or annotations changes). Namespaces that objects name but no revision defines
  are created beforehand, as an unmanaged part of the cluster, and so is an empty ConfigMap or
  Secret for each `postBuild.substituteFrom` referent the repository does not hold (placeholders).

What the API server deleted is read from its audit log: a `delete` names one object; the namespace
controller's `deletecollection` is logged with the objects it returned.
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import http.client
import http.server
import io
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

PROJECT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = PROJECT / "oracle" / "versions"
NAMESPACE = "flux-system"
FLUX_GROUP = "kustomize.toolkit.fluxcd.io"
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease", NAMESPACE}
POLL = 0.15
"""Seconds between two looks at the cluster while waiting."""
SETTLE = 0.5
"""Seconds a settled state must hold (the same Kustomization states and no new delete in the audit
log) before a revision counts as handled: each condition is explicit, this only guards the reads."""
SOPS_AGE_SECRET = "sops-age"
"""The Secret in flux-system kustomize-controller falls back to for SOPS age keys (`--sops-age-secret`, as
repositories that bootstrap with the flux-operator configure it); a test creates it where it holds the key."""
READY_BY_OTHERS = {("helm.toolkit.fluxcd.io", "HelmRelease"), ("source.toolkit.fluxcd.io", "OCIRepository"),
                   ("source.toolkit.fluxcd.io", "HelmRepository"), ("source.toolkit.fluxcd.io", "GitRepository"),
                   ("source.toolkit.fluxcd.io", "Bucket"), ("source.toolkit.fluxcd.io", "HelmChart")}
"""Flux kinds whose controllers do not run here: the harness writes them Ready (see the module's docstring)."""
TOKEN = "wave-bot-oracle-admin"  # noqa: S105 - a loopback-only test cluster's token

_local = threading.local()


def _yaml() -> YAML:
    """This thread's YAML reader and writer: ruamel keeps a parser's state on the instance, and the
    lane plays several scenarios at once."""
    found: YAML | None = getattr(_local, "yaml", None)
    if found is None:
        found = _local.yaml = YAML(typ="safe", pure=True)
        found.default_flow_style = False
    return found


def versions() -> dict[str, str]:
    """oracle/versions: NAME=value lines (the one place the versions are named)."""
    out = {}
    for line in VERSIONS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            out[name] = value
    return out


def cache_dir() -> Path:
    """Where oracle/build puts the binaries of these versions (the same key as the script's)."""
    v = versions()
    key = (f"k8s-{v['KUBERNETES']}_etcd-{v['ETCD']}_kc-{v['KUSTOMIZE_CONTROLLER']}"
           f"_sc-{v['SOURCE_CONTROLLER']}")
    base = os.environ.get("FLUX_WAVE_BOT_ORACLE_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "flux-wave-bot" / "oracle")
    return Path(base) / key


BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kustomize-controller")


def require_binaries() -> Path:
    """The directory holding the built binaries and CRDs; skip (fail under WAVE_BOT_REQUIRE_LIVEFLUX=1)
    when oracle/build has not made them."""
    where = cache_dir()
    missing = [b for b in BINARIES if not (where / b).is_file()]
    if not (where / "crds").is_dir():
        missing.append("crds/")
    if missing:
        why = f"the live Flux lane needs {', '.join(missing)} in {where}: run oracle/build"
        if os.environ.get("WAVE_BOT_REQUIRE_LIVEFLUX") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return where


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True, order=True)
class Ref:
    """An object as the API names it (group "" for the core group), as fluxsim's Rid spells it."""

    group: str
    kind: str
    namespace: str
    name: str


@dataclass
class Artifacts:
    """A directory served over local HTTP: one tar.gz per revision."""

    root: Path
    server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> str:
        root = self.root

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def _complete(doc: Any) -> Any:
    """The smallest valid spec where a fixture left a Deployment's or a claim's out."""
    if not isinstance(doc, dict) or "spec" in doc:
        return doc
    name = str((doc.get("metadata") or {}).get("name", "x"))
    if doc.get("kind") == "Deployment" and str(doc.get("apiVersion")) == "apps/v1":
        labels = {"wave-bot.oracle/app": name}
        doc["spec"] = {"selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "app"}]}}}
    elif doc.get("kind") == "PersistentVolumeClaim" and str(doc.get("apiVersion")) == "v1":
        doc["spec"] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return doc


DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def _seconds(duration: object) -> float | None:
    """A Go duration as Flux's CRDs accept it (`5m`, `1m30s`, `500ms`) in seconds; None if it is not one."""
    text = str(duration)
    parts = DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[u] for n, u in parts)


def _shortened(doc: Any, health_timeout: str) -> bool:
    """Cap a Flux Kustomization's `spec.timeout` at `health_timeout` where it health-checks what it
    applies (`wait: true` or `healthChecks`; without `timeout` it is the interval): a health check
    that can never pass then fails after seconds, not minutes. The timeout only says when the
    Kustomization gives up (on its apply too, which takes far less here); what it applies and prunes,
    and whether its dependents ever reconcile, do not depend on it. Whether `doc` changed."""
    if not (isinstance(doc, dict) and doc.get("kind") == "Kustomization"
            and str(doc.get("apiVersion", "")).startswith(f"{FLUX_GROUP}/") and isinstance(doc.get("spec"), dict)):
        return False
    spec = doc["spec"]
    if spec.get("wait") is not True and not spec.get("healthChecks"):
        return False
    now, cap = _seconds(spec.get("timeout", spec.get("interval", "")) or ""), _seconds(health_timeout)
    if now is not None and cap is not None and now <= cap:
        return False
    spec["timeout"] = health_timeout
    return True


def _artifact_file(path: str, data: bytes, health_timeout: str | None = None) -> bytes:
    """A repository file as the artifact holds it (objects completed; with `health_timeout`, Flux
    Kustomizations' health-check timeouts capped: `_shortened`; anything else unchanged)."""
    if not path.endswith((".yaml", ".yml")) or path.rsplit("/", 1)[-1].startswith("kustomization."):
        return data
    try:
        docs = list(_yaml().load_all(data))
    except Exception:  # noqa: BLE001 - not for the harness to judge: Flux reads it as it is
        return data
    incomplete = any(isinstance(d, dict) and d.get("kind") in ("Deployment", "PersistentVolumeClaim")
                     and "spec" not in d for d in docs)
    shortened = health_timeout is not None and any([_shortened(d, health_timeout) for d in docs])
    if not (incomplete or shortened):
        return data
    out = io.StringIO()
    _yaml().dump_all([_complete(d) for d in docs if d is not None], out)
    return out.getvalue().encode()


def served(files: Mapping[str, bytes], health_timeout: str | None = None) -> dict[str, bytes]:
    """The files as the artifact holds them (see `_artifact_file`)."""
    return {path: _artifact_file(path, data, health_timeout) for path, data in files.items()}


def tarball(files: Mapping[str, bytes], health_timeout: str | None = None) -> bytes:
    """A deterministic tar.gz of `files`, as source-controller packs a revision (see `served`)."""
    raw = io.BytesIO()
    artifact = served(files, health_timeout)
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for path in sorted(artifact):
            data = artifact[path]
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def _documents(files: Mapping[str, bytes]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, mapping) for every YAML document of `files` that parses (others: Flux's to judge)."""
    for path in sorted(files):
        if not path.endswith((".yaml", ".yml")):
            continue
        try:
            docs = list(_yaml().load_all(files[path]))
        except Exception:  # noqa: BLE001 - not for the harness to judge
            continue
        yield from ((path, d) for d in docs if isinstance(d, dict))


def _namespaces_named(files: Mapping[str, bytes]) -> tuple[set[str], set[str]]:
    """(namespaces that objects or kustomizations name, Namespaces defined) in `files`."""
    named, defined = set(), set()
    for path, doc in _documents(files):
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        if path.rsplit("/", 1)[-1].startswith("kustomization."):
            if isinstance(doc.get("namespace"), str):
                named.add(doc["namespace"])
        elif doc.get("kind") == "Namespace":
            defined.add(str(meta.get("name")))
        elif meta.get("namespace"):
            named.add(str(meta["namespace"]))
    return named, defined


def _substitution_referents(files: Mapping[str, bytes]) -> set[tuple[str, str]]:
    """(kind, name) of each ConfigMap or Secret a Flux Kustomization's postBuild.substituteFrom names
    that `files` do not define: the harness creates them empty (placeholders: every variable unset)."""
    named, defined = set(), set()
    for _, doc in _documents(files):
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        if doc.get("kind") in ("ConfigMap", "Secret"):
            defined.add((str(doc["kind"]), str(meta.get("name"))))
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        post = spec.get("postBuild") if isinstance(spec.get("postBuild"), dict) else {}
        if str(doc.get("apiVersion", "")).startswith(f"{FLUX_GROUP}/") and doc.get("kind") == "Kustomization":
            for ref in post.get("substituteFrom") or []:
                if isinstance(ref, dict) and ref.get("kind") in ("ConfigMap", "Secret"):
                    named.add((str(ref["kind"]), str(ref.get("name"))))
    return named - defined


def _approval(group: str) -> dict[str, str]:
    """The annotation the API server requires of a CRD in a protected group (*.k8s.io, *.kubernetes.io)."""
    protected = group.endswith((".k8s.io", ".kubernetes.io")) or group in ("k8s.io", "kubernetes.io")
    return {"api-approved.kubernetes.io": "unapproved, a permissive test CRD"} if protected else {}


def _scope(kind: str, cluster_kinds: frozenset[str] | set[str]) -> str:
    """A permissive CRD's scope: cluster-scoped for a kind in `cluster_kinds` (see `_cluster_kinds`), a
    `Cluster*` kind (ClusterIssuer, ClusterSecretStore, ...) or a `*Class` (GatewayClass, ...) by
    convention, as the built-in ones are; any other namespaced (as kustomize takes every custom kind)."""
    cluster = (kind.startswith("Cluster") and kind != "Cluster") or (kind.endswith("Class") and kind != "Class")
    return "Cluster" if cluster or kind in cluster_kinds else "Namespaced"


def _cluster_kinds(files: Mapping[str, bytes]) -> set[str]:
    """Custom kinds no object of which names a namespace or lies where one is set for it (a kustomization's
    `namespace:` in its directory or above, a Flux Kustomization's `targetNamespace` over its path): the
    repository's objects say these are cluster-scoped."""
    setters = set()
    for path, doc in _documents(files):
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        if path.rsplit("/", 1)[-1].startswith("kustomization.") and doc.get("namespace"):
            setters.add(path.rsplit("/", 1)[0] if "/" in path else "")
        elif doc.get("kind") == "Kustomization" and spec.get("targetNamespace") and spec.get("path"):
            where = os.path.normpath(str(spec["path"]).removeprefix("./").strip("/") or ".")
            setters.add("" if where == "." else where)
    namespaced, seen = set(), set()
    for path, doc in _documents(files):
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        if path.rsplit("/", 1)[-1].startswith("kustomization.") or "." not in str(doc.get("apiVersion", "")):
            continue
        kind = str(doc.get("kind"))
        seen.add(kind)
        if meta.get("namespace") or any(s == "" or path.startswith(s + "/") for s in setters):
            namespaced.add(kind)
    return seen - namespaced


def _kinds(files: Mapping[str, bytes]) -> set[tuple[str, str, str]]:
    """(group, version, kind) of every object in `files` ("" for the core group)."""
    out = set()
    for path, doc in _documents(files):
        if doc.get("kind") and doc.get("apiVersion") and not path.rsplit("/", 1)[-1].startswith("kustomization."):
            group, _, version = str(doc["apiVersion"]).rpartition("/")
            out.add((group, version, str(doc["kind"])))
    return out


@dataclass
class Cluster:
    """A running control plane with kustomize-controller; see the module's docstring."""

    bin: Path
    work: Path
    procs: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    server: str = ""
    artifacts: Artifacts | None = None
    artifact_url: str = ""
    served: set[tuple[str, str]] = field(default_factory=set)
    """(group, kind) the API serves, known so far."""
    resources: dict[tuple[str, str], tuple[str, bool]] = field(default_factory=dict)
    """(group, kind) -> (API path prefix of its resource, namespaced)."""
    permissive: set[tuple[str, str]] = field(default_factory=set)
    """(group, kind) served by a permissive CRD of the harness's."""
    versions: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """The versions each permissive CRD serves, its storage version first."""
    touched: set[tuple[str, str]] = field(default_factory=set)
    """(group, kind) of every object played so far: what reset() clears from `default`."""
    _ctx: ssl.SSLContext = field(default_factory=lambda: ssl._create_unverified_context())  # noqa: S323
    _conns: threading.local = field(default_factory=threading.local)
    """Each thread's kept-alive connection to the API server."""

    # ---- processes ----------------------------------------------------------------------------

    def _spawn(self, name: str, args: list[str], env: Mapping[str, str] | None = None) -> None:
        log = open(self.work / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        log.close()
        self.procs.append((name, proc))

    def _check_alive(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                tail = (self.work / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited ({proc.returncode}):\n{tail}")

    def start(self) -> None:
        w = self.work
        etcd_port, peer_port, api_port = _free_port(), _free_port(), _free_port()
        self._spawn("etcd", [
            str(self.bin / "etcd"), "--data-dir", str(w / "etcd"), "--name", "oracle",
            "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"oracle=http://127.0.0.1:{peer_port}",
            "--unsafe-no-fsync", "--log-level", "warn", "--listen-metrics-urls", ""])
        subprocess.run(["openssl", "genrsa", "-out", str(w / "sa.key"), "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", str(w / "sa.key"), "-pubout", "-out", str(w / "sa.pub")],
                       check=True, capture_output=True)
        (w / "tokens.csv").write_text(f"{TOKEN},admin,admin,system:masters\n")
        (w / "audit-policy.yaml").write_text(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived, ResponseStarted]\n"
            "rules:\n- level: RequestResponse\n  verbs: [deletecollection]\n- level: Metadata\n  verbs: [delete]\n"
            "- level: None\n")
        self._spawn("kube-apiserver", [
            str(self.bin / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
            f"--cert-dir={w / 'certs'}", "--service-cluster-ip-range=10.254.0.0/24",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={w / 'sa.pub'}", f"--service-account-signing-key-file={w / 'sa.key'}",
            f"--token-auth-file={w / 'tokens.csv'}", "--authorization-mode=AlwaysAllow",
            f"--audit-policy-file={w / 'audit-policy.yaml'}", f"--audit-log-path={w / 'audit.log'}",
            "--audit-log-format=json", "--audit-log-mode=blocking", "--v=0",
            # Real repositories scale idle apps to zero with an HPA (minReplicas: 0); their clusters enable it.
            "--feature-gates=HPAScaleToZero=true",
            # As a cluster whose kubelets allow them (an act runner's DinD sidecar is privileged).
            "--allow-privileged=true"])
        self.server = f"https://127.0.0.1:{api_port}"
        (w / "kubeconfig").write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "oracle",
            "clusters": [{"name": "oracle", "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}],
            "users": [{"name": "admin", "user": {"token": TOKEN}}],
            "contexts": [{"name": "oracle", "context": {"cluster": "oracle", "user": "admin"}}]}))
        self._wait(lambda: self._ready("/readyz"), 120, "kube-apiserver to be ready")
        self._spawn("kube-controller-manager", [
            str(self.bin / "kube-controller-manager"), f"--kubeconfig={w / 'kubeconfig'}",
            "--controllers=namespace-controller,garbage-collector-controller,"
            "persistentvolumeclaim-protection-controller",
            "--leader-elect=false", "--use-service-account-credentials=false", "--secure-port=0",
            "--concurrent-namespace-syncs=4", "--v=0",
            # A namespace's deletion lists and deletes every resource type: at the default 20
            # requests a second, seconds per namespace.
            "--kube-api-qps=1000", "--kube-api-burst=1000"])
        self.apply_yaml(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n".encode())
        for crd in sorted((self.bin / "crds").glob("*.yaml")):
            self.apply_yaml(crd.read_bytes())
        self._wait(self._crds_established, 60, "Flux's CRDs to be established")
        (w / "tmp").mkdir(exist_ok=True)
        self.artifacts = Artifacts(w / "artifacts")
        self.artifacts.root.mkdir()
        self.artifact_url = self.artifacts.start()
        self._spawn("kustomize-controller", [
            str(self.bin / "kustomize-controller"),
            "--enable-leader-election=false", "--watch-all-namespaces=true",
            f"--metrics-addr=127.0.0.1:{_free_port()}", f"--health-addr=127.0.0.1:{_free_port()}",
            "--requeue-dependency=200ms", "--no-remote-bases=true", "--http-retry=2", "--log-level=info",
            f"--sops-age-secret={SOPS_AGE_SECRET}"],
            # Its own TMPDIR: at start it purges stale kustomization-* build dirs there, which would
            # include those of another cluster's controller running on the same machine.
            env={"RUNTIME_NAMESPACE": NAMESPACE, "KUBECONFIG": str(w / "kubeconfig"), "TMPDIR": str(w / "tmp")})
        self.apply({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                    "metadata": {"name": NAMESPACE, "namespace": NAMESPACE},
                    "spec": {"url": "https://git.invalid/repository", "interval": "10m",
                             "ref": {"branch": "main"}}})

    def stop(self) -> None:
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _name, proc in reversed(self.procs):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()
        if self.artifacts is not None:
            self.artifacts.stop()

    # ---- the API --------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: bytes | None = None,
                 content_type: str = "application/json") -> tuple[int, Any]:
        """One API request on this thread's kept-alive connection (a TLS handshake per request cost
        more than the request: most of a poll); again while the API server answers 429 (a new CRD's
        storage is initializing)."""
        deadline = time.monotonic() + 30
        while True:
            code, out = self._request_once(method, path, body, content_type)
            if code != 429 or time.monotonic() > deadline:
                return code, out
            time.sleep(POLL)

    def _request_once(self, method: str, path: str, body: bytes | None, content_type: str) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type, "Accept": "application/json"}
        for attempt in (1, 2):
            conn = getattr(self._conns, "conn", None)
            if conn is None:
                host, _, port = self.server.removeprefix("https://").rpartition(":")
                conn = http.client.HTTPSConnection(host, int(port), context=self._ctx, timeout=30)
                self._conns.conn = conn
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._conns.conn = None
                if attempt == 2:
                    raise
                continue
            return resp.status, json.loads(data) if data[:1] == b"{" else data
        raise AssertionError("unreachable")

    def _ready(self, path: str) -> bool:
        self._check_alive()
        try:
            code, _ = self._request("GET", path)
        except (OSError, http.client.HTTPException):
            return False
        return code == 200

    def _wait(self, done: Any, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if done():
                return
            time.sleep(POLL)
        raise TimeoutError(f"waited {seconds}s for {what}; logs in {self.work}")

    def _discover(self) -> None:
        code, groups = self._request("GET", "/apis")
        assert code == 200, groups
        paths = ["/api/v1"] + [f"/apis/{v['groupVersion']}" for g in groups["groups"] for v in g["versions"]]
        for prefix in paths:
            code, found = self._request("GET", prefix)
            if code != 200:
                continue
            group = found["groupVersion"].rpartition("/")[0]
            for r in found["resources"]:
                if "/" not in r["name"] and (group, r["kind"]) not in self.resources:
                    self.resources[(group, r["kind"])] = (f"{prefix}/{{ns}}{r['name']}", r["namespaced"])

    def path(self, group: str, kind: str, namespace: str, name: str = "") -> str:
        if (group, kind) not in self.resources:
            self._discover()
        template, namespaced = self.resources[(group, kind)]
        where = f"namespaces/{namespace}/" if namespaced and namespace else ""
        return template.format(ns=where) + (f"/{name}" if name else "")

    def apply(self, obj: Mapping[str, Any]) -> None:
        """Server-side apply as the harness (field manager `wave-bot-oracle`)."""
        group = str(obj["apiVersion"]).rpartition("/")[0]
        meta = obj["metadata"]
        url = self.path(group, str(obj["kind"]), str(meta.get("namespace") or ""), str(meta["name"]))
        code, out = self._request("PATCH", url + "?fieldManager=wave-bot-oracle&force=true",
                                  json.dumps(obj).encode(), "application/apply-patch+yaml")
        assert code in (200, 201), f"applying {obj['kind']} {meta['name']}: {out}"
        if obj["kind"] == "CustomResourceDefinition":
            self.resources.clear()

    def apply_yaml(self, data: bytes) -> None:
        for doc in _yaml().load_all(data):
            if isinstance(doc, dict):
                self.apply(doc)

    def _crds_established(self) -> bool:
        code, crds = self._request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        return code == 200 and all(
            any(c["type"] == "Established" and c["status"] == "True" for c in (crd.get("status") or {}).get(
                "conditions") or []) for crd in crds["items"])

    def list(self, group: str, kind: str) -> list[dict[str, Any]]:
        code, out = self._request("GET", self.path(group, kind, ""))
        assert code == 200, out
        return list(out["items"])

    def serve(self, kinds: set[tuple[str, str, str]], cluster_kinds: frozenset[str] | set[str] = frozenset()) -> None:
        """A permissive CRD for each (group, version, kind) the API does not serve yet."""
        if not self.resources:
            self._discover()
        added = False
        # Decided before any is applied: applying a CRD clears `resources` (rediscovered on demand).
        # A kind served by a permissive CRD gains any version a revision names (the first stays the storage).
        missing: dict[tuple[str, str], set[str]] = {}
        for g, v, k in sorted(kinds):
            if g and ((g, k) not in self.resources or (g, k) in self.permissive and v not in self.versions[(g, k)]):
                missing.setdefault((g, k), set()).add(v)
        for (group, kind), new in sorted(missing.items()):
            versions = self.versions.setdefault((group, kind), [])
            versions += sorted(new - set(versions))
            plural = kind.lower() + ("es" if kind.lower().endswith("s") else "s")
            self.apply({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                        "metadata": {"name": f"{plural}.{group}", "annotations": _approval(group)},
                        "spec": {"group": group, "scope": _scope(kind, cluster_kinds),
                                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                                           "listKind": f"{kind}List"},
                                 "versions": [{"name": version, "served": True, "storage": version == versions[0],
                                               "schema": {"openAPIV3Schema": {
                                                   "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                                               "subresources": {"status": {}}} for version in versions]}})
            added = True
            self.permissive.add((group, kind))
        if added:
            self._wait(self._crds_established, 60, "the permissive CRDs to be established")
            time.sleep(1)  # discovery and kustomize-controller's REST mapper catch up
            self.resources.clear()

    # ---- playing revisions -----------------------------------------------------------------------

    def audit_offset(self) -> int:
        audit = self.work / "audit.log"
        return audit.stat().st_size if audit.exists() else 0

    def play(self, files: Mapping[str, bytes], label: str, timeout: float = 120, root: str = "./clusters/base",
             health_timeout: str | None = None) -> str:
        """Serve `files` as the GitRepository's new revision; return once every Kustomization handled it.
        `root` is the bootstrap path the root Kustomization `flux-system` applies. With
        `health_timeout` (a duration, e.g. "15s"), each Flux Kustomization that health-checks what it
        applies gives up after at most that long in what is served (`_shortened`): a wave held by an
        object that never becomes Ready fails its health check then, its dependents wait on it
        (DependencyNotReady), and the revision counts as handled."""
        assert self.artifacts is not None
        kinds = _kinds(files)
        self.serve(kinds, _cluster_kinds(files))
        self.touched |= {(g, k) for g, _, k in kinds}
        for kind, name in sorted(_substitution_referents(files)):
            self.apply({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE},
                        "data": {}})
        named, defined = _namespaces_named(files)
        for ns in sorted(named - defined - SYSTEM_NAMESPACES):
            self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        data = tarball(files, health_timeout)
        sha1 = hashlib.sha1(data + label.encode()).hexdigest()  # noqa: S324 - a revision id, as git's
        revision = f"main@sha1:{sha1}"
        (self.artifacts.root / f"{sha1}.tar.gz").write_bytes(data)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        url = self.path("source.toolkit.fluxcd.io", "GitRepository", NAMESPACE, NAMESPACE)
        status = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                  "metadata": {"name": NAMESPACE, "namespace": NAMESPACE},
                  "status": {"observedGeneration": 1, "artifact": {
                      "path": f"gitrepository/{NAMESPACE}/{NAMESPACE}/{sha1}.tar.gz",
                      "url": f"{self.artifact_url}/{sha1}.tar.gz", "revision": revision,
                      "digest": f"sha256:{hashlib.sha256(data).hexdigest()}", "lastUpdateTime": now,
                      "size": len(data)},
                      "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded",
                                      "message": f"stored artifact for revision '{revision}'",
                                      "lastTransitionTime": now, "observedGeneration": 1}]}}
        code, out = self._request("PATCH", url + "/status?fieldManager=source-controller&force=true",
                                  json.dumps(status).encode(), "application/apply-patch+yaml")
        assert code == 200, out
        self.apply({"apiVersion": f"{FLUX_GROUP}/v1", "kind": "Kustomization",
                    "metadata": {"name": NAMESPACE, "namespace": NAMESPACE},
                    "spec": {"interval": "10m", "path": root, "prune": True,
                             "sourceRef": {"kind": "GitRepository", "name": NAMESPACE}}})
        try:
            self._wait(lambda: self._settled(revision), timeout, f"every Kustomization to handle {label}")
        except TimeoutError as e:
            raise TimeoutError(f"{e}:\n{self._describe(revision)}") from None
        return revision

    def _describe(self, revision: str) -> str:
        """Each Kustomization's progress, for a timeout's message."""
        lines = []
        for k in self.list(FLUX_GROUP, "Kustomization"):
            status = k.get("status") or {}
            conditions = {c["type"]: f"{c['status']} {c['reason']}: {c['message'][:300]}"
                          for c in status.get("conditions") or []}
            lines.append(f"- {k['metadata']['name']} (this revision attempted: "
                         f"{status.get('lastAttemptedRevision') == revision}, deleting: "
                         f"{bool(k['metadata'].get('deletionTimestamp'))}) {conditions}")
        lines += [f"- Namespace {ns['metadata']['name']} terminating" for ns in self.list("", "Namespace")
                  if (ns.get("status") or {}).get("phase") == "Terminating"]
        return "\n".join(lines)

    def _settled(self, revision: str) -> bool:
        """Every Kustomization handled `revision` (or waits on a dependency that did not become
        ready), none is being deleted, no namespace is terminating; twice in a row, 1.5 s apart."""
        self._check_alive()
        state = self._state(revision)
        if state is None:
            return False
        time.sleep(SETTLE)
        return self._state(revision) == state

    def _roll_out(self) -> None:
        """Write the status the missing controllers would: every Deployment rolled out and available,
        every claim Bound (what kustomize-controller's health checks, kstatus, wait for)."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for d in self.list("apps", "Deployment"):
            meta, status = d["metadata"], d.get("status") or {}
            if status.get("observedGeneration") == meta["generation"] or meta.get("deletionTimestamp"):
                continue
            replicas = (d.get("spec") or {}).get("replicas", 1)
            self._status("apps", "Deployment", d, {"observedGeneration": meta["generation"], "replicas": replicas,
                             "updatedReplicas": replicas, "readyReplicas": replicas,
                             "availableReplicas": replicas, "conditions": [
                                 {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                  "lastUpdateTime": now, "lastTransitionTime": now},
                                 {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                                  "lastUpdateTime": now, "lastTransitionTime": now}]})
        for d in self.list("apps", "StatefulSet"):
            meta, status = d["metadata"], d.get("status") or {}
            if status.get("observedGeneration") == meta["generation"] or meta.get("deletionTimestamp"):
                continue
            replicas = (d.get("spec") or {}).get("replicas", 1)
            self._status("apps", "StatefulSet", d, {"observedGeneration": meta["generation"], "replicas": replicas,
                             "readyReplicas": replicas, "currentReplicas": replicas, "updatedReplicas": replicas,
                             "availableReplicas": replicas, "currentRevision": "r1", "updateRevision": "r1"})
        # What helm-controller, source-controller and the custom kinds' own controllers would report once
        # they handled an object: Ready at its generation (kstatus and Flux's health checks read that).
        for group, kind in sorted(self.touched & (self.permissive | READY_BY_OTHERS)):
            code, found = self._request("GET", self.path(group, kind, ""))
            for o in found["items"] if code == 200 else []:  # a new CRD's storage may still be starting
                meta, status = o["metadata"], o.get("status") or {}
                if status.get("observedGeneration") == meta.get("generation") or meta.get("deletionTimestamp") or (
                        (group, kind, meta["name"]) == ("source.toolkit.fluxcd.io", "GitRepository", NAMESPACE)):
                    continue
                self._status(group, kind, o, {"observedGeneration": meta.get("generation"), "conditions": [
                    {"type": "Ready", "status": "True", "reason": "Succeeded", "message": "written by the harness",
                     "lastTransitionTime": now, "observedGeneration": meta.get("generation")}]})
        for c in self.list("", "PersistentVolumeClaim"):
            if (c.get("status") or {}).get("phase") != "Bound" and not c["metadata"].get("deletionTimestamp"):
                modes = (c.get("spec") or {}).get("accessModes")
                self._status("", "PersistentVolumeClaim", c, {"phase": "Bound", "accessModes": modes,
                                 "capacity": {"storage": "1Gi"}})

    def _status(self, group: str, kind: str, obj: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        url = self.path(group, kind, meta.get("namespace", ""), meta["name"]) + "/status"
        code, out = self._request("PATCH", url, json.dumps({"status": status}).encode(),
                                  "application/merge-patch+json")
        assert code == 200 or meta.get("deletionTimestamp") or code == 404, f"status of {kind} {meta['name']}: {out}"

    def _state(self, revision: str) -> tuple[Any, ...] | None:
        self._roll_out()
        ks = self.list(FLUX_GROUP, "Kustomization")

        def ready(k: Mapping[str, Any]) -> dict[str, Any]:
            conditions = (k.get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "Ready"), {})

        done = {k["metadata"]["name"] for k in ks if ready(k).get("status") == "True"
                and (k.get("status") or {}).get("lastAppliedRevision") == revision}
        seen = []
        for k in ks:
            status, spec = k.get("status") or {}, k.get("spec") or {}
            if k["metadata"].get("deletionTimestamp"):
                return None
            # Waiting counts only while a dependency has not applied this revision: once all have,
            # the Kustomization reconciles at its next requeue.
            waiting = ready(k).get("reason") == "DependencyNotReady" and any(
                d.get("name") not in done for d in spec.get("dependsOn") or [])
            # Handled: attempted this revision and finished (a failure leaves Reconciling with the
            # reason ProgressingWithRetry), or its path is missing (it attempts nothing then).
            conditions = {c["type"]: c for c in status.get("conditions") or []}
            finished = conditions.get("Reconciling", {}).get("reason", "ProgressingWithRetry") == "ProgressingWithRetry"
            # Nothing to attempt: its path is missing, or its source is not there (a nested
            # Kustomization moved to another namespace by a kustomization's `namespace:` looks for
            # its GitRepository there).
            message = ready(k).get("message", "")
            no_path = "kustomization path not found" in message or (
                ready(k).get("reason") == "ArtifactFailed" and "GitRepository" in message and "not found" in message)
            if not (waiting or no_path or (status.get("lastAttemptedRevision") == revision and finished)):
                return None
            seen.append((k["metadata"]["name"], ready(k).get("reason"), status.get("lastAppliedRevision"),
                         len((status.get("inventory") or {}).get("entries") or [])))
        if any((ns.get("status") or {}).get("phase") == "Terminating" for ns in self.list("", "Namespace")):
            return None
        return (tuple(sorted(seen)), self.audit_offset())

    def deletions(self, since: int) -> set[Ref]:
        """Every object the API server deleted after audit offset `since` (successful requests only)."""
        self._discover()
        plural_kind = {(g, tmpl.rsplit("}", 1)[1]): kind for (g, kind), (tmpl, _) in self.resources.items()}
        out: set[Ref] = set()
        with open(self.work / "audit.log", "rb") as f:
            f.seek(since)
            for line in f:
                event = json.loads(line)
                ref, status = event.get("objectRef") or {}, (event.get("responseStatus") or {}).get("code", 0)
                if not 200 <= status < 300 or ref.get("subresource"):
                    continue
                group = ref.get("apiGroup", "")
                kind = plural_kind.get((group, ref.get("resource", "")), ref.get("resource", ""))
                namespaced = self.resources.get((group, kind), ("", True))[1]
                if event["verb"] == "delete":  # a Namespace's own request names it as its namespace too
                    out.add(Ref(group, kind, ref.get("namespace", "") if namespaced else "", ref.get("name", "")))
                elif event["verb"] == "deletecollection":
                    for item in (event.get("responseObject") or {}).get("items") or []:
                        meta = item.get("metadata") or {}
                        out.add(Ref(group, kind, meta.get("namespace", ""), meta.get("name", "")))
        return out

    def reset(self) -> None:
        """Back to an empty cluster: no Kustomization (finalizers dropped: nothing is pruned), and no
        object of a kind played so far in any namespace but the system ones (the empty Namespaces
        stay: deleting one waits out the namespace controller's fixed 5 s grace; the next revision's
        apply takes a Namespace over, labels and annotations, as it takes over one it did not create)."""
        self._discover()
        for k in self.list(FLUX_GROUP, "Kustomization"):
            meta = k["metadata"]
            url = self.path(FLUX_GROUP, "Kustomization", meta["namespace"], meta["name"])
            self._request("PATCH", url, b'{"metadata":{"finalizers":null}}', "application/merge-patch+json")
            self._request("DELETE", url)
            self._request("PATCH", url, b'{"metadata":{"finalizers":null}}', "application/merge-patch+json")
        cleared = [ns["metadata"]["name"] for ns in self.list("", "Namespace")
                   if ns["metadata"]["name"] not in SYSTEM_NAMESPACES] + ["default"]
        kinds = [(g, k) for g, k in sorted(self.touched) if (g, k) != (FLUX_GROUP, "Kustomization")
                 and self.resources.get((g, k), ("", False))[1]]
        for ns in cleared:
            for group, kind in kinds:
                self._request("DELETE", self.path(group, kind, ns))

        def gone() -> bool:
            return not self.list(FLUX_GROUP, "Kustomization") and not any(
                o["metadata"]["namespace"] in cleared for g, k in kinds for o in self.list(g, k))

        self._wait(gone, 60, "the objects of the last scenario to go")


@contextlib.contextmanager
def cluster(work: Path) -> Iterator[Cluster]:
    """A started cluster in `work` (kept for its logs), stopped whatever happens."""
    c = Cluster(require_binaries(), work)
    try:
        c.start()
        yield c
    finally:
        c.stop()
        shutil.rmtree(work / "etcd", ignore_errors=True)


__all__ = ["Cluster", "Ref", "cluster", "require_binaries", "served", "tarball", "versions"]
