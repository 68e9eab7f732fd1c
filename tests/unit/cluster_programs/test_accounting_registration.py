"""cluster_programs/accounting_registration.py without a cluster: what it reads from sacctmgr's
parsable output, the commands it plans from the difference (tests/slurm/test_accounting.py runs
them on a real slurmdbd), its wait for the cluster, and the shipped files run as the Job runs them."""

import os
import subprocess
import sys

import pytest

from cluster_programs.accounting_registration import (
    Current,
    Desired,
    RegistrationFailed,
    plan,
    read_current,
    register,
    wait_for_cluster,
)
from components._parts.program_code import shipped_code
from components.accounting_registration import MODULES
from model.builders.program_job import PACKAGE
from tests.support.rollout_fakes import Clock

CLUSTER = "slurm_slurm"
ORG = "slinky-eks"


def desired(**users) -> Desired:
    """users: name -> (account, admin level)."""
    return Desired(
        ORG,
        "normal",
        frozenset(a for a, _ in users.values()),
        dict(users),
        frozenset((a, name) for name, (a, _) in users.items()),
    )


# What a fresh slurmdbd holds once slurmctld has added the cluster: root's account and user.
FRESH = Current(
    {"root": "root"}, frozenset({"root"}), {"root": ("root", "Administrator")}, frozenset({("root", "root")})
)
REGISTERED = Current(
    {"root": "root", "default": ORG, "ml": ORG},
    frozenset({"root", "default", "ml"}),
    {"root": ("root", "Administrator"), "alice": ("default", "None"), "bob": ("ml", "Administrator")},
    frozenset({("root", "root"), ("default", "alice"), ("ml", "bob")}),
)
ALICE_AND_BOB = desired(alice=("default", "None"), bob=("ml", "Administrator"))


def test_a_fresh_database_gets_the_accounts_then_the_users():
    assert plan(FRESH, ALICE_AND_BOB, CLUSTER) == [
        [
            "add",
            "account",
            "default",
            f"Cluster={CLUSTER}",
            f"Organization={ORG}",
            "QOS=normal",
            "DefaultQOS=normal",
        ],
        [
            "add",
            "account",
            "ml",
            f"Cluster={CLUSTER}",
            f"Organization={ORG}",
            "QOS=normal",
            "DefaultQOS=normal",
        ],
        [
            "add",
            "user",
            "alice",
            "Account=default",
            f"Cluster={CLUSTER}",
            "DefaultAccount=default",
            "AdminLevel=None",
        ],
        [
            "add",
            "user",
            "bob",
            "Account=ml",
            f"Cluster={CLUSTER}",
            "DefaultAccount=ml",
            "AdminLevel=Administrator",
        ],
    ]


def test_a_database_that_holds_the_users_needs_no_command():
    assert plan(REGISTERED, ALICE_AND_BOB, CLUSTER) == []


def test_a_removed_user_loses_their_association_and_an_emptied_account_goes():
    assert plan(REGISTERED, desired(alice=("default", "None")), CLUSTER) == [
        ["delete", "user", "where", "Name=bob", "Account=ml", f"Cluster={CLUSTER}"],
        ["delete", "account", "where", "Name=ml"],
    ]


def test_accounts_and_associations_an_admin_made_are_left_alone():
    theirs = Current(
        {**REGISTERED.accounts, "physics": "lab"},
        REGISTERED.cluster_accounts | {"physics"},
        {**REGISTERED.users, "dave": ("physics", "None")},
        REGISTERED.associations | {("physics", "dave"), ("physics", "alice")},
    )
    assert plan(theirs, ALICE_AND_BOB, CLUSTER) == []


def test_a_user_moved_to_another_account_gets_it_as_default_before_the_old_association_goes():
    moved = desired(alice=("ml", "None"), bob=("ml", "Administrator"))
    assert plan(REGISTERED, moved, CLUSTER) == [
        ["add", "user", "alice", "Account=ml", f"Cluster={CLUSTER}"],
        ["modify", "user", "where", "Name=alice", "set", "DefaultAccount=ml"],
        ["delete", "user", "where", "Name=alice", "Account=default", f"Cluster={CLUSTER}"],
        ["delete", "account", "where", "Name=default"],
    ]


