"""Accounting on a real Slurm 26.05 cluster shaped as the Slinky operator runs it with an
Accounting (local_slurm.py, local_accounting.py: slurmdbd with the operator's slurmdbd.conf on a
real MariaDB, slurm.conf's accounting lines as the operator writes them, the program's scheduling
policy in its extra config), with named users known in every pod (model/identities.py), and the
registration program (cluster_programs/accounting_registration.py) run against its sacctmgr in the
slurmctld pod as the registration Job runs it there.

The tests of this module run in order on one cluster: the first registration, jobs of the
registered users, then bob's removal."""
from __future__ import annotations

import re
import time

import pytest

from cluster_programs import accounting_registration as registration
from model.accounting import desired_state, to_json
from model.users import DEFAULT_ACCOUNT, User
from tests.support.slurm_cluster import rendered_with_accounting, running_cluster

pytestmark = pytest.mark.slurm

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHVzZXJzLWFyZS1ub3QtbG9nZ2luZy1pbi1oZXJl test"
ALICE = User("alice", 2001, (KEY,))                        # the default account
BOB = User("bob", 2002, (KEY,), account="ml", admin=True)
# Known to every pod (passwd, home) but never registered: no association.
CAROL = User("carol", 2003, (KEY,))
JOB = "#!/bin/sh\necho uid=$(id -u) host=$(hostname)\n"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, dev):
    with running_cluster(tmp_path_factory, {"slurm": rendered_with_accounting(dev)}, "the accounting tests",
                         users=[ALICE, BOB, CAROL]) as cluster:
        yield cluster


def _sacctmgr(slurm):
    """The registration program's sacctmgr: in the slurmctld pod, as the slurm user."""
    def run(argv: list[str]) -> str:
        result = slurm.run_on_controller([*registration.SACCTMGR, *argv])
        if result.returncode != 0:
            raise registration.RegistrationFailed(f"sacctmgr {' '.join(argv)}: {result.stdout}{result.stderr}")
        return result.stdout
    return run


def _register(slurm, users) -> list[list[str]]:
    cluster = re.search(r"ClusterName=(\S+)", slurm.release.slurm_conf()).group(1)
    desired = registration.Desired.from_json(to_json(desired_state(users)))
    return registration.register(_sacctmgr(slurm), desired, cluster, timeout=60, log=lambda line: None)


def _database(slurm) -> str:
    """Everything the registration reads or writes, as sacctmgr lists it."""
    return "\n".join(slurm.run([*registration.SACCTMGR, "list", *what]).stdout for what in (
        ["account", "format=Account,Organization,Description"],
        ["user", "format=User,DefaultAccount,AdminLevel"],
        ["association", "format=Cluster,Account,User,Fairshare,QOS,DefaultQOS"]))


@pytest.fixture(scope="module")
def registered(slurm):
    """alice and bob registered, as the first `up` with both does."""
    return _register(slurm, [ALICE, BOB])


def _submit(slurm, user: User) -> str:
    (slurm.home(user) / "job.sh").write_text(JOB)
    submitted = slurm.run_as(user, ["sbatch", "--parsable", "-o", f"{user.home}/job-%j.out", f"{user.home}/job.sh"])
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    slurm.wait_for_job(job, 120)
    return job


def _sacct(slurm, job: str, timeout: float = 30) -> list[str]:
    """sacct's user|account|state|uid for the job once slurmdbd has its end (records reach it
    asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        out = slurm.run(["sacct", "-a", "-X", "-n", "-P", "-j", job, "--format=User,Account,State,UID"]).stdout
        fields = out.strip().split("|")
        if len(fields) == 4 and fields[2] == "COMPLETED" or time.monotonic() > deadline:
            return fields
        time.sleep(0.5)


def test_slurmctld_runs_with_the_operators_accounting_and_the_programs_policy(slurm):
    config = slurm.run(["scontrol", "show", "config"]).stdout
    wanted = {"AccountingStorageType": "accounting_storage/slurmdbd", "AccountingStorageHost": "slurm-accounting",
              "AccountingStoragePort": "6819", "AccountingStorageEnforce": "associations,limits,qos",
              "PriorityType": "priority/multifactor", "PriorityWeightFairShare": "10000"}
    found = {k: re.search(rf"^{k}\s*=\s*(\S+)", config, re.M) for k in wanted}
    assert {k: m.group(1) if m else None for k, m in found.items()} == wanted, config


def test_registration_adds_each_account_and_user_with_their_admin_level(slurm, registered):
    users = slurm.run([*registration.SACCTMGR, "list", "user", "format=User,DefaultAccount,AdminLevel"]).stdout
    assert {"alice|default|None", "bob|ml|Administrator"} <= set(users.split()), users
    accounts = slurm.run([*registration.SACCTMGR, "list", "account", "format=Account,Organization"]).stdout
    assert {f"{DEFAULT_ACCOUNT}|slinky-eks", "ml|slinky-eks"} <= set(accounts.split()), accounts


def test_alices_job_runs_as_her_on_a_worker_and_is_accounted_to_her_account(slurm, registered):
    job = _submit(slurm, ALICE)
    output = (slurm.home(ALICE) / f"job-{job}.out").read_text()
    assert re.fullmatch(r"uid=2001 host=slinky-\d\n", output), output
    assert _sacct(slurm, job) == ["alice", DEFAULT_ACCOUNT, "COMPLETED", "2001"]


def test_sshare_shows_both_accounts_with_their_shares(slurm, registered):
    rows = [line.split("|") for line in slurm.run(["sshare", "-a", "-n", "-P", "--format=Account,User,RawShares"])
            .stdout.split("\n") if line.strip()]
    shares = {(account.strip(), user): raw for account, user, raw in rows}
    assert {k: shares.get(k) for k in [(DEFAULT_ACCOUNT, ""), ("ml", ""), (DEFAULT_ACCOUNT, "alice"),
                                       ("ml", "bob")]} == {
        (DEFAULT_ACCOUNT, ""): "1", ("ml", ""): "1", (DEFAULT_ACCOUNT, "alice"): "1", ("ml", "bob"): "1"}, rows


def test_a_user_without_an_association_is_refused_at_submit(slurm, registered):
    (slurm.home(CAROL) / "job.sh").write_text(JOB)
    refused = slurm.run_as(CAROL, ["sbatch", "--parsable", f"{CAROL.home}/job.sh"])
    assert refused.returncode != 0 and "Invalid account" in refused.stderr, (refused.stdout, refused.stderr)


def test_registration_run_again_changes_nothing(slurm, registered):
    before = _database(slurm)
    assert _register(slurm, [ALICE, BOB]) == []
    assert _database(slurm) == before


def test_removing_bob_removes_his_association_and_keeps_his_jobs(slurm, registered):
    job = _submit(slurm, BOB)
    assert _sacct(slurm, job)[:3] == ["bob", "ml", "COMPLETED"]
    _register(slurm, [ALICE])
    associations = slurm.run([*registration.SACCTMGR, "list", "association", "format=Account,User"]).stdout
    assert "bob" not in associations and "ml|" not in associations, associations
    assert _sacct(slurm, job)[:3] == ["bob", "ml", "COMPLETED"]
    refused = slurm.run_as(BOB, ["sbatch", "--parsable", f"{BOB.home}/job.sh"])
    assert refused.returncode != 0, refused.stdout
