"""Slinky and the Slurm cluster: versions and ordering, every computed value, the login endpoint."""

import base64
import json

import pytest

from devkit.offline_run import LOGIN_HOSTNAME, built_image_digest, run_program
from model.facts import catalog, versions

REPO_URL = "123456789012.dkr.ecr.us-west-2.amazonaws.com/slinky-eks-dev/slurmd"
OCI = versions.SLINKY_REPOSITORY


@pytest.fixture(scope="module")
def values(dev):
    return dev.named("slurm-release").inputs["values"]


# 1. versions and ordering


def test_cert_manager_version_crds_and_core_placement(dev):
    cm = dev.named("slinky-cert-manager").inputs
    assert (cm["chart"], cm["version"]) == (versions.CERT_MANAGER.chart, versions.CERT_MANAGER.version)
    assert cm["repositoryOpts"]["repo"] == versions.CERT_MANAGER.repository
    assert cm["values"]["crds"]["enabled"] is True
    for component in (cm["values"], *(cm["values"][c] for c in ("webhook", "cainjector", "startupapicheck"))):
        assert component["nodeSelector"] == {"role": "core"}


def test_cert_manager_version_follows_config():
    graph = run_program("dev", {"certManagerVersion": "v1.17.0"})
    assert graph.named("slinky-cert-manager").inputs["version"] == "v1.17.0"


@pytest.mark.parametrize(
    "name,chart,namespace",
    [
        ("slinky-crds", "slurm-operator-crds", "slinky"),
        ("slinky-operator", "slurm-operator", "slinky"),
        ("slurm-release", "slurm", "slurm"),
    ],
)
def test_slinky_charts_come_from_the_oci_registry_at_the_configured_version(dev, name, chart, namespace):
    r = dev.named(name).inputs
    assert (
        r["chart"] == f"{OCI}/{chart}"
        and r["version"] == versions.SLINKY_CHART_VERSION
        and r["namespace"] == namespace
    )


def test_slurm_release_name_is_fixed(dev):
    assert dev.named("slurm-release").inputs["name"] == "slurm"


def test_operator_and_webhook_run_on_core_nodes(dev):
    v = dev.named("slinky-operator").inputs["values"]
    assert v["operator"]["nodeSelector"] == {"role": "core"} == v["webhook"]["nodeSelector"]


def test_operator_waits_for_cert_manager_and_its_crds(dev):
    op = dev.named("slinky-operator")
    assert dev.depends_on(op, dev.named("slinky-cert-manager"))
    assert dev.depends_on(op, dev.named("slinky-crds"))


def test_slurm_release_waits_for_the_operator_webhook(dev):
    assert dev.depends_on(dev.named("slurm-release"), dev.named("slinky-operator"))
    assert dev.named("slinky-operator").inputs["skipAwait"] is False  # Helm --wait: webhook Ready


@pytest.mark.parametrize("name", ["slinky-cert-manager", "slinky-operator", "slurm-release"])
def test_timeouts_fit_real_clusters(dev, name):
    assert dev.named(name).inputs["timeout"] >= 900


# 2. values


def test_nodeset_replicas_follow_gpu_node_count(values):
    assert values["nodesets"]["slinky"]["replicas"] == 2
    graph = run_program("dev", {"gpuNodeCount": 4})
    assert graph.named("slurm-release").inputs["values"]["nodesets"]["slinky"]["replicas"] == 4


def test_slurmd_image_is_the_built_image_by_digest(dev, values):
    image = values["nodesets"]["slinky"]["slurmd"]["image"]
    digest = built_image_digest(dev.named("slurmd-build").inputs["context_digest"])
    assert image == {"repository": REPO_URL, "tag": versions.SLURMD_IMAGE_TAG, "digest": digest}


