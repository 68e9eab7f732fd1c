"""The values of the three releases the Slurm release needs in place: cert-manager, the Slinky
CRDs and the Slinky operator (components/slinky_operator.py), each over its reviewed base
(charts-values/cert-manager.yaml, slurm-operator-crds.yaml, slurm-operator.yaml). Every pod of
them runs on the core nodes."""

from __future__ import annotations

from typing import Mapping

from model.facts.contract import CORE_LABELS


def cert_manager_values() -> dict:
    """cert-manager's controller, webhook, CA injector and start-up check on the core nodes."""
    core = dict(CORE_LABELS)
    return {
        "nodeSelector": core,
        "webhook": {"nodeSelector": core},
        "cainjector": {"nodeSelector": core},
        "startupapicheck": {"nodeSelector": core},
    }


def crds_values() -> dict:
    """The CRDs chart installs definitions only: nothing computed."""
    return {}


def operator_values(images: Mapping[str, str]) -> dict:
    """The operator and its webhook on the core nodes, each image by tag and digest as its registry
    resolved it at preview (images: model/checks/image_digests.py ResolvedImages.slinky), as a
    string: the chart uses a string as it is, and drops the tag of an object with a digest
    (helm/slurm-operator templates/_helpers.tpl slurm.format-image at v1.2.1)."""
    core = dict(CORE_LABELS)
    return {
        "operator": {"nodeSelector": core, "image": images["slurm-operator"]},
        "webhook": {"nodeSelector": core, "image": images["slurm-operator-webhook"]},
    }
