"""The values of cert-manager, the Slinky CRDs and the Slinky operator (model/builders/slinky_operator.py):
every pod of the three releases on the core nodes."""

from model.builders import slinky_operator
from model.facts.contract import CORE_LABELS


def test_every_cert_manager_pod_runs_on_the_core_nodes():
    values = slinky_operator.cert_manager_values()
    selectors = [values["nodeSelector"]] + [
        values[part]["nodeSelector"] for part in ("webhook", "cainjector", "startupapicheck")
    ]
    assert selectors == [CORE_LABELS] * 4


def test_the_crds_chart_gets_nothing_computed():
    assert slinky_operator.crds_values() == {}


IMAGES = {
    name: f"ghcr.io/slinkyproject/{name}:1.2.2@sha256:{'2' * 64}"
    for name in ("slurm-operator", "slurm-operator-webhook")
}


def test_the_operator_and_its_webhook_run_on_the_core_nodes():
    values = slinky_operator.operator_values(IMAGES)
    assert [values[part]["nodeSelector"] for part in ("operator", "webhook")] == [CORE_LABELS] * 2


def test_the_operator_and_its_webhook_run_their_images_by_tag_and_digest():
    values = slinky_operator.operator_values(IMAGES)
    assert values["operator"]["image"] == IMAGES["slurm-operator"]
    assert values["webhook"]["image"] == IMAGES["slurm-operator-webhook"]
