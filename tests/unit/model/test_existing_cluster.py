"""The existing cluster's checks, with the account's answers given directly: a refused question is
a refusal (or a skipped check) naming the IAM action, a passing cluster comes back with what the
stack needs of it, and the keys beside existingClusterName are checked."""

import datetime

from model.checks import existing_cluster
from model.checks.existing_cluster import AccessEntry, EksAddon, EksCluster
from model.checks.gpu_pools import default_pool
from model.checks.preflight import PermissionDenied
from model.checks.problems import NOT_SET

DAY = datetime.date(2026, 12, 4)
DEPLOYER = "arn:aws:iam::123456789012:role/deployer"
CLUSTER = EksCluster(
    name="platform",
    arn="arn:aws:eks:us-west-2:123456789012:cluster/platform",
    status="ACTIVE",
    version="1.35",
    endpoint="https://ABC.gr7.us-west-2.eks.amazonaws.com",
    certificate_authority="Q0E=",
    oidc_issuer="https://oidc.eks.us-west-2.amazonaws.com/id/ABC",
    security_group_id="sg-0123",
    vpc_id="vpc-1",
    subnet_ids=("subnet-a", "subnet-b"),
    authentication_mode="API",
)


class Account:
    def __init__(self, cluster=CLUSTER, addons=None, entries=None, denied=()):
        self.cluster, self.denied = cluster, set(denied)
        self.addons = (
            {
                "vpc-cni": EksAddon("v1", "arn:aws:iam::123456789012:role/cni"),
                "eks-pod-identity-agent": EksAddon("v1", ""),
            }
            if addons is None
            else addons
        )
        self.entries = {DEPLOYER: AccessEntry(DEPLOYER, "STANDARD")} if entries is None else entries

    def _ask(self, action):
        if action in self.denied:
            raise PermissionDenied(action)

    def eks_cluster(self, region, name):
        self._ask("eks:DescribeCluster")
        return self.cluster

    def eks_addon(self, region, cluster, addon):
        self._ask("eks:DescribeAddon")
        return self.addons.get(addon)

    def access_entry(self, region, cluster, principal_arn):
        self._ask("eks:DescribeAccessEntry")
        return self.entries.get(principal_arn)

    def deployer_principal_arn(self):
        return DEPLOYER


def checked(account, vpc_id="vpc-1"):
    out = []
    return existing_cluster.check(account, "us-west-2", "platform", vpc_id, DAY, out), out


def ids(problems):
    return [p.rule.id for p in problems]


def test_a_cluster_that_passes_comes_back_with_its_cni_role_and_detected_addons():
    addons = {**Account().addons, "aws-efs-csi-driver": EksAddon("v2", "")}
    found, out = checked(Account(addons=addons))
    assert out == []
    assert found.cni_role_arn == "arn:aws:iam::123456789012:role/cni"
    assert found.addons == {"aws-efs-csi-driver"}


def test_a_cluster_the_deployer_cannot_describe_names_the_action():
    found, out = checked(Account(denied={"eks:DescribeCluster"}))
    assert found is None and ids(out) == ["existing-cluster-readable"]
    assert "eks:DescribeCluster" in out[0].message


def test_an_unreadable_access_entry_skips_the_admin_check_with_a_warning():
    found, out = checked(Account(denied={"eks:DescribeAccessEntry"}))
    assert found is not None and ids(out) == ["deployer-cluster-admin-unreadable"]
    assert "eks:DescribeAccessEntry" in out[0].message


def test_a_node_access_entry_is_no_admin():
    found, out = checked(Account(entries={DEPLOYER: AccessEntry(DEPLOYER, "EC2_LINUX")}))
    assert found is None and ids(out) == ["deployer-cluster-admin"]


def test_an_unset_vpc_id_skips_the_vpc_check():
    found, out = checked(Account(), vpc_id="")
    assert found is not None and out == []


def test_a_version_eks_no_longer_offers_is_refused_though_slinky_runs_it():
    found, out = checked(Account(cluster=existing_cluster.dataclasses.replace(CLUSTER, version="1.31")))
    assert found is None and ids(out) == ["existing-cluster-version"]


