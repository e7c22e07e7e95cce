"""A small repository of the cluster-template shape, for review mode's tests: no catalog and no
configuration; a bootstrap root applies `cluster-apps`, whose `spec.patches` give every child
Kustomization `deletionPolicy: WaitForTermination`; one child Kustomization per app, and `plex` owns
a PersistentVolumeClaim (`media/plex-config`)."""
from __future__ import annotations

SYNC = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1h
  url: https://example.invalid/home.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1h
  path: ./clusters/base
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""
APPS = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cluster-apps
  namespace: flux-system
spec:
  interval: 1h
  path: ./kubernetes/apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  patches:
    - patch: |-
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: _
        spec:
          deletionPolicy: WaitForTermination
      target:
        group: kustomize.toolkit.fluxcd.io
        kind: Kustomization
"""
CHILD = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {name}
  namespace: flux-system
spec:
  interval: 1h
  path: ./kubernetes/{app}/app
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""
PVC = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: plex-config
  namespace: media
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
"""
DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {app}
  namespace: media
spec:
  template:
    spec:
      containers:
        - name: app
          image: example.invalid/{app}:1
"""


def ks_repo_files(plex: str | None = "plex") -> dict[str, str]:
    """The files; `plex` is the name of plex's Kustomization (None: the app is deleted)."""
    files = {
        "clusters/base/flux-system/gotk-sync.yaml": SYNC,
        "clusters/base/kustomization.yaml": "resources:\n  - apps.yaml\n",
        "clusters/base/apps.yaml": APPS,
        "kubernetes/apps/radarr.yaml": CHILD.format(name="radarr", app="radarr"),
        "kubernetes/radarr/app/deploy.yaml": DEPLOY.format(app="radarr"),
        "kubernetes/plex/app/pvc.yaml": PVC,
        "kubernetes/plex/app/deploy.yaml": DEPLOY.format(app="plex"),
    }
    if plex is not None:
        files["kubernetes/apps/plex.yaml"] = CHILD.format(name=plex, app="plex")
    return files