def test_a_changed_admin_flag_changes_the_admin_level_only():
    demoted = desired(alice=("default", "None"), bob=("ml", "None"))
    assert plan(REGISTERED, demoted, CLUSTER) == [
        ["modify", "user", "where", "Name=bob", "set", "AdminLevel=None"]
    ]


def test_an_account_record_without_an_association_on_the_cluster_gets_one():
    orphan = Current(
        {**FRESH.accounts, "default": ORG}, FRESH.cluster_accounts, FRESH.users, FRESH.associations
    )
    assert plan(orphan, desired(alice=("default", "None")), CLUSTER)[0][:3] == ["add", "account", "default"]


class FakeSacctmgr:
    """Answers the three lists with the given rows and records every other command."""

    def __init__(self, accounts: str, users: str, associations: str, clusters: str = CLUSTER):
        self.answers = {"account": accounts, "user": users, "association": associations, "cluster": clusters}
        self.ran: list[list[str]] = []

    def __call__(self, argv: list[str]) -> str:
        if argv[0] == "list":
            return self.answers[argv[1]]
        self.ran.append(argv)
        return ""


def test_the_lists_are_read_from_parsable_rows():
    fake = FakeSacctmgr(
        "default|slinky-eks\nroot|root\n",
        "alice|default|None\nroot|root|Administrator\n",
        "root|\nroot|root\ndefault|\ndefault|alice\n",
    )
    assert read_current(fake, CLUSTER) == Current(
        {"default": ORG, "root": "root"},
        frozenset({"root", "default"}),
        {"alice": ("default", "None"), "root": ("root", "Administrator")},
        frozenset({("root", "root"), ("default", "alice")}),
    )


def test_a_row_of_the_wrong_shape_fails_naming_it():
    fake = FakeSacctmgr("default|slinky-eks|extra\n", "", "")
    with pytest.raises(RegistrationFailed, match="unexpected sacctmgr row 'default|slinky-eks|extra'"):
        read_current(fake, CLUSTER)


def test_register_runs_the_plan_and_says_how_many_changes():
    fake = FakeSacctmgr("root|root\n", "root|root|Administrator\n", "root|\nroot|root\n")
    logs: list[str] = []
    ran = register(fake, desired(alice=("default", "None")), CLUSTER, 60, log=logs.append)
    assert fake.ran == ran and len(ran) == 2 and logs[-1] == "2 changes to the accounting database"


def test_register_waits_for_slurmctld_to_add_the_cluster():
    clock = Clock()
    start, fake = clock(), FakeSacctmgr("", "", "", clusters="")

    def sleep(s):
        clock.sleep(s)
        if clock() - start >= 30:
            fake.answers["cluster"] = f"{CLUSTER}\n"

    register(fake, desired(), CLUSTER, 120, log=lambda line: None, clock=clock, sleep=sleep)
    assert 30 <= clock() - start < 120


def test_the_wait_gives_up_naming_the_missing_cluster():
    clock = Clock()
    with pytest.raises(RegistrationFailed, match=f"after 60 s: slurmdbd does not list cluster {CLUSTER}"):
        wait_for_cluster(
            FakeSacctmgr("", "", "", clusters="other\n"), CLUSTER, 60, clock=clock, sleep=clock.sleep
        )


def test_the_wait_retries_a_failing_sacctmgr_then_reports_its_error():
    clock = Clock()

    def failing(argv):
        raise RegistrationFailed("sacctmgr list cluster exited 1: Connection refused")

    start = clock()
    with pytest.raises(RegistrationFailed, match="after 60 s: sacctmgr list cluster exited 1"):
        wait_for_cluster(failing, CLUSTER, 60, clock=clock, sleep=clock.sleep)
    assert clock() - start >= 60


def test_the_shipped_files_run_as_the_job_runs_them(tmp_path):
    package = tmp_path / PACKAGE
    package.mkdir()
    for name, text in shipped_code(MODULES).items():
        (package / name).write_text(text)
    (tmp_path / "desired.json").write_text('{"organization": "slinky-eks"}')
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            f"{PACKAGE}.accounting_registration",
            "--desired",
            "desired.json",
            "--cluster",
            CLUSTER,
            "--namespace",
            "slurm",
            "--slurm-pod",
            "slurm-controller-0",
            "--slurm-container",
            "slurmctld",
            "--timeout",
            "60",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stderr.startswith(
        "FAILED: not inside a pod with a service account"
    )
