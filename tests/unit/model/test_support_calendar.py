"""The support calendar (model/facts/support_calendar.py): every default is inside its support window
today and above its security floor, so this file fails on the day one leaves it, on purpose;
and its rules warn of a Slurm release under its floor, a Slinky release with a known defect, a
cert-manager past its end of life or outside the cluster's Kubernetes, a DLC past its end of
patch, and refuse a cert-manager that cannot serve the Slinky operator's certificates."""

import datetime

import pytest

from model.checks import config_schema
from model.checks.problems import ERROR, WARNING
from model.facts import support_calendar, versions

DAY = datetime.date(2026, 12, 3)
CVES = support_calendar.SLURM_ADVISORIES[0].cves


def test_every_default_is_supported_today():
    # Today, not a fixed day: this fails the day a pin leaves its window (or its reading of a
    # source without one is due again), as test_versions.py does for the Kubernetes version.
    assert support_calendar.lapsed(datetime.date.today()) == []


def test_a_default_past_its_window_is_reported():
    # The day after the pinned cert-manager line's estimated end: it alone of the pins is out.
    after = support_calendar.cert_manager_line(
        versions.CERT_MANAGER.version
    ).window.until + datetime.timedelta(days=1)
    said = [s for s in support_calendar.lapsed(after) if s.startswith("cert-manager")]
    assert said == [
        f"cert-manager {versions.CERT_MANAGER.version}: supported until the release of 1.23, "
        f"expected about {after - datetime.timedelta(days=1)} ({support_calendar._CM_SOURCE})"
    ]


def test_every_pin_the_calendar_covers_has_a_window():
    assert [(c, v) for c, v, w in support_calendar.pinned() if w is None] == []


def test_the_pinned_slurm_release_is_not_under_its_security_floor():
    assert support_calendar.slurm_floor(versions.SLURM_RELEASE) == versions.SLURM_RELEASE


def test_the_pinned_cert_manager_supports_the_pinned_kubernetes():
    line = support_calendar.cert_manager_line(versions.CERT_MANAGER.version)
    assert line.supports(versions.KUBERNETES_VERSION)


def test_lines_are_read_as_upstream_spells_them():
    assert [support_calendar.minor(v) for v in ("26.05.5", "v1.21.1", "3.13.15-slim", "v0.5.30")] == [
        "26.05",
        "1.21",
        "3.13",
        "0.5",
    ]


# Slurm's security floor: "all versions prior to 25.05.9, 25.11.8 and 26.05.4" (#7601)


@pytest.mark.parametrize(
    "version, fix",
    [
        ("26.05.2", "26.05.4"),
        ("26.05.3", "26.05.4"),
        ("25.11.7", "25.11.8"),
        ("25.05.1", "25.05.9"),
        ("24.11.9", "25.05.9"),
    ],
)
def test_a_slurm_release_before_its_fix_is_affected(version, fix):
    assert support_calendar.SLURM_ADVISORIES[0].fix_for(version) == fix


@pytest.mark.parametrize("version", ["26.05.4", "26.05.5", "25.11.8", "25.05.9", "26.11.0"])
def test_a_fixed_slurm_release_is_not_affected(version):
    assert support_calendar.SLURM_ADVISORIES[0].fix_for(version) is None


def test_slurm_under_its_floor_warns_naming_the_key_the_cves_and_the_fix():
    (p,) = support_calendar.slurm_supported_on(DAY)("slurmVersion", "26.05.2")
    assert (p.level, p.key, p.value) == (WARNING, "slurmVersion", "26.05.2")
    assert all(cve in p.message for cve in CVES) and "set slurmVersion to 26.05.4 or later" in p.message


def test_patched_slurm_of_a_supported_line_passes():
    assert support_calendar.slurm_supported_on(DAY)("slurmVersion", "26.05.4") == []


def test_slurm_of_a_line_schedmd_no_longer_supports_warns():
    # 25.05 ended in November 2026 (upgrades.shtml); 25.05.9 is patched, so only the line warns.
    (p,) = support_calendar.slurm_supported_on(DAY)("slurmVersion", "25.05.9")
    assert p.level == WARNING and "Slurm 25.05 ended 2026-11-01" in p.message and "25.11, 26.05" in p.message


# Slinky


@pytest.mark.parametrize("version", ["1.2.0", "1.2.1"])
def test_slinky_before_the_token_refresh_fix_warns_naming_the_defect_and_the_fix(version):
    (p,) = support_calendar.slinky_chart_defects("slinkyChartVersion", version)
    assert (p.level, p.key, p.value) == (WARNING, "slinkyChartVersion", version)
    assert "token-refresh defect" in p.message and "SlinkyProject/slurm-operator/issues/240" in p.message
    assert "set slinkyChartVersion to 1.2.2 or later" in p.message


@pytest.mark.parametrize("version", ["1.2.2", "1.2.3", "1.3.0"])
def test_slinky_with_the_token_refresh_fix_passes(version):
    assert support_calendar.slinky_chart_defects("slinkyChartVersion", version) == []


def test_a_default_slinky_release_with_a_known_defect_is_reported(monkeypatch):
    monkeypatch.setattr(versions, "SLINKY_CHART_VERSION", "1.2.1")
    (said,) = [s for s in support_calendar.lapsed(DAY) if "token-refresh" in s]
    assert said.startswith("slinkyChartVersion 1.2.1: its Token controller")


