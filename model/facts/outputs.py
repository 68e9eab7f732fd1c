"""The stack's outputs, declared once: the name __main__.py exports each under and what it is.
tests/graph/test_outputs.py holds the dev stack's exports to this table, and the README's outputs
table is written from it (`python -m devkit.project_docs`)."""

from __future__ import annotations

from dataclasses import dataclass

from model.facts.contract import SHARED_MOUNT


@dataclass(frozen=True)
class Output:
    name: str  # as `pulumi stack output <name>` reads it
    description: str


OUTPUTS: tuple[Output, ...] = (
    Output(
        "projectVersion",
        "the slinky-eks release the stack was last updated with (model/facts/release.py): its entry in "
        "CHANGELOG.md and its section of docs/upgrading.md",
    ),
    Output("clusterName", "EKS cluster name, for `aws eks update-kubeconfig --name`"),
    Output(
        "kubeconfig",
        "admin kubeconfig (secret; `pulumi stack output kubeconfig --show-secrets`): what "
        "`tools/verify.py` reaches the cluster with",
    ),
    Output("region", "AWS region"),
    Output("vpcId", "VPC id: the VPC everything runs in"),
    Output(
        "gpuAvailabilityZone",
        "`availabilityZone`: the NAT gateway's AZ, and the AZ of every GPU pool that names none",
    ),
    Output(
        "sharedFileSystemId",
        f"the EFS file system behind {SHARED_MOUNT} (kept on destroy when `retainSharedData`)",
    ),
    Output(
        "accountingDatabaseEndpoint",
        "the accounting database's `<address>:<port>` (RDS for MariaDB), "
        "reachable from the cluster's nodes and pods only; kept on destroy "
        "unless `retainAccountingData` is false; its password is never an output",
    ),
    Output(
        "slurmdImage",
        "the pushed slurmd image, pinned by digest (`<repo>@sha256:...`): exactly what every slurmd runs",
    ),
    Output("loginHostname", "the login NLB's DNS name (waited for until AWS assigns it)"),
    Output(
        "sshCommand",
        "`ssh root@<loginHostname>` while `sshPublicKey` is set, else `ssh <first admin "
        "user>@<loginHostname>`",
    ),
    Output(
        "gpuPools",
        "every GPU pool: `name`, `instanceType`, `nodeCount`, `minNodes`, `maxNodes` (equal for a "
        "pool of a fixed size), `availabilityZone`, its Slurm "
        "`partition` and its `nodeSet` (the NodeSet object); what `tools/verify.py` checks the "
        "cluster against, pool by pool; a CI job that submits to one pool reads its `partition` "
        "here for `sbatch -p`",
    ),
    Output("gpuInstanceType", "the first pool's instance type (as before pools existed)"),
    Output("gpuNodeCount", "the node count of all pools together (as before pools existed)"),
    Output(
        "costPerHour",
        "USD per hour at the on-demand list price (the AWS Price List, asked at preview, or a "
        "cited table when it cannot be asked): each pool's price per node and cost at its "
        "`minNodes` and `maxNodes`, the core group's, and the cluster's nodes at both sizes "
        "(`clusterAtMinNodes`, `clusterAtMaxNodes`); EC2 instances only; beside them `imageBuild`, what "
        "one build of the slurmd image costs and when one runs (see "
        "[Capacity and cost](docs/capacity-and-cost.md))",
    ),
    # The metrics store (absent with `metrics: false`; docs/metrics.md)
    Output(
        "metricsQueryEndpoint",
        "the Amazon Managed Service for Prometheus workspace's endpoint; PromQL "
        "under `api/v1/`, signed with SigV4 (`awscurl --service aps`)",
    ),
    Output(
        "alertTopicArn",
        "the SNS topic every firing alert is published to: subscribe to it (or set `alertEmails`)",
    ),
    # Dashboards (absent with `metrics: false`; docs/grafana.md)
    Output("grafanaUrl", "where Grafana opens while `grafanaTunnelCommand` runs: `http://localhost:3000`"),
    Output(
        "grafanaTunnelCommand",
        "`ssh -N -L 3000:grafana.grafana.svc.cluster.local:80 <user>@<loginHostname>`, "
        "the user as `sshCommand` logs in: the SSH tunnel to Grafana through the login "
        "node (Grafana has no endpoint of its own)",
    ),
    Output(
        "grafanaAdminPassword",
        "Grafana's `admin` password (secret; `pulumi stack output grafanaAdminPassword "
        "--show-secrets`), drawn once and kept in the state",
    ),
)


def export_differences(exports: set[str], table: tuple[Output, ...] = OUTPUTS) -> list[str]:
    """Where a stack's exports and the table differ, one line per name."""
    names = {o.name for o in table}
    return [f"exported, not in model/facts/outputs.py: {n}" for n in sorted(exports - names)] + [
        f"in model/facts/outputs.py, not exported: {n}" for n in sorted(names - exports)
    ]
