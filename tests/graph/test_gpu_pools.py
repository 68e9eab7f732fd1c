"""Several GPU pools in one cluster (gpuPools): per pool a node group in its own placement group and
AZ, a NodeSet with its GRES and device requests from the catalog, a partition named after it, and
its cluster.env; the default partition `all` over every pool; the preflight per pool, quotas summed
per family; outputs listing the pools."""

import subprocess

import pytest

from devkit.offline_account import DEV
from devkit.offline_run import run_program
from model.checks import gpu_pools
from model.checks.preflight import ON_DEMAND_STANDARD
from model.checks.problems import as_written
from model.facts import catalog
from tests.support.dev_graph_snapshot import snapshot

TWO_POOLS = [
    {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1},
    {"name": "train", "instanceType": "p5.48xlarge", "nodeCount": 2},
]


@pytest.fixture(scope="module")
def two():
    return run_program("dev", {"gpuPools": TWO_POOLS})


@pytest.fixture(scope="module")
def values(two):
    return two.named("slurm-release").inputs["values"]


def _gpu_groups(graph):
    return {r.name: r.inputs for r in graph.of_type("aws:eks/nodeGroup:NodeGroup") if r.name != "nodes-core"}


# Node groups


def test_each_pool_has_its_own_gpu_node_group_of_its_type_and_size(two):
    groups = _gpu_groups(two)
    assert set(groups) == {"nodes-gpu-infer", "nodes-gpu-train"}
    assert groups["nodes-gpu-infer"]["instanceTypes"] == ["g6e.12xlarge"]
    assert groups["nodes-gpu-infer"]["scalingConfig"] == {"desiredSize": 1, "maxSize": 1, "minSize": 1}
    assert groups["nodes-gpu-train"]["instanceTypes"] == ["p5.48xlarge"]
    assert groups["nodes-gpu-train"]["scalingConfig"] == {"desiredSize": 2, "maxSize": 2, "minSize": 2}


def test_each_pool_has_its_own_cluster_placement_group(two):
    pgs = {r.name for r in two.of_type("aws:ec2/placementGroup:PlacementGroup")}
    assert pgs == {"nodes-gpu-infer-pg", "nodes-gpu-train-pg"}
    for pool in ("infer", "train"):
        assert two.named(f"nodes-gpu-{pool}-lt").inputs["placement"]["groupName"] == f"nodes-gpu-{pool}-pg"


def test_each_pools_interfaces_and_root_volume_come_from_its_type(two):
    for pool, type_ in (("infer", "g6e.12xlarge"), ("train", "p5.48xlarge")):
        lt = two.named(f"nodes-gpu-{pool}-lt").inputs
        assert len(lt["networkInterfaces"]) == catalog.CATALOG[type_].efa_interfaces
        assert lt["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 400


def test_a_pool_sets_its_own_root_volume():
    pools = [TWO_POOLS[0], {**TWO_POOLS[1], "rootVolumeGiB": 1000}]
    graph = run_program("dev", {"gpuPools": pools})
    assert graph.named("nodes-gpu-train-lt").inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 1000
    assert graph.named("nodes-gpu-infer-lt").inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 400


def test_pools_default_to_the_availability_zone(two):
    for group in _gpu_groups(two).values():
        assert group["subnetIds"] == ["network-private-us-west-2a-id"]


def test_a_pool_in_another_zone_gets_that_zones_subnet_and_the_vpc_a_subnet_there():
    pools = [TWO_POOLS[0], {**TWO_POOLS[1], "availabilityZone": "us-west-2d"}]
    graph = run_program("dev", {"gpuPools": pools})
    assert graph.named("nodes-gpu-train").inputs["subnetIds"] == ["network-private-us-west-2d-id"]
    assert graph.named("nodes-gpu-infer").inputs["subnetIds"] == ["network-private-us-west-2a-id"]
    private = [
        s.inputs["availabilityZone"] for s in graph.of_type("aws:ec2/subnet:Subnet") if "-private-" in s.name
    ]
    assert private == ["us-west-2a", "us-west-2b", "us-west-2d"]  # the cluster's two zones stay


def test_every_pool_is_tainted_and_labelled_with_its_pool(two):
    for pool in ("infer", "train"):
        group = two.named(f"nodes-gpu-{pool}").inputs
        assert group["labels"] == {"role": "gpu", gpu_pools.POOL_LABEL: pool}
        assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]


def test_a_gpu_pools_list_with_one_pool_named_slinky_is_the_dev_stack(dev):
    graph = run_program(
        "dev", {"gpuPools": [{"name": "slinky", "instanceType": "g6.12xlarge", "nodeCount": 2}]}
    )
    assert snapshot(graph) == snapshot(dev)


