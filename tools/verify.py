"""Check a deployed cluster from its stack outputs, through the Kubernetes API.

    pulumi stack output --json --show-secrets > outputs.json
    python -m tools.verify outputs.json [--json] [--fix]

Checks: every GPU node advertises the catalog's GPUs and EFA interfaces (device plugins);
controller, restapi, login and every worker pod Running; workers on distinct nodes;
every Slurm node idle with the catalog's GRES (never (null)); nvidia-smi lists the catalog's
GPUs; fi_info reports the efa provider; srun offers pmix; the login endpoint accepts TCP on 22.
--fix first waits for the operator's NodeSet rollout and resumes only what it left stuck (the
same tools/rollout.py `pulumi up` runs). Exit status 1 on any failure.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import socket
import sys
import time
from dataclasses import asdict, dataclass
from typing import Protocol

from components.catalog import CATALOG, GpuInstanceType
from components.slurm_values import CONTROLLER_CONTAINER, CONTROLLER_POD, NODESET_OBJECT, SLURM_NODE_PREFIX
from tools import rollout, slurm_state

NAMESPACE = "slurm"
FIX_TIMEOUT_SECONDS = 600
# Pod name prefixes the operator uses for release `slurm` (slinky-chart.md; the walkthrough's
# `kubectl get pods`): controller-0, restapi-..., login-slinky-..., worker-slinky-N.
ROLES = {"controller": "slurm-controller-", "restapi": "slurm-restapi-",
         "login": "slurm-login-slinky-", "worker": "slurm-worker-slinky-"}
CONTAINERS = {"login": "login", "worker": "slurmd"}
GPU_NODES = "role=gpu"  # the GPU node group's label (components/node_groups.py)


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


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _role(pods: list[Pod], role: str) -> list[Pod]:
    return sorted((p for p in pods if p.name.startswith(ROLES[role])), key=lambda p: p.name)


def check_pods(pods: list[Pod], workers: int) -> list[Check]:
    checks = []
    for role in ("controller", "restapi", "login"):
        found = _role(pods, role)
        running = [p for p in found if p.phase == "Running"]
        checks.append(Check(f"{role} pod Running", bool(running),
                            ", ".join(f"{p.name} {p.phase}" for p in found) or "no pod"))
    found = _role(pods, "worker")
    running = [p for p in found if p.phase == "Running"]
    checks.append(Check("worker pods Running", len(running) == workers,
                        f"{len(running)} of {workers} Running: " + ", ".join(f"{p.name} {p.phase}" for p in found)))
    nodes = [p.node for p in running]
    checks.append(Check("workers on distinct nodes", len(set(nodes)) == len(nodes) and len(nodes) == workers,
                        ", ".join(f"{p.name}@{p.node}" for p in running) or "no running worker"))
    return checks


def check_device_plugins(nodes: list[Node], gpu: GpuInstanceType, workers: int) -> Check:
    """Each GPU node advertises the catalog's GPUs and EFA interfaces: the device plugins run
    there (a plugin that never tolerated the taint advertises nothing)."""
    want = {"nvidia.com/gpu": str(gpu.gpus), "vpc.amazonaws.com/efa": str(gpu.efa_interfaces)}
    seen = [f"{n.name}: " + ", ".join(f"{k}={n.allocatable.get(k, '0')}" for k in want) for n in nodes]
    ok = len(nodes) == workers and all(all(n.allocatable.get(k) == v for k, v in want.items()) for n in nodes)
    return Check("GPU nodes advertise GPUs and EFA", ok,
                 f"{len(nodes)} of {workers} nodes; want " + ", ".join(f"{k}={v}" for k, v in want.items())
                 + ("; " + "; ".join(seen) if seen else ""))


def check_slurm_nodes(sinfo: str, gpu: GpuInstanceType, workers: int) -> Check:
    nodes = slurm_state.parse_sinfo(sinfo)
    bad = [f"{n.name} {n.state} {n.gres}" for n in nodes if not (n.state == "idle" and n.gres_plain == gpu.gres)]
    ok = len(nodes) == workers and not bad
    detail = f"{len(nodes)} of {workers} nodes; want idle with {gpu.gres}"
    if bad:
        detail += "; wrong: " + "; ".join(bad)
        if any("(null)" in b for b in bad):
            detail += " (GRES (null): GresTypes or the nodeset's Gres type is wrong)"
        if stuck := slurm_state.nodes_to_resume(nodes):
            detail += (f" (DOWN/DRAIN: {','.join(stuck)}; `verify --fix` resumes those a rollout "
                       "left stuck and names the rest)")
    return Check("slurm nodes idle with GRES", ok, detail)


def check_gpus(worker: str, output: str, gpu: GpuInstanceType) -> Check:
    models = slurm_state.parse_gpu_list(output)
    ok = len(models) == gpu.gpus and all(m == gpu.gpu_model for m in models)
    return Check(f"{worker} GPUs", ok, f"{len(models)}x {', '.join(sorted(set(models))) or '-'}; "
                                      f"want {gpu.gpus}x {gpu.gpu_model}")


def check_efa(worker: str, output: str) -> Check:
    ok = slurm_state.efa_provider_listed(output)
    return Check(f"{worker} EFA provider", ok,
                 "provider: efa" if ok else "fi_info -p efa lists no efa provider: " + output.strip()[-200:])


def check_pmix(output: str) -> Check:
    types = slurm_state.mpi_types(output)
    return Check("srun offers pmix", "pmix" in types, "MPI types: " + (", ".join(types) or output.strip()))


def check_login_port(host: str, port: int = 22, timeout: float = 5.0) -> Check:
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            banner = s.recv(64).decode(errors="replace").strip()
        return Check("login endpoint accepts SSH", banner.startswith("SSH-"), f"{host}:{port} {banner}")
    except OSError as e:
        return Check("login endpoint accepts SSH", False,
                     f"{host}:{port}: {e} (is this machine inside sshAllowedCidrs?)")


class _RolloutCluster:
    """tools.rollout.Cluster over verify's API: scontrol in the controller pod, as in the Job."""

    def __init__(self, api: ClusterApi):
        self.api = api

    def nodeset(self) -> dict:
        return self.api.nodeset(NAMESPACE, NODESET_OBJECT)

    def pods(self, selector: str) -> list[dict]:
        return self.api.pod_objects(NAMESPACE, selector) if selector else []

    def slurm(self, argv: list[str]) -> str:
        rc, out = self.api.exec(NAMESPACE, CONTROLLER_POD, CONTROLLER_CONTAINER, argv)
        if rc != 0:
            raise rollout.RolloutFailed(f"{' '.join(argv)} in {CONTROLLER_POD} exited {rc}: {out.strip()[-300:]}")
        return out


