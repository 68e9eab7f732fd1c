"""`pulumi up` puts the jobs and their catalog-derived environment onto /shared."""

import re
import subprocess

import pytest

from components.job_staging import JOBS_DIR, job_files
from devkit.offline_run import run_program
from model.builders.job_environment import cluster_environment
from model.facts.catalog import CATALOG


@pytest.fixture(scope="module")
def bundle(dev):
    cm = dev.named("jobs-files")
    return cm


@pytest.fixture(scope="module")
def copy_job(dev):
    return dev.named("jobs-copy")


def _env(cm) -> dict[str, str]:
    return dict(
        re.findall(
            r'^\[ -n "\$\{\w+\+set\}" \] \|\| export (\w+)=(.*)$', cm.inputs["data"]["cluster.env"], re.M
        )
    )


def test_every_job_file_is_staged(bundle):
    assert set(job_files()) <= set(bundle.inputs["data"])
    for name in (
        "sanity.sbatch",
        "nccl-tests-build.sbatch",
        "nccl-allreduce.sbatch",
        "nccl-allgather.sbatch",
        "finetune.sbatch",
        "train.py",
        "lib__job-env.sh",
    ):
        assert name in bundle.inputs["data"]


def test_staged_files_are_the_repository_files(bundle):
    assert bundle.inputs["data"]["train.py"] == (JOBS_DIR / "train.py").read_text()


def test_environment_file_comes_from_the_catalog(bundle):
    env = _env(bundle)
    assert env["GPUS_PER_NODE"] == "4" and env["GRES"] == "gpu:nvidia_l4:4"
    assert env["NCCL_P2P_DISABLE"] == "1" and "FI_EFA_USE_DEVICE_RDMA" not in env
    assert env["EXPECT_EFA"] == "1" and env["EFA_LINE_RATE_GBPS"] == "40"


def test_environment_file_follows_the_gpu_type():
    graph = run_program("dev", {"gpuInstanceType": "p5.48xlarge"})
    cm = graph.named("jobs-files")
    env = _env(cm)
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "1" and "NCCL_P2P_DISABLE" not in env
    assert env["GPUS_PER_NODE"] == "8" and env["GRES"] == CATALOG["p5.48xlarge"].gres


def test_a_changed_job_is_staged_again_on_the_next_up(bundle, copy_job):
    graph = run_program("dev", {"gpuInstanceType": "p5.48xlarge"})
    job = graph.named("jobs-copy")
    cm = graph.named("jobs-files")
    assert job.inputs["metadata"]["name"] != copy_job.inputs["metadata"]["name"]
    assert cm.inputs["metadata"]["name"] != bundle.inputs["metadata"]["name"]


def test_unchanged_jobs_keep_their_names(copy_job):
    assert (
        run_program("dev").named("jobs-copy").inputs["metadata"]["name"]
        == copy_job.inputs["metadata"]["name"]
    )


def test_copy_job_writes_onto_the_shared_claim_and_is_awaited(copy_job, bundle):
    pod = copy_job.inputs["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["shared"]["persistentVolumeClaim"]["claimName"] == "shared"
    assert volumes["staged"]["configMap"]["name"] == bundle.inputs["metadata"]["name"]
    assert "/shared/jobs" in pod["containers"][0]["command"][-1]
    assert "pulumi.com/skipAwait" not in (copy_job.inputs["metadata"].get("annotations") or {})
    assert pod["nodeSelector"] == {"role": "core"}


def test_staging_waits_for_the_shared_claim(dev, copy_job):
    assert dev.depends_on(copy_job, dev.named("storage-shared-pvc"))


# A comment that shows how to override the environment for one run, e.g.
# `#   DIST_BACKEND=gloo GPUS_PER_NODE=2 sbatch finetune.sbatch` (jobs/lib/job-env.sh): its values
# are the example's own, never the cluster's.
_OVERRIDE_EXAMPLE = re.compile(r"^\s*#\s*(?:\w+=\S*\s+)+(?:sbatch|srun|bash)\s")


def _instance_values() -> set[str]:
    envs = [cluster_environment(t) for t in CATALOG.values()]
    varying = {k for e in envs for k in e if len({x.get(k) for x in envs}) > 1}
    values = {f"{k}={e[k]}" for e in envs for k in varying if k in e}
    for t in CATALOG.values():
        values |= {t.name, t.gres, t.gres_type, f"--gpus-per-node={t.gpus}", f"--gres=gpu:{t.gpus}"}
    return values


def instance_values_in(text: str, values: set[str]) -> list[str]:
    """The instance-specific values a job file holds, outside comments that show an override."""
    kept = "\n".join(line for line in text.splitlines() if not _OVERRIDE_EXAMPLE.match(line))
    return sorted(v for v in values if v in kept)


def test_jobs_carry_no_instance_specific_values():
    values = _instance_values()
    for path in JOBS_DIR.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            assert instance_values_in(path.read_text(), values) == [], path


def test_an_instance_value_outside_an_override_example_is_found():
    text = (
        "#   EXPECT_EFA=0 GPUS_PER_NODE=2 sbatch finetune.sbatch\n"
        "# runs with GPUS_PER_NODE=2 on g7e.12xlarge\nexport GPUS_PER_NODE=2\n"
    )
    assert instance_values_in(text, {"GPUS_PER_NODE=2", "g7e.12xlarge"}) == [
        "GPUS_PER_NODE=2",
        "g7e.12xlarge",
    ]
    assert instance_values_in(text.splitlines()[0], {"GPUS_PER_NODE=2"}) == []


def test_environment_file_keeps_nccl_tests_mpi_on_tcp_bootstrap(bundle, tmp_path):
    env_file = tmp_path / "cluster.env"
    env_file.write_text(bundle.inputs["data"]["cluster.env"])
    names = ("OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_btl_tcp_if_exclude", "PMIX_MCA_gds")
    shown = subprocess.run(
        [
            "env",
            "-i",
            "bash",
            "-c",
            f"source {env_file}; " + "; ".join(f'echo "{n}=${{{n}}}"' for n in names),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert shown == [
        "OMPI_MCA_pml=^ucx",
        "OMPI_MCA_btl=tcp,self",
        "OMPI_MCA_btl_tcp_if_exclude=lo,docker0,veth_def_agent",
        "PMIX_MCA_gds=hash",
    ]
