"""The scheduling policy's slurm.conf lines (model/builders/scheduling.py) and where the release puts them."""

from model.builders import scheduling
from model.builders.scheduling import DEFAULT, SchedulingPolicy, slurm_conf
from model.builders.slurm_values import with_scheduling

BASE = {"controller": {"extraConfMap": {"GresTypes": ["gpu"], "ReturnToService": 2}}}


def test_the_policy_is_multifactor_with_the_documented_weights():
    conf = slurm_conf(DEFAULT)
    assert {
        k: conf[k]
        for k in (
            "PriorityType",
            "PriorityWeightFairshare",
            "PriorityWeightAge",
            "PriorityWeightQOS",
            "PriorityDecayHalfLife",
        )
    } == {
        "PriorityType": ["priority/multifactor"],
        "PriorityWeightFairshare": ["10000"],
        "PriorityWeightAge": ["1000"],
        "PriorityWeightQOS": ["1000"],
        "PriorityDecayHalfLife": ["7-0"],
    }


def test_enforcement_is_associations_limits_and_qos():
    assert slurm_conf(DEFAULT)["AccountingStorageEnforce"] == ["associations", "limits", "qos"]


def test_gpus_are_recorded_per_job():
    assert slurm_conf(DEFAULT)["AccountingStorageTRES"] == ["gres/gpu"]


def test_the_keys_set_the_weights_and_the_half_life():
    conf = slurm_conf(
        SchedulingPolicy(weight_fairshare=5, weight_age=6, weight_qos=7, decay_half_life_days=14)
    )
    assert (
        conf["PriorityWeightFairshare"],
        conf["PriorityWeightAge"],
        conf["PriorityWeightQOS"],
        conf["PriorityDecayHalfLife"],
    ) == (["5"], ["6"], ["7"], ["14-0"])


def test_the_largest_weights_stay_far_below_the_32_bit_priority():
    assert 3 * scheduling.MAX_WEIGHT < 2**32 // 100


def test_values_with_accounting_get_the_policy_beside_their_own_lines():
    values = with_scheduling({**BASE, "accounting": {"enabled": True}}, DEFAULT)
    assert values["controller"]["extraConfMap"] == {
        "GresTypes": ["gpu"],
        "ReturnToService": 2,
        **slurm_conf(DEFAULT),
    }


def test_values_without_accounting_stay_as_they_are():
    # slurmctld will not start with AccountingStorageTRES=gres/gpu and no slurmdbd.
    assert with_scheduling(BASE, DEFAULT) == BASE
    assert with_scheduling({**BASE, "accounting": {"enabled": False}}, DEFAULT) == {
        **BASE,
        "accounting": {"enabled": False},
    }
