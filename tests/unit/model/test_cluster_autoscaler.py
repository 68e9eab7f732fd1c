"""cluster-autoscaler's computed values (model/builders/cluster_autoscaler.py)."""

import pytest

from model.builders import cluster_autoscaler
from model.facts import versions
from model.facts.contract import CORE_LABELS

KUBERNETES = next(iter(versions.CLUSTER_AUTOSCALER_FOR_KUBERNETES))


def _values(kubernetes=KUBERNETES):
    return cluster_autoscaler.release_values("slinky-dev", "us-west-2", kubernetes)


def test_the_image_is_the_release_pinned_for_the_clusters_kubernetes_version():
    image = _values()["image"]
    assert image == {
        "repository": versions.CLUSTER_AUTOSCALER_IMAGE,
        "tag": versions.cluster_autoscaler_tag(KUBERNETES),
    }


def test_a_kubernetes_version_with_no_pinned_release_is_refused_naming_the_pinned_ones():
    with pytest.raises(ValueError, match=r"kubernetesVersion 1\.0: no cluster-autoscaler release") as refused:
        _values("1.0")
    assert all(pinned in str(refused.value) for pinned in versions.CLUSTER_AUTOSCALER_FOR_KUBERNETES)


def test_the_service_account_name_is_fixed_so_the_pod_identity_association_can_name_it():
    assert _values()["fullnameOverride"] == cluster_autoscaler.SERVICE_ACCOUNT


def test_node_groups_are_discovered_by_the_clusters_name_and_the_region_is_given():
    values = _values()
    assert values["autoDiscovery"] == {"clusterName": "slinky-dev"} and values["awsRegion"] == "us-west-2"


def test_the_autoscaler_runs_on_the_core_nodes():
    assert _values()["nodeSelector"] == CORE_LABELS
