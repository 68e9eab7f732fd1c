"""The stack's configuration, read once into a typed, immutable, validated object.

Every problem is collected and reported together in one error naming the key, the value and what
is allowed, before any resource is registered.
"""
from __future__ import annotations

import base64
import binascii
import difflib
import ipaddress
import pathlib
import re
import struct
from dataclasses import dataclass
from typing import Any, Callable

import pulumi
import yaml

from components import preflight
from components.account import Account
from components.image_references import dlc_registry, reference_problem, registry_host
from model import catalog, gpu_pools
from model.versions import (
    EKS_VERSIONS,
    EXTENDED_SUPPORT_VERSIONS,
    SLINKY_MIN_KUBERNETES,
    SLINKY_PAIRING,
    SLURM_RELEASE,
    slurm_release_for_chart,
    slurmd_base_flavour,
)

_SSH_KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                  "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com",
                  "sk-ecdsa-sha2-nistp256@openssh.com")
_SLURM_VERSION = re.compile(r"^\d{2}\.\d{2}\.\d+$")
_CHART_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_IMAGE_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,37}$")
PROJECT_FILE = pathlib.Path(__file__).resolve().parent.parent / "Pulumi.yaml"
# The key material of Pulumi.dev.yaml's example sshPublicKey; its private half was discarded, so a
# stack deployed with it has a login node nobody can reach.
EXAMPLE_SSH_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIHo5XTHwRWToEb42mcBir6wbQZm9zUSpHChjh8bS0mXM"


