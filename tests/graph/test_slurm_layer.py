"""The Slurm layer as a component: examples/own-cluster/__main__.py, a program with its own VPC and
EKS cluster, adds Slurm with SlurmLayer, and the layer it gets is the one the dev stack declares at
its top, moved under the component and onto the example's cluster."""

import runpy

import pytest
from pulumi.provider.experimental.analyzer import Analyzer

from components.slurm_layer import SlurmLayer
from devkit.offline_run import Graph, run_function
from tests.support.paths import REPO
from tests.support.published_layer import layer as _layer
from tests.support.published_layer import top as _top

EXAMPLE = REPO / "examples" / "own-cluster" / "__main__.py"
LAYER = "slinky-eks:slurm:SlurmLayer"


@pytest.fixture(scope="module")
def example() -> Graph:
    return run_function(lambda: runpy.run_path(str(EXAMPLE), run_name="__main__"))


def test_the_example_holds_the_layer_as_one_component(example):
    (layer,) = example.of_type(LAYER)
    assert {_top(example, r).urn for r in _layer(example)} == {layer.urn}


def test_the_layer_runs_on_the_examples_cluster(example):
    (provider,) = [r for r in example.of_type("pulumi:providers:kubernetes") if r.name == "eks-k8s"]
    in_cluster = [r for r in _layer(example) if r.type.startswith("kubernetes:")]
    assert in_cluster
    assert {r.provider.rsplit("::", 1)[0] for r in in_cluster} == {provider.urn}


def test_the_layers_nodes_join_the_examples_cluster_in_its_subnets(example):
    (cluster,) = [r for r in example.of_type("eks:index:Cluster") if r.name == "eks-eks"]
    groups = example.of_type("aws:eks/nodeGroup:NodeGroup")
    assert groups and {g.inputs["clusterName"] for g in groups} == {cluster.inputs["name"]}
    assert all(example.depends_on(g, cluster) for g in groups)
    private = {f"{s.name}-id" for s in example.of_type("aws:ec2/subnet:Subnet") if "-private-" in s.name}
    assert {i for g in groups for i in g.inputs["subnetIds"]} <= private


def test_the_component_declares_the_dev_stacks_layer_under_its_own_name(dev, example):
    # The same resources of the same types, each named as in the dev stack with the component's
    # name in front: one wiring (components/slurm_layer.py), two parents.
    in_dev = sorted((r.type, f"slurm-{r.name}") for r in _layer(dev))
    in_example = sorted((r.type, r.name) for r in _layer(example) if r.type != LAYER)
    assert in_example == in_dev


def test_the_component_answers_the_stacks_outputs(dev, example):
    assert example.output("sshCommand") == dev.output("sshCommand")
    assert example.output("slurmdImage") == dev.output("slurmdImage")


def test_a_cluster_in_another_region_than_aws_region_is_refused_before_any_resource():
    import pulumi_kubernetes as k8s

    from components.cluster import ClusterContext
    from components.slurm_layer import NetworkContext, SlurmLayerArgs
    from stack import config as stack_config
    from stack.account import Account

    arn = "arn:aws:eks:eu-west-1:123456789012:cluster/elsewhere"

    def program() -> None:
        settings = stack_config.load(Account())  # the dev stack's: aws:region us-west-2
        cluster = ClusterContext(
            name="elsewhere",
            region=settings.region,
            account_id="123456789012",
            arn=arn,
            provider=k8s.Provider("elsewhere-k8s", kubeconfig="{}"),
            security_group_id="sg-0elsewhere",
            pod_identity_ready=(),
        )
        network = NetworkContext("vpc-0elsewhere", "arn:aws:ec2:eu-west-1:123456789012:vpc/x", [], {}, {})
        SlurmLayer("slurm", SlurmLayerArgs(cluster, network, settings, []))

    with pytest.raises(stack_config.ConfigError) as refused:
        run_function(program)
    assert f"its ARN {arn} names eu-west-1" in str(refused.value) and "[cluster-region]" in str(refused.value)


def test_pulumis_component_provider_cannot_infer_a_schema_from_slurm_layer_itself():
    # Why SlurmOnEks (components/slurm_on_eks.py) is the front the provider serves
    # (docs/decisions/slurm-layer-component.md): the schema is inferred from evaluated
    # annotations, and this project's modules postpone theirs. When this fails, the SDK reads
    # them: revisit the decision's other points.
    with pytest.raises(AttributeError, match="'str' object has no attribute '__mro__'"):
        Analyzer("slinky-eks").analyze([SlurmLayer])
