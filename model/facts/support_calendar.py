"""How long upstream supports each pinned component, the security floors under which a version
is known to be exploitable, and the releases with a known defect: the calendar beside
model/facts/eks_versions.py for everything else model/facts/versions.py pins.

A window is a release line (Slurm 26.05, cert-manager 1.21, Python 3.13) and the last day the
calendar counts it supported, on one of three bases:
- published: upstream's own end date (a month only is taken as its first day);
- estimated: upstream names an event, not a date (cert-manager: "the release of 1.23"), or a
  rule without the line in its table (SchedMD: 18 months); the date is the earliest the source
  puts that event at, so the calendar errs towards saying too early;
- re-read: upstream publishes no window at all; the date is the day this reading of the source
  expires (REREAD_AFTER days after READ_ON), when someone must read it again.
The rules take the day as an argument, like eks_versions', so that what they say is true on the
day `pulumi up` runs, and testable on any other; tests/unit/model/test_support_calendar.py fails
on the day a default leaves its window, on purpose.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from model.checks.problems import ERROR, WARNING, Problem, Rule, error, identify, warning
from model.facts import versions

SLURM_ADVISORY = identify(
    "slurm-advisory", WARNING, "a Slurm release at or above its line's security floor", "slurmVersion"
)
SLURM_LINE_SUPPORTED = identify(
    "slurm-line-supported", WARNING, "a Slurm line SchedMD supports", "slurmVersion"
)
CERT_MANAGER_V1 = identify(
    "cert-manager-v1", ERROR, "a cert-manager that serves cert-manager.io/v1", "certManagerVersion"
)
CERT_MANAGER_KNOWN = identify(
    "cert-manager-known", WARNING, "a cert-manager line the support calendar knows", "certManagerVersion"
)
CERT_MANAGER_FITS = identify(
    "cert-manager-fits",
    WARNING,
    "a cert-manager line in support that supports kubernetesVersion",
    "certManagerVersion",
)
SLINKY_DEFECT = identify(
    "slinky-defect", WARNING, "a Slinky release without a known defect of its line", "slinkyChartVersion"
)
DLC_PATCHED = identify("dlc-patched", WARNING, "a Deep Learning Container AWS still patches", "dlcBaseImage")


PUBLISHED, ESTIMATED, RE_READ = "published", "estimated", "re-read"
_d = datetime.date
# The day the sources below were read, and how long a reading of a source without a window holds.
READ_ON = _d(2026, 12, 3)
REREAD_AFTER = datetime.timedelta(days=182)


@dataclass(frozen=True)
class Window:
    component: str
    line: str  # the release line: major.minor
    until: datetime.date  # the last day the calendar counts the line supported
    basis: str  # PUBLISHED, ESTIMATED or RE_READ (module docstring)
    source: str  # where the date (or the absence of one) was read
    ends_at: str = ""  # for an estimated window, the event upstream names

    def supported_on(self, day: datetime.date) -> bool:
        return day <= self.until

    def ending(self) -> str:
        """How the window ends, as the deployer reads it."""
        if self.basis == PUBLISHED:
            return f"{self.until}"
        if self.basis == ESTIMATED:
            return f"{self.ends_at}, expected about {self.until}"
        return f"{self.until}, when this reading of its source is due to be checked again"


def _reread(component: str, line: str, source: str) -> Window:
    return Window(component, line, READ_ON + REREAD_AFTER, RE_READ, source)


def parse(version: str) -> tuple[int, ...]:
    """'v1.21.1' -> (1, 21, 1); the leading numbers of a tag ('3.13.15-slim' -> (3, 13, 15))."""
    return tuple(int(n) for n in re.findall(r"\d+", re.match(r"v?([\d.]*\d)", version).group(1)))


def minor(version: str) -> str:
    """The release line as upstream spells it: 'v1.21.1' -> '1.21', '26.05.5' -> '26.05'."""
    return ".".join(re.match(r"v?(\d+)\.(\d+)", version).groups())


# --- Slurm ---------------------------------------------------------------------------------

# SchedMD's "Compatibility Window" table: each release line's end of support, by month
# (SchedMD/slurm doc/html/upgrades.shtml at commit 0cf89c66455e4de6573ec288ab95194a0202dbc9;
# https://slurm.schedmd.com/upgrades.html). 26.05 is not in the table yet: the page's rule of
# 18 months from a line's release (May 2026) gives November 2027.
_SLURM_SOURCE = "https://slurm.schedmd.com/upgrades.html#compatibility_window"
SLURM = (
    Window("Slurm", "25.05", _d(2026, 11, 1), PUBLISHED, _SLURM_SOURCE),
    Window("Slurm", "25.11", _d(2027, 5, 1), PUBLISHED, _SLURM_SOURCE),
    Window(
        "Slurm",
        "26.05",
        _d(2027, 11, 1),
        ESTIMATED,
        _SLURM_SOURCE,
        ends_at="18 months after its release (May 2026)",
    ),
)


@dataclass(frozen=True)
class Advisory:
    cves: tuple[str, ...]
    fixed_in: tuple[str, ...]  # the first fixed release of each line that has one
    source: str

    def fix_for(self, version: str) -> str | None:
        """The release that fixes `version`, or None if it is not affected. Every release before
        the fixed ones is affected: one of a fixed line below its fix, and any of a line older
        than every fixed line (which has no fix of its own: its fix is the oldest fixed release)."""
        own = [f for f in self.fixed_in if minor(f) == minor(version)]
        oldest = min(self.fixed_in, key=parse)
        if own:
            return own[0] if parse(version) < parse(own[0]) else None
        return oldest if parse(version) < parse(oldest) else None


# "All Slurm versions prior to 25.05.9, 25.11.8, and 26.05.4 are impacted" (aws/aws-parallelcluster
# issue #7601, 2026-09-02); SchedMD's changelogs list the fixes (SchedMD/slurm
# CHANGELOG/slurm-25.05.md#changes-in-25059 on branch slurm-25.05, CHANGELOG/slurm-25.11.md#changes-in-25118
# on slurm-25.11, as openhpc/ohpc PRs #2670 and #2686 cite them).
SLURM_ADVISORIES = (
    Advisory(
        (
            "CVE-2026-65107",
            "CVE-2026-65108",
            "CVE-2026-65109",
            "CVE-2026-65138",
            "CVE-2026-65139",
            "CVE-2026-65140",
            "CVE-2026-65165",
            "CVE-2026-65168",
        ),
        ("25.05.9", "25.11.8", "26.05.4"),
        "https://github.com/aws/aws-parallelcluster/issues/7601",
    ),
)


def slurm_floor(version: str) -> str:
    """The lowest release of `version`'s line that every advisory above leaves fixed (the line's
    security floor), or `version` itself when none affects it."""
    fixes = [a.fix_for(version) for a in SLURM_ADVISORIES]
    return max((f for f in fixes if f), key=parse, default=version)


def slurm_supported_on(day: datetime.date) -> Rule:
    """Warns of a Slurm release under its security floor, and of one whose line SchedMD no
    longer supports on `day`: it builds and runs, exposed."""

    def rule(key: str, value: Any) -> list[Problem]:
        found = []
        for advisory in SLURM_ADVISORIES:
            fix = advisory.fix_for(value)
            if fix:
                found.append(
                    warning(
                        SLURM_ADVISORY,
                        key,
                        value,
                        (
                            f"{key} {value} is affected by {', '.join(advisory.cves)} (fixed in "
                            f"{', '.join(advisory.fixed_in)}: {advisory.source}); set {key} to {fix} or later "
                            f"patched release, with slurmdImageTag and slurmdBaseImage of that release"
                        ),
                    )
                )
        window = _line(SLURM, minor(value))
        if window and not window.supported_on(day):
            supported = [w.line for w in SLURM if w.supported_on(day)]
            found.append(
                warning(
                    SLURM_LINE_SUPPORTED,
                    key,
                    value,
                    (
                        f"{key} {value}: SchedMD's support of Slurm {window.line} ended {window.ending()} "
                        f"({window.source}); move to a supported line: {', '.join(supported) or 'none known'}"
                    ),
                )
            )
        return found

    return rule


# --- Slinky --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Defect:
    """A known defect of a release line, and the first release of that line that fixes it."""

    what: str
    fixed_in: str
    source: str

    def affects(self, version: str) -> bool:
        return minor(version) == minor(self.fixed_in) and parse(version) < parse(self.fixed_in)


# Releases of the Slinky charts with a known defect the program relies on not having.
SLINKY_DEFECTS = (
    # The Token controller could requeue itself with a non-positive delay and stop reconciling, so
    # the operator's JWT for slurmrestd expired unrefreshed; the operator then cannot drain a node
    # before a scale-in or read node states (SlinkyProject/slurm-operator issue #240; fixed on
    # release-1.2 by commit 1d8c0eb0 "fix(token): requeue with positive requeueAfter", after v1.2.1).
    Defect(
        "its Token controller can stop refreshing the operator's Slurm JWT (token-refresh defect), "
        "after which the operator cannot drain nodes before a scale-in or read their state",
        "1.2.2",
        "https://github.com/SlinkyProject/slurm-operator/issues/240",
    ),
)


def slinky_chart_defects(key: str, value: Any) -> list[Problem]:
    """Warns of a Slinky release with a known defect: it deploys, and fails later."""
    return [
        warning(
            SLINKY_DEFECT,
            key,
            value,
            f"{key} {value}: {d.what} (fixed in {d.fixed_in}: {d.source}); set {key} to {d.fixed_in} or later",
        )
        for d in SLINKY_DEFECTS
        if d.affects(value)
    ]


# --- cert-manager --------------------------------------------------------------------------


@dataclass(frozen=True)
class CertManagerLine:
    window: Window
    kubernetes: tuple[str, str]  # the oldest and newest Kubernetes minor it supports

    def supports(self, kubernetes: str) -> bool:
        lo, hi = (parse(v) for v in self.kubernetes)
        return lo <= parse(kubernetes) <= hi


# "Currently supported releases" and "Old cert-manager releases" (cert-manager/website
# content/docs/releases/README.md at commit 776e5dba56510fc9de84206b806b568447077f25): each
# minor's end of life and the Kubernetes versions it supports. 1.20 and 1.21 end at the release
# of 1.22 and 1.23; the page expects 1.22 in "~Nov 2026" and releases "roughly every 4 months",
# so 1.23 about March 2027.
_CM_SOURCE = "https://cert-manager.io/docs/releases/"


def _cm(line: str, until: datetime.date, lo: str, hi: str, ends_at: str = "") -> CertManagerLine:
    basis = ESTIMATED if ends_at else PUBLISHED
    return CertManagerLine(Window("cert-manager", line, until, basis, _CM_SOURCE, ends_at), (lo, hi))


CERT_MANAGER = (
    _cm("1.0", _d(2021, 2, 10), "1.11", "1.21"),
    _cm("1.1", _d(2021, 4, 8), "1.11", "1.21"),
    _cm("1.2", _d(2021, 6, 15), "1.16", "1.21"),
    _cm("1.3", _d(2021, 8, 11), "1.16", "1.21"),
    _cm("1.4", _d(2021, 10, 26), "1.16", "1.21"),
    _cm("1.5", _d(2022, 1, 26), "1.16", "1.22"),
    _cm("1.6", _d(2022, 4, 5), "1.17", "1.22"),
    _cm("1.7", _d(2022, 7, 22), "1.18", "1.23"),
    _cm("1.8", _d(2022, 10, 17), "1.19", "1.24"),
    _cm("1.9", _d(2023, 1, 11), "1.20", "1.24"),
    _cm("1.10", _d(2023, 5, 19), "1.20", "1.26"),
    _cm("1.11", _d(2023, 9, 12), "1.21", "1.27"),
    _cm("1.12", _d(2025, 5, 19), "1.22", "1.32"),  # the LTS release: two years
    _cm("1.13", _d(2024, 6, 5), "1.21", "1.27"),
    _cm("1.14", _d(2024, 10, 3), "1.24", "1.31"),
    _cm("1.15", _d(2025, 2, 3), "1.25", "1.32"),
    _cm("1.16", _d(2025, 6, 10), "1.25", "1.32"),
    _cm("1.17", _d(2025, 10, 7), "1.29", "1.33"),
    _cm("1.18", _d(2026, 3, 10), "1.29", "1.33"),
    _cm("1.19", _d(2026, 7, 8), "1.31", "1.35"),
    _cm("1.20", _d(2026, 11, 1), "1.32", "1.35", ends_at="the release of 1.22"),
    _cm("1.21", _d(2027, 3, 1), "1.33", "1.36", ends_at="the release of 1.23"),
)
_CM_BY_LINE = {c.window.line: c for c in CERT_MANAGER}


def cert_manager_line(version: str) -> CertManagerLine | None:
    return _CM_BY_LINE.get(minor(version))


# The Slinky operator chart creates its webhook's Issuers and Certificates as cert-manager.io/v1
# (SlinkyProject/slurm-operator helm/slurm-operator/templates/cert-manager/pki.yaml at v1.2.1),
# an API cert-manager serves from v1.0 (cert-manager/website
# content/docs/releases/release-notes/release-notes-1.0.md, "v1 API"): an older one cannot work.
CERT_MANAGER_V1_API = "v1.0.0"


def cert_manager_serves_v1(key: str, value: Any) -> list[Problem]:
    if parse(value) >= parse(CERT_MANAGER_V1_API):
        return []
    return [
        error(
            CERT_MANAGER_V1,
            key,
            value,
            f"cert-manager {CERT_MANAGER_V1_API} or later: the Slinky operator's chart "
            "creates its webhook certificates as cert-manager.io/v1, which cert-manager serves from "
            f"v1.0 (the pin is {versions.CERT_MANAGER.version})",
        )
    ]


def cert_manager_fits(day: datetime.date) -> Callable[[Mapping[str, Any]], list[Problem]]:
    """Warns of a cert-manager past its end of life on `day`, or one whose supported Kubernetes
    range leaves out kubernetesVersion: it installs, and no fix or test covers it."""

    def rule(ok: Mapping[str, Any]) -> list[Problem]:
        value, kubernetes = ok.get("certManagerVersion"), ok.get("kubernetesVersion")
        if value is None or kubernetes is None:
            return []
        line = cert_manager_line(value)
        if line is None:
            return (
                []
                if parse(value) < parse(CERT_MANAGER[-1].window.line)
                else [
                    warning(
                        CERT_MANAGER_KNOWN,
                        "certManagerVersion",
                        value,
                        f"certManagerVersion {value}: cert-manager {minor(value)} is newer "
                        f"than the support calendar (model/facts/support_calendar.py) knows; check its supported Kubernetes "
                        f"range for {kubernetes} at {_CM_SOURCE}",
                    )
                ]
            )
        why = []
        if not line.window.supported_on(day):
            why.append(f"cert-manager {line.window.line} reached its end of life ({line.window.ending()})")
        if not line.supports(kubernetes):
            why.append(f"it supports Kubernetes {' to '.join(line.kubernetes)}, not {kubernetes}")
        if not why:
            return []
        fits = [c for c in CERT_MANAGER if c.window.supported_on(day) and c.supports(kubernetes)]
        fix = (
            f"set certManagerVersion to a release of {fits[-1].window.line} (the pin is "
            f"{versions.CERT_MANAGER.version})"
            if fits
            else f"no cert-manager release in the calendar supports Kubernetes {kubernetes} on {day}"
        )
        return [
            warning(
                CERT_MANAGER_FITS,
                "certManagerVersion",
                value,
                f"certManagerVersion {value}: {'; '.join(why)} ({_CM_SOURCE}); {fix}",
            )
        ]

    return rule


# --- AWS Deep Learning Containers ----------------------------------------------------------


@dataclass(frozen=True)
class DlcLine:
    repository: str  # pytorch-training (Ubuntu), pytorch (Amazon Linux 2023)
    version: str  # the PyTorch major.minor
    end_of_patch: datetime.date

    @property
    def source(self) -> str:
        flavour = "cuda" if self.repository == "pytorch" else "gpu"
        return (
            "https://github.com/aws/deep-learning-containers/blob/main/docs/src/data/"
            f"{self.repository}/{self.version}-{flavour}-ec2.yml"
        )


# Each file's `eop` (aws/deep-learning-containers at commit e0ecedea6a1c56d6b5914f9cfb2fec5c548e67e0;
# the GPU and CPU, EC2 and SageMaker files of a version carry the same date): every PyTorch
# training DLC AWS lists, on both lines, so whichever the image builds on is covered.
DLC = (
    DlcLine("pytorch-training", "2.6", _d(2026, 1, 29)),
    DlcLine("pytorch-training", "2.7", _d(2026, 4, 23)),
    DlcLine("pytorch-training", "2.8", _d(2026, 8, 6)),
    DlcLine("pytorch-training", "2.9", _d(2026, 10, 15)),
    DlcLine("pytorch-training", "2.10", _d(2027, 1, 21)),
    DlcLine("pytorch", "2.11", _d(2027, 4, 30)),
    DlcLine("pytorch", "2.12", _d(2027, 7, 2)),
    DlcLine("pytorch", "2.13", _d(2027, 7, 20)),
)


def dlc_line(reference: str) -> DlcLine | None:
    """The calendar's line of a DLC reference ('[registry/]pytorch-training:2.9.0-gpu-...[@digest]'),
    or None where it names no line the calendar knows (a digest alone, another image)."""
    name, _, tag = reference.split("@")[0].rpartition("/")[2].partition(":")
    found = re.match(r"(\d+\.\d+)(\.\d+)?-", tag)
    if not found:
        return None
    return next((d for d in DLC if (d.repository, d.version) == (name, found.group(1))), None)


def dlc_in_patch(day: datetime.date) -> Rule:
    """Warns of a DLC whose PyTorch version AWS no longer patches on `day`."""

    def rule(key: str, value: Any) -> list[Problem]:
        line = dlc_line(value)
        if line is None or day <= line.end_of_patch:
            return []
        patched = [f"{d.repository} {d.version}" for d in DLC if day <= d.end_of_patch]
        return [
            warning(
                DLC_PATCHED,
                key,
                value,
                (
                    f"{key} {value}: AWS ended patching of the {line.repository} PyTorch {line.version} DLC on "
                    f"{line.end_of_patch} ({line.source}); build on one still patched: "
                    f"{', '.join(patched) or 'none known'}"
                ),
            )
        ]

    return rule


# --- The rest of the pins ------------------------------------------------------------------

OTHERS = (
    # Patch releases are cut from the release-X.Y branch "as needed"; no window is published
    # (SlinkyProject/slurm-operator docs/versioning.md at v1.2.1).
    _reread(
        "Slinky charts",
        "1.2",
        "https://github.com/SlinkyProject/slurm-operator/blob/v1.2.1/docs/versioning.md",
    ),
    # Security updates and bug fixes go to the latest minor only, with no date (a maintainer in
    # kubernetes-sigs/aws-load-balancer-controller issue #3381, 2023-09-11).
    _reread(
        "aws-load-balancer-controller",
        "3.5",
        "https://github.com/kubernetes-sigs/aws-load-balancer-controller/issues/3381",
    ),
    # No support window is published for either device plugin; their releases are the charts'
    # (../shared/ref/charts/README.md: NVIDIA/k8s-device-plugin tag v0.20.0, aws/eks-charts
    # stable/aws-efa-k8s-device-plugin at commit bfe91c4b9257c80f754ad4b3d6a9a3c239b2b8ec).
    _reread("nvidia-device-plugin", "0.20", "https://github.com/NVIDIA/k8s-device-plugin/releases"),
    _reread(
        "aws-efa-k8s-device-plugin",
        "0.5",
        "https://github.com/aws/eks-charts/tree/master/stable/aws-efa-k8s-device-plugin",
    ),
    # end-of-life 2029-10-01, bugfixes until 2026-10-07 and source-only security releases after
    # (python/peps release_management/python-releases.toml at commit
    # ba4deeb7969588d937da609008d05bb83a47b1ab, metadata."3.13"; PEP 719 "3.13 Lifespan").
    Window("python", "3.13", _d(2029, 10, 1), PUBLISHED, "https://peps.python.org/pep-0719/"),
    # "End of support" of branch v3.23 on https://alpinelinux.org/releases/, as
    # endoflife-date/endoflife.date products/alpine-linux.md (commit
    # 0118c3037fa9f22d86a72e0f4d8f492e45b77234) records it from that table.
    Window("alpine", "3.23", _d(2027, 11, 1), PUBLISHED, "https://alpinelinux.org/releases/"),
)


def _line(windows, line: str) -> Window | None:
    return next((w for w in windows if w.line == line), None)


def _tag(image: str) -> str:
    return image.split("@")[0].rpartition(":")[2]


def pinned() -> list[tuple[str, str, Window | None]]:
    """(component, pinned version, its window or None) for every pin the calendar covers, read
    from model/facts/versions.py. (The Kubernetes version's calendar is model/facts/eks_versions.py.)"""
    pins = [
        ("Slurm", versions.SLURM_RELEASE, _line(SLURM, minor(versions.SLURM_RELEASE))),
        (
            "cert-manager",
            versions.CERT_MANAGER.version,
            getattr(cert_manager_line(versions.CERT_MANAGER.version), "window", None),
        ),
    ]
    others = {
        "Slinky charts": versions.SLINKY_CHART_VERSION,
        "aws-load-balancer-controller": versions.AWS_LOAD_BALANCER_CONTROLLER.version,
        "nvidia-device-plugin": versions.NVIDIA_DEVICE_PLUGIN.version,
        "aws-efa-k8s-device-plugin": versions.EFA_DEVICE_PLUGIN.version,
        "python": _tag(versions.PYTHON_IMAGE),
        "alpine": _tag(versions.SIDECAR_IMAGE),
    }
    for component, version in others.items():
        pins.append(
            (
                component,
                version,
                next((w for w in OTHERS if w.component == component and w.line == minor(version)), None),
            )
        )
    dlc = dlc_line(versions.DLC_IMAGE)
    pins.append(
        (
            "AWS DLC",
            versions.DLC_IMAGE,
            dlc
            and Window("AWS DLC", f"{dlc.repository} {dlc.version}", dlc.end_of_patch, PUBLISHED, dlc.source),
        )
    )
    return pins


def lapsed(day: datetime.date) -> list[str]:
    """What the pins leave unsupported on `day`: a pin without a window, one past its window, the
    Slurm release under its security floor, a Slinky release with a known defect. Empty while every
    default is supported."""
    found = []
    for component, version, window in pinned():
        if window is None:
            found.append(f"{component} {version}: no window in the support calendar")
        elif not window.supported_on(day):
            found.append(f"{component} {version}: supported until {window.ending()} ({window.source})")
    floor = slurm_floor(versions.SLURM_RELEASE)
    if floor != versions.SLURM_RELEASE:
        found.append(f"Slurm {versions.SLURM_RELEASE}: under its security floor {floor}")
    found += [p.message for p in slinky_chart_defects("slinkyChartVersion", versions.SLINKY_CHART_VERSION)]
    return found
