"""Accounting on a real Slurm 26.05 cluster shaped as the Slinky operator runs it with an
Accounting (local_slurm.py, local_accounting.py: slurmdbd with the operator's slurmdbd.conf on a
real MariaDB, slurm.conf's accounting lines as the operator writes them, the program's scheduling
policy in its extra config), rendered from the dev stack with named users, so that they are known
as the stack makes them known (model/builders/identities.py): merged by the init container's script in the
login and controller pods, by the Prolog the release gives slurmd (prologScripts) on a worker
before the job, and the
registration program (cluster_programs/accounting_registration.py) run against its sacctmgr in the
slurmctld pod as the registration Job runs it there.

The tests of this module run in order on one cluster: the first registration, jobs of the
registered users, then bob's removal."""

from __future__ import annotations

import re
import time

import pytest

from cluster_programs import accounting_database_user as database_user
from cluster_programs import accounting_registration as registration
from devkit.offline_run import run_program
from model.builders import identities
from model.builders.slurm_values import storage_parameters
from model.checks.users import DEFAULT_ACCOUNT, User
from model.facts.contract import ACCOUNTING_ADMIN_USER, ACCOUNTING_DATABASE, ACCOUNTING_USER
from tests.support.local_accounting import TLS_DIR, make_ca, register_users
from tests.support.slurm_cluster import rendered_with_accounting, running_cluster

pytestmark = pytest.mark.slurm

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHVzZXJzLWFyZS1ub3QtbG9nZ2luZy1pbi1oZXJl test"
ALICE = User("alice", 2001, (KEY,))  # the default account
BOB = User("bob", 2002, (KEY,), account="ml", admin=True)
# Known to every pod (passwd, home) but never registered: no association.
CAROL = User("carol", 2003, (KEY,))
# `id -un` is the worker's /etc/passwd (what the Prolog merged); `id -u` the job credential's UID.
JOB = "#!/bin/sh\necho user=$(id -un) uid=$(id -u) host=$(hostname)\n"
USERS = [ALICE, BOB, CAROL]


def _config(user: User) -> dict:
    """The stack config's `users` entry for a User (model/checks/users.py users_from_config)."""
    return {
        "name": user.name,
        "uid": user.uid,
        "sshPublicKey": list(user.ssh_public_keys),
        "account": user.account,
        "admin": user.admin,
    }


@pytest.fixture(scope="module")
def release():
    """The dev stack's `slurm` release with the users, accounting enabled."""
    graph = run_program("dev", {"users": [_config(u) for u in USERS]})
    assert graph.error is None, graph.error
    return rendered_with_accounting(graph)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, release):
    with running_cluster(
        tmp_path_factory, {"slurm": release}, "the accounting tests", users=USERS
    ) as cluster:
        yield cluster


# The chart's ConfigMap names each prologScripts key prolog-<key> (slurm chart 1.2.1
# templates/controller/prolog-configmap.yaml), the file name the operator's Prolog= line takes.
PROLOG = f"prolog-{identities.PROLOG_SCRIPT}"


def test_slurm_conf_runs_the_identities_prolog_on_the_workers(slurm):
    conf = slurm.release.slurm_conf()
    # Beside the DCGM job mapping's prolog (metrics on): the operator lists the scripts sorted.
    assert f"Prolog={PROLOG}\n" in conf.split("### PROLOG & EPILOG ###\n", 1)[1], conf
    assert slurm.release.scripts[PROLOG] == identities.prolog_script()
    config = slurm.run(["scontrol", "show", "config"]).stdout
    assert re.search(rf"^Prolog\[\d\]\s*=\s*{re.escape(PROLOG)}$", config, re.M), config


def _database(slurm) -> str:
    """Everything the registration reads or writes, as sacctmgr lists it."""
    return "\n".join(
        slurm.run([*registration.SACCTMGR, "list", *what]).stdout
        for what in (
            ["account", "format=Account,Organization,Description"],
            ["user", "format=User,DefaultAccount,AdminLevel"],
            ["association", "format=Cluster,Account,User,Fairshare,QOS,DefaultQOS"],
        )
    )


@pytest.fixture(scope="module")
def registered(slurm):
    """alice and bob registered, as the first `up` with both does."""
    return register_users(slurm, [ALICE, BOB])


