"""Every account and user registered in Slurm's accounting by a Job that re-runs exactly when the
users change (components/accounting_registration.py); the scheduling policy in the release's
slurm.conf lines, with its keys and their refusals."""

import hashlib
import json

import pytest

from components.accounting_registration import ACCOUNT, DESIRED_FILE, MODULES
from devkit.offline_run import run_program
from model.builders.accounting import desired_state, to_json
from model.checks.users import User
from model.facts.contract import CONTROLLER_POD, SLURM_CLUSTER, SLURM_NAMESPACE
from tests.support.program import rejected

ALICE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L alice@laptop"
BOB_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHo5XTHwRWToEb42mcBir6wbQZm9zUSpHChjh8bS0mXN bob@laptop"
ALICE = {"name": "alice", "uid": 2001, "sshPublicKey": ALICE_KEY, "admin": True}
BOB = {"name": "bob", "uid": 2002, "sshPublicKey": BOB_KEY, "account": "vision"}
OTHER_CIDR = ["198.51.100.7/32"]


@pytest.fixture(scope="module")
def named():
    return run_program("dev", {"users": [ALICE, BOB]})


def _job(graph) -> dict:
    return graph.named("accounts-job").inputs


def _container(graph) -> dict:
    (container,) = _job(graph)["spec"]["template"]["spec"]["containers"]
    return container


def test_the_desired_state_configmap_holds_the_users_accounts_and_associations(named):
    data = named.named("accounts-desired").inputs
    users = [User("alice", 2001, (ALICE_KEY,), admin=True), User("bob", 2002, (BOB_KEY,), account="vision")]
    assert data["data"] == {DESIRED_FILE: to_json(desired_state(users))}
    assert json.loads(data["data"][DESIRED_FILE])["associations"] == [
        {"account": "default", "user": "alice"},
        {"account": "vision", "user": "bob"},
    ]
    assert data["immutable"] is True


def test_the_job_is_named_by_the_desired_state_and_the_database(named):
    trigger = named.named("accounts-desired").inputs["metadata"]["name"].rsplit("-", 1)[1]
    # The mocks answer RDS's resource id from the identifier (devkit/offline_run.py), as RDS makes one per instance.
    identifier = named.named("accounting-db").inputs["identifier"]
    database = "db-" + hashlib.sha256(identifier.encode()).hexdigest()[:26].upper()
    expected = hashlib.sha256(f"database\0{database}\0users\0{trigger}\0".encode()).hexdigest()[:12]
    assert _job(named)["metadata"]["name"] == f"accounting-registration-{expected}"


def test_a_new_database_runs_the_registration_again(named):
    # Another instance (here: another identifier, as a replacement or a restore makes) has another
    # RDS resource id; the same users must be registered in it again.
    other = run_program("dev", {"users": [ALICE, BOB], "clusterName": "slinky-eks-restored"})
    assert other.named("accounts-desired").inputs == named.named("accounts-desired").inputs
    assert _job(other)["metadata"]["name"] != _job(named)["metadata"]["name"]


def test_adding_a_user_runs_the_registration_again(named):
    assert _job(run_program("dev", {"users": [ALICE]}))["metadata"]["name"] != _job(named)["metadata"]["name"]


def test_an_up_that_leaves_the_users_as_they_were_keeps_the_job(named):
    same = run_program("dev", {"users": [ALICE, BOB], "sshAllowedCidrs": OTHER_CIDR})
    assert _job(same)["metadata"]["name"] == _job(named)["metadata"]["name"]


def test_the_job_registers_on_slurms_cluster_through_the_controller_pod(named):
    command = _container(named)["command"]
    assert command[:3] == ["python3", "-m", "cluster_programs.accounting_registration"]
    args = dict(zip(command[3::2], command[4::2], strict=True))
    assert (args["--cluster"], args["--slurm-pod"], args["--namespace"]) == (
        SLURM_CLUSTER,
        CONTROLLER_POD,
        SLURM_NAMESPACE,
    )


def test_the_job_may_only_exec_into_the_controller_pod(named):
    (rule,) = named.named("accounts-role").inputs["rules"]
    assert rule == {
        "apiGroups": [""],
        "resources": ["pods/exec"],
        "verbs": ["get", "create"],
        "resourceNames": [CONTROLLER_POD],
    }
    assert _job(named)["spec"]["template"]["spec"]["serviceAccountName"] == ACCOUNT


def test_the_code_configmap_ships_the_program_and_its_api_client(named):
    assert sorted(named.named("accounts-code").inputs["data"]) == sorted(["__init__.py", *MODULES])


def test_the_job_waits_for_the_slurm_release(named):
    assert named.depends_on(named.named("accounts-job"), named.named("slurm-release"))


# The scheduling policy in slurm.conf: there exactly when the release's values enable accounting
# (model/builders/slurm_values.py with_scheduling).

POLICY_KEYS = (
    "PriorityType",
    "PriorityWeightFairshare",
    "PriorityWeightAge",
    "PriorityWeightQOS",
    "PriorityDecayHalfLife",
    "AccountingStorageEnforce",
    "AccountingStorageTRES",
)


def _policy(graph) -> tuple[bool, dict]:
    values = graph.named("slurm-release").inputs["values"]
    conf = values["controller"].get("extraConfMap") or {}
    return bool((values.get("accounting") or {}).get("enabled")), {k: conf.get(k) for k in POLICY_KEYS}


def test_the_release_carries_the_scheduling_policy_with_accounting(dev):
    accounting, policy = _policy(dev)
    assert policy == (
        {
            "PriorityType": ["priority/multifactor"],
            "PriorityWeightFairshare": ["10000"],
            "PriorityWeightAge": ["1000"],
            "PriorityWeightQOS": ["1000"],
            "PriorityDecayHalfLife": ["7-0"],
            "AccountingStorageEnforce": ["associations", "limits", "qos"],
            "AccountingStorageTRES": ["gres/gpu"],
        }
        if accounting
        else dict.fromkeys(POLICY_KEYS)
    )


def test_the_priority_keys_set_the_weights():
    accounting, policy = _policy(
        run_program(
            "dev",
            {
                "priorityWeightFairshare": 500,
                "priorityWeightAge": 7,
                "priorityWeightQos": 0,
                "priorityDecayHalfLifeDays": 14,
            },
        )
    )
    weights = {k: policy[k] for k in POLICY_KEYS[1:5]}
    assert weights == (
        {
            "PriorityWeightFairshare": ["500"],
            "PriorityWeightAge": ["7"],
            "PriorityWeightQOS": ["0"],
            "PriorityDecayHalfLife": ["14-0"],
        }
        if accounting
        else dict.fromkeys(POLICY_KEYS[1:5])
    )


@pytest.mark.parametrize("key", ["priorityWeightFairshare", "priorityWeightAge", "priorityWeightQos"])
@pytest.mark.parametrize("value", ["-1", "1000001", "2.5", "high"])
def test_a_weight_outside_zero_to_a_million_is_refused(key, value):
    msg = rejected(**{key: value})
    assert f"slinky-eks:{key} = '{value}'" in msg and "a whole number from 0 to 1000000" in msg


@pytest.mark.parametrize("value", ["0", "366"])
def test_a_half_life_outside_one_to_365_days_is_refused(value):
    msg = rejected(priorityDecayHalfLifeDays=value)
    assert (
        f"slinky-eks:priorityDecayHalfLifeDays = '{value}'" in msg and "a whole number from 1 to 365" in msg
    )
