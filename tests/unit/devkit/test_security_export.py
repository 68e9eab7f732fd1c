"""The security review's exporter (devkit/security_export.py) writes what checkov and parliament
read from the dev stack's offline run: Terraform types and spellings for the AWS resources, every
Kubernetes object, every IAM document. No scanner is installed here: these are the exporter's
promises, checked on the same mock run the graph tests use."""

import pytest

from devkit import chart_render, security_export
from devkit.offline_run import Resource, run_program
from devkit.security_export import UnmappedType, terraform_type, terraform_values


@pytest.fixture(scope="module")
def graph():
    return run_program("dev")


@pytest.fixture(scope="module")
def plan(graph):
    return security_export.terraform_plan(graph)


def _planned(plan, address):
    return next(r for r in plan["planned_values"]["root_module"]["resources"] if r["address"] == address)


def _configured(plan, address):
    return next(r for r in plan["configuration"]["root_module"]["resources"] if r["address"] == address)


def test_pulumi_aws_tokens_map_to_terraform_types():
    assert terraform_type("aws:eks/cluster:Cluster") == "aws_eks_cluster"
    assert terraform_type("aws:ec2/vpc:Vpc") == "aws_vpc"  # ec2's prefix dropped
    assert terraform_type("aws:ec2/launchTemplate:LaunchTemplate") == "aws_launch_template"
    assert terraform_type("aws:iam/rolePolicy:RolePolicy") == "aws_iam_role_policy"


def test_a_type_missing_from_the_table_is_an_error_naming_it():
    with pytest.raises(UnmappedType, match="aws:ec2/fleet:Fleet"):
        terraform_type("aws:ec2/fleet:Fleet")


def test_every_aws_type_the_dev_stack_registers_has_a_terraform_type(graph):
    registered = {r.type for r in graph.resources if r.custom and r.type.startswith("aws:")}
    assert registered - set(security_export.TERRAFORM_TYPES) == set()


def test_inputs_are_spelled_as_terraform_spells_them():
    values = terraform_values(
        "aws_route_table",
        {
            "vpcId": "vpc-1",
            "routes": [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "nat-1"}],
            "tags": {"kubernetes.io/role/internalElb": "1", "Name": "x"},
        },
    )
    assert values == {
        "vpc_id": "vpc-1",
        "route": [{"cidr_block": "0.0.0.0/0", "nat_gateway_id": "nat-1"}],
        "tags": {"kubernetes.io/role/internalElb": "1", "Name": "x"},
    }


def test_the_plan_has_what_checkovs_terraform_plan_parser_reads(plan):
    # checkov 3.3.30 context_parsers/tf_plan parse: both keys, or the file is not a plan.
    assert {"terraform_version", "planned_values"} <= set(plan)
    resources = plan["planned_values"]["root_module"]["resources"]
    assert resources and all(
        r["address"] == f"{r['type']}.{r['name']}" and r["mode"] == "managed" for r in resources
    )
    template = _planned(plan, "aws_launch_template.nodes_core_lt")["values"]
    assert template["metadata_options"] == {
        "http_endpoint": "enabled",
        "http_put_response_hop_limit": 1,
        "http_tokens": "required",
    }


def test_an_id_known_only_after_apply_is_a_reference_to_its_resource(plan):
    subnet = "aws_subnet.network_private_us_west_2a"
    assert "vpc_id" not in _planned(plan, subnet)["values"]
    assert _configured(plan, subnet)["expressions"]["vpc_id"]["references"] == [
        "aws_vpc.network_vpc.id",
        "aws_vpc.network_vpc",
    ]


def test_a_policy_attachment_references_its_role(plan):
    attachment = _configured(plan, "aws_iam_role_policy_attachment.storage_ebs_csi_policy_0")
    assert attachment["expressions"]["role"]["references"][-1] == "aws_iam_role.storage_ebs_csi_role"