class ConfigError(pulumi.RunError):
    """Invalid stack configuration; Pulumi prints the message without a stack trace."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid stack configuration (%d problem%s):\n  - %s" % (
            len(problems), "" if len(problems) == 1 else "s", "\n  - ".join(problems)))


@dataclass(frozen=True)
class StackConfig:
    project: str
    stack: str
    region: str
    availability_zone: str
    node_zones: tuple[str, ...]   # availabilityZone first, the pools' AZs, then a second AZ if needed
    kubernetes_version: str
    cluster_name: str
    # gpuPools, or the one pool `slinky` of gpuInstanceType/gpuNodeCount (gpu_pools.DEFAULT_POOL).
    gpu_pools: tuple[gpu_pools.GpuPool, ...]
    core_instance_type: str
    core_node_count: int
    ssh_public_key: str
    ssh_allowed_cidrs: tuple[str, ...]
    allow_ssh_from_anywhere: bool
    admin_role_arns: tuple[str, ...]
    slinky_chart_version: str
    slurm_version: str
    cert_manager_version: str
    vpc_cidr: str
    slurmd_image_tag: str
    dlc_base_image: str
    slurmd_base_image: str
    build_image_on_preview: bool
    retain_shared_data: bool
    api_allowed_cidrs: tuple[str, ...]
    allow_api_from_anywhere: bool

    @property
    def gpu_node_count(self) -> int:
        """Slurm workers in all pools."""
        return sum(p.node_count for p in self.gpu_pools)


class _Reader:
    """Reads raw strings from pulumi.Config and records problems instead of raising."""

    def __init__(self, cfg: pulumi.Config, namespace: str):
        self.cfg, self.ns, self.problems = cfg, namespace, []

    def problem(self, key: str, value: Any, allowed: str) -> None:
        self.problems.append(f"{self.ns}:{key} = {value!r}: {allowed}")

    def string(self, key: str, check: Callable[[str], str | None] | None = None) -> str:
        value = self.cfg.get(key)
        if value is None or value.strip() == "":
            self.problems.append(f"{self.ns}:{key} is not set; it is required")
            return ""
        if check and (why := check(value)):
            self.problem(key, value, why)
        return value

    def whole(self, key: str, minimum: int, maximum: int) -> int:
        raw = self.cfg.get(key)
        try:
            n = int(str(raw).strip(), 10)
        except ValueError:
            self.problem(key, raw, f"a whole number from {minimum} to {maximum}")
            return minimum
        if not minimum <= n <= maximum:
            self.problem(key, raw, f"a whole number from {minimum} to {maximum}")
        return n

    def boolean(self, key: str) -> bool:
        raw = self.cfg.get(key)
        if raw is None:
            return False
        if raw.strip().lower() not in ("true", "false"):
            self.problem(key, raw, "true or false")
            return False
        return raw.strip().lower() == "true"

    def string_list(self, key: str) -> list[str] | None:
        try:
            value = self.cfg.get_object(key)
        except Exception:  # malformed JSON from the CLI's string form
            self.problem(key, self.cfg.get(key), "a list of strings")
            return None
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(key, value, "a list of strings")
            return None
        return value


def _check_ssh_public_key(value: str) -> str | None:
    allowed = "an OpenSSH public key line such as 'ssh-ed25519 AAAA... comment'"
    if "PRIVATE KEY" in value:
        raise _Withheld(f"this is a private key (value withheld); expected {allowed}")
    parts = value.strip().split()
    if len(parts) < 2 or parts[0] not in _SSH_KEY_TYPES:
        return f"{allowed}; key types: {', '.join(_SSH_KEY_TYPES)}"
    try:
        blob = base64.b64decode(parts[1], validate=True)
        (n,) = struct.unpack(">I", blob[:4])
        embedded = blob[4:4 + n].decode()
    except (binascii.Error, struct.error, UnicodeDecodeError):
        return f"{allowed}; the key data is not valid base64 key material"
    if embedded != parts[0]:
        return f"{allowed}; the key data says {embedded!r}, the line says {parts[0]!r}"
    return None


class _Withheld(Exception):
    """A problem whose message must not echo the value (a pasted private key)."""


def _cidr_problems(cidrs: list[str], anywhere_ok: bool) -> list[str]:
    out = []
    if not cidrs:
        return ["the list is empty: give at least one CIDR that may reach SSH on the login node"]
    for c in cidrs:
        try:
            net = ipaddress.ip_network(c.strip(), strict=True)
        except ValueError as e:
            out.append(f"{c!r} is not a CIDR block ({e})")
            continue
        if why := _ipv6_problem(net, c):
            out.append(why)
            continue
        if net.prefixlen == 0 and not anywhere_ok:
            out.append(f"{c!r} opens SSH to the whole internet; set allowSshFromAnywhere=true "
                       "to allow that on purpose")
    return out


def _ipv6_problem(net: ipaddress.IPv4Network | ipaddress.IPv6Network, text: str) -> str | None:
    # The login NLB is IPv4-only: the load balancer controller's ip-address-type defaults to ipv4
    # and the VPC has no IPv6 block, so an IPv6 source range admits nobody
    # (https://kubernetes-sigs.github.io/aws-load-balancer-controller/v2.17/guide/service/annotations/#ip-address-type).
    if net.version == 6:
        return (f"{text!r} is an IPv6 block; the login load balancer is IPv4-only, so it would admit nobody: "
                "give the IPv4 address you connect from as a /32 (`curl -4 https://checkip.amazonaws.com` prints it)")
    return None


def undeclared_key_problems(project: str, given: dict[str, str], declared: list[str]) -> list[str]:
    """Keys under the project's namespace that Pulumi.yaml does not declare (a misspelling the
    program would otherwise ignore), each with the closest declared key. `given` maps each key
    to its value as shown (secrets withheld)."""
    out = []
    for key in sorted(given):
        namespace, _, name = key.partition(":")
        if namespace != project or name in declared:
            continue
        close = difflib.get_close_matches(name, declared, n=1, cutoff=0.6)
        hint = f"did you mean {project}:{close[0]}? " if close else ""
        out.append(f"{key} = {given[key]!r} is not a key of this project (Pulumi.yaml declares the keys): "
                   f"{hint}Remove it with `pulumi config rm {name}`")
    return out


def _given_keys() -> dict[str, str]:
    """Every config key the program was given, with its value (secrets withheld): the CLI's
    language host passes them as the JSON map PULUMI_CONFIG, mocks and the automation API set them
    directly (pulumi/pulumi sdk/python/lib/pulumi/runtime/config.py at v3.272.0: get_config reads
    both)."""
    from pulumi.runtime import config as runtime_config
    given = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return {k: "[secret]" if runtime_config.is_config_secret(k) else str(v) for k, v in given.items()}


def _declared_keys() -> list[str]:
    return sorted((yaml.safe_load(PROJECT_FILE.read_text()).get("config") or {}))


def warn_example_ssh_key(ssh_public_key: str) -> None:
    """The dev stack's example key deploys, but nobody holds its private half: say how to set one's own."""
    parts = ssh_public_key.split()
    if len(parts) >= 2 and parts[1] == EXAMPLE_SSH_KEY:
        pulumi.log.warn("sshPublicKey is the example key of Pulumi.dev.yaml, whose private half was discarded: "
                        "nobody can log in to this cluster. Set your own with "
                        "`pulumi config set sshPublicKey \"$(cat ~/.ssh/id_ed25519.pub)\"`")


def warn_extended_support(kubernetes_version: str) -> None:
    """Accepted, but at six times the control-plane price: say so, and what to choose instead."""
    if kubernetes_version in EXTENDED_SUPPORT_VERSIONS:
        standard = [v for v in EKS_VERSIONS if v not in EXTENDED_SUPPORT_VERSIONS]
        pulumi.log.warn(f"kubernetesVersion {kubernetes_version} is in EKS extended support: the control "
                        "plane costs six times the standard price (https://aws.amazon.com/eks/pricing/); "
                        f"standard support: {', '.join(standard)}")


def _api_cidr_problems(cidrs: list[str], anywhere_ok: bool) -> list[str]:
    # The public endpoint of an IPv4 cluster takes IPv4 blocks only (EKS API reference,
    # VpcConfigRequest.publicAccessCidrs:
    # https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigRequest.html).
    out = []
    for c in cidrs:
        try:
            net = ipaddress.ip_network(c.strip(), strict=True)
        except ValueError as e:
            out.append(f"{c!r} is not a CIDR block ({e})")
            continue
        if net.version != 4:
            out.append(f"{c!r} is IPv6; the API endpoint of this IPv4 cluster takes IPv4 blocks only")
        elif net.prefixlen == 0 and not anywhere_ok:
            out.append(f"{c!r} opens the Kubernetes API endpoint to the whole internet; set "
                       "allowApiFromAnywhere=true to allow that on purpose")
    return out


def _vpc_cidr_problem(value: str) -> str | None:
    allowed = "a private IPv4 CIDR block from /16 to /20 (e.g. 10.0.0.0/16)"
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        return allowed
    # Subnets are carved as /(prefix+3): a /20 VPC still leaves /23 subnets for pod IPs (VPC CNI).
    if not net.is_private or not 16 <= net.prefixlen <= 20:
        return allowed
    return None


def _pools(r: _Reader, az: str, root_gib: int) -> list[gpu_pools.GpuPool]:
    """gpuPools, or the one pool of gpuInstanceType/gpuNodeCount when it is unset. Only pools
    whose own values are valid come back (the account checks skip the rest); a default pool
    whose count is refused keeps count 0 so its type and AZ are still checked."""
    try:
        raw = r.cfg.get_object("gpuPools")
    except Exception:  # malformed JSON from the CLI's string form
        r.problem("gpuPools", r.cfg.get("gpuPools"), "a list of pools as JSON")
        return []
    if raw:
        pools, problems = gpu_pools.pools_from_config(raw, az, root_gib)
        for key, value, allowed in problems:
            r.problem(key, value, allowed)
        return pools
    if raw is not None and raw != []:
        r.problem("gpuPools", raw, "a list of pools")
        return []
    gpu_type_name = r.string("gpuInstanceType")
    gpu = catalog.lookup(gpu_type_name)
    if gpu_type_name and gpu is None:
        r.problem("gpuInstanceType", gpu_type_name,
                  f"{catalog.describe_unsupported(gpu_type_name)}; allowed: an EFA-capable "
                  f"NVIDIA GPU type: {', '.join(catalog.efa_gpu_types())}")
    low, high = gpu_pools.NODE_COUNT
    gpu_nodes = r.whole("gpuNodeCount", low, high)
    if gpu is None:
        return []
    return [gpu_pools.GpuPool(gpu_pools.DEFAULT_POOL, gpu, gpu_nodes if low <= gpu_nodes <= high else 0,
                              az, root_gib)]


def load(account: Account) -> StackConfig:
    """Read and validate the stack's configuration, then ask the account what it must allow
    (components/preflight.py): zones, instance type offerings, the GPU quota, the deployer."""
    project, stack = pulumi.get_project(), pulumi.get_stack()
    r = _Reader(pulumi.Config(), project)
    aws = _Reader(pulumi.Config("aws"), "aws")

    region = aws.string("region")
    az = r.string("availabilityZone")
    k8s_version = r.string("kubernetesVersion", lambda v: None if v in EKS_VERSIONS else
                           f"a Kubernetes version EKS offers: {', '.join(EKS_VERSIONS)}")

    root_gib = r.whole("gpuRootVolumeGiB", *gpu_pools.ROOT_VOLUME_GIB)
    pools = _pools(r, az, root_gib)
    core_type = r.string("coreInstanceType", lambda v: None if catalog.is_instance_type_name(v)
                         and catalog.lookup(v) is None else
                         "a CPU instance type name such as m6i.2xlarge (GPU types belong in "
                         "gpuInstanceType)")
    core_nodes = r.whole("coreNodeCount", 1, 32)

    try:
        ssh_key = r.string("sshPublicKey", _check_ssh_public_key)
    except _Withheld as withheld:
        r.problems.append(f"{project}:sshPublicKey: {withheld}")
        ssh_key = ""
    anywhere = r.boolean("allowSshFromAnywhere")
    cidrs = r.string_list("sshAllowedCidrs")
    if cidrs is not None:
        for why in _cidr_problems(cidrs, anywhere):
            r.problem("sshAllowedCidrs", cidrs, why)
    # Who may reach the EKS public endpoint: `pulumi up` and kubectl must run from inside these
    # blocks. Unset, the SSH blocks (IPv4 only, as the API endpoint takes): whoever may log in may
    # also deploy. Nodes use the private endpoint either way.
    api_anywhere = r.boolean("allowApiFromAnywhere")
    api_cidrs = r.string_list("apiAllowedCidrs")
    api_defaulted = api_cidrs == []
    if api_defaulted:
        # An invalid SSH list is reported once, as sshAllowedCidrs.
        api_cidrs = None if cidrs is None or _cidr_problems(cidrs, anywhere) else cidrs
    if api_cidrs:
        for why in _api_cidr_problems(api_cidrs, api_anywhere):
            if api_defaulted:
                why += ("; apiAllowedCidrs is unset and defaults to sshAllowedCidrs: set it to the "
                        "IPv4 blocks `pulumi up` and kubectl run from")
            r.problem("apiAllowedCidrs", api_cidrs, why)
    admins = r.string_list("adminRoleArns") or []
    for arn in admins:
        if not _ROLE_ARN.match(arn):
            r.problem("adminRoleArns", arn, "an IAM role ARN (arn:aws:iam::<account>:role/<name>)")

    chart = r.string("slinkyChartVersion", lambda v: None if _CHART_VERSION.match(v) else
                     "a chart version such as 1.2.1")
    slurm = r.string("slurmVersion", lambda v: None if _SLURM_VERSION.match(v) else
                     f"a full Slurm release such as {SLURM_RELEASE} (pinned, so every node runs one build)")
    if chart and slurm and _CHART_VERSION.match(chart) and _SLURM_VERSION.match(slurm):
        paired = slurm_release_for_chart(chart)
        if paired is None:
            r.problem("slinkyChartVersion", chart, "a Slinky chart with a known Slurm pairing: " +
                      ", ".join(f"{c}.x <-> {s}.x" for c, s in SLINKY_PAIRING.items()))
        elif not slurm.startswith(paired + "."):
            r.problem("slurmVersion", slurm, f"Slinky chart {chart} runs Slurm {paired}.x; the "
                      "slurmd image must be built on the same release as slurmctld "
                      f"(pairings: {', '.join(f'{c}.x <-> {s}.x' for c, s in SLINKY_PAIRING.items())})")
    cert_manager = r.string("certManagerVersion", lambda v: None if re.match(r"^v\d+\.\d+\.\d+$", v)
                            else "a cert-manager chart version such as v1.16.2")
    tag = r.string("slurmdImageTag", lambda v: None if _IMAGE_TAG.match(v) else
                   "a Docker tag (letters, digits, '_', '.', '-'; at most 128)")
    if tag and slurm and _IMAGE_TAG.match(tag) and not tag.startswith(slurm + "-"):
        r.problem("slurmdImageTag", tag, f"a tag that starts with the Slurm version "
                  f"'{slurm}-' so the image and slurmctld pair up (e.g. {slurm}-torch2.9-cu130-mpi)")
    dlc = r.string("dlcBaseImage", reference_problem)
    if region and dlc and not reference_problem(dlc) and registry_host(dlc) is None \
            and dlc_registry(region) is None:
        r.problem("dlcBaseImage", dlc, f"no Deep Learning Containers registry is known for "
                  f"{region}: give the full reference with its registry host")
    slurmd_base = r.string("slurmdBaseImage", reference_problem)
    flavour = slurmd_base_flavour(slurm) if slurm and _SLURM_VERSION.match(slurm) else None
    if slurmd_base and slurm and flavour and f":{slurm}-{flavour}" not in slurmd_base.split("@")[0]:
        r.problem("slurmdBaseImage", slurmd_base, f"a Slinky slurmd image of Slurm {slurm} on {flavour}, "
                  f"the flavour the image's CUDA toolchain builds on "
                  f"(e.g. ghcr.io/slinkyproject/slurmd:{slurm}-{flavour})")
    elif slurmd_base and slurm and f":{slurm}" not in slurmd_base:
        r.problem("slurmdBaseImage", slurmd_base, f"a Slinky slurmd image of Slurm {slurm} "
                  f"(e.g. ghcr.io/slinkyproject/slurmd:{slurm}-ubuntu24.04)")
    skip_quota = r.boolean("skipGpuQuotaCheck")
    build_on_preview = r.boolean("buildImageOnPreview")
    retain_shared = r.boolean("retainSharedData")
    vpc_cidr = r.string("vpcCidr", _vpc_cidr_problem)
    cluster_name = r.cfg.get("clusterName") or f"slinky-eks-{stack}"
    if not _NAME.match(cluster_name):
        r.problem("clusterName", cluster_name, "lower-case letters, digits and '-', starting "
                  "with a letter, at most 38 characters")

    minimum_k8s = SLINKY_MIN_KUBERNETES
    if k8s_version in EKS_VERSIONS and tuple(map(int, k8s_version.split("."))) < tuple(
            map(int, minimum_k8s.split("."))):
        r.problem("kubernetesVersion", k8s_version, f"Slinky needs Kubernetes >= {minimum_k8s}")

    node_zones: tuple[str, ...] = ()
    if region and az:
        core_ok = catalog.is_instance_type_name(core_type) and catalog.lookup(core_type) is None
        # Values already refused are left out of the account checks (0 and "" skip them).
        found = preflight.check(account, region, az, pools, core_type if core_ok else "",
                                [a for a in admins if _ROLE_ARN.match(a)], skip_quota,
                                core_count=0 if any(p.startswith(f"{project}:coreNodeCount ")
                                                    for p in r.problems) else core_nodes)
        for key, value, allowed in found.problems:
            (aws if key.startswith("aws:") else r).problem(key.removeprefix("aws:"), value, allowed)
        for warning in found.warnings:
            pulumi.log.warn(warning)
        node_zones = found.node_zones

    problems = aws.problems + r.problems + undeclared_key_problems(project, _given_keys(), _declared_keys())
    if problems:
        raise ConfigError(problems)
    warn_example_ssh_key(ssh_key)
    warn_extended_support(k8s_version)
    return StackConfig(
        project=project, stack=stack, region=region, availability_zone=az, node_zones=node_zones,
        kubernetes_version=k8s_version, cluster_name=cluster_name, gpu_pools=tuple(pools),
        core_instance_type=core_type,
        core_node_count=core_nodes, ssh_public_key=ssh_key.strip(),
        ssh_allowed_cidrs=tuple(c.strip() for c in cidrs or ()),
        allow_ssh_from_anywhere=anywhere, admin_role_arns=tuple(admins),
        slinky_chart_version=chart, slurm_version=slurm, cert_manager_version=cert_manager,
        vpc_cidr=vpc_cidr, slurmd_image_tag=tag, dlc_base_image=dlc, slurmd_base_image=slurmd_base,
        build_image_on_preview=build_on_preview, retain_shared_data=retain_shared,
        api_allowed_cidrs=tuple(c.strip() for c in api_cidrs or ()), allow_api_from_anywhere=api_anywhere)
