"""The catalog against EC2's own DescribeInstanceTypes records, in full as moto 5.2.5 ships them
(devkit/instance_type_records.py; ../shared/ref/aws/describe-instance-types.json is the same
records narrowed to seven fields, without the instance store): every catalog field those records
carry is equal to them, and every EFA NVIDIA type they list is in the catalog or refused with a
reason."""

import copy
import functools
import re

import pytest

from devkit import instance_type_records
from model.facts import catalog


@functools.cache
def _read() -> dict[str, dict]:
    return instance_type_records.records()


def _records() -> dict[str, dict]:
    """Instance type -> record; a new dict each time, as a test may add a type to it."""
    return dict(_read())


def _gbps(performance: str) -> int:
    """NetworkPerformance as EC2 words it: "3200 Gigabit", "4x 100 Gigabit"."""
    found = re.fullmatch(r"(?:(\d+)x )?(\d+) Gigabit", performance)
    assert found, performance
    return int(found.group(1) or 1) * int(found.group(2))


def _instance_store(record: dict) -> catalog.InstanceStore | None:
    """InstanceStorageInfo as the catalog holds it: one group of like disks, or None where the type
    has no instance store (InstanceStorageSupported false, no InstanceStorageInfo)."""
    if not record.get("InstanceStorageSupported"):
        return None
    info = record["InstanceStorageInfo"]
    (disks,) = info["Disks"]
    assert disks["Count"] * disks["SizeInGB"] == info["TotalSizeInGB"], info
    return catalog.InstanceStore(disks["Count"], disks["SizeInGB"], info["NvmeSupport"] != "unsupported")


def mismatches(t: catalog.GpuInstanceType, record: dict) -> list[str]:
    """Each catalog field of `t` that differs from its DescribeInstanceTypes record."""
    (gpu,) = record["GpuInfo"]["Gpus"]
    network = record["NetworkInfo"]
    carried = {
        "vcpus": record["VCpuInfo"]["DefaultVCpus"],
        "memory_gib": record["MemoryInfo"]["SizeInMiB"] // 1024,
        "gpus": gpu["Count"],
        "gpu_memory_mib": gpu["MemoryInfo"]["SizeInMiB"],
        "network_gbps": _gbps(network["NetworkPerformance"]),
        "efa_interfaces": network["EfaInfo"]["MaximumEfaInterfaces"],
        "cards": tuple(
            tuple(c["InterfaceTypes"])
            for c in sorted(network["NetworkCards"], key=lambda c: c["NetworkCardIndex"])
        ),
        "instance_store": _instance_store(record),
    }
    out = [
        f"{field}: catalog {getattr(t, field)!r}, record {value!r}"
        for field, value in carried.items()
        if getattr(t, field) != value
    ]
    if gpu["Manufacturer"] != "NVIDIA":
        out.append(f"manufacturer: record {gpu['Manufacturer']!r}")
    return out


def _efa_nvidia(records: dict[str, dict]) -> set[str]:
    return {
        name
        for name, r in records.items()
        if r["NetworkInfo"].get("EfaSupported")
        and any(g["Manufacturer"] == "NVIDIA" for g in r.get("GpuInfo", {}).get("Gpus", []))
    }


@pytest.mark.parametrize("name", sorted(catalog.CATALOG))
def test_every_field_the_records_carry_equals_them(name):
    assert mismatches(catalog.CATALOG[name], _records()[name]) == []


def test_a_record_that_differs_from_the_catalog_is_found():
    record = copy.deepcopy(_records()["p6-b300.48xlarge"])
    record["VCpuInfo"]["DefaultVCpus"] = 96
    record["NetworkInfo"]["NetworkCards"][0]["InterfaceTypes"] = ["interface", "efa", "efa-only"]
    found = mismatches(catalog.CATALOG["p6-b300.48xlarge"], record)
    assert [m.split(":")[0] for m in found] == ["vcpus", "cards"]


def test_an_instance_store_that_differs_from_the_catalog_is_found():
    record = copy.deepcopy(_records()["p5.48xlarge"])
    record["InstanceStorageInfo"]["Disks"][0]["SizeInGB"] = 7600
    record["InstanceStorageInfo"]["TotalSizeInGB"] = 8 * 7600
    found = mismatches(catalog.CATALOG["p5.48xlarge"], record)
    assert [m.split(":")[0] for m in found] == ["instance_store"]


def test_a_type_without_instance_store_is_held_to_none():
    record = copy.deepcopy(_records()["p5.48xlarge"])
    record["InstanceStorageSupported"] = False
    del record["InstanceStorageInfo"]
    (found,) = mismatches(catalog.CATALOG["p5.48xlarge"], record)
    assert found.startswith(
        "instance_store: catalog InstanceStore(disks=8, disk_gb=3800, nvme=True), record None"
    )


def test_an_instance_store_not_reached_over_nvme_is_held_to_nvme_false():
    record = copy.deepcopy(_records()["p5.48xlarge"])
    record["InstanceStorageInfo"]["NvmeSupport"] = "unsupported"
    (found,) = mismatches(catalog.CATALOG["p5.48xlarge"], record)
    assert found.endswith("record InstanceStore(disks=8, disk_gb=3800, nvme=False)")


def test_every_efa_nvidia_type_of_the_records_is_in_the_catalog_or_refused():
    assert _efa_nvidia(_records()) - set(catalog.CATALOG) - set(catalog.REFUSED) == set()


def test_a_type_neither_in_the_catalog_nor_refused_is_found():
    records = _records()
    records["g9.48xlarge"] = {**records["g7e.48xlarge"], "InstanceType": "g9.48xlarge"}
    assert _efa_nvidia(records) - set(catalog.CATALOG) - set(catalog.REFUSED) == {"g9.48xlarge"}


def test_no_type_is_both_in_the_catalog_and_refused():
    assert set(catalog.CATALOG) & set(catalog.REFUSED) == set()
