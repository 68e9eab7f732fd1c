"""Slurm's accounting database (components/accounting_database.py): RDS for MariaDB in the private
subnets, reachable only from the cluster on its port and over TLS only, encrypted, backed up, its
records kept by destroy unless asked otherwise; slurmdbd connects as its own user, made by a Job
that alone holds the master password, with a password handed to it only by reference, verifying
the region's RDS CA; created while EKS is, and waited for by the Slurm release."""

import base64
import io
import json
import urllib.error
import urllib.request

import pytest

from components.accounting_database import instance_identifier, rds_ca_bundle
from devkit import offline_account
from devkit.offline_run import run_program
from model.facts import versions
from model.facts.contract import (
    ACCOUNTING_ADMIN_SECRET,
    ACCOUNTING_ADMIN_USER,
    ACCOUNTING_CA_CONFIGMAP,
    ACCOUNTING_CA_DIR,
    ACCOUNTING_CA_KEY,
    ACCOUNTING_DATABASE,
    ACCOUNTING_PASSWORD_KEY,
    ACCOUNTING_PASSWORD_SECRET,
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


# The passwords


def _password(graph, resource: str) -> str:
    """A generated password, as the mock's RandomPassword answers it."""
    password = graph.named(resource)
    return (password.name * 8)[: int(password.inputs["length"])]


MASTER, SLURMDBD = "accounting-admin-password", "accounting-slurmdbd-password"


@pytest.mark.parametrize("resource", [MASTER, SLURMDBD])
def test_each_password_is_generated_not_configured(dev, resource):
    password = dev.named(resource)
    assert password.inputs["special"] is False and password.inputs["length"] >= 32


def test_the_master_password_is_drawn_anew_not_the_one_slurmdbd_used_before_its_own_user(dev):
    """Until slurmdbd had its own user it logged in as the master user with `accounting-password`:
    whoever read its slurmdbd.conf then must not hold the instance now."""
    passwords = {p.name for p in dev.of_type("random:index/randomPassword:RandomPassword")}
    assert MASTER in passwords and "accounting-password" not in passwords


def test_the_master_password_is_the_instances(dev):
    assert dev.named(MASTER).urn in dev.named("accounting-db").property_dependencies["password"]


def test_the_passwords_are_secret_wherever_they_are_inputs(dev):
    assert "password" in dev.named("accounting-db").secret_inputs
    assert "data" in dev.named("accounting-password-secret").secret_inputs
    assert "data" in dev.named("accounting-admin-secret").secret_inputs


# The only inputs that carry each password: the master's, RDS's master password and the Secret only
# the database user Job mounts; slurmdbd's, the Secret slurmdbd reads.
PASSWORD_HOLDERS = {
    MASTER: {("accounting-db", "password"), ("accounting-admin-secret", "data")},
    SLURMDBD: {("accounting-password-secret", "data")},
}


@pytest.mark.parametrize("resource", [MASTER, SLURMDBD])
def test_each_password_is_in_no_other_input_and_no_output(dev, resource):
    # Secret or not: the release's values, any config, Job or export holding it is a leak.
    plain = _password(dev, resource)
    forms = (plain, base64.b64encode(plain.encode()).decode())
    leaks = [
        f"{r.name}.{k}"
        for r in dev.resources
        for k, v in r.inputs.items()
        if (r.name, k) not in PASSWORD_HOLDERS[resource]
        and any(f in json.dumps(v, default=str) for f in forms)
    ]
    leaks += [k for k, v in dev.stack_outputs.items() if any(f in json.dumps(v, default=str) for f in forms)]
    assert leaks == []


def test_slurmdbds_secret_holds_its_own_password_not_the_masters(dev, accounting):
    ref = accounting["storageConfig"]["passwordKeyRef"]
    secret = dev.named("accounting-password-secret").inputs
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == (ref["name"], SLURM_NAMESPACE)
    assert base64.b64decode(secret["data"][ref["key"]]).decode() == _password(dev, SLURMDBD)
    assert ref["key"] == ACCOUNTING_PASSWORD_KEY


def test_slurmdbd_connects_as_its_own_user_not_the_master_user(db, accounting):
    assert accounting["storageConfig"]["username"] == ACCOUNTING_USER
    assert db["username"] == ACCOUNTING_ADMIN_USER != ACCOUNTING_USER


def _pod_specs(graph) -> dict[str, dict]:
    """Every pod template the program writes itself, by resource name."""
    return {
        r.name: r.inputs["spec"]["template"]["spec"]
        for r in graph.resources
        if r.type
        in ("kubernetes:batch/v1:Job", "kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:DaemonSet")
    }


def test_only_the_database_user_job_mounts_the_master_password(dev):
    mounting = {
        name
        for name, spec in _pod_specs(dev).items()
        if any(
            (v.get("secret") or {}).get("secretName") == ACCOUNTING_ADMIN_SECRET
            for v in spec.get("volumes", [])
        )
    }
    assert mounting == {"accounting-user-job"}
    assert ACCOUNTING_ADMIN_SECRET not in json.dumps(dev.named("slurm-release").inputs["values"])


# slurmdbd's values


def test_slurmdbd_stores_into_the_programs_database(dev, db, accounting):
    assert accounting["enabled"] is True and "external" not in accounting
    assert {k: v for k, v in accounting["storageConfig"].items() if k != "passwordKeyRef"} == {
        "host": "slinky-eks-dev-accounting.c0ffee123abc.us-west-2.rds.amazonaws.com",
        "port": ACCOUNTING_PORT,
        "database": db["dbName"],
        "username": ACCOUNTING_USER,
    }
    assert db["dbName"] == ACCOUNTING_DATABASE


def test_slurmdbd_runs_the_slurm_release_image_on_the_core_nodes(accounting):
    tag = versions.SLURMD_BASE_IMAGE.rsplit(":", 1)[1]
    digest = offline_account.image_digest(f"{versions.SLINKY_IMAGES}/slurmdbd", tag)
    assert accounting["slurmdbd"]["image"] == f"{versions.SLINKY_IMAGES}/slurmdbd:{tag}@{digest}"
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


@pytest.mark.parametrize(
    "name",
    [
        "accounting-db",
        "accounting-from-cluster",
        "accounting-password-secret",
        "accounting-ca-bundle",
        "accounting-user-job",
    ],
)
def test_the_slurm_release_waits_for_the_database_its_rule_secret_ca_bundle_and_user(dev, name):
    assert dev.depends_on(dev.named("slurm-release"), dev.named(name))


@pytest.mark.parametrize(
    "name",
    [
        "accounting-db",
        "accounting-from-cluster",
        "accounting-password-secret",
        "accounting-admin-secret",
        "accounting-ca-bundle",
    ],
)
def test_the_database_user_job_waits_for_the_database_its_rule_secrets_and_ca_bundle(dev, name):
    assert dev.depends_on(dev.named("accounting-user-job"), dev.named(name))


# TLS


def test_the_database_refuses_connections_without_tls_at_once(dev):
    (parameter,) = [
        p
        for p in dev.named("accounting-parameters").inputs["parameters"]
        if p["name"] == "require_secure_transport"
    ]
    assert parameter == {"name": "require_secure_transport", "value": "1", "applyMethod": "immediate"}


def test_the_ca_bundle_configmap_holds_the_regions_rds_bundle(dev):
    ca = dev.named("accounting-ca-bundle").inputs
    assert (ca["metadata"]["name"], ca["metadata"]["namespace"]) == (ACCOUNTING_CA_CONFIGMAP, SLURM_NAMESPACE)
    assert ca["data"] == {ACCOUNTING_CA_KEY: offline_account.rds_ca_bundle("us-west-2")}


def test_slurmdbd_connects_with_tls_verifying_the_mounted_rds_ca(accounting):
    assert accounting["extraConf"] == f"StorageParameters=SSL_CA={ACCOUNTING_CA_DIR}/{ACCOUNTING_CA_KEY}"
    (mount,) = accounting["slurmdbd"]["volumeMounts"]
    (volume,) = accounting["podSpec"]["volumes"]
    assert mount == {"name": volume["name"], "mountPath": ACCOUNTING_CA_DIR, "readOnly": True}
    assert volume["configMap"] == {"name": ACCOUNTING_CA_CONFIGMAP}


def test_a_bundle_that_is_not_pem_stops_the_program_naming_the_url(monkeypatch):
    class Answer(io.BytesIO):
        def __enter__(self):
            return self

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: Answer(b"<html>not found</html>"))
    with pytest.raises(RuntimeError, match="eu-west-1-bundle.pem holds no PEM certificate"):
        rds_ca_bundle("eu-west-1")