# cert-manager


def _cm(version: str, kubernetes: str, day: datetime.date = DAY):
    return support_calendar.cert_manager_fits(day)(
        {"certManagerVersion": version, "kubernetesVersion": kubernetes}
    )


def test_cert_manager_past_its_end_of_life_and_range_warns_naming_the_range_and_the_fix():
    (p,) = _cm("v1.16.2", "1.36")
    assert (p.level, p.key, p.value) == (WARNING, "certManagerVersion", "v1.16.2")
    assert "end of life (2025-06-10)" in p.message and "Kubernetes 1.25 to 1.32, not 1.36" in p.message
    assert "set certManagerVersion to a release of 1.21" in p.message


def test_supported_cert_manager_outside_the_clusters_range_warns():
    (p,) = _cm("v1.21.1", "1.32")
    assert "Kubernetes 1.33 to 1.36, not 1.32" in p.message and "end of life" not in p.message


def test_supported_cert_manager_on_a_kubernetes_it_supports_passes():
    assert _cm("v1.21.1", "1.36") == []


def test_cert_manager_warns_from_the_day_after_its_end_of_life():
    assert _cm("v1.19.4", "1.34", datetime.date(2026, 7, 8)) == []
    (p,) = _cm("v1.19.4", "1.34", datetime.date(2026, 7, 9))
    assert "cert-manager 1.19 reached its end of life (2026-07-08)" in p.message


def test_cert_manager_newer_than_the_calendar_warns_to_check():
    (p,) = _cm("v1.30.0", "1.36")
    assert p.level == WARNING and "newer than the support calendar" in p.message


def test_cert_manager_before_the_v1_api_is_an_error():
    (p,) = support_calendar.cert_manager_serves_v1("certManagerVersion", "v0.16.1")
    assert (p.level, p.key, p.value) == (
        ERROR,
        "certManagerVersion",
        "v0.16.1",
    ) and "cert-manager.io/v1" in p.message


def test_cert_manager_with_the_v1_api_passes_its_floor():
    assert support_calendar.cert_manager_serves_v1("certManagerVersion", "v1.0.0") == []


# The DLC


@pytest.mark.parametrize(
    "reference",
    [
        "pytorch-training:2.9.0-gpu-py312-cu130-ubuntu22.04-ec2",
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.9.0-gpu-py312-"
        "cu130-ubuntu22.04-ec2@sha256:" + "ab" * 32,
    ],
)
def test_a_dlc_past_its_end_of_patch_warns(reference):
    (p,) = support_calendar.dlc_in_patch(DAY)("dlcBaseImage", reference)
    assert p.level == WARNING and "PyTorch 2.9 DLC on 2026-10-15" in p.message and "pytorch 2.13" in p.message


@pytest.mark.parametrize(
    "reference",
    [
        "pytorch-training:2.10.0-gpu-py313-cu130-ubuntu22.04-ec2",
        "pytorch:2.13.0-cu133-amzn2023",
        "pytorch:2.12-cu130-amzn2023",
    ],
)
def test_a_dlc_in_patch_passes(reference):
    assert support_calendar.dlc_line(reference) is not None
    assert support_calendar.dlc_in_patch(DAY)("dlcBaseImage", reference) == []


def test_a_dlc_the_calendar_does_not_know_passes_unjudged():
    assert support_calendar.dlc_in_patch(DAY)("dlcBaseImage", "my-registry/base@sha256:" + "ab" * 32) == []


# Through the schema: the rules run where the keys are checked


def _check(**raw):
    base = {
        "aws:region": "us-west-2",
        "availabilityZone": "us-west-2a",
        "sshAllowedCidrs": '["203.0.113.10/32"]',
        "sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L me@x",
    }
    return config_schema.check({**base, **raw}, "dev", DAY).problems


def test_the_schema_warns_of_slurm_under_its_floor():
    problems = _check(
        slurmVersion="26.05.2",
        slurmdImageTag="26.05.2-torch",
        slurmdBaseImage="ghcr.io/slinkyproject/slurmd:26.05.2-ubuntu24.04",
    )
    assert [(p.level, p.key) for p in problems if "CVE-2026-65107" in p.message] == [
        (WARNING, "slurmVersion")
    ]


def test_the_schema_warns_of_slinky_with_the_token_refresh_defect():
    problems = _check(slinkyChartVersion="1.2.1")
    assert [(p.level, p.key) for p in problems if "token-refresh" in p.message] == [
        (WARNING, "slinkyChartVersion")
    ]


def test_the_schema_warns_of_cert_manager_outside_the_clusters_kubernetes():
    problems = _check(certManagerVersion="v1.16.2", kubernetesVersion="1.36")
    assert [(p.level, p.key) for p in problems if "1.25 to 1.32" in p.message] == [
        (WARNING, "certManagerVersion")
    ]


def test_the_schema_refuses_cert_manager_before_the_v1_api():
    assert [(p.level, p.key) for p in _check(certManagerVersion="v0.16.1") if p.is_error] == [
        (ERROR, "certManagerVersion")
    ]
