"""cluster.env with several GPU pools, sourced in bash as the jobs source it (`set -euo pipefail`,
then jobs/lib/job-env.sh): it takes the environment of the allocation's one pool and refuses an
allocation over several, which the default partition `all` allows."""

import subprocess

import pytest

from model.builders.job_environment import ENV_FILE, PMIX_ENVIRONMENT, environment_files, mpi_conf
from model.checks import gpu_pools
from tests.support.paths import REPO

ROOT = REPO
TWO_POOLS = [
    {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1},
    {"name": "train", "instanceType": "p5.48xlarge", "nodeCount": 2},
]
ADVICE = "submit with -p <pool> (or --constraint=<pool>)"

# `scontrol show hostnames <hostlist>` prints the hostlist's names one per line
# (https://slurm.schedmd.com/scontrol.html#OPT_hostnames). The fake answers only that, for the one
# hostlist the test gives it, and fails on anything else.
FAKE_SCONTROL = """#!/bin/bash
[ "$#" = 3 ] && [ "$1 $2" = "show hostnames" ] && [ "$3" = "$FAKE_NODELIST" ] || {
  echo "fake scontrol: unexpected arguments: $*" >&2; exit 2; }
printf '%s\\n' $FAKE_HOSTS
"""


@pytest.fixture()
def jobs_dir(tmp_path):
    pools, problems = gpu_pools.pools_from_config(TWO_POOLS, "us-west-2a", 400)
    assert problems == []
    staged = tmp_path / "jobs"
    staged.mkdir()
    for name, text in environment_files(pools).items():
        (staged / name).write_text(text)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "scontrol").write_text(FAKE_SCONTROL)
    (fake_bin / "scontrol").chmod(0o755)
    return staged


def _source(jobs_dir, script, nodelist=None, hosts=(), node=None):
    env = {
        "JOBS_DIR": str(jobs_dir),
        "PATH": f"{jobs_dir.parent / 'bin'}:/usr/bin:/bin",
        "LOG_DIR": str(jobs_dir.parent / "logs"),
    }
    if nodelist is not None:
        env |= {
            "SLURM_JOB_NODELIST": nodelist,
            "FAKE_NODELIST": nodelist,
            "FAKE_HOSTS": " ".join(hosts),
            "SLURM_JOB_ID": "7",
        }
    if node is not None:
        env["SLURMD_NODENAME"] = node
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; {script}"], env=env, capture_output=True, text=True
    )


def _instance_type(jobs_dir, **allocation):
    return _source(jobs_dir, f'source "$JOBS_DIR/{ENV_FILE}"; echo "$SLINKY_EKS_INSTANCE_TYPE"', **allocation)


def test_an_allocation_within_one_pool_gets_that_pools_environment(jobs_dir):
    done = _instance_type(jobs_dir, nodelist="train-[0-1]", hosts=("train-0", "train-1"), node="train-0")
    assert (done.returncode, done.stdout, done.stderr) == (0, "p5.48xlarge\n", "")


def test_an_allocation_over_two_pools_is_refused_naming_both_and_how_to_submit(jobs_dir):
    done = _instance_type(jobs_dir, nodelist="infer-0,train-0", hosts=("infer-0", "train-0"), node="infer-0")
    (line,) = done.stderr.splitlines()
    assert done.returncode != 0 and done.stdout == ""
    assert "allocation infer-0,train-0 spans the GPU pools infer train" in line and line.endswith(ADVICE)


def test_a_job_on_an_allocation_over_two_pools_stops_before_it_launches(jobs_dir):
    done = _source(
        jobs_dir,
        f'source "{ROOT}/jobs/lib/job-env.sh"; echo LAUNCHED',
        nodelist="infer-0,train-[0-1]",
        hosts=("infer-0", "train-0", "train-1"),
        node="train-0",
    )
    assert done.returncode != 0 and "LAUNCHED" not in done.stdout and ADVICE in done.stderr


def test_without_slurmd_nodename_the_allocations_first_host_picks_the_pool(jobs_dir):
    # An salloc shell on the login pod: SLURM_JOB_NODELIST is set, SLURMD_NODENAME is not.
    done = _instance_type(jobs_dir, nodelist="infer-0", hosts=("infer-0",))
    assert (done.returncode, done.stdout) == (0, "g6e.12xlarge\n")


def test_outside_any_allocation_it_fails_with_one_line_not_an_unbound_variable(jobs_dir):
    done = _instance_type(jobs_dir)
    (line,) = done.stderr.splitlines()
    assert done.returncode != 0 and "unbound variable" not in line
    assert line == "cluster.env: SLURMD_NODENAME and SLURM_JOB_NODELIST are unset: source it in a Slurm job"


def test_a_node_of_no_pool_is_refused_naming_it(jobs_dir):
    done = _instance_type(jobs_dir, nodelist="other-0", hosts=("other-0",), node="other-0")
    assert (
        done.returncode != 0 and done.stderr == "cluster.env: node other-0 is in no GPU pool (infer train)\n"
    )


def test_a_failing_scontrol_is_one_line_naming_the_nodelist(jobs_dir):
    (jobs_dir.parent / "bin" / "scontrol").write_text("#!/bin/bash\nexit 1\n")
    done = _instance_type(jobs_dir, nodelist="train-[0-1]", hosts=("train-0",), node="train-0")
    assert (
        done.returncode != 0 and done.stderr == "cluster.env: scontrol cannot list the hosts of train-[0-1]\n"
    )


def test_the_pool_picking_cluster_env_passes_shellcheck(jobs_dir):
    done = subprocess.run(
        [str(ROOT / ".venv/bin/shellcheck"), "-s", "bash", str(jobs_dir / ENV_FILE)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout


def test_mpi_conf_gives_pmix_steps_the_hash_data_store():
    # mpi.conf(5): "PMIxEnv=<environment variables> Semicolon separated list of environment
    # variables to be set in job environments to be used by PMIx".
    (line,) = mpi_conf().splitlines()
    key, _, value = line.partition("=")
    assert key == "PMIxEnv"
    assert (
        dict(item.split("=", 1) for item in value.split(";")) == {"PMIX_MCA_gds": "hash"} == PMIX_ENVIRONMENT
    )
