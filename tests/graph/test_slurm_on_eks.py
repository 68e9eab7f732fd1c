"""SlurmOnEks, the Slurm layer as Pulumi's Python component provider serves it to programs in other
languages (provider/__main__.py): a schema of plain types inferred from its annotations, and the
provider's `construct` declaring the dev stack's layer under it, on a Kubernetes provider of its
own made from the caller's kubeconfig, after what the caller's dependsOn names."""

import copy
import json
import runpy

import pulumi.provider.experimental
import pytest

from components.slurm_on_eks import SlurmOnEks
from devkit.offline_run import Graph
from model.facts import release
from tests.support.paths import REPO
from tests.support.published_layer import TOKEN, dev_settings, layer, provider, run, top


@pytest.fixture(scope="module")
def constructed() -> Graph:
    return run(dev_settings())


def test_the_provider_program_serves_slurm_on_eks_at_the_release(monkeypatch):
    served = []
    monkeypatch.setattr(
        pulumi.provider.experimental, "component_provider_host", lambda *a, **kw: served.append((a, kw))
    )
    runpy.run_path(str(REPO / "provider" / "__main__.py"), run_name="__main__")
    assert served == [(([SlurmOnEks],), {"name": "slinky-eks", "version": release.VERSION})]


def test_the_schema_holds_only_plain_types_and_no_other_package():
    schema = json.loads(provider().schema)
    assert (schema["version"], list(schema["resources"]), schema["dependencies"]) == (
        release.VERSION,
        [TOKEN],
        [],
    )
    assert "$ref" not in json.dumps(schema)
    component = schema["resources"][TOKEN]
    assert set(component["inputProperties"]) == {
        "eksName",
        "eksArn",
        "kubeconfig",
        "eksSecurityGroupId",
        "vpcId",
        "vpcArn",
        "privateSubnetIds",
        "privateSubnetByZone",
        "privateSubnetByKey",
        "settings",
    }
    assert component["inputProperties"]["settings"]["additionalProperties"] == {
        "type": "string",
        "plain": True,
    }
    assert set(component["required"]) == {
        "slurmdImage",
        "loginHostname",
        "sshCommand",
        "sharedFileSystemId",
        "accountingEndpoint",
    }


def test_constructed_the_layer_sits_under_the_component(constructed):
    (component,) = constructed.of_type(TOKEN)
    assert {top(constructed, r).urn for r in layer(constructed)} == {component.urn}


def test_constructed_the_layer_runs_on_its_own_provider_from_the_callers_kubeconfig(constructed):
    (own,) = [r for r in constructed.of_type("pulumi:providers:kubernetes") if r.name == "slurm-k8s"]
    (callers,) = [r for r in constructed.of_type("pulumi:providers:kubernetes") if r.name == "eks-k8s"]
    assert own.inputs["kubeconfig"] == callers.inputs["kubeconfig"]
    assert "kubeconfig" in own.secret_inputs
    in_cluster = [r for r in layer(constructed) if r.type.startswith("kubernetes:")]
    assert in_cluster and {r.provider.rsplit("::", 1)[0] for r in in_cluster} == {own.urn}


def test_constructed_the_layer_is_the_dev_stacks(dev, constructed):
    in_dev = sorted((r.type, f"slurm-{r.name}") for r in layer(dev))
    in_component = sorted(
        (r.type, r.name) for r in layer(constructed) if r.type not in (TOKEN, "pulumi:providers:kubernetes")
    )
    assert in_component == in_dev


def test_the_node_groups_wait_for_what_the_components_depends_on_names(constructed):
    # Through the layer's own orderings, not only the component's: its dependsOn left out.
    constructed = copy.deepcopy(constructed)
    (component,) = constructed.of_type(TOKEN)
    component.dependencies, component.property_dependencies = [], {}
    (cluster,) = [r for r in constructed.of_type("eks:index:Cluster") if r.name == "eks-eks"]
    groups = constructed.of_type("aws:eks/nodeGroup:NodeGroup")
    assert groups and all(constructed.depends_on(g, cluster) for g in groups)


def test_the_outputs_are_the_dev_stacks(dev, constructed):
    assert constructed.output("sshCommand") == dev.output("sshCommand")


def test_bad_settings_are_refused_naming_each_key():
    with pytest.raises(Exception) as refused:
        run(dev_settings(gpuNodeCount="-1", gpuNodeCont="2"))
    message = str(refused.value)
    assert "gpuNodeCount" in message and "slinky-eks:gpuNodeCont" in message
