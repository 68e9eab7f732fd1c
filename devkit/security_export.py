"""What the security review reads, exported from an offline run of the program
(devkit/offline_run.py), in the shapes the scanners take:

- kubernetes/: every Kubernetes object the program registers, and every object of every Helm
  release rendered offline with its computed values (devkit/chart_render.py), as multi-document
  YAML for checkov's `kubernetes` framework;
- terraform/plan.json: the AWS resources as a Terraform plan (`terraform show -json`) for checkov's
  `terraform_plan` framework;
- iam/: every identity policy document the program writes (inline policies), one JSON file each,
  for parliament; iam-trust/: the roles' trust policies (parliament reads identity policies only,
  and reports a trust policy's missing Resource as MALFORMED; checkov's terraform_plan checks see
  them on aws_iam_role); iam-managed.json: the AWS-managed policies attached to each role by ARN.

What checkov's terraform_plan framework reads (checkov 3.3.30, checkov/terraform/plan_parser.py
parse_tf_plan and context_parsers/tf_plan/__init__.py parse): a JSON object with
`terraform_version` and `planned_values`; each `planned_values.root_module.resources[]` entry
with `address`, `mode` "managed", `type`, `name` and `values`; and, from
`configuration.root_module.resources[]` matched by type and name, `expressions.<key>.references`,
which it puts in place of a value missing from `values` (_add_references). That is how a real
plan shows a value known only after apply (a VPC's id in a subnet), and how checkov's graph checks
(a VPC with its flow log, a security group attached to something) see one resource name another.
"""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass
from typing import Any

import yaml

from devkit import chart_render
from devkit.offline_run import Graph, Resource
from devkit.plan import REDACTED, integers

