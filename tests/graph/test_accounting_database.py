"""Slurm's accounting database (components/accounting_database.py): RDS for MariaDB in the private
subnets, reachable only from the cluster on its port, encrypted, backed up, its records kept by
destroy unless asked otherwise, its password generated and handed to slurmdbd only by reference;
created while EKS is, and waited for by the Slurm release."""

import base64
import json

import pytest

from components.accounting_database import instance_identifier
from devkit.offline_run import run_program
from model.builders.slurm_values import slinky_image_tag
from model.facts import versions
from model.facts.contract import (
    ACCOUNTING_DATABASE,
    ACCOUNTING_PASSWORD_KEY,
    ACCOUNTING_PORT,
    ACCOUNTING_USER,
    CORE_LABELS,
    SLURM_NAMESPACE,
)
from tests.support.program import rejected

CLUSTER_SG = "sg-0cluster0primary0"  # what the mock answers for the EKS cluster security group


@pytest.fixture(scope="module")
def db(dev):
    return dev.named("accounting-db").inputs


@pytest.fixture(scope="module")
def accounting(dev):
    return dev.named("slurm-release").inputs["values"]["accounting"]


def _rules_of(graph, group_id):
    return [
        r
        for r in graph.resources
        if r.type.startswith("aws:vpc/securityGroup") and r.inputs.get("securityGroupId") == group_id
    ]


def _password(graph) -> str:
    """The generated password, as the mock's RandomPassword answers it."""
    password = graph.named("accounting-password")
    return (password.name * 8)[: int(password.inputs["length"])]


# Where it runs and who reaches it


def test_the_database_is_in_the_clusters_private_subnets_only(dev, db):
    private = {
        f"{r.name}-id" for r in dev.of_type("aws:ec2/subnet:Subnet") if r.name.startswith("network-private-")
    }
    subnets = dev.named("accounting-subnets").inputs["subnetIds"]
    assert len(subnets) == 2 and set(subnets) <= private
    assert db["dbSubnetGroupName"] == "accounting-subnets-0a1b2c3" and db["publiclyAccessible"] is False


def test_only_the_cluster_security_group_reaches_the_database_and_only_on_its_port(dev, db):
    group = dev.named("accounting-sg")
    assert db["vpcSecurityGroupIds"] == ["accounting-sg-id"]
    # No inline rule: whatever the group admits is a rule resource of its own.
    assert "ingress" not in group.inputs and "egress" not in group.inputs
    (rule,) = _rules_of(dev, "accounting-sg-id")
    assert rule.type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
    assert {
        k: rule.inputs.get(k)
        for k in (
            "ipProtocol",
            "fromPort",
            "toPort",
            "referencedSecurityGroupId",
            "cidrIpv4",
            "cidrIpv6",
            "prefixListId",
        )
    } == {
        "ipProtocol": "tcp",
        "fromPort": ACCOUNTING_PORT,
        "toPort": ACCOUNTING_PORT,
        "referencedSecurityGroupId": CLUSTER_SG,
        "cidrIpv4": None,
        "cidrIpv6": None,
        "prefixListId": None,
    }


def test_the_cluster_security_group_is_what_every_node_carries(dev):
    # Core nodes get it from EKS (no interfaces in their launch template); GPU nodes name it on
    # every interface (components/node_groups.py): so slurmdbd reaches the database wherever it runs.
    assert "networkInterfaces" not in dev.named("nodes-core-lt").inputs
    interfaces = dev.named("nodes-gpu-lt").inputs["networkInterfaces"]
    assert interfaces and all(i["securityGroups"] == [CLUSTER_SG] for i in interfaces)


# What it keeps


def test_storage_is_encrypted(db):
    assert db["storageEncrypted"] is True


def test_automated_backups_are_kept_at_least_a_week(db):
    assert db["backupRetentionPeriod"] >= 7


def test_destroy_keeps_the_records_as_a_final_snapshot_by_default(dev, db):
    assert db["skipFinalSnapshot"] is False and db["deleteAutomatedBackups"] is False
    assert db["finalSnapshotIdentifier"].startswith(f"{db['identifier']}-final-")
    # Not the instance itself: its interfaces would hold the subnets and the VPC on destroy.
    assert dev.named("accounting-db").retain_on_delete is False and db["deletionProtection"] is False


def test_destroy_keeps_nothing_when_retain_accounting_data_is_false():
    db = run_program("dev", {"retainAccountingData": False}).named("accounting-db").inputs
    assert db["skipFinalSnapshot"] is True and db["deleteAutomatedBackups"] is True
    assert "finalSnapshotIdentifier" not in db


def test_the_error_log_goes_to_a_log_group_made_first_with_a_retention(dev, db):
    assert db["enabledCloudwatchLogsExports"] == ["error"]
    group = dev.named("accounting-error-logs")
    assert group.inputs["name"] == f"/aws/rds/instance/{db['identifier']}/error"
    assert group.inputs["retentionInDays"] > 0
    assert dev.depends_on(dev.named("accounting-db"), group)


@pytest.mark.parametrize(
    "cluster,identifier", [("slinky-eks-dev", "slinky-eks-dev-accounting"), ("a--b-", "a-b-accounting")]
)
def test_the_instance_name_is_one_rds_accepts(cluster, identifier):
    assert instance_identifier(cluster) == identifier


