"""The GRES type of every catalog GPU is the one Slurm 26.05's own autodetect produces.

A GPU pod sees NVIDIA's procfs entries and /dev/nvidiaN devices; slurmd's gpu/nvidia plugin names
each GPU from its "Model:" line (local_slurm.write_nvidia_driver_files). The NodeSet's --conf says
`Gres=gpu:<catalog.gres_type>:<n>`; Slurm accepts a configured type that is only a substring of the
detected one (gres_gpu's _normalize_sys_gres_types), so a short name such as nvidia_l4 on an L40S
node registers and then matches the wrong jobs. Hence both checks: the detected name equals the
catalog's exactly, and slurmd settles on it for every GPU."""

from __future__ import annotations

import os

import pytest

from model.facts.catalog import CATALOG
from tests.support.local_slurm import LocalSlurm, RootMissing
from tests.support.slinky_conf import Release

pytestmark = pytest.mark.slurm
MODELS = {t.gpu_model: t for t in sorted(CATALOG.values(), key=lambda t: t.name)}


@pytest.fixture(scope="module")
def node(tmp_path_factory, rendered):
    if os.geteuid() != 0:
        pytest.fail("the GRES probe runs slurmd in namespaces: it needs root")
    try:
        return LocalSlurm(tmp_path_factory.mktemp("gres"), Release.from_documents(rendered["slurm"]), "", 0)
    except RootMissing as e:
        pytest.fail(str(e))


def test_every_catalog_gpu_model_is_probed():
    assert len(MODELS) == len({t.gpu_model for t in CATALOG.values()}) == 10


@pytest.mark.parametrize("model", sorted(MODELS))
def test_slurm_autodetects_the_catalog_gres_type(node, model):
    gpu = MODELS[model]
    count = min(gpu.gpus, 2)  # the name does not depend on the count
    probe = node.autodetect_gres(model, count, f"gpu:{gpu.gres_type}:{count}")
    assert probe.detected == [gpu.gres_type] * count, probe.output
    assert probe.configured == [gpu.gres_type] * count, probe.output


def test_a_short_type_on_an_l40s_node_is_caught(node):
    """The walkthrough's trap: nvidia_l4 is a substring of nvidia_l40s, so slurmd takes it, yet it
    is not the name Slurm detects."""
    probe = node.autodetect_gres("NVIDIA L40S", 1, "gpu:nvidia_l4:1")
    assert probe.configured == ["nvidia_l4"], probe.output
    assert probe.detected == ["nvidia_l40s"], probe.output
