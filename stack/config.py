"""The stack's configuration, read once into a typed, immutable, validated object.

The schema and its rules are in model/checks/config_schema.py; here the raw values are read from
pulumi.Config, every error comes back in one ConfigError naming the key, the value and what is
allowed, before any resource is registered, and every warning goes to the deployer's log.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Mapping

import pulumi

from model.builders.scheduling import SchedulingPolicy
from model.checks import config_schema, existing_cluster, gpu_pools, image_digests, preflight, vpc_subnets
from model.checks.problems import Problem
from model.checks.users import User
from model.facts import cost, shared_addons
from model.facts.capacity import Reservation
from model.facts.node_zones import NodeZone
from stack.account import Account


class ConfigError(pulumi.RunError):
    """Invalid stack configuration; Pulumi prints the message without a stack trace."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(
            "invalid stack configuration (%d problem%s):\n  - %s"
            % (len(problems), "" if len(problems) == 1 else "s", "\n  - ".join(problems))
        )


@dataclass(frozen=True)
class StackConfig:
    """The fields are the schema's attributes (config_schema.Key.attr) and the two derived below;
    `load` fills them from the schema, no field by hand (tests/graph/test_stack_config.py
    holds the fields to the schema)."""

    region: str
    availability_zone: str
    kubernetes_version: str
    cluster_name: str
    # An EKS cluster to deploy into ("": the stack creates its own) and the shared add-ons the
    # stack installs there (model/facts/shared_addons.py).
    existing_cluster_name: str
    install_shared_addons: tuple[str, ...]
    core_instance_type: str
    core_node_count: int
    ssh_public_key: str
    ssh_allowed_cidrs: tuple[str, ...]
    api_allowed_cidrs: tuple[str, ...]
    admin_role_arns: tuple[str, ...]
    control_plane_log_types: tuple[str, ...]
    control_plane_log_retention_days: int
    flow_logs_destination: str
    flow_logs_retention_days: int
    slinky_chart_version: str
    slurm_version: str
    cert_manager_version: str
    vpc_cidr: str
    # An existing VPC to deploy into ("" for the stack's own) and its subnets (model/checks/vpc_subnets.py).
    vpc_id: str
    private_subnet_ids: tuple[str, ...]
    public_subnet_ids: tuple[str, ...]
    slurmd_image_tag: str
    dlc_base_image: str
    slurmd_base_image: str
    image_builder: str
    build_image_on_preview: bool
    retain_shared_data: bool
    retain_accounting_data: bool
    accounting_instance_class: str
    accounting_storage_gib: int
    accounting_multi_az: bool
    priority_weight_fairshare: int
    priority_weight_age: int
    priority_weight_qos: int
    priority_decay_half_life_days: int
    scale_down_idle_minutes: int
    # The metrics store and its alerts (docs/metrics.md)
    metrics: bool
    metrics_retention_days: int
    alert_emails: tuple[str, ...]
    # Derived. The cluster's two zones (availabilityZone first), then the other pool AZs by zone id
    # (model/facts/node_zones.py).
    node_zones: tuple[NodeZone, ...]
    # gpuPools, or the one pool `slinky` of gpuInstanceType/gpuNodeCount (gpu_pools.DEFAULT_POOL).
    gpu_pools: tuple[gpu_pools.GpuPool, ...]
    # The named users (`users`, model/checks/users.py); empty when unset.
    users: tuple[User, ...]
    # Each pool's capacity reservation as EC2 described it at preview, by id (model/facts/capacity.py).
    reservations: dict[str, Reservation]
    # The on-demand price of every pool's type and the core type (model/facts/cost.py), by type.
    prices: dict[str, cost.Price]
    # The VPC vpcId names, its subnets as EC2 described them at preview; None for the stack's own VPC.
    existing_vpc: vpc_subnets.ExistingVpc | None
    # dlcBaseImage, slurmdBaseImage and the Slinky images as their registries resolved them at
    # preview: by digest (model/checks/image_digests.py).
    images: image_digests.ResolvedImages
    # existingClusterName's cluster as DescribeCluster read it at preview; None for a stack that
    # creates its own.
    existing_cluster: existing_cluster.EksCluster | None

    @property
    def cluster_kubernetes_version(self) -> str:
        """The Kubernetes minor the cluster runs: kubernetesVersion for the stack's own, the read
        version of an existing one (whose every offered version has a pinned cluster-autoscaler:
        model/facts/versions.py CLUSTER_AUTOSCALER_FOR_KUBERNETES)."""
        return self.existing_cluster.version if self.existing_cluster else self.kubernetes_version

    @property
    def csi_drivers(self) -> frozenset[str]:
        """The CSI drivers' EKS add-ons the stack installs: both in its own cluster, in an existing
        one those installSharedAddons lists (the preflight refused one the cluster runs already)."""
        return frozenset(a.eks_addon for a in shared_addons.EKS_ADDONS if self.installs(a))

    def installs(self, addon: shared_addons.SharedAddon) -> bool:
        """Whether the stack installs the shared add-on: always in its own cluster, in an
        existing one only where installSharedAddons lists it."""
        return addon.key in shared_addons.installed(self.existing_cluster_name, self.install_shared_addons)

    @property
    def cost_per_hour(self) -> dict:
        """The costPerHour output (model/facts/cost.py), with what a build of the image costs."""
        return {
            **cost.cost_per_hour(
                self.gpu_pools, self.core_instance_type, self.core_node_count, self.prices, self.reservations
            ),
            "imageBuild": cost.image_build(self.image_builder),
        }

    @property
    def scheduling(self) -> SchedulingPolicy:
        """The scheduling policy of the four priority keys (model/builders/scheduling.py)."""
        return SchedulingPolicy(
            self.priority_weight_fairshare,
            self.priority_weight_age,
            self.priority_weight_qos,
            self.priority_decay_half_life_days,
        )

    @property
    def gpu_node_count(self) -> int:
        """Slurm workers in all pools."""
        return sum(p.node_count for p in self.gpu_pools)