# pulumi-aws type tokens -> Terraform resource types. pulumi-aws names a resource after the
# Terraform one, module prefix dropped for ec2's (aws_vpc is aws:ec2/vpc:Vpc, aws_eks_cluster
# is aws:eks/cluster:Cluster: pulumi/pulumi-aws provider/resources.go, the resource map); the table
# is explicit because the rule has exceptions (aws_ec2_fleet is aws:ec2/fleet:Fleet).
TERRAFORM_TYPES = {
    "aws:cloudwatch/logGroup:LogGroup": "aws_cloudwatch_log_group",
    "aws:ec2/defaultNetworkAcl:DefaultNetworkAcl": "aws_default_network_acl",
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": "aws_default_security_group",
    "aws:ec2/eip:Eip": "aws_eip",
    "aws:ec2/flowLog:FlowLog": "aws_flow_log",
    "aws:ec2/internetGateway:InternetGateway": "aws_internet_gateway",
    "aws:ec2/launchTemplate:LaunchTemplate": "aws_launch_template",
    "aws:ec2/natGateway:NatGateway": "aws_nat_gateway",
    "aws:ec2/placementGroup:PlacementGroup": "aws_placement_group",
    "aws:ec2/routeTable:RouteTable": "aws_route_table",
    "aws:ec2/routeTableAssociation:RouteTableAssociation": "aws_route_table_association",
    "aws:ec2/securityGroup:SecurityGroup": "aws_security_group",
    "aws:autoscaling/tag:Tag": "aws_autoscaling_group_tag",
    "aws:ec2/securityGroupRule:SecurityGroupRule": "aws_security_group_rule",
    "aws:ec2/subnet:Subnet": "aws_subnet",
    "aws:ec2/vpc:Vpc": "aws_vpc",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "aws_vpc_endpoint",
    "aws:ecr/lifecyclePolicy:LifecyclePolicy": "aws_ecr_lifecycle_policy",
    "aws:ecr/repository:Repository": "aws_ecr_repository",
    "aws:efs/fileSystem:FileSystem": "aws_efs_file_system",
    "aws:efs/fileSystemPolicy:FileSystemPolicy": "aws_efs_file_system_policy",
    "aws:efs/mountTarget:MountTarget": "aws_efs_mount_target",
    "aws:eks/accessEntry:AccessEntry": "aws_eks_access_entry",
    "aws:eks/addon:Addon": "aws_eks_addon",
    "aws:eks/cluster:Cluster": "aws_eks_cluster",
    "aws:eks/nodeGroup:NodeGroup": "aws_eks_node_group",
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": "aws_eks_pod_identity_association",
    "aws:iam/policy:Policy": "aws_iam_policy",
    "aws:iam/role:Role": "aws_iam_role",
    "aws:iam/rolePolicy:RolePolicy": "aws_iam_role_policy",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "aws_iam_role_policy_attachment",
    "aws:kms/key:Key": "aws_kms_key",
    # The metrics store (Amazon Managed Service for Prometheus): pulumi-aws's amp module is Terraform's aws_prometheus_* resources.
    "aws:amp/workspace:Workspace": "aws_prometheus_workspace",
    "aws:amp/workspaceConfiguration:WorkspaceConfiguration": "aws_prometheus_workspace_configuration",
    "aws:amp/scraper:Scraper": "aws_prometheus_scraper",
    "aws:amp/ruleGroupNamespace:RuleGroupNamespace": "aws_prometheus_rule_group_namespace",
    "aws:amp/alertManagerDefinition:AlertManagerDefinition": "aws_prometheus_alert_manager_definition",
    "aws:sns/topic:Topic": "aws_sns_topic",
    "aws:sns/topicPolicy:TopicPolicy": "aws_sns_topic_policy",
    "aws:sns/topicSubscription:TopicSubscription": "aws_sns_topic_subscription",
    "aws:rds/instance:Instance": "aws_db_instance",
    "aws:rds/parameterGroup:ParameterGroup": "aws_db_parameter_group",
    "aws:rds/subnetGroup:SubnetGroup": "aws_db_subnet_group",
    "aws:s3/bucket:Bucket": "aws_s3_bucket",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": "aws_s3_bucket_lifecycle_configuration",
    "aws:s3/bucketPolicy:BucketPolicy": "aws_s3_bucket_policy",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": "aws_s3_bucket_public_access_block",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        "aws_s3_bucket_server_side_encryption_configuration"
    ),
    # pulumi-aws's BucketObjectv2 is Terraform's aws_s3_object (the v2 names the successor of BucketObject).
    "aws:s3/bucketObjectv2:BucketObjectv2": "aws_s3_object",
    # The in-region image build (components/slurmd_image.py).
    "aws:codebuild/project:Project": "aws_codebuild_project",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "aws_vpc_security_group_ingress_rule",
}
# Repeated blocks pulumi-aws names in the plural where Terraform's block is singular
# (aws_route_table `route`, aws_eks_node_group `taint`, aws_eks_addon `pod_identity_association`,
# aws_db_parameter_group `parameter`, the S3 bucket configurations' `rule`).
SINGULAR_BLOCKS = {
    ("aws_s3_bucket_lifecycle_configuration", "rules"): "rule",
    ("aws_s3_bucket_server_side_encryption_configuration", "rules"): "rule",
    ("aws_route_table", "routes"): "route",
    ("aws_eks_node_group", "taints"): "taint",
    ("aws_eks_addon", "pod_identity_associations"): "pod_identity_association",
    ("aws_db_parameter_group", "parameters"): "parameter",
}
# Attributes whose keys are data (tag names, label names), not attribute names: kept as written.
DATA_MAPS = {"tags", "tags_all", "labels"}
# The pulumi-eks component: what it creates (pulumi/pulumi-eks nodejs/eks/cluster/cluster.ts,
# createCore: `new aws.eks.Cluster` with vpcConfig, enabledClusterLogTypes, encryptionConfig from
# encryptionConfigKeyArn, accessConfig; the `eksRole` ServiceRole trusting eks.amazonaws.com with
# AmazonEKSClusterPolicy; no storage class unless storageClasses is set).
EKS_COMPONENT = "eks:index:Cluster"
EKS_CLUSTER_POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"


class UnmappedType(ValueError):
    """An AWS resource type with no Terraform type in TERRAFORM_TYPES."""