# Slurm: NodeSets and partitions


def test_each_pool_has_a_nodeset_with_its_gres_and_device_requests(values):
    assert set(values["nodesets"]) == {"infer", "train"}
    for pool, type_ in (("infer", "g6e.12xlarge"), ("train", "p5.48xlarge")):
        gpu, nodeset = catalog.CATALOG[type_], values["nodesets"][pool]
        assert nodeset["extraConfMap"]["Gres"] == [gpu.gres]
        assert nodeset["slurmd"]["resources"]["limits"] == {
            "nvidia.com/gpu": gpu.gpus,
            "vpc.amazonaws.com/efa": gpu.efa_interfaces,
        }
    assert values["nodesets"]["train"]["replicas"] == 2 and values["nodesets"]["infer"]["replicas"] == 1


def test_each_nodeset_selects_its_pools_nodes(two, values):
    for pool in ("infer", "train"):
        assert (
            values["nodesets"][pool]["podSpec"]["nodeSelector"]
            == two.named(f"nodes-gpu-{pool}").inputs["labels"]
        )


def test_each_pool_has_its_partition_and_all_is_the_default_over_every_pool(values):
    parts = values["partitions"]
    assert set(parts) == {"infer", "train", "all"}
    assert parts["infer"]["nodesets"] == ["infer"] and parts["train"]["nodesets"] == ["train"]
    assert parts["all"]["nodesets"] == ["infer", "train"]
    assert [p for p, v in parts.items() if v["configMap"].get("Default") == "YES"] == ["all"]


def test_the_chart_renders_three_partitions_into_slurm_conf(two):
    from devkit.chart_render import render_graph_releases

    (controller,) = [o for o in render_graph_releases(two)["slurm"] if o["kind"] == "Controller"]
    lines = [
        line for line in controller["spec"]["extraConf"].splitlines() if line.startswith("PartitionName=")
    ]
    assert sorted(lines) == [
        "PartitionName=all Nodes=infer,train Default=YES MaxTime=UNLIMITED State=UP",
        # g6e and p5 are both types EC2's topology covers: each pool's partition on the tree
        # (tests/graph/test_network_topology.py).
        "PartitionName=infer Nodes=infer MaxTime=UNLIMITED State=UP Topology=tree",
        "PartitionName=train Nodes=train MaxTime=UNLIMITED State=UP Topology=tree",
    ]


# cluster.env per pool


def _staged(graph):
    (cm,) = [r for r in graph.of_type("kubernetes:core/v1:ConfigMap") if r.name == "jobs-files"]
    return cm.inputs["data"]


def test_each_pool_has_its_own_cluster_env(two):
    data = _staged(two)
    assert "SLINKY_EKS_INSTANCE_TYPE=g6e.12xlarge" in data["cluster-infer.env"]
    assert "SLINKY_EKS_INSTANCE_TYPE=p5.48xlarge" in data["cluster-train.env"]
    assert "FI_EFA_USE_DEVICE_RDMA" in data["cluster-train.env"]
    assert "FI_EFA_USE_DEVICE_RDMA" not in data["cluster-infer.env"]  # no RDMA on g6e