def _given_keys() -> dict[str, str]:
    """Every config key the program was given, with its value (secrets withheld): the CLI's
    language host passes them as the JSON map PULUMI_CONFIG, mocks and the automation API set them
    directly (pulumi/pulumi sdk/python/lib/pulumi/runtime/config.py at v3.272.0: get_config reads
    both)."""
    from pulumi.runtime import config as runtime_config

    given = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return {k: "[secret]" if runtime_config.is_config_secret(k) else str(v) for k, v in given.items()}


def today() -> datetime.date:
    """The day EKS's version calendar is read at (model/facts/eks_versions.py): the day of the run."""
    return datetime.date.today()


def _raw(keys: list[config_schema.Key]) -> dict[str, str | None]:
    """Each key's config string as the CLI hands it over (None when unset)."""
    configs: dict[str, pulumi.Config] = {}
    raw = {}
    for key in keys:
        namespace, _, name = key.name.rpartition(":")
        cfg = configs.setdefault(namespace, pulumi.Config(namespace or None))
        raw[key.name] = cfg.get(name)
    return raw


def _preflight(
    account: preflight.Account,
    checked: config_schema.Checked,
    existing_vpc: vpc_subnets.ExistingVpc | None,
) -> preflight.Findings:
    """Ask the account what it must allow (model/checks/preflight.py): zones, instance type
    offerings, the GPU quotas, the deployer, the pools' capacity reservations. Values already
    refused are left out ("", 0 and [] skip a check)."""
    ok = checked.accepted
    if "aws:region" not in ok or "availabilityZone" not in ok:
        return preflight.Findings((), [])
    return preflight.check(
        account,
        ok["aws:region"],
        ok["availabilityZone"],
        checked.pools,
        ok.get("coreInstanceType", ""),
        ok.get("adminRoleArns", []),
        ok.get("skipGpuQuotaCheck", False),
        core_count=ok.get("coreNodeCount", 0),
        given_zones=_given_zones(ok, existing_vpc),
    )


def _given_zones(ok: dict, existing_vpc: vpc_subnets.ExistingVpc | None) -> tuple[str, ...] | None:
    """The AZs of a given VPC's private subnets for the preflight: () where they were refused,
    None where the stack lays out its own VPC."""
    if not ok.get("vpcId"):
        return None
    return existing_vpc.zones if existing_vpc else ()


def _existing_vpc(
    account: vpc_subnets.NetworkAccount, checked: config_schema.Checked, out: list[Problem]
) -> vpc_subnets.ExistingVpc | None:
    """The VPC vpcId names, checked against the account (model/checks/vpc_subnets.py); None for
    the stack's own VPC, or where a key it needs was refused."""
    ok = checked.accepted
    needed = ("aws:region", "vpcId", "privateSubnetIds", "publicSubnetIds")
    if not ok.get("vpcId") or any(k not in ok for k in needed) or not ok["privateSubnetIds"]:
        return None
    return vpc_subnets.check(
        account,
        ok["aws:region"],
        ok["vpcId"],
        ok["privateSubnetIds"],
        ok["publicSubnetIds"],
        checked.pools,
        ok.get("coreInstanceType", ""),
        ok.get("coreNodeCount", 0),
        out,
    )


def _images(
    registry: image_digests.Registry, checked: config_schema.Checked, out: list[Problem]
) -> image_digests.ResolvedImages | None:
    """Every image resolved to its digest (model/checks/image_digests.py); the images of a key
    already refused (in `out`, the preflight's too) are left out, and then no ResolvedImages is
    made (the stack is refused)."""
    ok = checked.accepted
    refused = {p.key for p in out if p.is_error}
    keys = ("aws:region", "dlcBaseImage", "slurmdBaseImage", "slurmVersion", "slinkyChartVersion")
    usable = {k for k in keys if k in ok and ok[k] and k not in refused}
    # Each key's images are resolved whatever became of the others. The Slinky images' tag is
    # the slurmd base's, which is checked against slurmVersion (config_schema.slurmd_base_is_slurm):
    # only then does the base surely have one.
    slurmd = usable >= {"slurmdBaseImage", "slurmVersion"}
    dlc = usable >= {"aws:region", "dlcBaseImage"}
    images = image_digests.wanted(
        ok["slurmdBaseImage"] if slurmd else None,
        ok["slinkyChartVersion"] if "slinkyChartVersion" in usable else None,
        ok["dlcBaseImage"] if dlc else None,
        ok["aws:region"] if dlc else None,
    )
    return image_digests.resolved_images(image_digests.resolve(registry, images, out))