def snake(name: str) -> str:
    """camelCase -> snake_case, as Terraform spells pulumi-aws's input names."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def terraform_type(token: str) -> str:
    """The Terraform type of a pulumi-aws type token; an unknown one is an UnmappedType naming it."""
    try:
        return TERRAFORM_TYPES[token]
    except KeyError:
        raise UnmappedType(
            f"{token}: no Terraform type in devkit/security_export.py TERRAFORM_TYPES; "
            "add it (pulumi-aws names it after the Terraform resource)"
        ) from None


def terraform_name(name: str) -> str:
    """A Pulumi resource name as a Terraform name (letters, digits, underscores)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def terraform_values(tf_type: str, inputs: Any, key: str | None = None) -> Any:
    """Pulumi inputs in Terraform's spelling: snake_case keys (data maps kept), singular blocks."""
    if isinstance(inputs, dict):
        if key in DATA_MAPS:
            return dict(inputs)
        out = {}
        for k, v in inputs.items():
            name = snake(k)
            name = SINGULAR_BLOCKS.get((tf_type, name), name) if key is None else name
            out[name] = terraform_values(tf_type, v, name)
        return out
    if isinstance(inputs, list):
        return [terraform_values(tf_type, v, key) for v in inputs]
    return inputs


# --- Kubernetes ---------------------------------------------------------------------------------


def _api_version(token: str) -> tuple[str, str]:
    """kubernetes:apps/v1:DaemonSet -> ("apps/v1", "DaemonSet"); the core group is plain v1."""
    _, group_version, kind = token.split(":")
    group, version = group_version.split("/")
    return (version if group == "core" else f"{group}/{version}"), kind


def _redacted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return REDACTED


def registered_object(resource: Resource) -> dict:
    """A Kubernetes resource the program registers, as the object the provider sends (secret
    inputs' leaves redacted: the scanners need their shape, not their bytes)."""
    api_version, kind = _api_version(resource.type)
    body = {
        k: (_redacted(v) if k in resource.secret_inputs else integers(v))
        for k, v in sorted(resource.inputs.items())
    }
    return {**body, "apiVersion": api_version, "kind": kind}


# Kinds without a namespace (kubectl api-resources --namespaced=false, of those the charts render).
CLUSTER_SCOPED = {
    "APIService",
    "ClusterIssuer",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "MutatingWebhookConfiguration",
    "Namespace",
    "PersistentVolume",
    "PriorityClass",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
}


def in_namespace(obj: dict, namespace: str) -> dict:
    """A rendered object as Helm installs it: a namespaced object the chart leaves without a
    namespace goes into the release's (the EFA plugin's DaemonSet names none)."""
    if obj.get("kind") in CLUSTER_SCOPED or (obj.get("metadata") or {}).get("namespace"):
        return obj
    return {**obj, "metadata": {**(obj.get("metadata") or {}), "namespace": namespace}}


def kubernetes_objects(
    graph: Graph, rendered: dict[str, list[tuple[str, dict]]], namespaces: dict[str, str]
) -> dict[str, list[dict]]:
    """Every Kubernetes object the program creates, by the file it is written to: `program`
    (what it registers itself) and one per Helm release (`rendered`: chart_render's
    render_graph_release_sources of the same graph; `namespaces`, each release's namespace)."""
    own = [
        registered_object(r)
        for r in sorted(graph.resources, key=lambda r: r.urn)
        if r.type.startswith("kubernetes:")
        and r.custom
        and r.type != chart_render.RELEASE_TYPE
        and not r.type.startswith("kubernetes:helm.sh/")
    ]
    out = {"program": own}
    for release, objects in sorted(rendered.items()):
        out[f"release-{release}"] = [in_namespace(obj, namespaces[release]) for _, obj in objects]
    return out


