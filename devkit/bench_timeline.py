"""The modelled `pulumi up` timeline of the program's real resource graph: each resource starts
when everything it depends on is done and takes its type's typical duration (the table below,
each with its source). Prints the critical path, the floor (what no wiring can shorten) and
their ratio.

    python -m devkit.bench_timeline [--stack dev] [--set gpuInstanceType=p5.48xlarge ...]
        [--builder codebuild|local] [--link-down MBITS] [--link-up MBITS]
    python -m devkit.bench_timeline --deployers    # the table of docs/deploy-time.md

The slurmd image build takes what its builder and the deployer's link make it take (DEPLOYERS,
build_stages): `local` pulls the Deep Learning Container over the deployer's downlink, builds on
the deployer's machine and pushes over its uplink; `codebuild` uploads the small build context
over the uplink and does the rest inside the region. The in-region `up` must stay within 1.05x of
its floor with an infinitely fast link at any link: the tool says so, and exits 1 when it does not.

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
import math
import pathlib
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


# --- the image build, by builder and link ---------------------------------------------------------

# The resource that builds the slurmd image and yields its digest: docker-build's Image with
# imageBuilder=local, the build runner (a Pulumi dynamic resource) with the in-region builder.
IMAGE_BUILD_TYPES = ("docker-build:index:Image", "pulumi-python:dynamic:Resource")
LOCAL, CODEBUILD = "local", "codebuild"
BUILDERS = (CODEBUILD, LOCAL)


@dataclass(frozen=True)
class Size:
    gigabytes: float  # 1e9 bytes
    source: str


# What the base pull carries: the DLC's compressed layers. The EC2 PyTorch training DLC is 15.5 GB
# unpacked after AWS's reduction ("EC2 image reduction: 20.8-15.5=5.3GB", aws/deep-learning-containers
# PR #3337) and was 20.6 GB before it ("Actual image size: 20575" MB, PR #3270). Its compressed size
# is not published (the registry is private); a CUDA image of the same kind is 8.5 GB compressed for
# 15.7 GB unpacked (StaPH-B/docker-builds issue #1073), a ratio of 0.54, so 15.5 x 0.54. Those are
# the PyTorch 2.0 DLC's sizes: the pinned one's (model/facts/versions.py) are not published.
DLC_UNPACKED = Size(
    15.5,
    "aws/deep-learning-containers PR #3337: the PyTorch 2.0 EC2 training image after its reduction "
    "(the pinned DLC's size is not published)",
)
DLC_PULLED = Size(
    round(DLC_UNPACKED.gigabytes * 8.5 / 15.7, 1),
    "derived: 15.5 GB unpacked (aws/deep-learning-containers PR #3337) x 0.54, the compressed/unpacked "
    "ratio of a CUDA image of the same kind (StaPH-B/docker-builds issue #1073: ~8.5 GB for ~15.7 GB); "
    "the slurmd base (a few hundred MB, no size sourced) is left out, so the pull is a lower bound",
)
# What the push carries: the final stage (image/Dockerfile) is Slinky's slurmd base with the DLC's
# /opt/venv (torch and its CUDA libraries), /usr/local/cuda, EFA and OpenMPI trees copied in.
IMAGE_PUSHED = Size(
    5.0,
    "estimated: the DLC's venv and CUDA trees on Slinky's slurmd base; torch with its CUDA wheels alone "
    "downloads ~3.9 GB (drose.io/blog/5gb-docker-image-for-a-7mb-model, from uv.lock's sizes)",
)
BUILD_WORK = Step(
    300,
    "estimated, no published figure: apt-get install, copying ~10 GB of the DLC's trees between "
    "stages, registering and asserting the libraries, compressing the layers",
)
CODEBUILD_START = Step(
    60,
    "CodeBuild's QUEUED, PROVISIONING and DOWNLOAD_SOURCE phases (CodeBuild API Reference, BuildPhase): "
    "provisioning a curated image not cached on the host takes over 30 s (the README of "
    "github.com/apppackio/apppack-codebuild-image); 60 s assumed, no queue on on-demand capacity",
)
IN_REGION_MBITS = 1000.0
IN_REGION_SOURCE = (
    "assumed 1000 Mbit/s inside the region (ECR and the registries to a CodeBuild host): no published "
    "figure; `docker pull` is bound by single-threaded gzip decompression more than by the network "
    "(StaPH-B/docker-builds issue #1073)"
)


@dataclass(frozen=True)
class Deployer:
    """The machine that runs `pulumi up`, by its link."""

    name: str
    down_mbits: float  # math.inf: an infinitely fast link
    up_mbits: float
    source: str
    disk_gb: float | None = None  # what a local build may use, where it is known to be small


INFINITE = Deployer("an infinitely fast link", math.inf, math.inf, "the floor of a builder")
DEPLOYERS = (
    Deployer("laptop, 20 Mbit/s", 20, 20, "a home or office link; the uplink the build pushed over before"),
    Deployer("laptop, 100 Mbit/s", 100, 100, "a faster home or office link"),
    Deployer(
        "CI runner (GitHub-hosted)",
        1000,
        1000,
        "no network figure found in GitHub's runner docs: 1000 Mbit/s each way assumed; 14 GB of SSD "
        "(docs.github.com, 'Supported runners and hardware resources', standard Linux runner)",
        disk_gb=14,
    ),
)


def transfer(size: Size | float, mbits: float) -> float:
    """Seconds to move `size` (GB, 1e9 bytes) at `mbits` Mbit/s; nothing at an infinite rate."""
    gigabytes = size.gigabytes if isinstance(size, Size) else size
    return 0.0 if math.isinf(mbits) else gigabytes * 1e9 * 8 / (mbits * 1e6)


IMAGE_CONTEXT = pathlib.Path(__file__).resolve().parent.parent / "image"


def context_gigabytes(directory: pathlib.Path = IMAGE_CONTEXT) -> float:
    """The build context the in-region builder uploads: image/'s files, measured."""
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()) / 1e9


