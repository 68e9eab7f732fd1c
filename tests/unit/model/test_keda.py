"""KEDA's computed values (model/builders/keda.py): its Deployments on the core nodes."""

from model.builders import keda
from model.facts.contract import CORE_LABELS


def test_keda_runs_on_the_core_nodes():
    assert keda.release_values()["nodeSelector"] == CORE_LABELS
