"""The releases the Slurm release needs in place (components/slinky_operator.py): cert-manager, the
Slinky CRDs and the Slinky operator, each in its own namespace, the operator installed after the
other two."""

import pytest

from model.facts import versions
from model.facts.contract import CORE_LABELS


@pytest.fixture(scope="module")
def releases(dev):
    return {part: dev.named(f"slinky-{part}") for part in ("cert-manager", "crds", "operator")}


def test_cert_manager_is_its_chart_at_the_stacks_version_in_its_own_namespace(releases):
    inputs = releases["cert-manager"].inputs
    assert (inputs["chart"], inputs["version"], inputs["namespace"]) == (
        "cert-manager",
        versions.CERT_MANAGER.version,
        "cert-manager",
    )


def test_the_crds_and_the_operator_are_one_chart_version_in_the_slinky_namespace(releases):
    crds, operator = releases["crds"].inputs, releases["operator"].inputs
    charts = (
        f"{versions.SLINKY_REPOSITORY}/slurm-operator-crds",
        f"{versions.SLINKY_REPOSITORY}/slurm-operator",
    )
    assert (crds["chart"], operator["chart"]) == charts
    assert crds["version"] == operator["version"]
    assert crds["namespace"] == operator["namespace"] == "slinky"


def test_each_release_creates_its_namespace(releases):
    assert all(r.inputs["createNamespace"] is True for r in releases.values())


def test_the_operator_is_installed_after_cert_manager_and_the_crds(dev, releases):
    operator = releases["operator"]
    assert dev.depends_on(operator, releases["cert-manager"]) and dev.depends_on(operator, releases["crds"])


def test_every_pod_of_the_three_runs_on_the_core_nodes(releases):
    assert releases["operator"].inputs["values"]["operator"]["nodeSelector"] == CORE_LABELS
    assert releases["cert-manager"].inputs["values"]["nodeSelector"] == {"role": "core"}
