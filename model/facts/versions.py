"""Every version pin of the program, each written once: the upstream charts and their
repositories, the Slinky chart <-> Slurm release pairing, the Slurm release the slurmd image is
built on and its bases, the utility images of the program's own Jobs, the default Kubernetes
version, and the defaults of the version keys of Pulumi.yaml.

A Python module rather than a YAML file: the program and the tools import it without a parser,
a pin can be derived from another (the image tag and the slurmd base from the Slurm release), and
image/build-image.sh reads it with nothing but python3 (`python3 -m model.facts.versions <key>`).
Pulumi.yaml and image/Dockerfile cannot read it; tests/unit/model/test_versions.py fails until their
defaults equal the pins here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    """A Helm chart pinned in its repository (an https chart repository or an oci:// path)."""

    repository: str
    chart: str
    version: str


# The default Kubernetes version: the newest EKS offers, the longest in standard support before an
# upgrade is forced (which versions EKS offers, and until when: model/facts/eks_versions.py).
KUBERNETES_VERSION = "1.36"

# Slinky: its three charts (slurm-operator-crds, slurm-operator, slurm) share one version, and the
# operator's and webhook's images are tagged with it (values.yaml operator.image.tag and
# webhook.image.tag are null, and templates/operator/deployment.yaml and webhook/deployment.yaml
# default the tag to .Chart.Version, helm/slurm-operator at v1.2.1). 1.2.2 carries the
# release-1.2 fix for the Token controller, which in 1.2.1 can stop refreshing the JWT the operator
# drains and reads nodes with (SlinkyProject/slurm-operator issue #240, commit 1d8c0eb0); the
# calendar warns on 1.2.1 (model/facts/support_calendar.py SLINKY_DEFECTS). Rendered in tests from the
# staged release-1.2 branch (devkit/reference_data.py RELEASE_BRANCHES); what was and was not
# confirmed of the release: docs/extending.md, "Slinky 1.2.2: what was and was
# not confirmed".
SLINKY_REPOSITORY = "oci://ghcr.io/slinkyproject/charts"
SLINKY_CHART_VERSION = "1.2.2"
# The operator chart needs Kubernetes >= 1.29 (SlinkyProject/slurm-operator
# helm/slurm-operator/Chart.yaml at v1.2.1: kubeVersion ">= 1.29.0-0").
SLINKY_MIN_KUBERNETES = "1.29"
# Where the chart's Slinky images (login, slurmctld, slurmrestd, slurmd) come from: its defaults'
# repositories (SlinkyProject/slurm-operator helm/slurm/values.yaml at v1.2.1), each <here>/<name>.
SLINKY_IMAGES = "ghcr.io/slinkyproject"
# Chart minor -> the Slurm release (major.minor) its controller images are built from. The custom
# slurmd image must be built on the same release as slurmctld, or workers sit in ImagePullBackOff
# or never register (SlinkyProject/slurm-operator helm/slurm/Chart.yaml at v1.2.1: appVersion 26.05).
SLINKY_PAIRING = {"1.2": "26.05"}
# Slurm release -> the flavour of Slinky's slurmd image the custom image builds on. ubuntu24.04
# (glibc 2.39): newer than the DLC's Amazon Linux 2023 (glibc 2.34), so the harvested binaries
# run; ubuntu26.04's glibc 2.42 headers broke CUDA 13.0's nvcc (13.2
# added the guard) and the DLC's CUDA 13.3 has not been tried there (SlinkyProject/containers
# schedmd/slurm/26.05/; docs/decisions/dlc-base.md).
SLURMD_BASE_FLAVOUR = {"26.05": "ubuntu24.04"}

# The full Slurm release of the slurmd image: every node runs one build. 26.05.4 is the first 26.05
# release with the fixes for CVE-2026-65107, -65108, -65109, -65138, -65139, -65140, -65165 and
# -65168 (aws/aws-parallelcluster issue #7601); 26.05.5 is the release Debian sid ships, so the
# test roots (tests/slurm/roots/sid.packages) run the same build. The Slinky images of this patch
# (slurmd, slurmctld, slurmrestd, login-pyxis: one tag, SLURMD_BASE_IMAGE's) cannot be confirmed
# from here (the stored SlinkyProject/containers history, main at 05efda0, stops at 26.05.1): its
# schedmd/slurm/docker-bake.hcl tags each image, login-pyxis (target login_pyxis, built from
# 26.05/ubuntu24.04/Dockerfile.pyxis) included, <name>:<release>-<flavour> and
# <name>:<major.minor>-<flavour>, so the tag's form is confirmed and its publication is not; a
# preview resolves each to a digest and refuses a missing one (model/checks/image_digests.py).
# docs/upgrading.md says how to check them and override slurmVersion/slurmdBaseImage.
SLURM_RELEASE = "26.05.5"
# The AWS Deep Learning Container the image's accelerator stack is harvested from; without a
# registry host it is pulled from the DLC registry of the stack's region. AWS's PyTorch line on
# Amazon Linux 2023, in patch until 2027-07-20 (aws/deep-learning-containers
# docs/src/data/pytorch/2.13-cuda-ec2.yml; why this one: docs/decisions/dlc-base.md).
# By tag: no record that can be cited here gives the digest of this tag (the stored release data
# names tags only, and AWS re-pushes a tag with each patch). Each preview resolves it to the digest
# ECR holds for it (model/checks/image_digests.py); to hold one digest across patches, pin
# dlcBaseImage = "pytorch:2.13.0-cu133-amzn2023@sha256:<digest>" (image/README.md says how to
# read the digest).
DLC_IMAGE = "pytorch:2.13.0-cu133-amzn2023"
# Container jobs (docs/decisions/container-runtime.md): NVIDIA's pyxis SPANK plugin and enroot, both
# built from source by one recipe (image/container-runtime.sh) in the image, against its Slurm's own
# headers, and in the real-Slurm test root from ../shared/ref/src (pyxis-v0.24.0.tar.gz,
# enroot-v4.1.2.tar.gz), so what the tests prove is what the image runs. The image adds each
# source tree by the commit its tag names (../shared/ref/src/README.md gives tag = commit for both
# archives): a commit, unlike a tag or a release asset, names its content. image/Dockerfile's ARG
# defaults must equal these (tests/unit/model/test_versions.py).
PYXIS_VERSION = "0.24.0"
PYXIS_COMMIT = "107519944221822ea1dace4db8e7234b2eaa4cd5"
ENROOT_VERSION = "4.1.2"
ENROOT_COMMIT = "bd51f53b6fa954805ae3e1985c5dc7594ff66d05"
# enroot's GPU hook (conf/hooks/98-nvidia.sh at v4.1.2) calls nvidia-container-cli to bring the
# node's driver libraries and devices into a container that asks for GPUs (every NGC image sets
# NVIDIA_VISIBLE_DEVICES): libnvidia-container-tools from NVIDIA's package repository, the release
# of NVIDIA Container Toolkit v1.17.8 (NVIDIA/nvidia-container-toolkit tag v1.17.8), the first
# without CVE-2025-23266 (its CVE record: "All versions up to and including 1.17.7").
LIBNVIDIA_CONTAINER_VERSION = "1.17.8-1"
# The fingerprint of the primary key that signs NVIDIA's package repository, the key
# https://nvidia.github.io/libnvidia-container/gpgkey serves (gpg shows it in NVIDIA/libnvidia-container
# issue #280 and NVIDIA/nvidia-container-toolkit issue #1460). The file's bytes change whenever
# NVIDIA re-signs a subkey, so the image pins the primary key instead: image/repository-key.sh refuses
# a file holding any other primary key.
LIBNVIDIA_CONTAINER_KEY = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"

# The tag starts with the Slurm release so the image and slurmctld visibly pair up; the rest names
# the DLC's torch and CUDA (the DLC tag's cu133: its toolkit; torch itself is the cu130 build).
SLURMD_IMAGE_TAG = f"{SLURM_RELEASE}-torch2.13-cu133-mpi"

# cert-manager 1.21 supports Kubernetes 1.33-1.36; 1.16 reached end of life on 2025-06-10 and stops
# at 1.32 (cert-manager/website content/docs/releases/README.md). What the upgrade changes:
# docs/upgrading.md.
CERT_MANAGER = Chart("https://charts.jetstack.io", "cert-manager", "v1.21.1")
# 0.20.0 bundles node-feature-discovery 0.19.0, off here (charts-values/nvidia-device-plugin.yaml).
NVIDIA_DEVICE_PLUGIN = Chart("https://nvidia.github.io/k8s-device-plugin", "nvidia-device-plugin", "0.20.0")
# >= 0.5.10 counts EFA devices right on p6-b200 (aws/sagemaker-hyperpod-cli PR #282); the chart's
# own version string, v-prefixed (its Chart.yaml and the repository index).
EFA_DEVICE_PLUGIN = Chart("https://aws.github.io/eks-charts", "aws-efa-k8s-device-plugin", "v0.5.30")
# Chart 3.5.0 is controller v3.5.0 (1.17.1, v2.17.1, was the last 1.x; fixes go to 3.x). Its
# upstream IAM policy is byte-identical to v2.17.1's (docs/install/iam_policy.json at both tags).
# Helm never upgrades the chart's crds/ on an existing stack: docs/upgrading.md has the command.
AWS_LOAD_BALANCER_CONTROLLER = Chart(
    "https://aws.github.io/eks-charts", "aws-load-balancer-controller", "3.5.0"
)
# The metrics store's GPU source (docs/metrics.md): NVIDIA's DCGM exporter, chart 4.8.2 = exporter 4.8.2 on DCGM 4.5.3
# (NVIDIA/dcgm-exporter tag 4.5.3-4.8.2, deployment/Chart.yaml and values.yaml image.tag). The image
# by the chart's tag, not yet by digest: no stored record gives the digest of that nvcr.io tag.
DCGM_EXPORTER = Chart("https://nvidia.github.io/dcgm-exporter/helm-charts", "dcgm-exporter", "4.8.2")
DCGM_EXPORTER_IMAGE = ("nvcr.io/nvidia/k8s/dcgm-exporter", "4.5.3-4.8.2-distroless")

# The EKS node monitoring agent add-on (eks-node-monitoring-agent; what it is for: model/builders/node_repair.py).
# An add-on version, not a chart: EKS names its builds <agent release>-eksbuild.<n>. v1.7.0 is the
# agent's newest release (aws/eks-node-monitoring-agent tag v1.7.0, 2026-08-04), and its chart ships
# the image tag v1.7.0-eksbuild.1 (charts/eks-node-monitoring-agent/values.yaml at v1.7.0,
# nodeAgent.image.tag), the build the add-on of that release installs. Pinned so a new agent
# (new node conditions, so new repairs) arrives by a reviewed change, not on the next `up`; whether
# EKS offers this build for the stack's Kubernetes version is what `aws eks describe-addon-versions
# --addon-name eks-node-monitoring-agent --kubernetes-version <v>` answers (docs/upgrading.md).
NODE_MONITORING_AGENT_VERSION = "v1.7.0-eksbuild.1"

# Grafana, in-cluster, for the dashboards (components/grafana.py). The chart moved from
# grafana/helm-charts (deprecated there after 10.5.15) to grafana-community/helm-charts, the
# repository kube-prometheus-stack 88.5.3 takes it from (its Chart.yaml dependencies); 12.11.1 is
# its newest release in ../shared/ref/charts. Its appVersion is Grafana 13.2.0, pinned again below
# so that a chart bump never changes the server unseen.
GRAFANA = Chart("https://grafana-community.github.io/helm-charts", "grafana", "12.11.1")
# docker.io/grafana/grafana, by tag: no record that can be cited here gives the digest of this tag
# (not a Docker Official Image, so docker-library/repo-info has none); docs/upgrading.md says how
# to read it and pin it by digest (the chart's image.sha).
GRAFANA_IMAGE_TAG = "13.2.0"
# Grafana 13 dropped SigV4 from its core Prometheus data source; Amazon Managed Service for
# Prometheus is read through this plugin, installed by Grafana at start from the plugin catalog at
# this version. 3.2.0 (2026-07-30, grafana/grafana-amazonprometheus-datasource tag v3.2.0) is its
# newest release; its src/plugin.json needs Grafana >= 12.2.5.
AMAZON_PROMETHEUS_PLUGIN = "grafana-amazonprometheus-datasource"
AMAZON_PROMETHEUS_PLUGIN_VERSION = "3.2.0"

# Autoscaling pools (docs/scaling.md), installed only where a pool autoscales.
# KEDA 2.20.2 (kedacore/charts tag v2.20.2): its NOTES.txt says 2.20 "is supported and tested on
# Kubernetes 1.33 or higher"; its chart's images are KEDA's own at the chart's appVersion.
KEDA = Chart("https://kedacore.github.io/charts", "keda", "2.20.2")
KEDA_MIN_KUBERNETES = "1.33"
# cluster-autoscaler chart 9.59.0 (kubernetes/autoscaler tag cluster-autoscaler-chart-9.59.0); its
# default image is v1.35.0. CA's versions "match Kubernetes minor releases exactly" and it is only
# tested with the control plane version it was meant for (cluster-autoscaler/README.md, "Releases",
# at cluster-autoscaler-1.36.1), so the image is the newest CA patch of the cluster's own minor
# (the kubernetes/autoscaler tags cluster-autoscaler-<version>, newest of each minor on
# 2026-07-22), never the chart's 1.35 on a 1.36 cluster.
CLUSTER_AUTOSCALER = Chart("https://kubernetes.github.io/autoscaler", "cluster-autoscaler", "9.59.0")
CLUSTER_AUTOSCALER_IMAGE = "registry.k8s.io/autoscaling/cluster-autoscaler"
CLUSTER_AUTOSCALER_FOR_KUBERNETES = {
    "1.32": "v1.32.7",
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
    "1.35": "v1.35.2",
    "1.36": "v1.36.1",
}


def cluster_autoscaler_tag(kubernetes_version: str) -> str | None:
    """The cluster-autoscaler image tag of a Kubernetes minor, or None for one with no CA release."""
    return CLUSTER_AUTOSCALER_FOR_KUBERNETES.get(_minor(kubernetes_version))


# The utility images below are Docker Official Images pinned by tag and by the digest of their
# multi-platform index, as docker-library/repo-info records Docker Hub's manifest
# (repos/<image>/remote/<tag>.md). They are pulled from the ECR Public mirror of the official
# images: Docker Hub limits anonymous pulls per source address, and every node pulls through the
# VPC's one NAT gateway (components/network.py). A reference by digest checks itself: should the
# mirror not serve that index yet, the pull fails loudly (not found) instead of running other
# bytes, and docs/upgrading.md says how to check it and switch to Docker Hub.
LIBRARY_REGISTRY = "public.ecr.aws/docker/library"

# The Slinky chart's log and init sidecars default to docker.io/library/alpine:latest, a floating
# tag. The chart reads controller.logfile (templates/controller/controller-cr.yaml),
# nodesetDefaults.logfile (nodeset/nodeset-cr.yaml, merged into every nodeset) and
# loginsetDefaults.initconf (loginset/loginset-cr.yaml) at SlinkyProject/slurm-operator v1.2.1
# helm/slurm, each as an image string or object (templates/_helpers.tpl slurm.format-image; the
# object form drops the tag when it has a digest, so the string is passed).
# alpine 3.23.6 (2026-09-17), the newest patch of the supported 3.23 branch: its 16-platform index,
# repo-info c667a56ce08d1768d5d003dfe7b7b290065cec90 repos/alpine/remote/3.23.6.md.
SIDECAR_IMAGE = (
    f"{LIBRARY_REGISTRY}/alpine:3.23.6"
    "@sha256:85fe1e81d6758c208f3e1eed4338a1997e19d4be002d4dd32d3100c9a8c010a0"
)

# Utility images of the program's own Jobs.
# Copies the jobs onto /shared. busybox 1.37.0 is the stable line (1.38.0 is tagged `unstable`);
# the index of its 2026-09-22 rebuild (Debian 13), repo-info
# dcee19c82c4accf5b9c777dda10f7ede56063789 repos/busybox/remote/1.37.0.md.
BUSYBOX_IMAGE = (
    f"{LIBRARY_REGISTRY}/busybox:1.37.0"
    "@sha256:bdf57e528e45e4433820e045b29b4597825a1c9e38353532d90a01445013f82e"
)
# Runs cluster_programs/state_volume_guard.py and, after every NodeSet change, cluster_programs/rollout.py (standard
# library only). python 3.13.15 on Debian trixie (built 2026-09-01), repo-info
# 422f3cfe488dc9ae394c5058b27db617f72c91db repos/python/remote/3.13.15-slim.md.
PYTHON_IMAGE = (
    f"{LIBRARY_REGISTRY}/python:3.13.15-slim"
    "@sha256:881d80734ee05dca6f7f42dcb080975652a53c7eda9ba1f03bb8da31aa6a6ec2"
)
# Keeps the slurmd pre-pull pod (and so its cached image) on each GPU node; by digest, the
# multi-arch index of pause 3.10 on registry.k8s.io (no pull limits).
PAUSE_IMAGE = (
    "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
)


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def slurm_release_for_chart(chart_version: str) -> str | None:
    """The Slurm major.minor a Slinky chart version is built for, or None if unpaired."""
    return SLINKY_PAIRING.get(_minor(chart_version))


def slurmd_base_flavour(slurm_version: str) -> str | None:
    """The Slinky slurmd image flavour (e.g. ubuntu24.04) a Slurm release's image builds on."""
    return SLURMD_BASE_FLAVOUR.get(_minor(slurm_version))


# The accounting database's engine: RDS for MariaDB at a major version only, so RDS applies each
# minor release in the maintenance window (every RDS minor version's standard support ends about a
# year after its release; the major's runs to 2029-05-31: Amazon RDS User Guide, "MariaDB on Amazon
# RDS versions", https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/MariaDB.Concepts.VersionMgmt.html).
# 11.4, not 11.8: MariaDB 11.6.2 and later turn innodb_snapshot_isolation on by default, with which
# slurmdbd stops at the first conflicting write; 11.4 has it off (SchedMD/slurm
# doc/html/accounting.shtml at slurm-26-05-3-1, "innodb_snapshot_isolation"). Decision:
# docs/decisions/accounting-database.md.
ACCOUNTING_ENGINE = "mariadb"
ACCOUNTING_ENGINE_VERSION = "11.4"
# The DB parameter group family of that major version (RDS names it engine + major).
ACCOUNTING_PARAMETER_FAMILY = f"{ACCOUNTING_ENGINE}{ACCOUNTING_ENGINE_VERSION}"

# Slinky's slurmd of the Slurm release on its flavour: the final stage of image/Dockerfile.
SLURMD_BASE_IMAGE = f"ghcr.io/slinkyproject/slurmd:{SLURM_RELEASE}-{slurmd_base_flavour(SLURM_RELEASE)}"

# The default of every version key Pulumi.yaml declares.
CONFIG_DEFAULTS = {
    "kubernetesVersion": KUBERNETES_VERSION,
    "slinkyChartVersion": SLINKY_CHART_VERSION,
    "slurmVersion": SLURM_RELEASE,
    "certManagerVersion": CERT_MANAGER.version,
    "slurmdImageTag": SLURMD_IMAGE_TAG,
    "dlcBaseImage": DLC_IMAGE,
    "slurmdBaseImage": SLURMD_BASE_IMAGE,
}


def main(argv: list[str]) -> int:
    """Print the default of one version key (image/build-image.sh reads its defaults this way)."""
    if len(argv) != 1 or argv[0] not in CONFIG_DEFAULTS:
        print(
            f"usage: python3 -m model.facts.versions KEY; KEY is one of {', '.join(CONFIG_DEFAULTS)} "
            f"(got {' '.join(argv) or 'nothing'})",
            file=sys.stderr,
        )
        return 2
    print(CONFIG_DEFAULTS[argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
