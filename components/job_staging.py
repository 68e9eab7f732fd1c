"""Puts the jobs and the cluster's job environment onto /shared on every `pulumi up`: a
ConfigMap holding the files and a Job that copies them onto the shared volume. The Job's name
carries a hash of the content, so a changed job is there after the next up and an unchanged one
costs nothing."""

from __future__ import annotations

import hashlib
import pathlib
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.jobs_await import job_annotations
from components.cluster import ClusterContext
from model.builders.job_environment import environment_files
from model.builders.shared_volume_writer import writer_spec
from model.checks.gpu_pools import GpuPool
from model.facts.contract import SHARED_HF_CACHE, SHARED_JOBS, SHARED_LOGS

JOBS_DIR = pathlib.Path(__file__).resolve().parent.parent / "jobs"
TARGET = SHARED_JOBS
# A copy of a few hundred KB; the deadline covers a busybox pull onto a fresh node and a slow
# first EFS mount.
DEADLINE_SECONDS = 600


def job_files() -> dict[str, str]:
    """Every file under jobs/, keyed by its path with '/' as '__' (ConfigMap keys are flat)."""
    files = {}
    for path in sorted(JOBS_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files[str(path.relative_to(JOBS_DIR)).replace("/", "__")] = path.read_text()
    return files


@dataclass(frozen=True)
class JobStagingArgs:
    """Every field is required (no defaults)."""

    gpu_pools: Sequence[GpuPool]  # cluster.env (one per pool where there are several)
    # The namespace's name; the ConfigMap and the copy Job live there.
    namespace: str
    # The /shared claim's name (SharedStorage.claim_name), mounted by the copy Job.
    shared_claim: str
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What the files wait for: the bound /shared claim and the core nodes the copy runs on.
    depends_on: Sequence[pulumi.Resource]


class JobStaging(pulumi.ComponentResource):
    # 12 hex digits of everything staged: names the ConfigMap and the Job, so a change reruns it.
    content_hash: str

    def __init__(self, name: str, args: JobStagingArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:jobs:JobStaging", name, None, opts)
        self._name, self._args = name, args
        files = self._files()
        digest = hashlib.sha256("".join(f"{k}\0{v}\0" for k, v in sorted(files.items())).encode()).hexdigest()
        self.content_hash = digest[:12]
        bundle = self._bundle(files)
        self._copy_job(bundle)
        self.register_outputs({"content_hash": self.content_hash})

    def _files(self) -> dict[str, str]:
        files = job_files()
        files.update(environment_files(self._args.gpu_pools))
        return files

    def _bundle(self, files: dict[str, str]) -> k8s.core.v1.ConfigMap:
        args = self._args
        return k8s.core.v1.ConfigMap(
            f"{self._name}-files",
            metadata={"name": f"slinky-eks-jobs-{self.content_hash}", "namespace": args.namespace},
            data=files,
            immutable=True,
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.depends_on)
            ),
        )

    def _copy_job(self, bundle: k8s.core.v1.ConfigMap) -> k8s.batch.v1.Job:
        args = self._args
        # Flat keys back into directories; scripts executable. Old files are replaced, user files
        # elsewhere on /shared are untouched.
        script = (
            f"set -e; mkdir -p {TARGET}; cd /staged; for f in *; do "
            f'd={TARGET}/$(echo "$f" | sed \'s|__|/|g\'); mkdir -p "$(dirname "$d")"; '
            f'cp "$f" "$d.tmp"; mv "$d.tmp" "$d"; done; '
            f"chmod +x {TARGET}/*.sbatch {TARGET}/*.sh {TARGET}/lib/*.sh 2>/dev/null || true; "
            f"mkdir -p {SHARED_LOGS} {SHARED_HF_CACHE}; ls -l {TARGET}"
        )
        return k8s.batch.v1.Job(
            f"{self._name}-copy",
            metadata={
                "name": f"stage-jobs-{self.content_hash}",
                "namespace": args.namespace,
                "annotations": job_annotations(DEADLINE_SECONDS),
            },
            # Root without any capability: owning what it writes (earlier copies wrote as root
            # too), it needs none.
            spec=writer_spec(
                "copy",
                script,
                args.shared_claim,
                DEADLINE_SECONDS,
                mounts=[{"name": "staged", "mountPath": "/staged"}],
                volumes=[{"name": "staged", "configMap": {"name": bundle.metadata.name}}],
            ),
            # Pulumi waits for the copy to complete: the jobs are on /shared when `up` returns.
            opts=pulumi.ResourceOptions(parent=self, provider=args.cluster.provider, depends_on=[bundle]),
        )