def test_engine_is_the_pinned_mariadb_major_with_minor_upgrades(dev, db):
    assert (db["engine"], db["engineVersion"]) == ("mariadb", versions.ACCOUNTING_ENGINE_VERSION)
    assert db["autoMinorVersionUpgrade"] is True and db["allowMajorVersionUpgrade"] is False
    params = dev.named("accounting-parameters").inputs
    assert params["family"] == versions.ACCOUNTING_PARAMETER_FAMILY
    assert db["parameterGroupName"] == "accounting-parameters-0a1b2c3"
    assert {p["name"]: p["value"] for p in params["parameters"]}["innodb_lock_wait_timeout"] == "900"


def test_size_keys_reach_the_instance():
    db = (
        run_program(
            "dev",
            {
                "accountingInstanceClass": "db.m7g.large",
                "accountingStorageGiB": 100,
                "accountingMultiAz": True,
            },
        )
        .named("accounting-db")
        .inputs
    )
    assert (db["instanceClass"], db["allocatedStorage"], db["multiAz"]) == ("db.m7g.large", 100, True)


def test_the_dev_default_is_a_small_single_az_instance(db):
    assert (db["instanceClass"], db["allocatedStorage"], db["storageType"], db["multiAz"]) == (
        "db.t4g.small",
        20,
        "gp3",
        False,
    )


@pytest.mark.parametrize(
    "key,value,allowed",
    [
        ("accountingInstanceClass", "t4g.small", "an RDS DB instance class such as db.t4g.small"),
        ("accountingStorageGiB", "10", "a whole number from 20 to 1024"),
        ("retainAccountingData", "keep", "true or false"),
    ],
)
def test_a_bad_accounting_value_is_refused_naming_the_key(key, value, allowed):
    msg = rejected(**{key: value})
    assert f"slinky-eks:{key} = {value!r}" in msg and allowed in msg


# The password


def test_the_password_is_generated_not_configured(dev):
    password = dev.named("accounting-password")
    assert password.inputs["special"] is False and password.inputs["length"] >= 32
    assert password.urn in dev.named("accounting-db").property_dependencies["password"]


def test_the_password_is_secret_wherever_it_is_an_input(dev):
    assert "password" in dev.named("accounting-db").secret_inputs
    assert "data" in dev.named("accounting-password-secret").secret_inputs


# The only two inputs that carry it: RDS's master password and the Secret slurmdbd reads.
PASSWORD_HOLDERS = {("accounting-db", "password"), ("accounting-password-secret", "data")}


def test_the_password_is_in_no_other_input_and_no_output(dev):
    # Secret or not: the release's values, any config or export holding it is a leak.
    plain = _password(dev)
    forms = (plain, base64.b64encode(plain.encode()).decode())
    leaks = [
        f"{r.name}.{k}"
        for r in dev.resources
        for k, v in r.inputs.items()
        if (r.name, k) not in PASSWORD_HOLDERS and any(f in json.dumps(v, default=str) for f in forms)
    ]
    leaks += [k for k, v in dev.stack_outputs.items() if any(f in json.dumps(v, default=str) for f in forms)]
    assert leaks == []


def test_the_secret_holds_the_password_slurmdbd_is_pointed_at(dev, accounting):
    ref = accounting["storageConfig"]["passwordKeyRef"]
    secret = dev.named("accounting-password-secret").inputs
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == (ref["name"], SLURM_NAMESPACE)
    assert base64.b64decode(secret["data"][ref["key"]]).decode() == _password(dev)
    assert ref["key"] == ACCOUNTING_PASSWORD_KEY


# slurmdbd's values


def test_slurmdbd_stores_into_the_programs_database(dev, db, accounting):
    assert accounting["enabled"] is True and "external" not in accounting
    assert {k: v for k, v in accounting["storageConfig"].items() if k != "passwordKeyRef"} == {
        "host": "slinky-eks-dev-accounting.c0ffee123abc.us-west-2.rds.amazonaws.com",
        "port": ACCOUNTING_PORT,
        "database": db["dbName"],
        "username": db["username"],
    }
    assert (db["dbName"], db["username"]) == (ACCOUNTING_DATABASE, ACCOUNTING_USER)


def test_slurmdbd_runs_the_slurm_release_image_on_the_core_nodes(accounting):
    assert accounting["slurmdbd"]["image"] == {"tag": slinky_image_tag(versions.SLURMD_BASE_IMAGE)}
    assert accounting["podSpec"]["nodeSelector"] == CORE_LABELS


def test_slurmdbd_adds_what_the_operator_leaves_out_of_its_security_context(accounting):
    assert accounting["slurmdbd"]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert accounting["podSpec"]["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}


def test_the_endpoint_output_is_the_database_address_and_port(dev):
    assert (
        dev.output("accountingDatabaseEndpoint")
        == f"slinky-eks-dev-accounting.c0ffee123abc.us-west-2.rds.amazonaws.com:{ACCOUNTING_PORT}"
    )


# Order


@pytest.mark.parametrize(
    "name", ["accounting-db", "accounting-subnets", "accounting-sg", "accounting-parameters"]
)
def test_the_database_does_not_wait_for_eks(dev, name):
    assert not dev.depends_on(dev.named(name), dev.named("cluster-eks"))


def test_the_database_waits_only_for_the_network(dev):
    assert dev.depends_on(dev.named("accounting-db"), dev.named("network-vpc"))


@pytest.mark.parametrize("name", ["accounting-db", "accounting-from-cluster", "accounting-password-secret"])
def test_the_slurm_release_waits_for_the_database_its_rule_and_its_secret(dev, name):
    assert dev.depends_on(dev.named("slurm-release"), dev.named(name))
