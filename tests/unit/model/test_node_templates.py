"""How a node group is sized, cluster-autoscaler's node-template tags of an autoscaled pool, and a
GPU pool's launch template user data (model/builders/node_templates.py)."""

import base64
import dataclasses
import email

import yaml

from model.builders.node_templates import TEMPLATE, NodeGroupSize, gpu_user_data, node_template_tags
from model.checks.gpu_pools import GpuPool
from model.facts import catalog
from model.facts.contract import EFA_RESOURCE, GPU_RESOURCE

GPU = catalog.lookup("p5.48xlarge")


def _pool(node_count, min_nodes=None, max_nodes=None):
    return GpuPool("train", GPU, node_count, "us-west-2a", 400, 0, min_nodes, max_nodes)


def test_a_fixed_pool_is_held_at_its_node_count():
    assert NodeGroupSize.of_pool(_pool(3)) == NodeGroupSize(3, 3, 3, autoscaled=False)


def test_an_autoscaling_pool_moves_between_its_bounds_and_is_created_at_its_minimum():
    assert NodeGroupSize.of_pool(_pool(3, 1, 8)) == NodeGroupSize(1, 8, 1, autoscaled=True)


def test_the_tags_carry_each_label_a_pending_pod_selects_on():
    tags = node_template_tags(_pool(2, 0, 4), {"role": "gpu", "pool": "train"})
    assert tags[f"{TEMPLATE}/label/role"] == "gpu" and tags[f"{TEMPLATE}/label/pool"] == "train"


def test_the_tags_carry_the_gpu_taint_as_value_and_effect():
    tags = node_template_tags(_pool(2, 0, 4), {})
    assert tags[f"{TEMPLATE}/taint/{GPU_RESOURCE}"] == "true:NoSchedule"


def test_the_tags_carry_each_nodes_gpus_and_efa_interfaces_which_the_autoscaler_cannot_know():
    tags = node_template_tags(_pool(2, 0, 4), {})
    assert tags[f"{TEMPLATE}/resources/{GPU_RESOURCE}"] == str(GPU.gpus) == "8"
    assert tags[f"{TEMPLATE}/resources/{EFA_RESOURCE}"] == str(GPU.efa_interfaces) == "32"


def test_the_user_data_is_a_mime_document_of_one_nodeconfig_asking_for_raid0():
    message = email.message_from_bytes(base64.b64decode(gpu_user_data(GPU)))
    (part,) = message.get_payload()
    assert (message.get_content_type(), part.get_content_type()) == (
        "multipart/mixed",
        "application/node.eks.aws",
    )
    assert yaml.safe_load(part.get_payload()) == {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {"instance": {"localStorage": {"strategy": "RAID0"}}},
    }


def test_an_instance_store_not_on_nvme_gets_no_user_data():
    # setup-local-disks assembles only the disks EC2 attaches as NVMe instance storage.
    sata = dataclasses.replace(GPU, instance_store=catalog.InstanceStore(2, 900, nvme=False))
    assert gpu_user_data(sata) is None