def fix_rollout(api: ClusterApi, sleep=None) -> Check:
    """The readiness Job's logic, from here: wait for the rollout, resume what it left stuck."""
    lines: list[str] = []
    try:
        done = rollout.settle(_RolloutCluster(api), SLURM_NODE_PREFIX, FIX_TIMEOUT_SECONDS,
                              sleep=sleep or time.sleep, log=lines.append)
        return Check("rollout settled (--fix)", True, "; ".join([*lines[:-1], done]))
    except rollout.RolloutFailed as e:
        return Check("rollout settled (--fix)", False, str(e))


def verify(outputs: dict, api: ClusterApi, fix: bool = False, connect=None, sleep=None) -> list[Check]:
    gpu = CATALOG[outputs["gpuInstanceType"]]
    workers = int(outputs["gpuNodeCount"])
    pods = api.pods(NAMESPACE)
    checks = [check_device_plugins(api.nodes(GPU_NODES), gpu, workers), *check_pods(pods, workers)]
    login = next((p.name for p in _role(pods, "login") if p.phase == "Running"), None)
    if fix:
        checks.append(fix_rollout(api, sleep=sleep))
    if login:
        _, sinfo = api.exec(NAMESPACE, login, CONTAINERS["login"], ["sinfo", "-N", "-h", "-o", "%N %T %G"])
        checks.append(check_slurm_nodes(sinfo, gpu, workers))
        _, mpi = api.exec(NAMESPACE, login, CONTAINERS["login"], ["srun", "--mpi=list"])
        checks.append(check_pmix(mpi))
    for worker in (p.name for p in _role(pods, "worker") if p.phase == "Running"):
        _, smi = api.exec(NAMESPACE, worker, CONTAINERS["worker"], ["nvidia-smi", "-L"])
        checks.append(check_gpus(worker, smi, gpu))
        _, fi = api.exec(NAMESPACE, worker, CONTAINERS["worker"], ["/opt/amazon/efa/bin/fi_info", "-p", "efa"])
        checks.append(check_efa(worker, fi))
    checks.append((connect or check_login_port)(outputs["loginHostname"]))
    return checks


