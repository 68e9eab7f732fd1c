"""One way to install a pinned upstream chart (components/_parts/helm.py): the values computed in
code merged over the reviewed base key by key, a fixed release name, an https repository or an OCI
registry path, and Helm's wait on install and uninstall. Seen on every release of the dev stack."""

import pytest

from components._parts.chart_values import base_values
from components._parts.helm import merge


def test_computed_maps_merge_into_the_base_key_by_key():
    base = {"a": {"x": 1, "y": 2}, "b": 1}
    assert merge(base, {"a": {"y": 3, "z": 4}}) == {"a": {"x": 1, "y": 3, "z": 4}, "b": 1}


def test_a_computed_list_or_scalar_replaces_the_bases_whole():
    assert merge({"t": [1, 2], "n": {"k": 1}}, {"t": [3], "n": 5}) == {"t": [3], "n": 5}


def test_merging_leaves_the_base_unchanged():
    base = {"a": {"x": 1}}
    merge(base, {"a": {"x": 2}})
    assert base == {"a": {"x": 1}}


@pytest.fixture(scope="module")
def releases(dev):
    return dev.of_type("kubernetes:helm.sh/v3:Release")


def _chart(release):
    return release.inputs["chart"].rsplit("/", 1)[-1]


def test_every_release_carries_its_reviewed_base_under_the_computed_values(releases):
    for release in releases:
        base, values = base_values(_chart(release)), release.inputs["values"]
        assert merge(base, values) == values, release.name


def test_an_https_chart_is_named_with_its_repository_and_an_oci_chart_by_its_registry_path(releases):
    for release in releases:
        chart, repository = release.inputs["chart"], release.inputs.get("repositoryOpts")
        assert (repository is None) == chart.startswith("oci://"), release.name


def test_every_release_is_awaited_so_dependents_start_on_ready_pods(releases):
    assert all(release.inputs["skipAwait"] is False for release in releases)


def test_every_release_has_a_fixed_name_objects_derive_from(releases):
    for release in releases:
        assert release.inputs["name"] == _chart(release), release.name