def _prices(
    account: preflight.Account, checked: config_schema.Checked, out: list[Problem]
) -> dict[str, cost.Price]:
    """The on-demand prices of a stack that is otherwise accepted (asked last: a refused stack
    costs nothing)."""
    ok = checked.accepted
    return preflight.prices(account, ok["aws:region"], checked.pools, ok["coreInstanceType"], out)


def _existing_cluster(
    account: Account, checked: config_schema.Checked, day: datetime.date, out: list[Problem]
) -> existing_cluster.EksCluster | None:
    """existingClusterName's cluster, read and checked (model/checks/existing_cluster.py); None
    for a stack that creates its own, or one whose region or name is refused."""
    ok = checked.accepted
    name, region = ok.get(existing_cluster.KEY, ""), ok.get("aws:region")
    if not name or region is None:
        return None
    vpc_id = ok.get("vpcId", "")
    cluster = existing_cluster.check(
        account, region, name, vpc_id if isinstance(vpc_id, str) else "", day, out
    )
    if cluster is not None and "installSharedAddons" in ok:
        existing_cluster.csi_drivers(cluster, ok["installSharedAddons"], out)
    return cluster


def load(account: Account) -> StackConfig:
    """Read the stack's configuration, apply the schema's rules, then ask the account what it
    must allow. Every warning is logged; any error refuses the stack, all of them at once."""
    day = today()
    return _settled(_raw(list(config_schema.schema(day))), _given_keys(), pulumi.get_project(), account, day)


# The namespace of this project's keys where they are given as settings rather than read from a
# stack's config (Pulumi.yaml's project name).
PROJECT = "slinky-eks"


def from_settings(settings: Mapping[str, str], account: Account) -> StackConfig:
    """The same configuration from `settings` instead of the stack's config: each key of the
    schema as its config string (the project's keys bare, `aws:region` with its namespace), as a
    program in another language hands them to SlurmOnEks (components/slurm_on_eks.py). The same
    rules, the same preflight, the same one error; a key the schema does not declare is refused."""
    day = today()
    raw = {key.name: settings.get(key.name) for key in config_schema.schema(day)}
    given = {(k if ":" in k else f"{PROJECT}:{k}"): v for k, v in settings.items()}
    return _settled(raw, given, PROJECT, account, day)


def _settled(
    raw: Mapping[str, str | None],
    given: Mapping[str, str],
    project: str,
    account: Account,
    day: datetime.date,
) -> StackConfig:
    """`raw` checked by the schema's rules and the account's preflight; `given` (every key handed
    over, namespaced) checked for keys the schema does not declare."""
    keys = list(config_schema.schema(day))
    checked = config_schema.check(raw, pulumi.get_stack(), day)
    vpc_problems: list[Problem] = []
    existing_vpc = _existing_vpc(account, checked, vpc_problems)
    if existing_vpc is not None and "sshAllowedCidrs" in checked.accepted:
        vpc_subnets.internal_login_reach(existing_vpc, checked.accepted["sshAllowedCidrs"], vpc_problems)
    found = _preflight(account, checked, existing_vpc)
    problems = checked.problems + found.problems + vpc_problems
    images = _images(account, checked, problems)
    cluster = _existing_cluster(account, checked, day, problems)
    problems += config_schema.undeclared_keys(project, given, config_schema.project_keys(day))
    problems += config_schema.runner_provider_keys(given, checked.accepted.get("imageBuilder"))
    errors = [p.render(project) for p in problems if p.is_error]
    prices = {} if errors else _prices(account, checked, problems)
    for p in problems:
        if not p.is_error:
            pulumi.log.warn(p.render(project))
    if errors:
        raise ConfigError(errors)
    return StackConfig(
        **{key.attr: held(checked.values[key.name]) for key in keys if key.attr},
        node_zones=found.node_zones,
        gpu_pools=tuple(checked.pools),
        users=tuple(checked.users),
        reservations=found.reservations,
        prices=prices,
        existing_vpc=existing_vpc,
        images=images,
        existing_cluster=cluster,
    )


# StackConfig's fields no single key fills
DERIVED = (
    "node_zones",
    "gpu_pools",
    "users",
    "reservations",
    "prices",
    "existing_vpc",
    "images",
    "existing_cluster",
)


def held(value: Any) -> Any:
    """A checked value as StackConfig holds it: strings without surrounding blanks (a pasted
    sshPublicKey's newline), arrays as tuples of such strings; integers and booleans as they are."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return tuple(held(v) for v in value)
    return value
