"""The Slurm layer for Pulumi programs in any language: SlurmOnEks declares what SlurmLayer does
(components/slurm_layer.py's one wiring) behind inputs of Pulumi schema types only (strings, lists
and maps), so that Pulumi's Python component provider (provider/__main__.py) can infer its schema
and serve it to programs in TypeScript, Go and the others (docs/decisions/slurm-layer-component.md).

The annotations here are evaluated, not postponed: the provider's schema inference reads them at
run time (pulumi/provider/experimental/analyzer.py in the SDK, `inspect.get_annotations`)."""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from components.cluster import ClusterContext
from components.slurm_layer import NetworkContext, SlurmLayerArgs, SlurmLayerParts, declare_slurm_layer
from stack import config as stack_config
from stack.account import Account
from stack.config import StackConfig


class SlurmOnEksArgs(TypedDict):
    """The cluster, its VPC and the settings, as a program in any language passes them (Pulumi's
    component provider hands the component a dict of these)."""

    # The EKS cluster's name.
    eks_name: str
    # Its ARN, arn:aws:eks:<region>:<account>:cluster/<name>: the Pod Identity roles' trust names
    # it, and the account is read from it.
    eks_arn: pulumi.Input[str]
    # A kubeconfig with cluster-admin rights on it (a secret): the layer's Kubernetes provider.
    kubeconfig: pulumi.Input[str]
    # The EKS-created cluster security group every node has.
    eks_security_group_id: pulumi.Input[str]
    # The VPC the cluster runs in.
    vpc_id: pulumi.Input[str]
    # Its ARN (arn:aws:ec2:<region>:<account>:vpc/<id>).
    vpc_arn: pulumi.Input[str]
    # The cluster's two zones' private subnets (a plain list: the layer reads it as it declares).
    private_subnet_ids: list[pulumi.Input[str]]
    # The private subnet of every zone by its name: each GPU pool's AZ needs one.
    private_subnet_by_zone: dict[str, pulumi.Input[str]]
    # The same subnets by model/facts/node_zones.py's subnet_key: "0" and "1" for the cluster's
    # two zones, the zone's name for a further pool zone.
    private_subnet_by_key: dict[str, pulumi.Input[str]]
    # The README's configuration keys, each as its config string (the project's keys bare,
    # `aws:region` with its namespace; a list or a map as JSON), checked by stack/config.py's
    # from_settings: the same rules and preflight as a stack's config.
    settings: dict[str, str]


class SlurmOnEks(pulumi.ComponentResource):
    """The Slurm layer on an EKS cluster of the caller's, for programs in any language; what the
    cluster must allow is docs/extending.md's "Slurm in your own Pulumi program". What the node
    groups must wait for (the cluster's control plane, the VPC CNI's credentials, the Pod
    Identity agent) is the component's own dependsOn."""

    slurmd_image: pulumi.Output[str]  # the slurmd image the GPU nodes run, by digest
    login_hostname: pulumi.Output[str]  # the login node's load balancer's DNS name
    ssh_command: pulumi.Output[str]  # `ssh <user>@<login_hostname>`
    shared_file_system_id: pulumi.Output[str]  # the EFS file system mounted at /shared
    accounting_endpoint: pulumi.Output[str]  # the accounting database's <host>:<port>
    # The metrics store's query endpoint; absent when the settings turn metrics off.
    metrics_query_endpoint: Optional[pulumi.Output[str]]

    def __init__(self, name: str, args: SlurmOnEksArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:index:SlurmOnEks", name, None, opts)
        self._name, self._args = name, args
        settings = stack_config.from_settings(args["settings"], Account())
        parts = self._layer(settings, self._kubernetes_provider(), _waits_for(opts))
        self.slurmd_image = parts.image.reference
        self.login_hostname = parts.slurm.login_hostname
        self.ssh_command = parts.slurm.ssh_command
        self.shared_file_system_id = parts.storage.file_system_id
        self.accounting_endpoint = pulumi.Output.concat(
            parts.accounting.address, ":", parts.accounting.port.apply(str)
        )
        self.metrics_query_endpoint = None if parts.metrics is None else parts.metrics.query_endpoint
        self.register_outputs(
            {
                "slurmd_image": self.slurmd_image,
                "login_hostname": self.login_hostname,
                "ssh_command": self.ssh_command,
                "shared_file_system_id": self.shared_file_system_id,
                "accounting_endpoint": self.accounting_endpoint,
                "metrics_query_endpoint": self.metrics_query_endpoint,
            }
        )

    def _kubernetes_provider(self) -> k8s.Provider:
        return k8s.Provider(
            f"{self._name}-k8s",
            kubeconfig=pulumi.Output.secret(self._args["kubeconfig"]),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _layer(
        self, settings: StackConfig, provider: k8s.Provider, depends_on: list[pulumi.Resource]
    ) -> SlurmLayerParts:
        args = self._args
        cluster = ClusterContext(
            name=args["eks_name"],
            region=settings.region,
            account_id=pulumi.Output.from_input(args["eks_arn"]).apply(lambda arn: arn.split(":")[4]),
            arn=args["eks_arn"],
            provider=provider,
            security_group_id=args["eks_security_group_id"],
            # The Pod Identity agent is among what the component's dependsOn names.
            pod_identity_ready=(),
        )
        network = NetworkContext(
            vpc_id=args["vpc_id"],
            vpc_arn=args["vpc_arn"],
            private_subnet_ids=args["private_subnet_ids"],
            private_subnet_by_zone=args["private_subnet_by_zone"],
            private_subnet_by_key=args["private_subnet_by_key"],
        )
        layer = SlurmLayerArgs(cluster=cluster, network=network, settings=settings, depends_on=depends_on)
        return declare_slurm_layer(layer, parent=self, prefix=f"{self._name}-")


def _waits_for(opts: Optional[pulumi.ResourceOptions]) -> list[pulumi.Resource]:
    """The component's dependsOn as a list: what the layer's node groups and metrics store wait
    for (a program in another language names its cluster's readiness there)."""
    given = opts.depends_on if opts is not None else None
    if given is None:
        return []
    return list(given) if isinstance(given, (list, tuple)) else [given]