def test_the_eks_component_is_an_aws_eks_cluster_with_its_endpoint_settings(plan):
    cluster = _planned(plan, "aws_eks_cluster.cluster_eks")["values"]
    # Pulumi.dev.yaml's sshAllowedCidrs, which apiAllowedCidrs defaults to.
    assert cluster["vpc_config"][0]["public_access_cidrs"] == ["203.0.113.10/32"]
    assert cluster["vpc_config"][0]["endpoint_public_access"] is True
    assert "aws_iam_role.cluster_eks_eksRole" in {
        r["address"] for r in plan["planned_values"]["root_module"]["resources"]
    }


def test_unset_log_types_and_key_are_absent_rather_than_empty():
    # checkov 3.3.30 EKSControlPlaneLogging indexes the list: an empty one crashes the scan.
    bare = Resource(
        urn="u",
        type=security_export.EKS_COMPONENT,
        name="c",
        custom=False,
        remote=True,
        parent="",
        provider="",
        dependencies=[],
        property_dependencies={},
        inputs={"name": "c"},
    )
    tf_type, _, values, _ = security_export.eks_cluster_resources(bare)[0]
    assert tf_type == "aws_eks_cluster"
    assert "enabled_cluster_log_types" not in values and "encryption_config" not in values
    logged = Resource(
        **{
            **bare.__dict__,
            "inputs": {"name": "c", "enabledClusterLogTypes": ["api"], "encryptionConfigKeyArn": "arn:k"},
        }
    )
    values = security_export.eks_cluster_resources(logged)[0][2]
    assert values["enabled_cluster_log_types"] == ["api"]
    assert values["encryption_config"][0]["provider"][0]["key_arn"] == "arn:k"


@pytest.fixture(scope="module")
def objects(graph):
    rendered = chart_render.render_graph_release_sources(graph)
    namespaces = {
        chart_render.release_request(r)["release_name"]: chart_render.release_request(r)["namespace"]
        for r in graph.of_type(chart_render.RELEASE_TYPE)
    }
    return security_export.kubernetes_objects(graph, rendered, namespaces)


def test_the_manifests_hold_every_object_the_program_registers(graph, objects):
    registered = {
        (r.type.rsplit(":", 1)[1], r.inputs["metadata"]["name"])
        for r in graph.resources
        if r.custom and r.type.startswith("kubernetes:") and not r.type.startswith("kubernetes:helm.sh/")
    }
    assert {(o["kind"], o["metadata"]["name"]) for o in objects["program"]} == registered
    prepull = next(o for o in objects["program"] if o["kind"] == "DaemonSet")
    assert prepull["apiVersion"] == "apps/v1"


def test_the_manifests_hold_every_release_rendered_into_its_namespace(graph, objects):
    releases = {
        chart_render.release_request(r)["release_name"] for r in graph.of_type(chart_render.RELEASE_TYPE)
    }
    assert set(objects) == {"program"} | {f"release-{name}" for name in releases}
    # The EFA chart names no namespace; Helm installs it into the release's.
    efa = next(o for o in objects["release-aws-efa-k8s-device-plugin"] if o["kind"] == "DaemonSet")
    assert efa["metadata"]["namespace"] == "kube-system"


def test_secret_inputs_are_redacted_in_the_manifests(objects):
    secret = next(
        o for o in objects["program"] if o["kind"] == "Secret" and o["metadata"]["name"] == "slurm-auth-jwt"
    )
    assert secret["data"] == {"jwt.key": "[secret]"}


def test_every_iam_document_is_exported(graph):
    iam = security_export.iam_documents(graph)
    assert set(iam.identity) == {
        "lbc_policy",
        "network_flow_log_delivery",
        "grafana_policy",
        "nodes_node_images",
        "storage_efs_client",
        "slurmd_builder_policy",
        "slurm_registry_policy",
    }
    assert set(iam.trust) == {
        "cluster_vpc_cni_role",
        "lbc_role",
        "nodes_node_role",
        "storage_ebs_csi_role",
        "cluster_eks_eksRole",
        "network_flow_log_role",
        "grafana_role",
        "slurmd_builder_role",
        "slurm_registry_role",
    }
    assert (
        iam.managed["aws_iam_role.nodes_node_role"][0] == "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"
    )
    assert iam.managed["aws_iam_role.cluster_eks_eksRole"] == [security_export.EKS_CLUSTER_POLICY]
