"""`pulumi up` puts the jobs and their catalog-derived environment onto /shared."""

import os
import pathlib
import re
import stat
import subprocess

import pytest

from components.job_staging import JOBS_DIR, job_files, staging_script
from devkit.offline_run import run_program
from model.builders.job_environment import cluster_environment
from model.checks.users import User
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
        "container-sanity.sbatch",
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
    names = ("OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_btl_tcp_if_exclude")
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
    ]


def test_environment_file_gives_no_job_a_pmix_variable(bundle, tmp_path):
    # A PMIX_* variable in a non-MPI container step makes enroot's 50-slurm-pmi.sh bind a PMIx
    # directory the step does not have (model/builders/job_environment.py PMIX_ENVIRONMENT).
    env_file = tmp_path / "cluster.env"
    env_file.write_text(bundle.inputs["data"]["cluster.env"])
    shown = subprocess.run(
        ["env", "-i", "bash", "-c", f"source {env_file}; compgen -e PMIX_ || true"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert shown == []


# The work directories (components/job_staging.py staging_script), the script run as the copy Job
# runs it, on a directory of the test's own.

ALICE = {
    "name": "alice",
    "uid": 2001,
    "sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L a@b",
}
USERS = (User("alice", 2001, ("k",)), User("bob", 2002, ("k",)))


def _stage(tmp_path, users=USERS) -> pathlib.Path:
    staged, shared = tmp_path / "staged", tmp_path / "shared"
    staged.mkdir(exist_ok=True)
    shared.mkdir(exist_ok=True)
    for key, text in job_files().items():
        (staged / key).write_text(text)
    subprocess.run(
        ["sh", "-c", staging_script(users, str(shared), str(staged))], check=True, capture_output=True
    )
    return shared


def _owner_and_mode(path: pathlib.Path) -> tuple[int, int, str]:
    st = path.stat()
    return st.st_uid, st.st_gid, oct(stat.S_IMODE(st.st_mode))


@pytest.mark.skipif(os.geteuid() != 0, reason="gives directories to other users: needs root")
def test_root_and_each_named_user_get_a_private_work_directory_of_their_own(tmp_path):
    work = _stage(tmp_path) / "work"
    assert _owner_and_mode(work) == (0, 0, "0o755")
    assert sorted(p.name for p in work.iterdir()) == ["alice", "bob", "root"]
    assert _owner_and_mode(work / "root") == (0, 0, "0o700")
    assert _owner_and_mode(work / "alice") == (2001, 2001, "0o700")
    assert _owner_and_mode(work / "bob") == (2002, 2002, "0o700")


@pytest.mark.skipif(os.geteuid() != 0, reason="gives directories to other users: needs root")
def test_a_second_staging_leaves_a_work_directory_and_what_its_user_put_in_it(tmp_path):
    shared = _stage(tmp_path)
    alice = shared / "work/alice"
    alice.chmod(0o750)  # alice opened it to her group
    (alice / "hf-cache").mkdir()
    os.chown(alice / "hf-cache", 2001, 2001)
    _stage(tmp_path)
    assert _owner_and_mode(alice) == (2001, 2001, "0o750")
    assert _owner_and_mode(alice / "hf-cache") == (2001, 2001, "0o755")


@pytest.mark.skipif(os.geteuid() != 0, reason="gives directories to other users: needs root")
def test_the_job_library_is_writable_by_root_alone(tmp_path):
    jobs = _stage(tmp_path) / "jobs"
    (jobs / "lib").chmod(0o777)  # what an older copy or a hand edit could have left
    _stage(tmp_path)
    writable = [
        str(p.relative_to(jobs))
        for p in [jobs, *jobs.rglob("*")]
        if p.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ]
    assert writable == []
    assert {p.stat().st_uid for p in [jobs, *jobs.rglob("*")]} == {0}


def test_the_copy_may_chown_only_in_a_stack_with_named_users(copy_job):
    users = run_program("dev", {"users": [ALICE]}).named("jobs-copy")
    (plain,) = copy_job.inputs["spec"]["template"]["spec"]["containers"]
    (chown,) = users.inputs["spec"]["template"]["spec"]["containers"]
    assert plain["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert chown["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}


def test_a_new_named_user_is_staged_again_on_the_next_up(copy_job):
    users = run_program("dev", {"users": [ALICE]}).named("jobs-copy")
    assert users.inputs["metadata"]["name"] != copy_job.inputs["metadata"]["name"]
    assert "/shared/work/alice" in users.inputs["spec"]["template"]["spec"]["containers"][0]["command"][-1]
