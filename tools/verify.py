"""Check a deployed cluster from its stack outputs, through the Kubernetes API.

    pulumi stack output --json --show-secrets > outputs.json
    python -m tools.verify outputs.json [--json] [--fix]

Checks, per GPU pool (the gpuPools output): every GPU node advertises the catalog's GPUs and EFA
interfaces (device plugins); every worker pod Running, on distinct nodes; every Slurm node taking
jobs (the readiness Job's rule, cluster_programs/rollout.py) with the catalog's GRES (never
(null)); each Slurm node's last node health check result (its Comment: docs/health.md), a health
drain named as such; nvidia-smi lists the catalog's GPUs; fi_info reports the
efa provider. Once: controller, restapi and login pods Running; srun offers pmix; the login
endpoint accepts TCP on 22.
--fix first waits for each pool's NodeSet rollout and resumes only what it left stuck (the
same cluster_programs/rollout.py `pulumi up` runs).
An autoscaling pool (minNodes < maxNodes) is checked at the size its NodeSet asks for now, at least
its floor (minNodes) Running; its scaler's state and last decision (the ScaledObject's conditions,
its HPA's replicas and conditions: tools/scaler_state.py) are one more check.

Exit status: 0 every check passed; 1 a check failed; 2 the outputs file is missing, not JSON, masked
(written without --show-secrets) or lacks an output; 3 the Kubernetes API cannot be reached or
refuses the kubeconfig's credentials. Every error is one line on stderr; with --json it is also the
one JSON document on stdout ({"passed": false, "error": ..., "checks": []}).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import shutil
import socket
import sys
import time
from dataclasses import asdict, dataclass
from typing import Protocol

from cluster_programs import rollout
from model.checks.gpu_pools import DEFAULT_POOL, labels_of_pool
from model.facts.catalog import CATALOG, GpuInstanceType
from model.facts.contract import (
    CONTROLLER_CONTAINER,
    CONTROLLER_POD,
    CONTROLLER_POD_PREFIX,
    EFA_RESOURCE,
    GPU_LABELS,
    GPU_RESOURCE,
    LOGIN_POD_PREFIX,
    RESTAPI_POD_PREFIX,
    SLURM_NAMESPACE,
    label_selector,
    nodeset_object,
    slurm_node_prefix,
    worker_pod_prefix,
)
from tools import command_output, scaler_state

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNREACHABLE = 0, 1, 2, 3
WRITE_OUTPUTS = "pulumi stack output --json --show-secrets > outputs.json"
# What verify reads from the stack outputs (__main__.py exports them).
REQUIRED_OUTPUTS = ("kubeconfig", "gpuInstanceType", "gpuNodeCount", "loginHostname")
# How the Pulumi CLI prints a secret output without --show-secrets
# (https://www.pulumi.com/docs/iac/concepts/secrets/, "Secrets and stack outputs").
MASKED = "[secret]"
# Seconds to wait for the API server to accept a connection / answer one request; urllib3
# retries are off so an unreachable endpoint is one error in seconds, not minutes of retries.
CONNECT_TIMEOUT, READ_TIMEOUT = 5, 60
NAMESPACE = SLURM_NAMESPACE
FIX_TIMEOUT_SECONDS = 600
ROLES = {"controller": CONTROLLER_POD_PREFIX, "restapi": RESTAPI_POD_PREFIX, "login": LOGIN_POD_PREFIX}
CONTAINERS = {"login": "login", "worker": "slurmd"}


@dataclass(frozen=True)
class Pool:
    """A GPU pool as the gpuPools output lists it, and how its nodes and pods are found."""

    name: str
    gpu: GpuInstanceType
    nodes: int
    several: bool  # one of several pools: its nodes carry the pool label, its checks its name
    # The bounds (the gpuPools output's minNodes/maxNodes; nodeCount each for a stack from before them).
    min_nodes: int = -1
    max_nodes: int = -1

    @property
    def autoscales(self) -> bool:
        return 0 <= self.min_nodes < self.max_nodes

    @property
    def node_selector(self) -> str:
        return label_selector({**GPU_LABELS, **labels_of_pool(self.name, self.several)})

    @property
    def worker_prefix(self) -> str:
        return worker_pod_prefix(self.name)

    def named(self, check: str) -> str:
        return f"{check} ({self.name})" if self.several else check


@dataclass(frozen=True)
class Pod:
    name: str
    phase: str
    node: str | None


@dataclass(frozen=True)
class Node:
    name: str
    allocatable: dict[str, str]


class ClusterApi(Protocol):
    def pods(self, namespace: str) -> list[Pod]: ...
    def nodes(self, label_selector: str) -> list[Node]: ...
    def exec(self, namespace: str, pod: str, container: str, command: list[str]) -> tuple[int, str]: ...
    def nodeset(self, namespace: str, name: str) -> dict: ...
    def pod_objects(self, namespace: str, label_selector: str) -> list[dict]: ...
    # KEDA's ScaledObject and the HPA it made, or None where there is none.
    def scaled_object(self, namespace: str, name: str) -> dict | None: ...
    def hpa(self, namespace: str, name: str) -> dict | None: ...


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _prefixed(pods: list[Pod], prefix: str) -> list[Pod]:
    return sorted((p for p in pods if p.name.startswith(prefix)), key=lambda p: p.name)


def check_control_pods(pods: list[Pod]) -> list[Check]:
    checks = []
    for role in ("controller", "restapi", "login"):
        found = _prefixed(pods, ROLES[role])
        running = [p for p in found if p.phase == "Running"]
        checks.append(
            Check(
                f"{role} pod Running",
                bool(running),
                ", ".join(f"{p.name} {p.phase}" for p in found) or "no pod",
            )
        )
    return checks


def check_workers(pods: list[Pod], pool: Pool) -> list[Check]:
    found = _prefixed(pods, pool.worker_prefix)
    running = [p for p in found if p.phase == "Running"]
    workers = pool.nodes
    checks = [
        Check(
            pool.named("worker pods Running"),
            len(running) == workers,
            f"{len(running)} of {workers} Running: " + ", ".join(f"{p.name} {p.phase}" for p in found),
        )
    ]
    nodes = [p.node for p in running]
    checks.append(
        Check(
            pool.named("workers on distinct nodes"),
            len(set(nodes)) == len(nodes) and len(nodes) == workers,
            ", ".join(f"{p.name}@{p.node}" for p in running) or "no running worker",
        )
    )
    return checks


def check_device_plugins(nodes: list[Node], pool: Pool) -> Check:
    """Each GPU node advertises the catalog's GPUs and EFA interfaces: the device plugins run
    there (a plugin that never tolerated the taint advertises nothing). An autoscaling pool's
    nodes are those of its Running workers (verify picks them): cluster-autoscaler may hold an
    emptied node for its unneeded time, or be starting one."""
    gpu, workers = pool.gpu, pool.nodes
    want = {GPU_RESOURCE: str(gpu.gpus), EFA_RESOURCE: str(gpu.efa_interfaces)}
    seen = [f"{n.name}: " + ", ".join(f"{k}={n.allocatable.get(k, '0')}" for k in want) for n in nodes]
    ok = len(nodes) == workers and all(all(n.allocatable.get(k) == v for k, v in want.items()) for n in nodes)
    return Check(
        pool.named("GPU nodes advertise GPUs and EFA"),
        ok,
        f"{len(nodes)} of {workers} nodes; want "
        + ", ".join(f"{k}={v}" for k, v in want.items())
        + ("; " + "; ".join(seen) if seen else ""),
    )


def check_slurm_nodes(scontrol: str, pool: Pool, running: set[str] | None = None) -> Check:
    """The pool's Slurm nodes (named <pool>-<ordinal> after its NodeSet) take jobs and carry the
    catalog's GRES. Whether a node takes jobs, or is stuck, is the readiness Job's own rule
    (cluster_programs/rollout.py SlurmNode.usable and .stuck, over scontrol's State=BASE+FLAG...):
    a node running a job (MIXED, ALLOCATED, COMPLETING) takes jobs, a powered-down one is not
    stuck."""
    gpu, workers = pool.gpu, pool.nodes
    nodes = [n for n in rollout.parse_scontrol(scontrol) if n.name.rsplit("-", 1)[0] == pool.name]
    if pool.autoscales and running is not None:
        # The records of nodes the scaler took away stay in Slurm (pruneSlurmNodeRecords Never):
        # only the nodes of Running workers count.
        nodes = [n for n in nodes if n.name in running]
    gres = command_output.gres_by_node(scontrol)
    bad = [
        f"{n.describe()} Gres={gres.get(n.name, '(null)')}"
        for n in nodes
        if not (n.usable and command_output.without_sockets(gres.get(n.name, "(null)")) == gpu.gres)
    ]
    ok = len(nodes) == workers and not bad
    detail = f"{len(nodes)} of {workers} nodes; want each taking jobs with {gpu.gres}"
    if bad:
        detail += "; wrong: " + "; ".join(bad)
        if any("Gres=(null)" in b for b in bad):
            detail += " (GRES (null): GresTypes or the nodeset's Gres type is wrong)"
        if health := sorted(n.name for n in nodes if n.health_drained):
            detail += (
                f" (drained by the node health check: {','.join(health)}; it undrains them once "
                "the fault is gone, except an Xid drain, which an administrator resumes after the "
                "GPU reset: docs/health.md; nothing here resumes them)"
            )
        if stuck := sorted(n.name for n in nodes if n.stuck and not n.health_drained):
            detail += (
                f" (DOWN/DRAIN: {','.join(stuck)}; `verify --fix` resumes those a rollout "
                "left stuck and names the rest)"
            )
    return Check(pool.named("slurm nodes take jobs with GRES"), ok, detail)


def check_node_health(scontrol: str, pool: Pool) -> Check:
    """Each of the pool's Slurm nodes' last node health check result, as the check left it in the
    node's Comment ("health <UTC time>: ok" or its faults: cluster_programs/node_health.py). A node
    with no result yet passes (slurmd runs the check every HealthCheckInterval; the run at slurmd's
    start comes before the node exists in Slurm); one whose last result names a fault fails."""
    nodes = sorted(
        (n for n in rollout.parse_scontrol(scontrol) if n.name.rsplit("-", 1)[0] == pool.name),
        key=lambda n: n.name,
    )
    results = [
        f"{n.name}: {n.comment or 'no health result yet'}"
        + (" (drained by the check)" if n.health_drained else "")
        for n in nodes
    ]
    failing = [n for n in nodes if n.health_drained or (n.comment and not n.comment.endswith(": ok"))]
    return Check(pool.named("node health check"), not failing, "; ".join(results) or "no Slurm node")


def check_gpus(worker: str, output: str, gpu: GpuInstanceType) -> Check:
    models = command_output.parse_gpu_list(output)
    ok = len(models) == gpu.gpus and all(m == gpu.gpu_model for m in models)
    return Check(
        f"{worker} GPUs",
        ok,
        f"{len(models)}x {', '.join(sorted(set(models))) or '-'}; want {gpu.gpus}x {gpu.gpu_model}",
    )


def check_efa(worker: str, output: str) -> Check:
    ok = command_output.efa_provider_listed(output)
    return Check(
        f"{worker} EFA provider",
        ok,
        "provider: efa" if ok else "fi_info -p efa lists no efa provider: " + output.strip()[-200:],
    )


def check_pmix(output: str) -> Check:
    types = command_output.mpi_types(output)
    return Check("srun offers pmix", "pmix" in types, "MPI types: " + (", ".join(types) or output.strip()))


def check_login_port(host: str, port: int = 22, timeout: float = 5.0) -> Check:
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            banner = s.recv(64).decode(errors="replace").strip()
        return Check("login endpoint accepts SSH", banner.startswith("SSH-"), f"{host}:{port} {banner}")
    except OSError as e:
        return Check(
            "login endpoint accepts SSH",
            False,
            f"{host}:{port}: {e} (is this machine inside sshAllowedCidrs?)",
        )


def pools_of(outputs: dict) -> list[Pool]:
    """The pools of the gpuPools output; a stack from before pools has one, `slinky`."""
    listed = outputs.get("gpuPools") or [
        {
            "name": DEFAULT_POOL,
            "instanceType": outputs["gpuInstanceType"],
            "nodeCount": outputs["gpuNodeCount"],
        }
    ]
    return [
        Pool(
            p["name"],
            CATALOG[p["instanceType"]],
            int(p["nodeCount"]),
            len(listed) > 1,
            int(p.get("minNodes", p["nodeCount"])),
            int(p.get("maxNodes", p["nodeCount"])),
        )
        for p in listed
    ]


def sized_now(api: ClusterApi, pool: Pool, pods: list[Pod]) -> tuple[Pool, list[Check]]:
    """An autoscaling pool as it is meant to be now: the worker pods Running, which must be at
    least its floor (minNodes, or what the NodeSet asks for where the scaler holds it lower, as
    idleReplicaCount 0 does) and at most maxNodes. A pool of a fixed size as it is."""
    if not pool.autoscales:
        return pool, []
    asked = int((api.nodeset(NAMESPACE, nodeset_object(pool.name)).get("spec") or {}).get("replicas", 1))
    found = _prefixed(pods, pool.worker_prefix)
    running = [p for p in found if p.phase == "Running"]
    floor = min(pool.min_nodes, asked)
    ok = floor <= len(running) <= pool.max_nodes
    detail = (
        f"{len(running)} Running; the NodeSet asks for {asked} (bounds {pool.min_nodes}-{pool.max_nodes}, "
        f"floor {floor}): " + (", ".join(f"{p.name} {p.phase}" for p in found) or "no worker pod")
    )
    sized = Pool(pool.name, pool.gpu, len(running), pool.several, pool.min_nodes, pool.max_nodes)
    return sized, [Check(pool.named("worker pods at the scaler's size"), ok, detail)]


def check_scaler(api: ClusterApi, pool: Pool) -> Check:
    """The pool's scaler: its ScaledObject Ready and its HPA able to scale, with its last decision."""
    name = f"scale-{pool.name}"  # model/builders/autoscaling.py scaled_object_name
    ok, detail = scaler_state.assess(
        api.scaled_object(NAMESPACE, name), api.hpa(NAMESPACE, scaler_state.hpa_name(name)), name
    )
    return Check(pool.named("scaler"), ok, detail)


class _RolloutCluster:
    """cluster_programs.rollout.Cluster over verify's API for one NodeSet: scontrol in the controller pod, as
    in the Job."""

    def __init__(self, api: ClusterApi, nodeset: str):
        self.api, self.nodeset_name = api, nodeset

    def nodeset(self) -> dict:
        return self.api.nodeset(NAMESPACE, nodeset_object(self.nodeset_name))

    def pods(self, selector: str) -> list[dict]:
        return self.api.pod_objects(NAMESPACE, selector) if selector else []

    def slurm(self, argv: list[str]) -> str:
        rc, out = self.api.exec(NAMESPACE, CONTROLLER_POD, CONTROLLER_CONTAINER, argv)
        if rc != 0:
            raise rollout.RolloutFailed(
                f"{' '.join(argv)} in {CONTROLLER_POD} exited {rc}: {out.strip()[-300:]}"
            )
        return out


def fix_rollout(
    api: ClusterApi, nodeset: str = DEFAULT_POOL, check: str = "rollout settled (--fix)", sleep=None
) -> Check:
    """The readiness Job's logic, from here: wait for a pool's NodeSet rollout (the one pool of a
    stack without gpuPools by default), resume what it left stuck."""
    lines: list[str] = []
    try:
        done = rollout.settle(
            _RolloutCluster(api, nodeset),
            slurm_node_prefix(nodeset),
            FIX_TIMEOUT_SECONDS,
            sleep=sleep or time.sleep,
            log=lines.append,
        )
        return Check(check, True, "; ".join([*lines[:-1], done]))
    except rollout.RolloutFailed as e:
        return Check(check, False, str(e))


def verify(outputs: dict, api: ClusterApi, fix: bool = False, connect=None, sleep=None) -> list[Check]:
    pods = api.pods(NAMESPACE)
    pools, checks = [], []
    for listed in pools_of(outputs):
        pool, sized = sized_now(api, listed, pods)
        pools.append(pool)
        checks += sized
        if pool.autoscales:
            checks.append(check_scaler(api, pool))
    for pool in pools:
        nodes = api.nodes(pool.node_selector)
        if pool.autoscales:
            hosts = {p.node for p in _prefixed(pods, pool.worker_prefix) if p.phase == "Running"}
            nodes = [n for n in nodes if n.name in hosts]
        checks.append(check_device_plugins(nodes, pool))
    checks += check_control_pods(pods)
    for pool in pools:
        checks += check_workers(pods, pool)
    login = next((p.name for p in _prefixed(pods, ROLES["login"]) if p.phase == "Running"), None)
    if fix:
        checks += [
            fix_rollout(api, pool.name, pool.named("rollout settled (--fix)"), sleep=sleep) for pool in pools
        ]
    if login:
        _, scontrol = api.exec(NAMESPACE, login, CONTAINERS["login"], ["scontrol", "-o", "show", "node"])
        checks += [check_slurm_nodes(scontrol, pool, _slurm_names(pods, pool)) for pool in pools]
        checks += [check_node_health(scontrol, pool) for pool in pools]
        _, mpi = api.exec(NAMESPACE, login, CONTAINERS["login"], ["srun", "--mpi=list"])
        checks.append(check_pmix(mpi))
    for pool in pools:
        for worker in (p.name for p in _prefixed(pods, pool.worker_prefix) if p.phase == "Running"):
            _, smi = api.exec(NAMESPACE, worker, CONTAINERS["worker"], ["nvidia-smi", "-L"])
            checks.append(check_gpus(worker, smi, pool.gpu))
            _, fi = api.exec(
                NAMESPACE, worker, CONTAINERS["worker"], ["/opt/amazon/efa/bin/fi_info", "-p", "efa"]
            )
            checks.append(check_efa(worker, fi))
    checks.append((connect or check_login_port)(outputs["loginHostname"]))
    return checks


def _slurm_names(pods: list[Pod], pool: Pool) -> set[str]:
    """The Slurm node names of the pool's Running workers: the pod slurm-worker-<pool>-<n> is
    the node <pool>-<n> (model/facts/contract.py worker_pod_prefix, slurm_node_prefix)."""
    return {
        slurm_node_prefix(pool.name) + p.name.removeprefix(pool.worker_prefix)
        for p in _prefixed(pods, pool.worker_prefix)
        if p.phase == "Running"
    }


class VerifyError(Exception):
    """An expected failure: one line naming the cause and the fix, and the exit status."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def load_outputs(source: str) -> dict:
    """The stack outputs from a file (or - for stdin), checked for what verify needs."""
    where = "stdin" if source == "-" else source
    try:
        text = sys.stdin.read() if source == "-" else pathlib.Path(source).read_text()
    except FileNotFoundError:
        raise VerifyError(
            f"{source}: no such file; write it with `{WRITE_OUTPUTS}`", EXIT_BAD_INPUT
        ) from None
    except OSError as e:
        raise VerifyError(f"{source}: cannot be read ({e.strerror})", EXIT_BAD_INPUT) from None
    try:
        outputs = json.loads(text)
    except json.JSONDecodeError as e:
        raise VerifyError(
            f"{where} is not JSON (line {e.lineno}: {e.msg}); write it with `{WRITE_OUTPUTS}`", EXIT_BAD_INPUT
        ) from None
    if not isinstance(outputs, dict):
        raise VerifyError(
            f"{where} is not a JSON object of stack outputs; write it with `{WRITE_OUTPUTS}`", EXIT_BAD_INPUT
        )
    missing = [k for k in REQUIRED_OUTPUTS if k not in outputs]
    if missing:
        raise VerifyError(
            f"{where} has no {', '.join(missing)} output: write it with `{WRITE_OUTPUTS}` "
            "after a `pulumi up` that completed",
            EXIT_BAD_INPUT,
        )
    if outputs["kubeconfig"] == MASKED:
        raise VerifyError(
            f"the kubeconfig output in {where} is masked: run `{WRITE_OUTPUTS}` (--show-secrets)",
            EXIT_BAD_INPUT,
        )
    if outputs["gpuInstanceType"] not in CATALOG:
        raise VerifyError(
            f"gpuInstanceType output {outputs['gpuInstanceType']!r} in {where} is not in "
            "the instance catalog (model/facts/catalog.py)",
            EXIT_BAD_INPUT,
        )
    try:
        outputs["gpuNodeCount"] = int(outputs["gpuNodeCount"])
    except (TypeError, ValueError):
        raise VerifyError(
            f"gpuNodeCount output {outputs['gpuNodeCount']!r} in {where} is not a whole number",
            EXIT_BAD_INPUT,
        ) from None
    pools = outputs.get("gpuPools")
    if pools is not None and not (
        isinstance(pools, list)
        and all(
            isinstance(p, dict)
            and isinstance(p.get("name"), str)
            and p.get("instanceType") in CATALOG
            and isinstance(p.get("nodeCount"), int)
            for p in pools
        )
    ):
        raise VerifyError(
            f"gpuPools output {pools!r} in {where} is not a list of pools with a name, an "
            "instanceType of the instance catalog and a nodeCount",
            EXIT_BAD_INPUT,
        )
    return outputs


def kubeconfig_of(outputs: dict, source: str) -> dict:
    """The kubeconfig output as a dict (pulumi-eks exports it as an object or a JSON string)."""
    kubeconfig = outputs["kubeconfig"]
    try:
        kubeconfig = json.loads(kubeconfig) if isinstance(kubeconfig, str) else kubeconfig
    except json.JSONDecodeError:
        kubeconfig = None
    if not isinstance(kubeconfig, dict) or not kubeconfig.get("clusters"):
        raise VerifyError(
            f"the kubeconfig output in {'stdin' if source == '-' else source} is not a "
            f"kubeconfig with a cluster; write the file with `{WRITE_OUTPUTS}`",
            EXIT_BAD_INPUT,
        )
    return kubeconfig


class KubernetesApi:
    """ClusterApi over the official client, from the stack's kubeconfig output. Connection and
    authorisation failures become one VerifyError naming the endpoint."""

    def __init__(self, kubeconfig: dict):
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        for user in kubeconfig.get("users") or []:
            # pulumi-eks' kubeconfig gets its token from `aws eks get-token`; without the CLI the
            # client would log the error and go on unauthenticated.
            command = ((user or {}).get("user") or {}).get("exec", {}).get("command")
            if command and shutil.which(command) is None:
                raise VerifyError(
                    f"the kubeconfig runs `{command}` for a token but it is not on PATH: install "
                    "the AWS CLI (https://docs.aws.amazon.com/cli/latest/userguide/"
                    "getting-started-install.html)",
                    EXIT_BAD_INPUT,
                )
        configuration = client.Configuration()
        configuration.retries = 0
        try:
            api = config.new_client_from_config_dict(kubeconfig, client_configuration=configuration)
        except (ConfigException, KeyError, TypeError, ValueError) as e:
            raise VerifyError(
                f"the kubeconfig output cannot be used ({e}); write it with `{WRITE_OUTPUTS}`", EXIT_BAD_INPUT
            ) from None
        self.host = configuration.host
        self.core = client.CoreV1Api(api)

    def _call(self, what: str, fn, *args, **kwargs):
        import urllib3
        from kubernetes.client.exceptions import ApiException

        try:
            return fn(*args, **kwargs)
        except ApiException as e:
            if e.status in (401, 403):
                raise VerifyError(
                    f"the Kubernetes API at {self.host} refused {what} ({e.status} {e.reason}): the kubeconfig "
                    "authenticates with `aws eks get-token`; check `aws sts get-caller-identity` names the "
                    "deployer or a role in adminRoleArns",
                    EXIT_UNREACHABLE,
                ) from None
            raise VerifyError(
                f"the Kubernetes API at {self.host} failed {what} ({e.status} {e.reason})", EXIT_UNREACHABLE
            ) from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            # urllib3 prefixes the connection object's repr: keep only the cause.
            reason = re.sub(r"^<[^>]*>:\s*", "", str(getattr(e, "reason", None) or e))
            raise VerifyError(
                f"the Kubernetes API at {self.host} is unreachable ({reason}): "
                "is the cluster up, and may this machine reach its endpoint?",
                EXIT_UNREACHABLE,
            ) from None

    def pods(self, namespace: str) -> list[Pod]:
        return [
            Pod(p.metadata.name, p.status.phase, p.spec.node_name)
            for p in self._call(
                "listing pods",
                self.core.list_namespaced_pod,
                namespace,
                _request_timeout=(CONNECT_TIMEOUT, READ_TIMEOUT),
            ).items
        ]

    def nodes(self, label_selector: str) -> list[Node]:
        return [
            Node(n.metadata.name, dict(n.status.allocatable or {}))
            for n in self._call(
                "listing nodes",
                self.core.list_node,
                label_selector=label_selector,
                _request_timeout=(CONNECT_TIMEOUT, READ_TIMEOUT),
            ).items
        ]

    def nodeset(self, namespace: str, name: str) -> dict:
        from kubernetes import client

        return client.CustomObjectsApi(self.core.api_client).get_namespaced_custom_object(
            "slinky.slurm.net", "v1beta1", namespace, "nodesets", name
        )

    def pod_objects(self, namespace: str, label_selector: str) -> list[dict]:
        resp = self.core.list_namespaced_pod(namespace, label_selector=label_selector, _preload_content=False)
        return json.loads(resp.data)["items"]

    def _absent_is_none(self, what: str, fn, *args):
        from kubernetes.client.exceptions import ApiException

        try:
            return fn(*args)
        except ApiException as e:
            if e.status == 404:
                return None
            return self._call(what, fn, *args)

    def scaled_object(self, namespace: str, name: str) -> dict | None:
        from kubernetes import client

        api = client.CustomObjectsApi(self.core.api_client)
        return self._absent_is_none(
            f"reading ScaledObject {name}",
            api.get_namespaced_custom_object,
            "keda.sh",
            "v1alpha1",
            namespace,
            "scaledobjects",
            name,
        )

    def hpa(self, namespace: str, name: str) -> dict | None:
        from kubernetes import client

        api = client.AutoscalingV2Api(self.core.api_client)
        found = self._absent_is_none(
            f"reading HPA {name}", api.read_namespaced_horizontal_pod_autoscaler, name, namespace
        )
        return None if found is None else api.api_client.sanitize_for_serialization(found)

    def exec(self, namespace: str, pod: str, container: str, command: list[str]) -> tuple[int, str]:
        from kubernetes.stream import stream

        resp = self._call(
            f"exec in {pod}",
            stream,
            self.core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            container=container,
            command=command,
            stdout=True,
            stderr=True,
            stdin=False,
            tty=False,
            _preload_content=False,
        )
        resp.run_forever(timeout=600)
        out = resp.read_stdout() + resp.read_stderr()
        return (resp.returncode or 0), out


def render_table(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = [f"{'PASS' if c.ok else 'FAIL'}  {c.name:<{width}}  {c.detail}" for c in checks]
    lines.append(f"{sum(c.ok for c in checks)}/{len(checks)} checks passed")
    return "\n".join(lines)


def main(argv: list[str] | None = None, api: ClusterApi | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="verify", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("outputs", help="`pulumi stack output --json --show-secrets` (a file, or - for stdin)")
    p.add_argument("--json", action="store_true", help="machine-readable result for CI")
    p.add_argument(
        "--fix",
        action="store_true",
        help="first wait for the NodeSet rollout and resume the nodes it left stuck",
    )
    args = p.parse_args(argv)
    try:
        outputs = load_outputs(args.outputs)
        checks = verify(outputs, api or KubernetesApi(kubeconfig_of(outputs, args.outputs)), fix=args.fix)
    except VerifyError as e:
        print(f"verify: {e}", file=sys.stderr)
        if args.json:
            print(
                json.dumps(
                    {"passed": False, "error": str(e), "exitCode": e.exit_code, "checks": []}, indent=2
                )
            )
        return e.exit_code
    passed = all(c.ok for c in checks)
    if args.json:
        print(json.dumps({"passed": passed, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        print(render_table(checks))
    return EXIT_PASSED if passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