def build_stages(builder: str, deployer: Deployer) -> list[tuple[str, float]]:
    """(what, seconds) of one build of the slurmd image, from nothing cached (a first `up`)."""
    if builder == LOCAL:
        return [
            ("pull the DLC over the deployer's downlink", transfer(DLC_PULLED, deployer.down_mbits)),
            ("build on the deployer's machine", BUILD_WORK.seconds),
            ("push the image over the deployer's uplink", transfer(IMAGE_PUSHED, deployer.up_mbits)),
        ]
    if builder == CODEBUILD:
        return [
            (
                "upload the build context (image/) over the uplink",
                transfer(context_gigabytes(), deployer.up_mbits),
            ),
            ("CodeBuild queue, provisioning, source download", CODEBUILD_START.seconds),
            ("pull the DLC inside AWS", transfer(DLC_PULLED, IN_REGION_MBITS)),
            ("build in CodeBuild", BUILD_WORK.seconds),
            ("push to ECR inside the region", transfer(IMAGE_PUSHED, IN_REGION_MBITS)),
        ]
    raise ValueError(f"builder {builder!r}: expected one of {', '.join(BUILDERS)}")


def image_build_step(builder: str, deployer: Deployer) -> Step:
    stages = build_stages(builder, deployer)
    return Step(
        sum(seconds for _, seconds in stages),
        f"{builder} at {deployer.name}: " + ", ".join(f"{what} {seconds:.0f}s" for what, seconds in stages),
    )


def fits(builder: str, deployer: Deployer) -> str | None:
    """Why the build cannot run on the deployer at all, or None."""
    if builder == LOCAL and deployer.disk_gb is not None and deployer.disk_gb < DLC_UNPACKED.gigabytes:
        return f"does not fit: the DLC is {DLC_UNPACKED.gigabytes:g} GB unpacked, the runner has {deployer.disk_gb:g} GB of disk"
    return None


DEFAULT_BUILD = image_build_step(CODEBUILD, DEPLOYERS[0])


def duration(r, build: Step = DEFAULT_BUILD) -> Step:
    """The typical time to create one resource of the graph."""
    if r.type == "kubernetes:core/v1:Service" and (r.inputs.get("spec") or {}).get("type") == "LoadBalancer":
        return NLB
    if r.type in IMAGE_BUILD_TYPES:
        return build
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


def model(graph: Graph, build: Step = DEFAULT_BUILD) -> Timeline:
    """The timeline of `up`, the image build taking `build` (image_build_step)."""
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
        done, why = start(u) + duration(r, build).seconds, ("own", None)
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
    (build,) = [u for u in t.finish if t.graph.by_urn(u).type in IMAGE_BUILD_TYPES]
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


def report(graph: Graph, title: str, build: Step = DEFAULT_BUILD) -> tuple[str, float]:
    """The printed timeline and its critical path / floor ratio."""
    t = model(graph, build)
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


def up_seconds(graph: Graph, builder: str, deployer: Deployer) -> float:
    """When the modelled `up` ends with this builder at this deployer's link."""
    return max(model(graph, image_build_step(builder, deployer)).finish.values())


# How far the link may stretch the in-region `up` past its floor (the same `up` with an infinitely
# fast link): the deployer's link must not be on its critical path.
LINK_BOUND = 1.05


def link_ratio(graph: Graph, builder: str, deployer: Deployer) -> float:
    """`up` at the deployer's link over `up` at an infinitely fast one."""
    return up_seconds(graph, builder, deployer) / up_seconds(graph, builder, INFINITE)


def link_line(graph: Graph, builder: str, deployer: Deployer) -> str:
    """`up` at the deployer's link against its floor; PAST where the bound holds (in the region)."""
    ratio = link_ratio(graph, builder, deployer)
    if ratio <= LINK_BOUND:
        verdict = f"within {LINK_BOUND}"
    else:
        past = "PAST" if builder == CODEBUILD else "past"
        verdict = f"{past} {LINK_BOUND}: the link is on the critical path"
    return (
        f"{builder} at {deployer.name}: `up` {_mmss(up_seconds(graph, builder, deployer))}, its floor with an "
        f"infinitely fast link {_mmss(up_seconds(graph, builder, INFINITE))}: ratio {ratio:.3f}, {verdict}"
    )