def _submit(slurm, user: User) -> str:
    (slurm.home(user) / "job.sh").write_text(JOB)
    submitted = slurm.run_as(
        user, ["sbatch", "--parsable", "-o", f"{user.home}/job-%j.out", f"{user.home}/job.sh"]
    )
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    slurm.wait_for_job(job, 120)
    return job


def _sacct(slurm, job: str, timeout: float = 30) -> list[str]:
    """sacct's user|account|state|uid for the job once slurmdbd has its end (records reach it
    asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        out = slurm.run(
            ["sacct", "-a", "-X", "-n", "-P", "-j", job, "--format=User,Account,State,UID"]
        ).stdout
        fields = out.strip().split("|")
        if len(fields) == 4 and fields[2] == "COMPLETED" or time.monotonic() > deadline:
            return fields
        time.sleep(0.5)


def test_slurmctld_runs_with_the_operators_accounting_and_the_programs_policy(slurm):
    config = slurm.run(["scontrol", "show", "config"]).stdout
    wanted = {
        "AccountingStorageType": "accounting_storage/slurmdbd",
        "AccountingStorageHost": "slurm-accounting",
        "AccountingStoragePort": "6819",
        "AccountingStorageEnforce": "associations,limits,qos",
        "PriorityType": "priority/multifactor",
        "PriorityWeightFairShare": "10000",
    }
    found = {k: re.search(rf"^{k}\s*=\s*(\S+)", config, re.M) for k in wanted}
    assert {k: m.group(1) if m else None for k, m in found.items()} == wanted, config


# The database: slurmdbd as its own user, over TLS only (components/accounting_database.py)


def test_slurmdbd_connects_as_its_own_user_with_the_stacks_storage_parameters(slurm):
    conf = slurm.release.slurmdbd_conf("-")
    assert f"StorageUser={ACCOUNTING_USER}\n" in conf and ACCOUNTING_USER != ACCOUNTING_ADMIN_USER
    assert f"StorageParameters={storage_parameters()}\n" in conf, conf
    # slurmdbd is up on the database (it registered the cluster), holding connections as its user.
    clusters = slurm.run([*registration.SACCTMGR, "list", "cluster", "format=Cluster"]).stdout.split()
    assert clusters, clusters
    sessions = slurm.accounting.sql(
        "SELECT DISTINCT USER FROM information_schema.PROCESSLIST WHERE HOST <> ''"
    )
    assert ACCOUNTING_USER in sessions.split() and ACCOUNTING_ADMIN_USER not in sessions.split(), sessions


def test_slurmdbds_user_has_every_privilege_on_its_database_and_none_elsewhere(slurm):
    grants = slurm.accounting.sql(f"SHOW GRANTS FOR '{ACCOUNTING_USER}'@'%'").splitlines()
    assert len(grants) == 2, grants
    assert re.fullmatch(
        rf"GRANT USAGE ON \*\.\* TO `{ACCOUNTING_USER}`@`%` IDENTIFIED BY PASSWORD '\*[0-9A-F]{{40}}' REQUIRE SSL",
        grants[0],
    ), grants
    # The one database, its `_`s escaped (no other database whose name they would match), as the
    # mariadb client's batch output prints it: each backslash doubled (mariadb(1), --batch).
    exact = ACCOUNTING_DATABASE.replace("_", "\\\\_")
    assert grants[1] == f"GRANT ALL PRIVILEGES ON `{exact}`.* TO `{ACCOUNTING_USER}`@`%`", grants


@pytest.mark.parametrize("who", ["slurmdbd", "master"])
def test_a_connection_without_tls_is_refused(slurm, who):
    accounting = slurm.accounting
    user, password = {
        "slurmdbd": (ACCOUNTING_USER, accounting.password),
        "master": (ACCOUNTING_ADMIN_USER, accounting.admin_password),
    }[who]
    refused = accounting.client(user, password, "--skip-ssl")
    assert refused.returncode != 0 and "insecure transport" in refused.stderr, (
        refused.stdout,
        refused.stderr,
    )
    # The same user and password over TLS, verifying the server: accepted.
    accepted = accounting.client(
        user, password, "--ssl", f"--ssl-ca={TLS_DIR}/ca.pem", "--ssl-verify-server-cert"
    )
    assert accepted.returncode == 0 and accepted.stdout.strip() == "1", (accepted.stdout, accepted.stderr)


def test_slurmdbd_refuses_a_server_its_ca_did_not_sign(slurm, tmp_path):
    # The same slurmdbd.conf and StorageParameters, another CA where SSL_CA names it.
    refusal = slurm.accounting.slurmdbd_refusal(make_ca(tmp_path, "another-ca"))
    assert "TLS/SSL error" in refusal and "certificate" in refusal, refusal


def test_the_database_user_program_refuses_a_server_its_ca_did_not_sign(slurm, tmp_path):
    with pytest.raises(database_user.DatabaseError, match="certificate verify failed"):
        slurm.accounting.provision_user(make_ca(tmp_path, "another-ca"))


def test_the_database_user_program_run_again_leaves_slurmdbd_working(slurm):
    before = slurm.accounting.sql(f"SHOW GRANTS FOR '{ACCOUNTING_USER}'@'%'")
    slurm.accounting.provision_user(slurm.accounting.ca)
    assert slurm.accounting.sql(f"SHOW GRANTS FOR '{ACCOUNTING_USER}'@'%'") == before
    listed = slurm.run([*registration.SACCTMGR, "list", "cluster", "format=Cluster"])
    assert listed.returncode == 0 and listed.stdout.split(), (listed.stdout, listed.stderr)


# Registration


def test_registration_adds_each_account_and_user_with_their_admin_level(slurm, registered):
    users = slurm.run(
        [*registration.SACCTMGR, "list", "user", "format=User,DefaultAccount,AdminLevel"]
    ).stdout
    assert {"alice|default|None", "bob|ml|Administrator"} <= set(users.split()), users
    accounts = slurm.run([*registration.SACCTMGR, "list", "account", "format=Account,Organization"]).stdout
    assert {f"{DEFAULT_ACCOUNT}|slinky-eks", "ml|slinky-eks"} <= set(accounts.split()), accounts


def test_alices_job_runs_as_her_on_a_worker_and_is_accounted_to_her_account(slurm, registered):
    job = _submit(slurm, ALICE)
    output = (slurm.home(ALICE) / f"job-{job}.out").read_text()
    assert re.fullmatch(r"user=alice uid=2001 host=slinky-\d\n", output), output
    assert _sacct(slurm, job) == ["alice", DEFAULT_ACCOUNT, "COMPLETED", "2001"]


def test_sshare_shows_both_accounts_with_their_shares(slurm, registered):
    rows = [
        line.split("|")
        for line in slurm.run(["sshare", "-a", "-n", "-P", "--format=Account,User,RawShares"]).stdout.split(
            "\n"
        )
        if line.strip()
    ]
    shares = {(account.strip(), user): raw for account, user, raw in rows}
    assert {
        k: shares.get(k)
        for k in [(DEFAULT_ACCOUNT, ""), ("ml", ""), (DEFAULT_ACCOUNT, "alice"), ("ml", "bob")]
    } == {(DEFAULT_ACCOUNT, ""): "1", ("ml", ""): "1", (DEFAULT_ACCOUNT, "alice"): "1", ("ml", "bob"): "1"}, (
        rows
    )


def test_a_user_without_an_association_is_refused_at_submit(slurm, registered):
    (slurm.home(CAROL) / "job.sh").write_text(JOB)
    refused = slurm.run_as(CAROL, ["sbatch", "--parsable", f"{CAROL.home}/job.sh"])
    assert refused.returncode != 0 and "Invalid account" in refused.stderr, (refused.stdout, refused.stderr)


def test_registration_run_again_changes_nothing(slurm, registered):
    before = _database(slurm)
    assert register_users(slurm, [ALICE, BOB]) == []
    assert _database(slurm) == before


def test_removing_bob_removes_his_association_and_keeps_his_jobs(slurm, registered):
    job = _submit(slurm, BOB)
    assert _sacct(slurm, job)[:3] == ["bob", "ml", "COMPLETED"]
    register_users(slurm, [ALICE])
    associations = slurm.run([*registration.SACCTMGR, "list", "association", "format=Account,User"]).stdout
    assert "bob" not in associations and "ml|" not in associations, associations
    assert _sacct(slurm, job)[:3] == ["bob", "ml", "COMPLETED"]
    refused = slurm.run_as(BOB, ["sbatch", "--parsable", f"{BOB.home}/job.sh"])
    assert refused.returncode != 0, refused.stdout
