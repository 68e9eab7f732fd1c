"""Named users run the staged jobs on a real Slurm 26.05 cluster (tests/support/local_slurm.py):
/shared laid out by the staging Job's own script (components/job_staging.py staging_script) with
the library and the work directories of root and two named users, each job's #SBATCH header and
the paths jobs/lib/job-env.sh derives submitted by alice, not root, from her home; and what bob may
not touch."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess

import pytest

from components.job_staging import JOBS_DIR, job_files, staging_script
from devkit.offline_run import run_program
from model.builders.job_environment import ENV_FILE, cluster_environment, render
from model.checks.users import User
from model.facts.contract import SHARED_JOBS, SHARED_MOUNT, SHARED_WORK
from tests.support.local_accounting import register_users
from tests.support.slurm_cluster import WALKTHROUGH, rendered_with_accounting, running_cluster

pytestmark = pytest.mark.slurm

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L a@b"
ALICE = User("alice", 2001, (KEY,))
BOB = User("bob", 2002, (KEY,))
USERS = (ALICE, BOB)
JOBS = sorted(p.name for p in JOBS_DIR.glob("*.sbatch"))


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """The dev stack with alice and bob rendered (their identities' Prolog on the workers) and its
    accounting on the test's database, both registered as the registration Job registers them, and
    /shared as the staging Job leaves it."""
    users = [{"name": u.name, "uid": u.uid, "sshPublicKey": list(u.ssh_public_keys)} for u in USERS]
    graph = run_program("dev", {"users": users})
    assert graph.error is None, graph.error
    release = {"slurm": rendered_with_accounting(graph)}
    with running_cluster(tmp_path_factory, release, "the named users' job tests", users=USERS) as cluster:
        register_users(cluster, USERS)
        staged = cluster.dir / "staged"
        staged.mkdir()
        files = {**job_files(), ENV_FILE: render(cluster_environment(WALKTHROUGH))}
        for key, text in files.items():
            (staged / key).write_text(text)
        subprocess.run(
            ["sh", "-c", staging_script(USERS, str(cluster.shared_dir), str(staged))],
            check=True,
            capture_output=True,
        )
        yield cluster


def _on_host(slurm, path: str) -> pathlib.Path:
    """A path of the pods' /shared where the test reads it."""
    return slurm.shared_dir / pathlib.PurePosixPath(path).relative_to(SHARED_MOUNT)


def _header_job(name: str) -> str:
    """The staged job up to what it writes: its #SBATCH header, the sourcing of job-env.sh and the
    lines right after it that set or make its output places (the fine-tune's OUTPUT_DIR); then,
    in place of the work, a file written into each place the job writes to."""
    lines = (JOBS_DIR / name).read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("source ") and "job-env.sh" in line)
    while end + 1 < len(lines) and lines[end + 1].startswith(("export ", "mkdir ")):
        end += 1
    return "\n".join(
        [
            *lines[: end + 1],
            'for d in "$LOG_DIR" "$HF_HOME" "$NCCL_TESTS_DIR" ${OUTPUT_DIR:+"$OUTPUT_DIR"}; do',
            '  mkdir -p "$d" && touch "$d/by-$SLURM_JOB_ID" && echo "WROTE $d"',
            "done",
            "",
        ]
    )


def _submit_as(slurm, user: User, script: str, name: str) -> tuple[str, str]:
    """(job id, `scontrol show job -o` once it ended) of `script` submitted by `user` from their
    home, with nothing in the environment that moves the job's paths."""
    path = slurm.home(user) / name
    path.write_text(script)
    os.chown(path, user.uid, user.uid)
    submitted = slurm.run_as(user, ["sbatch", "--parsable", f"{user.home}/{name}"])
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    return job, slurm.wait_for_job(job, 120)


@pytest.mark.parametrize("name", JOBS)
def test_a_named_users_staged_job_writes_its_output_and_files_into_their_own_work_directory(slurm, name):
    job, info = _submit_as(slurm, ALICE, _header_job(name), name)
    work = f"{SHARED_WORK}/{ALICE.name}"
    job_name = name.removesuffix(".sbatch")
    assert re.search(r"JobState=(\S+)", info).group(1) == "COMPLETED", info
    assert re.search(r"StdOut=(\S+)", info).group(1) == f"{work}/{job_name}-{job}.out"
    output = _on_host(slurm, f"{work}/{job_name}-{job}.out")
    assert (output.stat().st_uid, output.stat().st_gid) == (ALICE.uid, ALICE.uid)
    written = sorted(
        line.split(" ", 1)[1] for line in output.read_text().splitlines() if line.startswith("WROTE ")
    )
    places = [work, f"{work}/hf-cache", f"{work}/nccl-tests"]
    if name == "finetune.sbatch":
        places.append(f"{work}/lora-out")
    assert written == sorted(places), output.read_text()
    for place in places:
        assert _on_host(slurm, f"{place}/by-{job}").stat().st_uid == ALICE.uid


# What bob tries on the login pod, as himself, against alice's work directory, the work root and
# the job library; each must be refused and leave nothing behind.
REFUSED = {
    "write into another user's work directory": f"touch {SHARED_WORK}/alice/planted",
    "plant a model in another user's cache": f"mkdir -p {SHARED_WORK}/alice/hf-cache/planted",
    "read another user's work directory": f"ls {SHARED_WORK}/alice",
    "make a work directory of his own choosing": f"mkdir {SHARED_WORK}/planted",
    "rename another user's work directory": f"mv {SHARED_WORK}/alice {SHARED_WORK}/planted",
    "add a file to the job library": f"touch {SHARED_JOBS}/planted",
    "change the file every job sources": f"echo 'echo planted' >> {SHARED_JOBS}/lib/job-env.sh",
    "replace a job": f"cp /dev/null {SHARED_JOBS}/sanity.sbatch",
}


@pytest.mark.parametrize("attempt", REFUSED.values(), ids=REFUSED.keys())
def test_a_named_user_cannot_reach_into_another_users_work_directory_or_the_job_library(slurm, attempt):
    before = sorted((p, p.stat().st_size) for p in slurm.shared_dir.rglob("*") if "home" not in p.parts)
    done = slurm.run_as(BOB, ["bash", "-c", attempt])
    assert done.returncode != 0 and "Permission denied" in done.stderr, (done.stdout, done.stderr)
    after = sorted((p, p.stat().st_size) for p in slurm.shared_dir.rglob("*") if "home" not in p.parts)
    assert after == before


def test_a_named_user_can_write_their_own_work_directory(slurm):
    """The attempts above fail for the layout's sake, not the test's: bob's own directory takes them."""
    done = slurm.run_as(
        BOB, ["bash", "-c", f"mkdir -p {SHARED_WORK}/bob/hf-cache/models && ls {SHARED_WORK}/bob"]
    )
    assert done.returncode == 0 and done.stdout.split() == ["hf-cache"], done.stderr
