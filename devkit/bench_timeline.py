"""The modelled `pulumi up` timeline of the program's real resource graph: each resource starts
when everything it depends on is done and takes its type's typical duration (the table below,
each with its source). Prints the critical path, the floor (what no wiring can shorten) and
their ratio.

    python -m devkit.bench_timeline [--stack dev] [--set gpuInstanceType=p5.48xlarge ...]

Two waits are not edges of the graph, and the model adds them:
- the slurmd image is pulled once per node, by the first pod that runs it: every pod running it
  (the pre-pull DaemonSet, the NodeSet in the Slurm release) is Ready no earlier than that pull
  has finished;
- a created Service is awaited until its load balancer has a hostname *and* its endpoints target
  a pod (pulumi-kubernetes provider/pkg/await/service.go), so the login Service is done no
  earlier than the login pod of the Helm release in its namespace.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from dataclasses import dataclass, field

# The same mock run of the real program that the tests and the offline plan use.
from devkit.plan import Graph, direct_dependencies, engine_resources, run_program


@dataclass(frozen=True)
class Step:
    seconds: float
    source: str


_LOG = (
    "terraform apply log, ignvb/devsu-devops-assessment IaC/Apply_output.md "
    "@ 076ccb162a7d84318fdcd099ff90627d9e8899df"
)
# Seconds by resource type; anything not listed is one API call.
DURATIONS: dict[str, Step] = {
    "aws:ec2/vpc:Vpc": Step(14, f"{_LOG}: aws_vpc 14s"),
    "aws:ec2/natGateway:NatGateway": Step(107, f"{_LOG}: aws_nat_gateway 1m47s"),
    # pulumi-eks' Cluster: the control plane, then its vpc-cni and kube-proxy add-ons.
    "eks:index:Cluster": Step(
        644 + 90,
        f"{_LOG}: aws_eks_cluster 10m44s (aws/containers-roadmap "
        "issue #1227: was 15 min on average); plus one add-on (below) "
        "for vpc-cni/kube-proxy, installed side by side",
    ),
    "aws:eks/nodeGroup:NodeGroup": Step(
        210,
        f"{_LOG}: a CPU aws_eks_node_group 1m20s; 3.5 min assumed "
        "for the NVIDIA AMI and EFA interfaces to boot and join",
    ),
    "aws:eks/addon:Addon": Step(
        90,
        "EKS CreateAddon until ACTIVE; assumed 1.5 min (public Terraform logs "
        "show 14 s-1 min for coredns, kube-proxy, eks-pod-identity-agent)",
    ),
    "aws:efs/fileSystem:FileSystem": Step(12, "EFS CreateFileSystem until available (seconds)"),
    "aws:efs/mountTarget:MountTarget": Step(
        90,
        "EFS mount target until available: typically 1-2 min "
        "(https://alchemy.run/providers/aws/efs/mounttarget), at times "
        "over 10 min (hashicorp/terraform-provider-aws issue #15278)",
    ),
    "aws:rds/instance:Instance": Step(
        600,
        "public Terraform apply logs of aws_db_instance for MySQL and "
        "MariaDB, Single-AZ: 3m16s-4m56s, one MariaDB 10.6 9m59s; the "
        "longest taken (Multi-AZ adds the standby's creation)",
    ),
    "random:index/randomPassword:RandomPassword": Step(0, "no cloud call"),
    "random:index/randomString:RandomString": Step(0, "no cloud call"),
    "kubernetes:helm.sh/v3:Release": Step(
        102, f"{_LOG}: helm_release (load balancer controller, --wait) 1m42s"
    ),
    "kubernetes:batch/v1:Job": Step(30, "assumed: a small image pulled and one short command run"),
    "docker-build:index:Image": Step(
        600,
        "derived: the DLC pull, the build and a ~5 GB push at 100 Mb/s "
        "(5e9 B x 8 / 1e8 b/s = 400 s) plus layer overhead",
    ),
    "pulumi:providers:kubernetes": Step(0, "no cloud call"),
    "random:index/randomBytes:RandomBytes": Step(0, "no cloud call"),
}
API_CALL = Step(5, "one create call (IAM, EC2 networking, Kubernetes objects): seconds")
NLB = Step(
    150,
    "'Wait 2-3 minutes for the ALB to provision and register all targets' "
    "(awsdocs/amazon-eks-user-guide latest/ug/automode/auto-elb-example.adoc); "
    "an NLB alike, 2.5 min assumed",
)
IMAGE_PULL = Step(
    300,
    "images beyond a few hundred MB: 'it can take several minutes to start a container' "
    "(https://aws.amazon.com/blogs/containers/start-pods-faster-by-prefetching-images/); "
    "5 min assumed for the multi-GB slurmd image",
)
# From a warm cache: what remains for a pod of the image once the pull is done.
FROM_CACHE = {
    "kubernetes:helm.sh/v3:Release": Step(30, "assumed: slurmd starts and registers with slurmctld"),
    "kubernetes:apps/v1:DaemonSet": Step(0, "the init container runs `true`"),
}


def duration(r) -> Step:
    """The typical time to create one resource of the graph."""
    if r.type == "kubernetes:core/v1:Service" and (r.inputs.get("spec") or {}).get("type") == "LoadBalancer":
        return NLB
    return DURATIONS.get(r.type, API_CALL)


@dataclass
class Timeline:
    graph: Graph
    # What each resource waits for, components expanded into the resources under them.
    edges: dict[str, set[str]]
    start: dict[str, float] = field(default_factory=dict)
    finish: dict[str, float] = field(default_factory=dict)
    # Why a resource finishes when it does: ("own", None), ("pull", first puller), ("pods", release)
    bound: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    pull_start: float | None = None
    first_puller: str | None = None


def _image_digest(graph: Graph) -> str:
    return graph.output("slurmdImage").split("@", 1)[1]


def model(graph: Graph) -> Timeline:
    nodes = engine_resources(graph)
    by_urn = {r.urn: r for r in graph.resources}
    children: dict[str, list[str]] = {}
    for r in graph.resources:
        children.setdefault(r.parent, []).append(r.urn)

    def expand(urn: str) -> set[str]:
        """Depending on a component is depending on every resource under it."""
        if urn in nodes:
            return {urn}
        return set().union(*(expand(c) for c in children.get(urn, [])))

    edges = {
        u: set().union(*(expand(d) for d in ds)) if ds else set()
        for u, ds in direct_dependencies(graph).items()
        if u in nodes
    }

    @functools.cache
    def ancestors(urn: str) -> frozenset[str]:
        return frozenset(edges[urn]).union(*(ancestors(d) for d in edges[urn]))

    digest = _image_digest(graph)
    users = {u for u in nodes if digest in json.dumps(by_urn[u].inputs, default=str)}
    first = sorted(u for u in users if not ancestors(u) & users)
    releases = {u for u in nodes if by_urn[u].type == "kubernetes:helm.sh/v3:Release"}
    t = Timeline(graph, edges)

    def start(u: str) -> float:
        if u not in t.start:
            t.start[u] = max((finish(d) for d in edges[u]), default=0.0)
        return t.start[u]

    def pull_end() -> float:
        if t.pull_start is None:
            t.first_puller = min(first, key=start)
            t.pull_start = start(t.first_puller)
        return t.pull_start + IMAGE_PULL.seconds

    def finish(u: str) -> float:
        if u in t.finish:
            return t.finish[u]
        r = by_urn[u]
        done, why = start(u) + duration(r).seconds, ("own", None)
        if u in users:
            ready = pull_end() + FROM_CACHE.get(r.type, Step(0, "")).seconds
            if ready > done:
                done, why = ready, ("pull", t.first_puller)
        if duration(r) is NLB and (r.inputs["spec"].get("selector")):
            namespace = r.inputs["metadata"].get("namespace")
            for rel in sorted(releases):
                if by_urn[rel].inputs.get("namespace") == namespace and u not in ancestors(rel):
                    pods = start(rel) + duration(by_urn[rel]).seconds
                    if pods > done:
                        done, why = pods, ("pods", rel)
        t.finish[u], t.bound[u] = done, why
        return done

    for u in sorted(nodes):
        finish(u)
    return t


@dataclass(frozen=True)
class Segment:
    label: str
    start: float
    end: float


def critical_path(t: Timeline) -> list[Segment]:
    """The chain that ends last, from the first step to the last."""
    names = {r.urn: r.name for r in t.graph.resources}
    types = {r.urn: r.type for r in t.graph.resources}
    u = max(sorted(t.finish), key=t.finish.get)
    path: list[Segment] = []
    while u is not None:
        why, via = t.bound[u]
        if why == "pull":
            path.append(
                Segment(
                    f"{names[u]}: its pods start once the image is on the node",
                    t.pull_start + IMAGE_PULL.seconds,
                    t.finish[u],
                )
            )
            path.append(
                Segment(
                    f"slurmd image pull (started by {names[via]})",
                    t.pull_start,
                    t.pull_start + IMAGE_PULL.seconds,
                )
            )
            u = via
            s = t.start[u]
        elif why == "pods":
            path.append(Segment(f"{names[u]}: its pods from {names[via]}", t.start[via], t.finish[u]))
            u = via
            s = t.start[u]
        else:
            path.append(Segment(f"{names[u]} ({types[u].split(':')[-1]})", t.start[u], t.finish[u]))
            s = t.start[u]
        deps = [d for d in t.edges[u] if t.finish[d] == s]
        u = sorted(deps)[0] if deps and s > 0 else None
    return list(reversed(path))


@dataclass(frozen=True)
class Floor:
    cluster_ready: float  # the EKS chain: network -> control plane and its add-ons
    nodes: float  # a node group joining
    image_pushed: float  # built alongside
    total: float


def floor(t: Timeline) -> Floor:
    """What a Slurm cluster cannot be ready before, however it is wired: the cluster, then the
    GPU nodes, then the slurmd image on them (pulled once it is pushed), slurmd started, the nodes
    checked taking jobs."""
    (eks,) = [u for u in t.finish if t.graph.by_urn(u).type == "eks:index:Cluster"]
    (build,) = [u for u in t.finish if t.graph.by_urn(u).type == "docker-build:index:Image"]
    nodes = DURATIONS["aws:eks/nodeGroup:NodeGroup"].seconds
    total = (
        max(t.finish[eks] + nodes, t.finish[build])
        + IMAGE_PULL.seconds
        + FROM_CACHE["kubernetes:helm.sh/v3:Release"].seconds
        + DURATIONS["kubernetes:batch/v1:Job"].seconds
    )
    return Floor(cluster_ready=t.finish[eks], nodes=nodes, image_pushed=t.finish[build], total=total)


def _mmss(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def report(graph: Graph, title: str) -> tuple[str, float]:
    """The printed timeline and its critical path / floor ratio."""
    t = model(graph)
    path, low = critical_path(t), floor(t)
    end = max(t.finish.values())
    lines = [f"modelled `pulumi up` of {title}: {len(t.finish)} resources"]
    lines += [f"  {s.start / 60:5.1f} -> {s.end / 60:5.1f} min  {s.label}" for s in path]
    lines.append(
        f"critical path {_mmss(end)}; floor {_mmss(low.total)} = max(EKS ready {_mmss(low.cluster_ready)}"
        f" + node group {_mmss(low.nodes)}, image pushed {_mmss(low.image_pushed)}) + image pull "
        f"{_mmss(IMAGE_PULL.seconds)} + slurmd start + readiness check; ratio {end / low.total:.3f}"
    )
    return "\n".join(lines), end / low.total


def durations_table() -> str:
    rows = (
        [(k, v) for k, v in DURATIONS.items()]
        + [
            ("Service type LoadBalancer (NLB)", NLB),
            ("slurmd image pull, once per node", IMAGE_PULL),
            ("any other resource", API_CALL),
        ]
        + [(f"from cache: {k}", v) for k, v in FROM_CACHE.items()]
    )
    return "durations (s) and their sources:\n" + "\n".join(
        f"  {v.seconds:5.0f}  {k}: {v.source}" for k, v in rows
    )


def parse_sets(items: list[str]) -> dict:
    overrides = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return overrides


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="bench_timeline", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--stack", default="dev")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    try:
        graph = run_program(args.stack, parse_sets(args.set))
    except Exception as error:  # noqa: BLE001 - invalid config is the answer, in one line
        print(error, file=sys.stderr)
        return 1
    print(durations_table())
    print(report(graph, f"stack {args.stack} {' '.join(args.set)}".strip())[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