def mode(**values):
    base = {
        "existingClusterName": "platform",
        "vpcId": "vpc-1",
        "privateSubnetIds": ["subnet-a"],
        "installSharedAddons": [],
    }
    return {**base, **values}


def test_keys_an_existing_cluster_ignores_are_warned_of_when_set_to_other_than_their_default():
    defaults = {"kubernetesVersion": "1.36", "adminRoleArns": []}
    out = existing_cluster.mode_rules(
        mode(kubernetesVersion="1.35", adminRoleArns=[]),
        {"kubernetesVersion": "1.35", "adminRoleArns": "[]"},
        defaults,
        [],
    )
    assert [(p.rule.id, p.key) for p in out] == [("ignored-beside-existing-cluster", "kubernetesVersion")]


def test_the_network_keys_are_required_and_reported_unset():
    out = existing_cluster.mode_rules(mode(vpcId="", privateSubnetIds=[]), {}, {}, [])
    assert [(p.rule.id, p.key, p.value) for p in out] == [
        ("existing-cluster-needs-network", "vpcId", NOT_SET),
        ("existing-cluster-needs-network", "privateSubnetIds", NOT_SET),
    ]


def test_an_autoscaling_pool_names_the_scaler_it_lacks():
    (pool,) = default_pool("g6.12xlarge", 2, "us-west-2a", 400, 0, 2, "")
    out = existing_cluster.mode_rules(mode(installSharedAddons=["keda"]), {}, {}, [pool])
    assert ids(out) == ["autoscaling-needs-own-scalers"] and "a list with clusterAutoscaler" in out[0].message


def test_nothing_is_checked_for_the_stacks_own_cluster():
    assert existing_cluster.mode_rules(mode(existingClusterName="", vpcId=""), {}, {}, []) == []


def test_a_role_with_a_path_is_found_under_its_pathless_entry_too():
    sso = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_0123"
    pathless = "arn:aws:iam::123456789012:role/AWSReservedSSO_Admin_0123"
    account = Account(entries={pathless: AccessEntry(pathless, "STANDARD")})
    account.deployer_principal_arn = lambda: sso
    found, out = checked(account)
    assert found is not None and out == []


def test_a_users_arn_has_no_path_to_drop():
    user = "arn:aws:iam::123456789012:user/ci"
    assert existing_cluster.without_path(user) == user


def test_a_cluster_arn_in_aws_region_passes():
    assert (
        existing_cluster.cluster_region("arn:aws:eks:us-west-2:123456789012:cluster/platform", "us-west-2")
        == []
    )


def test_a_cluster_arn_in_another_region_is_refused_under_aws_region():
    (problem,) = existing_cluster.cluster_region("arn:aws:eks:eu-west-1:123456789012:cluster/p", "us-west-2")
    assert (problem.key, problem.value, problem.rule.id) == ("aws:region", "us-west-2", "cluster-region")
    assert "names eu-west-1" in problem.message


def test_no_access_entry_is_refused_where_the_cluster_reads_access_entries_only():
    found, out = checked(Account(entries={}))
    assert found is None and ids(out) == ["deployer-cluster-admin"]


def test_no_access_entry_is_a_warning_where_the_cluster_also_reads_aws_auth():
    import dataclasses

    cluster = dataclasses.replace(CLUSTER, authentication_mode="API_AND_CONFIG_MAP")
    found, out = checked(Account(cluster=cluster, entries={}))
    assert found is not None and ids(out) == ["deployer-cluster-admin-unreadable"]
    assert "aws-auth" in out[0].message


def test_a_cluster_without_the_vpc_cni_add_on_is_taken_to_run_it_on_the_node_role():
    addons = {k: v for k, v in Account().addons.items() if k != "vpc-cni"}
    found, out = checked(Account(addons=addons))
    assert found is not None and found.cni_role_arn == ""
    assert ids(out) == ["existing-cluster-addon-unseen"]
