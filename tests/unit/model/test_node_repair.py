"""Instance replacement (model/builders/node_repair.py): the node monitoring agent's configuration
and each node group's repair policy. The node groups' settings in the dev graph are specified in
tests/graph/test_node_repair.py."""

import json

from model.builders.node_repair import CORE_REPAIR, GPU_REPAIR, monitoring_agent_configuration
from model.facts.contract import GPU_TOLERATION


def test_the_agents_dcgm_server_tolerates_the_gpu_taint_so_it_starts_on_the_gpu_nodes():
    assert json.loads(monitoring_agent_configuration()) == {"dcgmAgent": {"tolerations": [GPU_TOLERATION]}}


def test_the_agents_configuration_is_the_same_string_every_time():
    # Keys sorted: an unchanged stack sees no diff on the add-on.
    configuration = monitoring_agent_configuration()
    assert configuration == json.dumps(json.loads(configuration), sort_keys=True)


def test_a_gpu_node_with_a_fault_is_repaired_as_eks_limits_it():
    assert GPU_REPAIR.enabled and GPU_REPAIR.max_parallel_nodes_repaired_count is None


def test_core_nodes_are_repaired_one_at_a_time():
    assert CORE_REPAIR.enabled and CORE_REPAIR.max_parallel_nodes_repaired_count == 1