def _source_cluster_env(tmp_path, data, node):
    for name, text in data.items():
        if name.endswith(".env"):
            (tmp_path / name).write_text(text)
    return subprocess.run(
        ["bash", "-c", 'source "$JOBS_DIR/cluster.env" && echo "$SLINKY_EKS_INSTANCE_TYPE"'],
        env={"JOBS_DIR": str(tmp_path), "SLURMD_NODENAME": node, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("node, type_", [("infer-0", "g6e.12xlarge"), ("train-1", "p5.48xlarge")])
def test_cluster_env_picks_the_environment_of_the_jobs_node(two, tmp_path, node, type_):
    done = _source_cluster_env(tmp_path, _staged(two), node)
    assert done.returncode == 0 and done.stdout.strip() == type_


def test_cluster_env_on_a_node_of_no_pool_fails_naming_it(two, tmp_path):
    done = _source_cluster_env(tmp_path, _staged(two), "other-0")
    assert done.returncode != 0 and "node other-0 is in no GPU pool (infer train)" in done.stderr


# Outputs


def test_outputs_list_the_pools(two):
    assert two.output("gpuPools") == [
        {
            "name": "infer",
            "instanceType": "g6e.12xlarge",
            "nodeCount": 1,
            "minNodes": 1,
            "maxNodes": 1,
            "availabilityZone": "us-west-2a",
            "partition": "infer",
            "nodeSet": "slurm-worker-infer",
        },
        {
            "name": "train",
            "instanceType": "p5.48xlarge",
            "nodeCount": 2,
            "minNodes": 2,
            "maxNodes": 2,
            "availabilityZone": "us-west-2a",
            "partition": "train",
            "nodeSet": "slurm-worker-train",
        },
    ]
    assert two.output("gpuNodeCount") == 3


def test_the_dev_stack_lists_its_one_pool(dev):
    assert dev.output("gpuPools") == [
        {
            "name": "slinky",
            "instanceType": "g6.12xlarge",
            "nodeCount": 2,
            "minNodes": 2,
            "maxNodes": 2,
            "availabilityZone": "us-west-2a",
            "partition": "slinky",
            "nodeSet": "slurm-worker-slinky",
        }
    ]


def test_each_listed_partition_holds_exactly_its_pools_nodeset(two, values):
    for pool in two.output("gpuPools"):
        assert values["partitions"][pool["partition"]]["nodesets"] == [pool["name"]]


def test_each_listed_nodeset_is_the_one_its_readiness_job_waits_for(two):
    for pool in two.output("gpuPools"):
        command = two.named(f"slurm-ready-job-{pool['name']}").inputs["spec"]["template"]["spec"][
            "containers"
        ][0]["command"]
        assert command[command.index("--nodeset") + 1] == pool["nodeSet"]


def test_a_pool_listed_in_another_zone_says_so():
    pools = [TWO_POOLS[0], {**TWO_POOLS[1], "availabilityZone": "us-west-2b"}]
    listed = run_program("dev", {"gpuPools": pools}).output("gpuPools")
    assert [p["availabilityZone"] for p in listed] == ["us-west-2a", "us-west-2b"]


# Preflight per pool


def _refused(pools, account=DEV) -> str:
    graph = run_program("dev", {"gpuPools": pools}, expect_error=True, account=account)
    assert graph.resources == [], [r.name for r in graph.resources]
    return str(graph.error)


def test_a_pool_in_a_zone_that_does_not_offer_its_type_is_refused():
    msg = _refused([TWO_POOLS[0], {**TWO_POOLS[1], "availabilityZone": "us-west-2c"}])
    assert "slinky-eks:gpuPools[1].instanceType = 'p5.48xlarge'" in msg
    assert "not offered in gpuPools[1].availabilityZone us-west-2c (usw2-az3)" in msg
    assert "(1 problem)" in msg


def test_a_pool_zone_outside_the_region_is_refused():
    msg = _refused([{**TWO_POOLS[0], "availabilityZone": "us-east-1a"}])
    assert "slinky-eks:gpuPools[0].availabilityZone = 'us-east-1a'" in msg


def test_quotas_are_summed_over_the_pools_of_a_family():
    # 3 x p5.48xlarge = 576 vCPUs of the P quota; each pool alone (192, 384) would fit in 400.
    pools = [
        {"name": "a", "instanceType": "p5.48xlarge", "nodeCount": 1},
        {"name": "b", "instanceType": "p5.48xlarge", "nodeCount": 2},
        TWO_POOLS[0],
    ]
    msg = _refused(pools, DEV.but(quotas={"L-417A185B": 400.0, "L-DB2E81BA": 768.0}))
    assert "(1 problem)" in msg and "a: 1 x p5.48xlarge + b: 2 x p5.48xlarge need 576 vCPUs" in msg
    assert "(L-417A185B)" in msg and "which is 400" in msg


def test_pools_of_different_families_count_against_their_own_quotas(two):
    codes = sorted(
        a["quotaCode"]
        for t, a in two.calls
        if t.endswith("getServiceQuota") and a["quotaCode"] != ON_DEMAND_STANDARD[0]
    )  # the core nodes' quota
    assert codes == ["L-417A185B", "L-DB2E81BA"]


def test_pools_in_every_zone_of_the_region_with_the_most_zones_each_get_a_subnet():
    # us-east-1 has six AZs; us-east-1e is use1-az3 in this account, where EKS places none.
    pools = [
        {"name": f"p{z}", "instanceType": "g6.12xlarge", "nodeCount": 1, "availabilityZone": f"us-east-1{z}"}
        for z in "abcdf"
    ]
    graph = run_program(
        "dev", {"aws:region": "us-east-1", "availabilityZone": "us-east-1a", "gpuPools": pools}
    )
    private = {
        s.inputs["availabilityZone"]: s.inputs["cidrBlock"]
        for s in graph.of_type("aws:ec2/subnet:Subnet")
        if "-private-" in s.name
    }
    assert sorted(private) == [f"us-east-1{z}" for z in "abcdf"] and len(set(private.values())) == 5


# Config errors


def test_duplicate_pool_names_are_refused():
    msg = _refused([TWO_POOLS[0], {**TWO_POOLS[1], "name": "infer"}])
    assert "gpuPools[1].name = 'infer': a name no other pool has (gpuPools[0] is already 'infer')" in msg


@pytest.mark.parametrize("name", ["Train", "1st", "a_b", "-x", "x-", "a" * 21, "", 7])
def test_invalid_pool_names_are_refused(name):
    msg = _refused([{**TWO_POOLS[0], "name": name}])
    assert f"gpuPools[0].name = {name!r}" in msg and "lower-case letters, digits and '-'" in msg


def test_a_pool_name_that_begins_with_another_pools_name_and_a_dash_is_refused():
    msg = _refused([{**TWO_POOLS[0], "name": "train-big"}, TWO_POOLS[1]])
    assert (
        "gpuPools[0].name = 'train-big': a name that does not begin with another pool's name and '-'" in msg
    )
    assert "gpuPools[1] is 'train'" in msg


def test_pool_names_that_merely_share_a_beginning_pass():
    graph = run_program("dev", {"gpuPools": [{**TWO_POOLS[0], "name": "trainer"}, TWO_POOLS[1]]})
    assert {r.name for r in graph.of_type("aws:eks/nodeGroup:NodeGroup")} >= {
        "nodes-gpu-trainer",
        "nodes-gpu-train",
    }


def test_the_name_of_the_default_partition_is_refused_as_a_pool_name():
    msg = _refused([{**TWO_POOLS[0], "name": "all"}])
    assert "gpuPools[0].name = 'all'" in msg and "the partition over every pool" in msg


@pytest.mark.parametrize(
    "type_, why",
    [
        ("m6i.2xlarge", "not an NVIDIA GPU instance type"),
        ("g6.4xlarge", "a GPU size without EFA"),
        ("g7.48xlarge", "GPU model name cannot be sourced"),
        ("p3dn.24xlarge", "compute capability 7.0"),
    ],
)
def test_a_pool_type_outside_the_catalog_is_refused(type_, why):
    msg = _refused([{**TWO_POOLS[0], "instanceType": type_}])
    assert f"gpuPools[0].instanceType = {type_!r}" in msg and why in msg and "p5.48xlarge" in msg


def test_more_pools_than_eks_allows_node_groups_are_refused():
    pools = [
        {"name": f"p{i}", "instanceType": "g6.12xlarge", "nodeCount": 1}
        for i in range(gpu_pools.MAX_POOLS + 1)
    ]
    msg = _refused(pools)
    assert f"gpuPools = '{gpu_pools.MAX_POOLS + 1} pools': at most {gpu_pools.MAX_POOLS}" in msg


def test_as_many_pools_as_allowed_pass_the_pool_rules():
    pools = [
        {"name": f"p{i}", "instanceType": "g6.12xlarge", "nodeCount": 1} for i in range(gpu_pools.MAX_POOLS)
    ]
    assert gpu_pools.pools_from_config(pools, "us-west-2a", 400)[1] == []


@pytest.mark.parametrize("count", [0, 65, "2", 1.5, True, None])
def test_a_pool_node_count_outside_the_range_is_refused(count):
    entry = {**TWO_POOLS[0], "nodeCount": count}
    msg = _refused([entry])
    assert f"gpuPools[0].nodeCount = {as_written(count)}: a whole number from 1 to 64" in msg


@pytest.mark.parametrize("gib", [99, 16385, "400"])
def test_a_pool_root_volume_outside_the_range_is_refused(gib):
    msg = _refused([{**TWO_POOLS[0], "rootVolumeGiB": gib}])
    assert f"gpuPools[0].rootVolumeGiB = {gib!r}: a whole number from 100 to 16384" in msg


def test_an_unknown_pool_field_is_refused_naming_the_fields():
    msg = _refused([{**TWO_POOLS[0], "instancetype": "p5.48xlarge"}])
    assert "gpuPools[0].instancetype = 'p5.48xlarge': not a pool field" in msg and "instanceType" in msg


@pytest.mark.parametrize("value", [{"name": "x"}, "infer", ["infer"]])
def test_gpu_pools_must_be_a_list_of_objects(value):
    msg = _refused(value)
    assert "slinky-eks:gpuPools" in msg and ("list of pools" in msg or "an object {name" in msg)


def test_every_pool_problem_comes_back_at_once():
    msg = _refused([{"name": "A", "instanceType": "c5.large", "nodeCount": 0}, {"name": "b"}])
    assert msg.startswith("invalid stack configuration (5 problems)")
    for key in ("[0].name", "[0].instanceType", "[0].nodeCount", "[1].instanceType", "[1].nodeCount"):
        assert f"slinky-eks:gpuPools{key} = " in msg
