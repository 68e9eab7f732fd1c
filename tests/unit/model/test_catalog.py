"""The instance catalog: every EFA NVIDIA type the design names, and what is derived from it."""

import pytest

from model.facts import catalog

ISSUE_FAMILIES = ["g5", "g6", "g6e", "g7e", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300"]


@pytest.mark.parametrize("family", ISSUE_FAMILIES)
def test_every_named_family_is_in_the_catalog(family):
    assert [t for t in catalog.CATALOG if t.split(".")[0] == family]


@pytest.mark.parametrize(
    "name,gres",
    [
        ("g6.12xlarge", "gpu:nvidia_l4:4"),
        ("g5.48xlarge", "gpu:nvidia_a10g:8"),
        ("g6e.12xlarge", "gpu:nvidia_l40s:4"),
        ("p4d.24xlarge", "gpu:nvidia_a100-sxm4-40gb:8"),
        ("p5.48xlarge", "gpu:nvidia_h100_80gb_hbm3:8"),
        ("p5en.48xlarge", "gpu:nvidia_h200:8"),
        ("p6-b200.48xlarge", "gpu:nvidia_b200:8"),
        ("p5.4xlarge", "gpu:nvidia_h100_80gb_hbm3:1"),
        ("g7e.12xlarge", "gpu:nvidia_rtx_pro_6000_blackwell_server_edition:2"),
        ("p6-b300.48xlarge", "gpu:nvidia_b300_sxm6_ac:8"),
    ],
)
def test_gres_is_what_slurm_autodetects(name, gres):
    assert catalog.CATALOG[name].gres == gres


@pytest.mark.parametrize("name", sorted(catalog.CATALOG))
def test_device_rdma_only_where_the_hardware_has_it(name):
    t = catalog.CATALOG[name]
    env = t.nccl_environment
    assert ("FI_EFA_USE_DEVICE_RDMA" in env) == t.gpudirect_rdma
    assert t.gpudirect_rdma == name.startswith("p")


@pytest.mark.parametrize("name", sorted(catalog.CATALOG))
def test_p2p_disabled_only_on_multi_gpu_pcie_parts(name):
    t = catalog.CATALOG[name]
    assert ("NCCL_P2P_DISABLE" in t.nccl_environment) == (not t.nvswitch and t.gpus > 1)


def test_every_type_pins_the_ofi_network_plugin():
    assert all(t.nccl_environment["NCCL_NET"] == "Libfabric" for t in catalog.CATALOG.values())


@pytest.mark.parametrize(
    "name,count",
    [
        ("g6.12xlarge", 1),
        ("g6e.24xlarge", 2),
        ("p4de.24xlarge", 4),
        ("p5.48xlarge", 32),
        ("p5en.48xlarge", 16),
        ("p6-b200.48xlarge", 8),
        ("g7e.48xlarge", 4),
        ("p6-b300.48xlarge", 16),
    ],
)
def test_efa_interface_counts(name, count):
    ifaces = catalog.CATALOG[name].network_interfaces
    assert len([i for i in ifaces if i["interface_type"] in ("efa", "efa-only")]) == count


@pytest.mark.parametrize("name", sorted(catalog.CATALOG))
def test_each_card_that_takes_efa_gets_one_efa_interface_and_card_0_the_primary(name):
    t = catalog.CATALOG[name]
    ifaces = t.network_interfaces
    assert [i["network_card_index"] for i in ifaces] == [
        card for card, types in enumerate(t.cards) if card == 0 or "efa-only" in types
    ]
    assert ifaces[0]["device_index"] == 0
    assert ifaces[0]["interface_type"] == ("efa" if "efa" in t.cards[0] else "interface")


def test_a_card_without_efa_gets_no_efa_interface():
    ena_first = catalog.CATALOG["p6-b300.48xlarge"]
    assert ena_first.network_interfaces[0]["interface_type"] == "interface"
    assert len(ena_first.network_interfaces) == 17 and ena_first.efa_interfaces == 16


def test_line_rate_in_gigabytes():
    assert catalog.CATALOG["g6.12xlarge"].efa_line_rate_gbytes == 5.0
    assert catalog.CATALOG["p5.48xlarge"].efa_line_rate_gbytes == 400.0


def test_non_efa_reasons():
    assert catalog.describe_unsupported("g6.4xlarge").startswith("a GPU size without EFA")
    assert catalog.describe_unsupported("m6i.large") == "not an NVIDIA GPU instance type"
    assert catalog.describe_unsupported("???") == "not an EC2 instance type name"


@pytest.mark.parametrize(
    "name,why",
    [
        ("g7.48xlarge", "GPU model name cannot be sourced"),
        ("g7.8xlarge", "GPU model name cannot be sourced"),
        ("p3dn.24xlarge", "compute capability 7.0"),
        ("g4dn.12xlarge", "T4"),
    ],
)
def test_a_refused_type_is_refused_with_its_reason(name, why):
    assert catalog.describe_unsupported(name).startswith("refused: ") and why in catalog.describe_unsupported(
        name
    )


@pytest.mark.parametrize(
    "name,code",
    [
        ("g6.12xlarge", "L-DB2E81BA"),
        ("gr6.8xlarge", "L-DB2E81BA"),
        ("g6e.48xlarge", "L-DB2E81BA"),
        ("p4d.24xlarge", "L-417A185B"),
        ("p5.48xlarge", "L-417A185B"),
        ("p6-b200.48xlarge", "L-417A185B"),
    ],
)
def test_each_type_counts_against_its_familys_on_demand_quota(name, code):
    assert catalog.CATALOG[name].on_demand_quota[0] == code


@pytest.mark.parametrize(
    "name,vcpus",
    [
        ("g5.8xlarge", 32),
        ("g6.12xlarge", 48),
        ("g6e.16xlarge", 64),
        ("g6.24xlarge", 96),
        ("p4de.24xlarge", 96),
        ("p5en.48xlarge", 192),
    ],
)
def test_vcpus_are_ec2s(name, vcpus):
    # EC2 accelerated computing specifications: https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html
    assert catalog.CATALOG[name].vcpus == vcpus