class KubernetesApi:
    """ClusterApi over the official client, from the stack's kubeconfig output."""

    def __init__(self, kubeconfig: str | dict):
        from kubernetes import client, config
        cfg = json.loads(kubeconfig) if isinstance(kubeconfig, str) else kubeconfig
        self.core = client.CoreV1Api(config.new_client_from_config_dict(cfg))

    def pods(self, namespace: str) -> list[Pod]:
        return [Pod(p.metadata.name, p.status.phase, p.spec.node_name)
                for p in self.core.list_namespaced_pod(namespace).items]

    def nodes(self, label_selector: str) -> list[Node]:
        return [Node(n.metadata.name, dict(n.status.allocatable or {}))
                for n in self.core.list_node(label_selector=label_selector).items]

    def nodeset(self, namespace: str, name: str) -> dict:
        from kubernetes import client
        return client.CustomObjectsApi(self.core.api_client).get_namespaced_custom_object(
            "slinky.slurm.net", "v1beta1", namespace, "nodesets", name)

    def pod_objects(self, namespace: str, label_selector: str) -> list[dict]:
        resp = self.core.list_namespaced_pod(namespace, label_selector=label_selector, _preload_content=False)
        return json.loads(resp.data)["items"]

    def exec(self, namespace: str, pod: str, container: str, command: list[str]) -> tuple[int, str]:
        from kubernetes.stream import stream
        resp = stream(self.core.connect_get_namespaced_pod_exec, pod, namespace, container=container,
                      command=command, stdout=True, stderr=True, stdin=False, tty=False,
                      _preload_content=False)
        resp.run_forever(timeout=600)
        out = resp.read_stdout() + resp.read_stderr()
        return (resp.returncode or 0), out


def render_table(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = [f"{'PASS' if c.ok else 'FAIL'}  {c.name:<{width}}  {c.detail}" for c in checks]
    lines.append(f"{sum(c.ok for c in checks)}/{len(checks)} checks passed")
    return "\n".join(lines)


def main(argv: list[str] | None = None, api: ClusterApi | None = None) -> int:
    p = argparse.ArgumentParser(prog="verify", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outputs", help="`pulumi stack output --json --show-secrets` (a file, or - for stdin)")
    p.add_argument("--json", action="store_true", help="machine-readable result for CI")
    p.add_argument("--fix", action="store_true",
                   help="first wait for the NodeSet rollout and resume the nodes it left stuck")
    args = p.parse_args(argv)
    text = sys.stdin.read() if args.outputs == "-" else pathlib.Path(args.outputs).read_text()
    outputs = json.loads(text)
    checks = verify(outputs, api or KubernetesApi(outputs["kubeconfig"]), fix=args.fix)
    passed = all(c.ok for c in checks)
    if args.json:
        print(json.dumps({"passed": passed, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        print(render_table(checks))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