def test_an_unreachable_bundle_stops_the_program_naming_the_url(monkeypatch):
    def refuse(url, timeout):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(
        RuntimeError, match=r"https://truststore.pki.rds.amazonaws.com/eu-west-1/eu-west-1-bundle.pem"
    ):
        rds_ca_bundle("eu-west-1")


# The database user Job


@pytest.fixture(scope="module")
def user_job(dev):
    return dev.named("accounting-user-job").inputs


def test_the_database_user_job_makes_slurmdbds_user_as_the_master_user_over_tls(user_job):
    (container,) = user_job["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:3] == ["python3", "-m", "cluster_programs.accounting_database_user"]
    args = dict(zip(command[3::2], command[4::2], strict=True))
    assert args == {
        "--host": "slinky-eks-dev-accounting.c0ffee123abc.us-west-2.rds.amazonaws.com",
        "--port": str(ACCOUNTING_PORT),
        "--ca-file": f"{ACCOUNTING_CA_DIR}/{ACCOUNTING_CA_KEY}",
        "--database": ACCOUNTING_DATABASE,
        "--user": ACCOUNTING_USER,
        "--password-file": f"/etc/slinky-eks/accounting-passwords/slurmdbd/{ACCOUNTING_PASSWORD_KEY}",
        "--admin-user": ACCOUNTING_ADMIN_USER,
        "--admin-password-file": f"/etc/slinky-eks/accounting-passwords/admin/{ACCOUNTING_PASSWORD_KEY}",
        "--timeout": "540",
    }
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in user_job["spec"]["template"]["spec"]["volumes"]}
    assert (
        volumes[mounts["/etc/slinky-eks/accounting-passwords/admin"]]["secret"]["secretName"]
        == ACCOUNTING_ADMIN_SECRET
    )
    assert volumes[mounts["/etc/slinky-eks/accounting-passwords/slurmdbd"]]["secret"]["secretName"] == (
        ACCOUNTING_PASSWORD_SECRET
    )
    assert volumes[mounts[ACCOUNTING_CA_DIR]]["configMap"]["name"] == ACCOUNTING_CA_CONFIGMAP


def test_the_database_user_job_has_no_kubernetes_api_token(dev, user_job):
    account = dev.named("accounting-user-account").inputs
    assert user_job["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    assert account["automountServiceAccountToken"] is False


def test_the_database_user_jobs_name_is_not_secret_and_names_no_password(dev, user_job):
    assert "metadata" not in dev.named("accounting-user-job").secret_inputs
    assert _password(dev, SLURMDBD) not in user_job["metadata"]["name"]
    assert user_job["metadata"]["name"].startswith("slurm-accounting-database-user-")
