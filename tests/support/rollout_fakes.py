"""What the readiness logic reads, as the real cluster serves it: NodeSet objects valid against
the operator's CRD (slurm-operator-crds 1.2.1), worker pods valid against the Kubernetes schema,
and `scontrol -o show node` lines in Slurm 26.05's shapes.

Field meanings follow SlinkyProject/slurm-operator v1.2.1: internal/controller/nodeset/
nodeset_sync_status.go (`syncNodeSetStatus`: observedGeneration, replicas, updatedReplicas,
readyReplicas, nodeSetHash, selector from the worker selector labels app.kubernetes.io/name=slurmd
and app.kubernetes.io/instance=<nodeset>, internal/builder/labels/labels.go); the chart names the
NodeSet <release>-worker-<key> and gives its pods the hostname prefix <key>-
(helm/slurm/templates/nodeset/nodeset-cr.yaml).
"""

from __future__ import annotations

import jsonschema
import kubernetes_validate
import yaml

from devkit import reference_data

NODESET = "slurm-worker-slinky"


def selector(nodeset_name: str = NODESET) -> str:
    return f"app.kubernetes.io/instance={nodeset_name},app.kubernetes.io/name=slurmd"


def revision(nodeset_name: str, suffix: str) -> str:
    return f"{nodeset_name}-{suffix}"


SELECTOR = selector()
OLD_REVISION = revision(NODESET, "5c6d7f8b9a")
NEW_REVISION = revision(NODESET, "7d9c5b8f6d")
STAMP = "[slurm@2026-12-01T20:14:07]"


def nodeset_schema() -> dict:
    crd = yaml.safe_load(
        (
            reference_data.chart_dir("slurm-operator-crds", "1.2.1")
            / "templates/slinky.slurm.net_nodesets.yaml"
        ).read_text()
    )
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def nodeset(
    generation=3, observed=3, replicas=2, updated=2, ready=2, desired=2, revision=NEW_REVISION, name=NODESET
) -> dict:
    obj = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "NodeSet",
        "metadata": {"name": name, "namespace": "slurm", "generation": generation},
        "spec": {"controllerRef": {"name": "slurm"}, "replicas": desired},
        "status": {
            "observedGeneration": observed,
            "replicas": replicas,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "desired": desired,
            "nodeSetHash": revision,
            "selector": selector(name),
        },
    }
    jsonschema.validate(obj, nodeset_schema())
    return obj


def pod(
    ordinal: int,
    revision=NEW_REVISION,
    ready=True,
    terminating=False,
    hostname: str = "",
    key: str = "slinky",
) -> dict:
    """A worker pod of the NodeSet of chart key `key` (slurm-worker-<key>, hostname <key>-<ordinal>)."""
    name = f"slurm-worker-{key}"
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{ordinal}",
            "namespace": "slurm",
            "labels": {
                "app.kubernetes.io/name": "slurmd",
                "app.kubernetes.io/instance": name,
                "controller-revision-hash": revision,
            },
        },
        "spec": {
            "hostname": hostname or f"{key}-{ordinal}",
            "subdomain": "slurm-workers-slurm",
            "containers": [{"name": "slurmd", "image": "slurmd"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    if terminating:
        obj["metadata"]["deletionTimestamp"] = "2026-12-01T20:14:00Z"
    kubernetes_validate.validate(obj, "1.36", strict=True)
    return obj


def scontrol_line(
    name: str, state: str, reason: str = "", gres: str = "gpu:nvidia_l4:4(S:0)", comment: str = ""
) -> str:
    """One `scontrol -o show node` record, fields in the order Slurm prints them (Comment after
    Reason, only when set: SchedMD/slurm src/api/node_info.c slurm_sprint_node_table at
    slurm-26-05-3-1)."""
    line = (
        f"NodeName={name} Arch=x86_64 CoresPerSocket=24 CPUAlloc=0 CPUEfctv=48 CPUTot=48 "
        f"Features=slinky ActiveFeatures=slinky Gres={gres} NodeAddr=10.0.1.17 "
        f"NodeHostName={name} Version=26.05.5 OS=Linux RealMemory=186130 State={state} "
        f"ThreadsPerCore=2 Partitions=slinky CfgTRES=cpu=48,mem=186130M,billing=48"
    )
    if reason:
        line += f" Reason={reason} {STAMP}"
    if comment:
        line += f" Comment={comment}"
    return line


class FakeCluster:
    """cluster_programs.rollout.Cluster answered from a script: one (nodeset, pods, scontrol) view per poll;
    after the last it keeps answering the last. A function may replace the script from then on
    (what the operator does after a resume or undrain). Records every scontrol update."""

    def __init__(self, views, on_update=None, nodeset_name=NODESET):
        self.selector = selector(nodeset_name)
        self.views = list(views)
        self.polls = 0
        self.updates: list[list[str]] = []
        self.on_update = on_update
        self._view = None

    def nodeset(self):
        self._view = self.views[min(self.polls, len(self.views) - 1)]
        self.polls += 1
        return self._view[0]

    def pods(self, selector):
        assert selector == self.selector
        return self._view[1]

    def slurm(self, argv):
        if argv[:2] == ["scontrol", "update"]:
            self.updates.append(argv)
            if self.on_update:
                self.views = self.on_update(argv)
                self.polls = 0
            return ""
        assert argv == ["scontrol", "-o", "show", "node"], argv
        return "\n".join(self._view[2]) + "\n"


class Clock:
    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
