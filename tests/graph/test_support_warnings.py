"""A version under its security floor, or one the cluster's Kubernetes does not support, is heard
at preview: a warning in the deployer's log naming the key, the CVEs or the range, and the fix;
the stack still deploys. One that cannot work is refused (model/facts/support_calendar.py)."""

from devkit.offline_run import run_program
from model.facts import support_calendar
from tests.support.program import rejected

UNPATCHED = {
    "slurmVersion": "26.05.2",
    "slurmdImageTag": "26.05.2-torch2.9-cu130-mpi",
    "slurmdBaseImage": "ghcr.io/slinkyproject/slurmd:26.05.2-ubuntu24.04",
}


def test_slurm_under_its_security_floor_is_a_warning_at_preview():
    graph = run_program("dev", UNPATCHED)
    assert graph.error is None and graph.resources
    (said,) = [w for w in graph.warnings if w.startswith("slurmVersion 26.05.2")]
    assert all(cve in said for cve in support_calendar.SLURM_ADVISORIES[0].cves)
    assert "set slurmVersion to 26.05.4 or later" in said


def test_cert_manager_the_clusters_kubernetes_does_not_support_is_a_warning_at_preview():
    graph = run_program("dev", {"certManagerVersion": "v1.16.2", "kubernetesVersion": "1.36"})
    assert graph.error is None and graph.resources
    (said,) = [w for w in graph.warnings if w.startswith("certManagerVersion v1.16.2")]
    assert (
        "Kubernetes 1.25 to 1.32, not 1.36" in said and "set certManagerVersion to a release of 1.21" in said
    )


def test_the_defaults_give_no_slurm_or_cert_manager_warning(dev):
    assert [w for w in dev.warnings if w.startswith(("slurmVersion", "certManagerVersion"))] == []


def test_cert_manager_without_the_v1_api_is_refused():
    msg = rejected(certManagerVersion="v0.16.1")
    assert "certManagerVersion = 'v0.16.1'" in msg and "cert-manager.io/v1" in msg