def deploy_time_table(graph: Graph) -> str:
    """docs/deploy-time.md's table: the modelled first `up` of `graph` for each builder at each
    deployer's link (devkit/project_docs.py writes it between its markers)."""
    rows = [
        "| deployer (down/up Mbit/s) | builder | image in ECR | `up` | `up` / its floor (infinite link) |",
        "| --- | --- | --- | --- | --- |",
    ]
    floors = {builder: up_seconds(graph, builder, INFINITE) for builder in BUILDERS}
    for deployer in DEPLOYERS:
        for builder in BUILDERS:
            link = f"{deployer.name} ({deployer.down_mbits:g}/{deployer.up_mbits:g})"
            refused = fits(builder, deployer)
            if refused:
                rows.append(f"| {link} | `{builder}` | {refused} | — | — |")
                continue
            built, up = image_build_step(builder, deployer).seconds, up_seconds(graph, builder, deployer)
            rows.append(
                f"| {link} | `{builder}` | {_mmss(built)} | {_mmss(up)} | {up / floors[builder]:.3f} |"
            )
    for builder in BUILDERS:
        built = image_build_step(builder, INFINITE).seconds
        rows.append(f"| {INFINITE.name} | `{builder}` | {_mmss(built)} | {_mmss(floors[builder])} | 1.000 |")
    return "\n".join(rows) + "\n"


def image_build_inputs() -> list[tuple[str, str, str]]:
    """(what, figure, source) of each size and rate the build stages use."""
    return [
        ("DLC pulled (compressed)", f"{DLC_PULLED.gigabytes:g} GB", DLC_PULLED.source),
        ("DLC unpacked", f"{DLC_UNPACKED.gigabytes:g} GB", DLC_UNPACKED.source),
        ("image pushed (compressed)", f"{IMAGE_PUSHED.gigabytes:g} GB", IMAGE_PUSHED.source),
        ("build context uploaded", f"{context_gigabytes() * 1e6:.0f} kB", "measured: image/'s files"),
        ("build work", f"{BUILD_WORK.seconds:g} s", BUILD_WORK.source),
        ("CodeBuild start", f"{CODEBUILD_START.seconds:g} s", CODEBUILD_START.source),
        ("transfer inside the region", f"{IN_REGION_MBITS:g} Mbit/s", IN_REGION_SOURCE),
    ] + [(d.name, f"{d.down_mbits:g}/{d.up_mbits:g} Mbit/s", d.source) for d in DEPLOYERS]


def image_sizes_table() -> str:
    """The sizes and rates the build stages use, each with its source, as the tool prints them."""
    return "image build inputs and their sources:\n" + "\n".join(
        f"  {what}: {figure} ({why})" for what, figure, why in image_build_inputs()
    )


def image_inputs_markdown() -> str:
    """docs/deploy-time.md's table of the same."""
    rows = ["| input | figure | source |", "| --- | --- | --- |"]
    rows += [f"| {what} | {figure} | {why} |" for what, figure, why in image_build_inputs()]
    return "\n".join(rows) + "\n"


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


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line naming the argument and what it takes, exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message}\n")


def mbits(text: str) -> float:
    """A link speed in Mbit/s: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of Mbit/s") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r}: a link speed is a positive number of Mbit/s")
    return value


def main(argv: list[str] | None = None) -> int:
    p = _OneLineParser(
        prog="bench_timeline", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--stack", default="dev")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--builder", choices=BUILDERS, default=CODEBUILD, help="where the slurmd image is built")
    p.add_argument("--link-down", type=mbits, default=DEPLOYERS[0].down_mbits, metavar="MBITS")
    p.add_argument("--link-up", type=mbits, default=DEPLOYERS[0].up_mbits, metavar="MBITS")
    p.add_argument("--deployers", action="store_true", help="the table for every builder and deployer")
    args = p.parse_args(argv)
    try:
        graph = run_program(args.stack, parse_sets(args.set))
    except Exception as error:  # noqa: BLE001 - invalid config is the answer, in one line
        print(error, file=sys.stderr)
        return 1
    if args.deployers:
        print(image_sizes_table())
        print(deploy_time_table(graph), end="")
        deployers = DEPLOYERS
    else:
        deployer = Deployer(
            f"{args.link_down:g}/{args.link_up:g} Mbit/s",
            args.link_down,
            args.link_up,
            "--link-down/--link-up",
        )
        print(durations_table())
        print(image_sizes_table())
        build = image_build_step(args.builder, deployer)
        print(f"image build {_mmss(build.seconds)}: {build.source}")
        print(report(graph, f"stack {args.stack} {' '.join(args.set)}".strip(), build)[0])
        print(link_line(graph, args.builder, deployer))
        deployers = (deployer,)
    # The in-region builder keeps the deployer's link off the critical path, at any link.
    past = [d for d in deployers if link_ratio(graph, CODEBUILD, d) > LINK_BOUND]
    for d in past:
        print(f"FAILED: {link_line(graph, CODEBUILD, d)}", file=sys.stderr)
    return 1 if past else 0


if __name__ == "__main__":
    sys.exit(main())