def write_kubernetes(objects: dict[str, list[dict]], directory: pathlib.Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, docs in objects.items():
        (directory / f"{name}.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=True))


# --- Terraform plan -----------------------------------------------------------------------------


def _ids(graph: Graph) -> dict[str, str]:
    """What a resource's id or ARN reads as in the mocks' answers (devkit/offline_run.py Mocks:
    `<name>-id`; roles and placement groups by name; roles and policies by ARN) -> its Terraform
    address."""
    ids = {}
    for r in graph.resources:
        if not (r.custom and r.type in TERRAFORM_TYPES):
            continue
        address = f"{TERRAFORM_TYPES[r.type]}.{terraform_name(r.name)}"
        ids[f"{r.name}-id"] = address
        if r.type == "aws:iam/role:Role":
            ids[r.name] = address
            ids[f"arn:aws:iam::123456789012:role/{r.name}"] = address
        if r.type == "aws:iam/policy:Policy":
            ids[f"arn:aws:iam::123456789012:policy/{r.name}"] = address
    return ids


def _addresses(graph: Graph) -> dict[str, str]:
    """URN -> Terraform address of every resource that has one."""
    return {
        r.urn: f"{TERRAFORM_TYPES[r.type]}.{terraform_name(r.name)}"
        for r in graph.resources
        if r.custom and r.type in TERRAFORM_TYPES
    }


def _unknown_references(resource: Resource, values: dict, addresses: dict[str, str]) -> dict:
    """Inputs the mocks leave unknown (an auto-named role's name) but that came from another
    resource's output: references to it, as a plan's configuration shows them."""
    out = {}
    for key, urns in sorted(resource.property_dependencies.items()):
        refs = [addresses[u] for u in urns if u in addresses]
        if key not in resource.inputs and refs:
            out[snake(key)] = {"references": [f"{a}.id" for a in refs] + refs}
    return out


def _split_references(values: dict, ids: dict[str, str]) -> tuple[dict, dict]:
    """Top-level values that are another resource's id (or a list holding one) come out of
    `values` and into `expressions` as references, as in a plan where they are known only after
    apply (a list beside a known id, such as a cluster's own security group, is unknown as a whole)."""
    kept, expressions = {}, {}
    for key, value in values.items():
        items = value if isinstance(value, list) else [value]
        refs = [ids[v] for v in items if isinstance(v, str) and v in ids]
        if refs:
            expressions[key] = {"references": [f"{a}.id" for a in refs] + refs}
        else:
            kept[key] = value
    return kept, expressions


def eks_cluster_resources(resource: Resource) -> list[tuple[str, str, dict, dict]]:
    """(type, name, values, expressions) of what the pulumi-eks component creates that the checks look at."""
    i = integers(resource.inputs)
    name = terraform_name(resource.name)
    cluster = {
        "name": i.get("name"),
        "version": i.get("version"),
        "vpc_config": [
            {
                "endpoint_private_access": i.get("endpointPrivateAccess", False),
                "endpoint_public_access": i.get("endpointPublicAccess", True),
                "public_access_cidrs": i.get("publicAccessCidrs", ["0.0.0.0/0"]),
                "subnet_ids": [*i.get("publicSubnetIds", []), *i.get("privateSubnetIds", [])],
            }
        ],
        "access_config": [
            {
                "authentication_mode": i.get("authenticationMode", "CONFIG_MAP"),
                "bootstrap_cluster_creator_admin_permissions": True,
            }
        ],
    }
    # Unset is absent (checkov 3.3.30 EKSControlPlaneLogging indexes the list's first item).
    if i.get("enabledClusterLogTypes"):
        cluster["enabled_cluster_log_types"] = i["enabledClusterLogTypes"]
    if i.get("encryptionConfigKeyArn"):
        cluster["encryption_config"] = [
            {"provider": [{"key_arn": i["encryptionConfigKeyArn"]}], "resources": ["secrets"]}
        ]
    role = {
        "assume_role_policy": json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "eks.amazonaws.com"},
                        "Action": ["sts:AssumeRole", "sts:TagSession"],
                    }
                ],
            }
        )
    }
    role_address = f"aws_iam_role.{name}_eksRole"
    return [
        ("aws_eks_cluster", name, cluster, {}),
        ("aws_iam_role", f"{name}_eksRole", role, {}),
        (
            "aws_iam_role_policy_attachment",
            f"{name}_eksRole_policy",
            {"policy_arn": EKS_CLUSTER_POLICY},
            {"role": {"references": [f"{role_address}.name", role_address]}},
        ),
    ]


