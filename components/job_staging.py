"""Puts the jobs and the cluster's job environment onto /shared on every `pulumi up`, and makes each
user's work directory there: a ConfigMap holding the files and a Job that copies them onto the
shared volume and makes /shared/work/<user> for root and every named user. The Job's name carries
a hash of the content and of its script, so a changed job or a new user is there after the next up
and an unchanged stack costs nothing.

The layout (model/facts/contract.py; why per user: docs/decisions/job-work-dirs.md):
- /shared/jobs: the job library, root's, mode 0755 down the tree: no user can change what another
  user's or root's job sources.
- /shared/work: root's, mode 0755: no user can make or rename an entry in it.
- /shared/work/<user>: the user's, mode 0700 when made: where their jobs' output, rank logs, Hugging
  Face cache, nccl-tests build and adapters go. It must exist before a job starts, since slurmstepd
  opens the #SBATCH --output file as the job's user before the script runs (sbatch(1),
  "FILENAME PATTERN": %u is the user name)."""

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
from model.checks.users import User
from model.facts.contract import SHARED_JOBS, SHARED_MOUNT, SHARED_WORK

JOBS_DIR = pathlib.Path(__file__).resolve().parent.parent / "jobs"
# Where the Job sees the ConfigMap's files.
STAGED = "/staged"
# Root runs the jobs as before the named users existed: its work directory is made too.
ROOT_USER = ("root", 0)
# A new work directory is its user's alone; a user may open their own later, and an up leaves
# the mode of an existing one as it is.
WORK_DIR_MODE = "0700"
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


def work_dir_owners(users: Sequence[User]) -> list[tuple[str, int]]:
    """(name, uid) of every work directory: root's, then each named user's (their GID is their UID)."""
    return [ROOT_USER, *((u.name, u.uid) for u in users)]


def staging_script(users: Sequence[User], shared: str = SHARED_MOUNT, staged: str = STAGED) -> str:
    """The copy Job's script: the ConfigMap's flat keys back into directories under the job library,
    scripts executable, the library writable by root alone; then the work directories. `shared` is
    where the volume is mounted (the tests run the same script on a directory of their own)."""
    jobs = SHARED_JOBS.replace(SHARED_MOUNT, shared, 1)
    work = SHARED_WORK.replace(SHARED_MOUNT, shared, 1)
    # Old files are replaced, user files elsewhere on /shared are untouched. `chmod -R go-w`
    # whatever an older copy or a hand edit left there.
    steps = [
        f"set -e; mkdir -p {jobs}; cd {staged}; for f in *; do "
        f'd={jobs}/$(echo "$f" | sed \'s|__|/|g\'); mkdir -p "$(dirname "$d")"; '
        f'cp "$f" "$d.tmp"; mv "$d.tmp" "$d"; done',
        f"chmod +x {jobs}/*.sbatch {jobs}/*.sh {jobs}/lib/*.sh 2>/dev/null || true",
        f"chmod -R go-w {jobs}",
        f"mkdir -p {work}",
        f"chmod 0755 {work}",
    ]
    for name, uid in work_dir_owners(users):
        d = f"{work}/{name}"
        # Made with its mode in one step, then given to its user (only root can add an entry to
        # the work root, so nothing can be planted here; -h: a link would be changed, not followed).
        # Only the directory itself, never what the user put in it; a removed user's stays.
        steps.append(f"[ -d {d} ] || mkdir -m {WORK_DIR_MODE} {d}")
        steps.append(f'[ "$(stat -c %u:%g {d})" = {uid}:{uid} ] || chown -h {uid}:{uid} {d}')
    return "; ".join(steps) + f"; ls -l {jobs}; ls -ln {work}"


@dataclass(frozen=True)
class JobStagingArgs:
    """Every field is required (no defaults)."""

    gpu_pools: Sequence[GpuPool]  # cluster.env (one per pool where there are several)
    users: Sequence[User]  # StackConfig.users: a work directory each, beside root's
    # The namespace's name; the ConfigMap and the copy Job live there.
    namespace: str
    # The /shared claim's name (SharedStorage.claim_name), mounted by the copy Job.
    shared_claim: str
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What the files wait for: the bound /shared claim and the core nodes the copy runs on.
    depends_on: Sequence[pulumi.Resource]


class JobStaging(pulumi.ComponentResource):
    # 12 hex digits of everything staged and of the script: names the ConfigMap and the Job, so a
    # change of a file or of the users reruns it.
    content_hash: str

    def __init__(self, name: str, args: JobStagingArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:jobs:JobStaging", name, None, opts)
        self._name, self._args = name, args
        files = self._files()
        script = staging_script(args.users)
        parts = [*(f"{k}\0{v}\0" for k, v in sorted(files.items())), script]
        self.content_hash = hashlib.sha256("".join(parts).encode()).hexdigest()[:12]
        bundle = self._bundle(files)
        self._copy_job(bundle, script)
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

    def _copy_job(self, bundle: k8s.core.v1.ConfigMap, script: str) -> k8s.batch.v1.Job:
        args = self._args
        return k8s.batch.v1.Job(
            f"{self._name}-copy",
            metadata={
                "name": f"stage-jobs-{self.content_hash}",
                "namespace": args.namespace,
                "annotations": job_annotations(DEADLINE_SECONDS),
            },
            # Root, owning what it writes (earlier copies wrote as root too), without any
            # capability but CHOWN where a named user's work directory is given to them.
            spec=writer_spec(
                "copy",
                script,
                args.shared_claim,
                DEADLINE_SECONDS,
                mounts=[{"name": "staged", "mountPath": STAGED}],
                volumes=[{"name": "staged", "configMap": {"name": bundle.metadata.name}}],
                add_capabilities=["CHOWN"] if args.users else (),
            ),
            # Pulumi waits for the copy to complete: the jobs are on /shared when `up` returns.
            opts=pulumi.ResourceOptions(parent=self, provider=args.cluster.provider, depends_on=[bundle]),
        )