@pytest.mark.parametrize(
    "instance_type",
    [
        "g6.12xlarge",
        "g6e.48xlarge",
        "g7e.12xlarge",
        "p5.4xlarge",
        "p5.48xlarge",
        "p6-b200.48xlarge",
        "p6-b300.48xlarge",
    ],
)
def test_gpu_and_efa_requests_and_gres_come_from_the_catalog(instance_type):
    t = catalog.CATALOG[instance_type]
    nodeset = (
        run_program("dev", {"gpuInstanceType": instance_type})
        .named("slurm-release")
        .inputs["values"]["nodesets"]["slinky"]
    )
    amounts = {"nvidia.com/gpu": t.gpus, "vpc.amazonaws.com/efa": t.efa_interfaces}
    assert nodeset["slurmd"]["resources"] == {"limits": amounts, "requests": amounts}
    assert nodeset["extraConfMap"] == {"Gres": [t.gres]}


def test_walkthrough_gres_for_g6_12xlarge(values):
    assert values["nodesets"]["slinky"]["extraConfMap"]["Gres"] == ["gpu:nvidia_l4:4"]


def test_slurmd_runs_on_gpu_nodes_tolerating_their_taint(values):
    pod = values["nodesets"]["slinky"]["podSpec"]
    assert pod["nodeSelector"] == {"role": "gpu"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_controller_declares_gres_types_and_return_to_service(values):
    assert values["controller"]["extraConfMap"]["GresTypes"] == ["gpu"]
    assert values["controller"]["extraConfMap"]["ReturnToService"] == 2


def test_gres_conf_autodetects_nvidia(values):
    assert values["configFiles"]["gres.conf"].strip() == "AutoDetect=nvidia"


def test_controller_state_lives_on_gp3(dev, values):
    persistence = values["controller"]["persistence"]
    claim = dev.named("slurm-state").inputs
    assert persistence["enabled"] is True and persistence["existingClaim"] == claim["metadata"]["name"]
    assert claim["spec"]["storageClassName"] == "gp3" and claim["metadata"]["namespace"] == "slurm"


@pytest.mark.parametrize("path", [("controller",), ("restapi",), ("loginsets", "slinky")])
def test_control_plane_and_login_run_on_core_nodes(values, path):
    block = values
    for key in path:
        block = block[key]
    assert block["podSpec"]["nodeSelector"] == {"role": "core"}


def test_login_authorises_the_configured_key_for_root(values):
    key = values["loginsets"]["slinky"]["rootSshAuthorizedKeys"]
    assert key.startswith("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHo5") and key.endswith("dev-stack-example\n")
    assert values["loginsets"]["slinky"]["replicas"] == 1


@pytest.mark.parametrize("kind,container", [("nodesets", "slurmd"), ("loginsets", "login")])
def test_shared_is_mounted_from_the_rwx_claim(values, kind, container):
    entry = values[kind]["slinky"]
    assert {"name": "shared", "mountPath": "/shared"} in entry[container]["volumeMounts"]
    assert {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}} in entry["podSpec"]["volumes"]