def aws_resources(graph: Graph) -> list[tuple[str, str, dict, dict]]:
    """(type, name, values, expressions) of every AWS resource, in URN order."""
    ids, addresses = _ids(graph), _addresses(graph)
    out = []
    for r in sorted(graph.resources, key=lambda r: r.urn):
        if r.type == EKS_COMPONENT:
            for tf_type, name, values, own in eks_cluster_resources(r):
                kept, expressions = _split_references(values, ids)
                out.append((tf_type, name, kept, {**expressions, **own}))
        elif r.custom and r.type.startswith("aws:"):
            tf_type = terraform_type(r.type)
            values = terraform_values(tf_type, integers(r.inputs))
            kept, expressions = _split_references(values, ids)
            expressions.update(_unknown_references(r, kept, addresses))
            out.append((tf_type, terraform_name(r.name), kept, expressions))
    return out


def terraform_plan(graph: Graph) -> dict:
    """The AWS resources as `terraform show -json` prints a plan, as far as checkov reads one."""
    resources = aws_resources(graph)
    return {
        "format_version": "1.2",
        "terraform_version": "1.9.0",
        "planned_values": {
            "root_module": {
                "resources": [
                    {
                        "address": f"{t}.{n}",
                        "mode": "managed",
                        "type": t,
                        "name": n,
                        "provider_name": "registry.terraform.io/hashicorp/aws",
                        "values": v,
                    }
                    for t, n, v, _ in resources
                ]
            }
        },
        "configuration": {
            "root_module": {
                "resources": [
                    {"address": f"{t}.{n}", "mode": "managed", "type": t, "name": n, "expressions": e}
                    for t, n, _, e in resources
                ]
            }
        },
    }


# --- IAM ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IamDocuments:
    identity: dict[str, dict]  # inline and customer-managed policies by name
    trust: dict[str, dict]  # each role's trust policy by the role's name
    managed: dict[str, list[str]]  # role address -> the AWS-managed policy ARNs attached


def iam_documents(graph: Graph) -> IamDocuments:
    """Every policy document of every role the program (and the pulumi-eks component) creates,
    and the AWS-managed policies attached by ARN (AWS's to maintain: listed, not scanned)."""
    documents: dict[str, dict] = {}
    trust: dict[str, dict] = {}
    managed: dict[str, list[str]] = {}
    for tf_type, name, values, expressions in aws_resources(graph):
        if tf_type == "aws_iam_role":
            trust[name] = json.loads(values["assume_role_policy"])
        elif tf_type in ("aws_iam_role_policy", "aws_iam_policy"):
            documents[name] = json.loads(values["policy"])
        elif tf_type == "aws_iam_role_policy_attachment":
            role = values.get("role") or _referenced(expressions.get("role"))
            managed.setdefault(str(role), []).append(values["policy_arn"])
    return IamDocuments(documents, trust, managed)


def _referenced(expression: dict | None) -> str | None:
    return expression["references"][-1] if expression else None


def write_all(graph: Graph, rendered: dict[str, list[tuple[str, dict]]], out: pathlib.Path) -> dict[str, Any]:
    """Write kubernetes/, terraform/plan.json, iam/ and iam-managed.json under `out`; what was
    written, counted."""
    namespaces = {
        chart_render.release_request(r)["release_name"]: chart_render.release_request(r)["namespace"]
        for r in graph.of_type(chart_render.RELEASE_TYPE)
    }
    objects = kubernetes_objects(graph, rendered, namespaces)
    write_kubernetes(objects, out / "kubernetes")
    plan = terraform_plan(graph)
    (out / "terraform").mkdir(parents=True, exist_ok=True)
    (out / "terraform" / "plan.json").write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
    iam = iam_documents(graph)
    for folder, documents in (("iam", iam.identity), ("iam-trust", iam.trust)):
        (out / folder).mkdir(parents=True, exist_ok=True)
        for name, doc in documents.items():
            (out / folder / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "iam-managed.json").write_text(json.dumps(iam.managed, indent=1, sort_keys=True) + "\n")
    return {
        "kubernetes objects": sum(len(v) for v in objects.values()),
        "aws resources": len(plan["planned_values"]["root_module"]["resources"]),
        "identity policies": len(iam.identity),
        "trust policies": len(iam.trust),
        "managed attachments": sum(len(v) for v in iam.managed.values()),
    }
