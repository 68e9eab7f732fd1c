"""The one way a program of cluster_programs/ reaches the cluster: the package's own __init__.py
and the modules it runs, read from cluster_programs/, in an immutable ConfigMap named by the hash
of its files. The pod mounts it as the package itself, at /app/cluster_programs, and runs
`python3 -m cluster_programs.<module>` (model/builders/program_job.py builds that pod), so a program
imports its neighbours by the name they have in the repository. A change to any shipped byte is a
new ConfigMap, never an edit under a running pod (Kubernetes, "Immutable ConfigMaps":
https://kubernetes.io/docs/concepts/configuration/configmap/#configmap-immutable), and the pod that
mounts it by name is replaced with it (docs/decisions/in-cluster-programs.md)."""

from __future__ import annotations

import hashlib
import pathlib
from typing import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

import cluster_programs

PROGRAMS = pathlib.Path(cluster_programs.__file__).resolve().parent


def shipped_code(modules: Sequence[str]) -> dict[str, str]:
    """The ConfigMap's files, by file name: the package's __init__.py and `modules` (file names
    under cluster_programs/)."""
    return {m: (PROGRAMS / m).read_text() for m in ("__init__.py", *modules)}


def digest(files: Mapping[str, str]) -> str:
    """12 hex digits of the files' names and contents: what a name built on it changes with."""
    return hashlib.sha256("".join(f"{k}\0{v}\0" for k, v in sorted(files.items())).encode()).hexdigest()[:12]


def program_code(
    resource_name: str, name_prefix: str, modules: Sequence[str], namespace: str, opts: pulumi.ResourceOptions
) -> k8s.core.v1.ConfigMap:
    """The immutable code ConfigMap `<name_prefix>-<digest>` in `namespace`, holding `modules`."""
    code = shipped_code(modules)
    return k8s.core.v1.ConfigMap(
        resource_name,
        metadata={"name": f"{name_prefix}-{digest(code)}", "namespace": namespace},
        data=code,
        immutable=True,
        opts=opts,
    )