def test_slurmd_gets_a_memory_backed_dev_shm(values):
    entry = values["nodesets"]["slinky"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in entry["slurmd"]["volumeMounts"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in entry["podSpec"]["volumes"]


def test_a_default_partition_holds_the_nodeset(values):
    part = values["partitions"]["slinky"]
    assert part["enabled"] is True and part["nodesets"] == ["slinky"]
    assert part["configMap"]["Default"] == "YES" and part["configMap"]["State"] == "UP"


@pytest.mark.parametrize(
    "key,secret,item", [("slurmKey", "slurm-slurm-key", "slurm.key"), ("jwtKey", "slurm-jwt-key", "jwt.key")]
)
def test_keys_are_generated_by_the_program_and_passed_by_reference(dev, values, key, secret, item):
    ref = values[key]
    assert ref["create"] is False
    obj = dev.named(secret).inputs
    assert ref["secretRef"] == {"name": obj["metadata"]["name"], "key": item}
    assert obj["immutable"] is True and "data" in dev.named(secret).secret_inputs
    assert base64.b64decode(obj["data"][item])  # random bytes from the state, base64 for the API


@pytest.mark.parametrize("secret,length", [("slurm-slurm-key", 1024), ("slurm-jwt-key", 64)])
def test_keys_come_from_random_bytes_held_in_the_state(dev, secret, length):
    # Not from os.urandom at each run: previews stay stable and the keys never change by accident.
    source = dev.named(f"{secret}-bytes")
    assert source.type == "random:index/randomBytes:RandomBytes" and source.inputs["length"] == length
    assert source.urn in dev.named(secret).property_dependencies["data"]


# 3. the login endpoint


@pytest.fixture(scope="module")
def login(dev):
    return dev.named("slurm-login").inputs


def test_operator_login_service_is_not_a_load_balancer(values):
    # The chart default would make a Classic ELB open to the world through the in-tree provider.
    assert values["loginsets"]["slinky"]["service"]["spec"]["type"] == "ClusterIP"


def test_login_is_an_internet_facing_nlb_through_the_controller(login):
    notes = login["metadata"]["annotations"]
    assert login["spec"]["type"] == "LoadBalancer"
    assert login["spec"]["loadBalancerClass"] == "service.k8s.aws/nlb"
    assert notes["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internet-facing"
    assert notes["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] == "ip"


def test_only_the_allowed_cidrs_reach_ssh(login):
    assert login["spec"]["loadBalancerSourceRanges"] == ["203.0.113.10/32"]
    assert login["spec"]["ports"] == [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}]


def test_allowed_cidrs_follow_config():
    graph = run_program("dev", {"sshAllowedCidrs": ["198.51.100.0/24", "192.0.2.7/32"]})
    assert graph.named("slurm-login").inputs["spec"]["loadBalancerSourceRanges"] == [
        "198.51.100.0/24",
        "192.0.2.7/32",
    ]


def test_login_service_selects_the_loginset_pods(login):
    assert login["spec"]["selector"] == {"app.kubernetes.io/instance": "slurm-login-slinky"}


def test_login_hostname_is_waited_for_not_read_once(dev, login):
    svc = dev.named("slurm-login")
    assert not svc.read  # a created Service is awaited until its ingress appears; a get() is not
    assert int(login["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) >= 600


def test_login_outputs(dev):
    assert dev.output("loginHostname") == LOGIN_HOSTNAME
    assert dev.output("sshCommand") == f"ssh root@{LOGIN_HOSTNAME}"


def test_nlb_is_deleted_before_the_controller(dev):
    assert dev.depends_on(dev.named("slurm-login"), dev.named("lbc-release"))


def test_login_nlb_is_provisioned_while_the_release_installs(dev):
    # Pulumi's Service await still waits for a Ready login pod behind it.
    assert not dev.depends_on(dev.named("slurm-login"), dev.named("slurm-release"))
    assert dev.depends_on(dev.named("slurm-login"), dev.named("storage-slurm-ns"))


def test_login_service_is_awaited_as_long_as_the_release(login):
    assert int(login["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) >= 1200


def test_slurm_pods_start_from_the_node_cache_when_the_image_is_there(values):
    assert values["imagePullPolicy"] == "IfNotPresent"


def test_the_control_plane_priority_outranks_the_default_preempts_nothing_and_outlives_the_release(dev):
    # User classes go up to 1000000000; pods without a class have 0; `Never` only ranks
    # (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/).
    (priority,) = dev.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert 0 < priority.inputs["value"] <= 1_000_000_000
    assert priority.inputs["preemptionPolicy"] == "Never" and priority.inputs["globalDefault"] is False
    assert dev.depends_on(dev.named("slurm-release"), priority)


# 4. container jobs' registry login: the slurmd pods' own Pod Identity role, pull only


def _nodeset_pod_specs(values) -> list[dict]:
    return [nodeset["podSpec"] for nodeset in values["nodesets"].values()]


def test_the_registry_role_goes_to_the_service_account_the_nodeset_pods_run_as(dev, values):
    association = dev.named("slurm-registry-identity").inputs
    account = dev.named("slurm-slurmd-account").inputs
    (statement,) = json.loads(dev.named("slurm-registry-role").inputs["assumeRolePolicy"])["Statement"]
    named = {spec["serviceAccountName"] for spec in _nodeset_pod_specs(values)}
    assert named == {association["serviceAccount"]} == {account["metadata"]["name"]}
    assert association["namespace"] == account["metadata"]["namespace"] == "slurm"
    assert statement["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] in named


def test_the_slurmd_pods_get_no_kubernetes_api_token(dev, values):
    assert dev.named("slurm-slurmd-account").inputs["automountServiceAccountToken"] is False
    assert all(spec["automountServiceAccountToken"] is False for spec in _nodeset_pod_specs(values))


# ECR's read-only actions (Service Authorization Reference, Amazon ECR); GetAuthorizationToken has
# no resource type, so it alone may be granted on "*".
_PULL = {"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"}


def pull_only_problems(document: dict, account: str, region: str) -> list[str]:
    """What in a policy grants more than pulling from `account`'s repositories in `region`."""
    problems = []
    for statement in document["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        if statement["Effect"] != "Allow" or "NotAction" in statement or "NotResource" in statement:
            problems.append(f"not a plain Allow: {statement}")
        for action in actions:
            if action not in _PULL | {"ecr:GetAuthorizationToken"}:
                problems.append(f"not a pull action: {action}")
        for resource in resources:
            if resource == "*" and set(actions) != {"ecr:GetAuthorizationToken"}:
                problems.append(f"'*' for {actions}")
            elif resource != "*" and resource != f"arn:aws:ecr:{region}:{account}:repository/*":
                problems.append(f"another scope: {resource}")
    return problems


def test_the_registry_role_may_only_pull_from_the_accounts_repositories_in_the_region(dev):
    document = json.loads(dev.named("slurm-registry-policy").inputs["policy"])
    assert pull_only_problems(document, "123456789012", "us-west-2") == []
    granted = {
        a
        for s in document["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert granted == _PULL | {"ecr:GetAuthorizationToken"}


@pytest.mark.parametrize(
    "statement",
    [
        {
            "Effect": "Allow",
            "Action": ["ecr:PutImage"],
            "Resource": "arn:aws:ecr:us-west-2:123456789012:repository/*",
        },
        {"Effect": "Allow", "Action": ["ecr:BatchGetImage"], "Resource": "*"},
        {
            "Effect": "Allow",
            "Action": ["ecr:BatchGetImage"],
            "Resource": "arn:aws:ecr:*:123456789012:repository/*",
        },
    ],
    ids=["push", "star-resource", "any-region"],
)
def test_the_pull_only_check_refuses_more(statement):
    assert pull_only_problems({"Statement": [statement]}, "123456789012", "us-west-2") != []


def test_the_role_has_no_managed_policy_and_the_release_waits_for_the_association(dev):
    role = dev.named("slurm-registry-role")
    attached = [
        a for a in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if a.parent == role.urn
    ]
    assert attached == []
    release = dev.named("slurm-release")
    for name in ("slurm-registry-identity", "slurm-slurmd-account"):
        assert dev.depends_on(release, dev.named(name)), name


def _enroot_configmap(values) -> dict:
    (configmap,) = [o for o in values["extraObjects"] if o["metadata"]["name"] == "enroot-config"]
    return configmap


def test_the_releases_enroot_conf_reads_credentials_where_every_slurmd_pod_mounts_them(values):
    data = _enroot_configmap(values)["data"]
    settings = dict(line.split(None, 1) for line in data["enroot.conf"].splitlines())
    for nodeset in values["nodesets"].values():
        mounts = {m["mountPath"]: m for m in nodeset["slurmd"]["volumeMounts"]}
        volumes = {v["name"]: v for v in nodeset["podSpec"]["volumes"]}
        mount = mounts[settings["ENROOT_CONFIG_PATH"]]
        source = volumes[mount["name"]]["configMap"]
        assert source["name"] == "enroot-config"
        ((item),) = source["items"]
        assert item["path"] == ".credentials" and item["key"] in data


def test_the_credentials_line_names_the_stacks_registry_the_slurmd_image_comes_from(values):
    (line,) = _enroot_configmap(values)["data"]["credentials"].splitlines()
    machine, host, login, user, password, command = line.split(" ", 5)
    assert (machine, login, user, password) == ("machine", "login", "AWS", "password")
    assert host == REPO_URL.split("/")[0] == "123456789012.dkr.ecr.us-west-2.amazonaws.com"
    assert command == (
        "$(/usr/local/bin/ecr-password.sh us-west-2 https://api.ecr.us-west-2.amazonaws.com "
        "http://169.254.170.23/v1/credentials "
        "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token)"
    )
