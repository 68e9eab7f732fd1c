"""The key table (model/checks/config_schema.py): every key declared whole, where it is declared."""

import datetime

import pytest

from model.checks import config_schema
from model.checks.config_schema import Key

KEYS = config_schema.schema(datetime.date.today())


def test_every_key_is_declared_once_with_its_own_attribute():
    names = [k.name for k in KEYS]
    attrs = [k.attr for k in KEYS if k.attr]
    assert len(names) == len(set(names)) and len(attrs) == len(set(attrs))


def test_the_keys_only_rules_the_pools_or_the_users_read_fill_no_attribute():
    assert {k.name for k in KEYS if k.attr is None} == {
        "allowSshFromAnywhere",
        "allowApiFromAnywhere",
        "skipGpuQuotaCheck",
        "gpuInstanceType",
        "gpuNodeCount",
        "gpuRootVolumeGiB",
        "gpuPools",
        "users",
        "gpuMinNodes",
        "gpuMaxNodes",
        "gpuCapacityReservationId",
    }


@pytest.mark.parametrize(
    "change, found",
    [
        (dict(type="list"), "key colour: type 'list'; allowed: string, integer, boolean, array"),
        (
            dict(type="array"),
            "key colour: items None; allowed: an item type for an array key, none for any other",
        ),
        (dict(items="string"), "key colour: items 'string'; allowed: an item type for an array key"),
        (dict(description=" "), "key colour: description ' '; allowed: a sentence"),
        (dict(on_change=""), "key colour: on_change ''; allowed: a sentence"),
    ],
)
def test_a_key_declared_half_is_refused_naming_what_is_missing(change, found):
    declared = dict(name="colour", type="string", description="The colour.", attr=None, on_change="in place")
    with pytest.raises(ValueError) as refused:
        Key(**{**declared, **change})
    assert str(refused.value).startswith(found)


def test_a_key_without_a_description_or_change_note_cannot_be_declared():
    with pytest.raises(TypeError, match="description"):
        Key("colour", "string", attr=None, on_change="in place")


def test_the_runner_provider_keys_rule_names_each_key_the_runner_ignores_and_nothing_else():
    given = {
        "aws:region": "us-west-2",
        "aws:profile": "team",
        "aws:accessKey": "[secret]",
        "aws:endpoints": "[]",
        "slinky-eks:clusterName": "x",
    }
    problems = config_schema.runner_provider_keys(given, "codebuild")
    assert [(p.key, p.value) for p in problems] == [("aws:accessKey", "[secret]"), ("aws:endpoints", "[]")]
    assert config_schema.runner_provider_keys(given, "local") == []
