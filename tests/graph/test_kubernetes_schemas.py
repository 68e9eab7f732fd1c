"""Every Kubernetes object the program creates directly validates against the upstream OpenAPI
schema of the configured Kubernetes version."""

import datetime

import kubernetes_validate
import pytest

from devkit.offline_run import run_program
from model.facts import eks_versions


def _objects(graph):
    for r in graph.resources:
        if r.type.startswith("kubernetes:") and r.custom and "helm.sh" not in r.type:
            yield r.name, dict(r.inputs)


def test_the_program_creates_kubernetes_objects_directly(dev):
    assert len(list(_objects(dev))) >= 4


def test_objects_validate_against_the_configured_version(dev):
    for name, obj in _objects(dev):
        try:
            kubernetes_validate.validate(obj, "1.36", strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{name}: {e.message}")


@pytest.mark.parametrize("version", eks_versions.offered(datetime.date.today()))
def test_objects_validate_for_every_offered_version(version):
    graph = run_program("dev", {"kubernetesVersion": version})
    for _, obj in _objects(graph):
        kubernetes_validate.validate(obj, version, strict=True)


def test_schema_validation_catches_a_misplaced_field():
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "x"},
                "spec": {"accessMode": ["ReadWriteMany"]},
            },
            "1.36",
            strict=True,
        )
