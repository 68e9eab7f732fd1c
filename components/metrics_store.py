"""Where the stack's metrics go and what watches them: an Amazon Managed Service for Prometheus (AMP)
workspace, AMP's managed scraper inside the cluster's VPC, the alert rules of observability/alerts
as rule group namespaces, and the workspace's alert manager routing to an encrypted SNS topic
(docs/decisions/metrics-store.md)."""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import yaml

from components.cluster import ClusterContext

# AMP's only alert manager receiver is an SNS topic in the workspace's account (AMP User Guide,
# "Managing and forwarding alerts ... with alert manager", AMP-alert-manager.html); the receiver
# names the topic and the region (AMP-alertmanager-receiver-config.html).
RECEIVER = "sns"
# How alerts are grouped and repeated: one message per alert name and node, again every 4 h while
# it fires (Prometheus Alertmanager <route> group_by/repeat_interval).
GROUP_BY = ("alertname", "kubernetes_node", "node", "Hostname")
REPEAT_INTERVAL = "4h"
# The service principal AMP publishes to SNS and uses the topic's key as (AMP User Guide, "Giving
# Amazon Managed Service for Prometheus permission to send alert messages to your Amazon SNS topic",
# AMP-alertmanager-receiver-AMPpermission.html).
AMP_PRINCIPAL = "aps.amazonaws.com"


def eks_cluster_arn(region: str, account_id: str, cluster_name: str) -> str:
    """An EKS cluster's ARN (Service Authorization Reference, Amazon EKS resource type cluster:
    arn:${Partition}:eks:${Region}:${Account}:cluster/${ClusterName}). Spelt out rather than read from
    the cluster, so the scraper orders after the cluster only through depends_on."""
    return f"arn:aws:eks:{region}:{account_id}:cluster/{cluster_name}"


def rule_namespaces(directory: pathlib.Path) -> dict[str, str]:
    """One rule group namespace per rule file (<name>.yaml -> name: its text), by name so the same
    files give the same namespaces in the same order every run."""
    return {path.stem: path.read_text() for path in sorted(directory.glob("*.yaml"))}


def alert_manager_definition(topic_arn: str, region: str) -> str:
    """The workspace's alert manager configuration: every alert to the one SNS receiver. AMP wants
    the Alertmanager file under `alertmanager_config` (AMP-alertmanager-config.html)."""
    config = {
        "route": {"receiver": RECEIVER, "group_by": list(GROUP_BY), "repeat_interval": REPEAT_INTERVAL},
        "receivers": [
            {
                "name": RECEIVER,
                "sns_configs": [
                    {
                        "topic_arn": topic_arn,
                        "sigv4": {"region": region},
                        "attributes": {"severity": "{{ .CommonLabels.severity }}"},
                    }
                ],
            }
        ],
    }
    return yaml.safe_dump({"alertmanager_config": yaml.safe_dump(config, sort_keys=False)}, sort_keys=False)


def topic_policy(topic_arn: str, workspace_arn: str, account_id: str) -> str:
    """Only AMP, for this account's workspace, may publish (the guide's statement, with its
    confused-deputy conditions). Nothing for the account itself: within one account an IAM policy
    alone grants access to the topic, so the deployer keeps managing it."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AmpPublishesAlerts",
                    "Effect": "Allow",
                    "Principal": {"Service": AMP_PRINCIPAL},
                    "Action": ["sns:Publish", "sns:GetTopicAttributes"],
                    "Resource": topic_arn,
                    "Condition": {
                        "ArnEquals": {"aws:SourceArn": workspace_arn},
                        "StringEquals": {"aws:SourceAccount": account_id},
                    },
                }
            ],
        }
    )


def key_policy(account_id: str) -> str:
    """The topic's key. SNS encrypts with a key the publisher may use, and the AWS-managed
    alias/aws/sns key admits only principals of the account through SNS: a service principal such as
    AMP's is refused, and that key's policy cannot be changed (the guide's SSE step adds
    kms:GenerateDataKey* and kms:Decrypt for AMP to the topic key's policy). So a customer managed key:
    the account administers it through IAM, AMP may only make and open data keys, on behalf of this
    account. The topic policy already limits publishing to this account's workspace."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AccountAdministersKey",
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:aws:iam::{account_id}:root"},
                    "Action": "kms:*",
                    "Resource": "*",
                },
                {
                    "Sid": "AmpEncryptsAlerts",
                    "Effect": "Allow",
                    "Principal": {"Service": AMP_PRINCIPAL},
                    "Action": ["kms:GenerateDataKey*", "kms:Decrypt"],
                    "Resource": "*",
                    "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
                },
            ],
        }
    )


@dataclass(frozen=True)
class MetricsStoreArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name, its region, its account and its
    # security group.
    cluster: ClusterContext
    # The cluster's two zones' private subnets (Network.private_subnet_ids): the scraper puts an
    # interface in each (it wants two AZs: AMP User Guide, AMP-collector-how-to.html, "Create a scraper").
    private_subnet_ids: Sequence[pulumi.Input[str]]
    # Days the workspace keeps samples (metricsRetentionDays).
    retention_days: int
    # The Prometheus scrape configuration the scraper runs (model/builders/metrics.py scrape_configuration()).
    scrape_configuration: str
    # Rule group namespace name -> its Prometheus rule file (rule_namespaces(ALERTS_DIR)).
    rule_namespaces: dict[str, str]
    # Addresses mailed every alert (alertEmails); empty: the topic only.
    alert_emails: Sequence[str]
    # What the scraper waits for (and is deleted before): the cluster (Cluster.ready). AMP makes the
    # scraper's access entry itself when it is created, so the cluster must be up; nothing in the
    # cluster needs to exist, the scraper finds targets as they come.
    depends_on: Sequence[pulumi.Resource]


class MetricsStore(pulumi.ComponentResource):
    workspace_arn: pulumi.Output[str]  # arn:aws:aps:<region>:<account>:workspace/ws-...
    workspace_id: pulumi.Output[str]  # ws-...
    # The workspace's Prometheus endpoint, https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-.../:
    # the query API is under api/v1/ (KEDA's serverAddress, Grafana's datasource URL).
    query_endpoint: pulumi.Output[str]
    alert_topic_arn: pulumi.Output[str]  # the SNS topic every alert is published to
    # What readers of the workspace wait for: the workspace and its retention.
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: MetricsStoreArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:metrics:MetricsStore", name, None, opts)
        self._name, self._args = name, args
        self._tags = {"Name": f"{args.cluster.name}-metrics", "slinky-eks:cluster": args.cluster.name}
        workspace, retention = self._workspace()
        self._scraper(workspace)
        self._rules(workspace)
        topic = self._alert_topic(workspace)
        self.workspace_arn, self.workspace_id = workspace.arn, workspace.id
        self.query_endpoint = workspace.prometheus_endpoint
        self.alert_topic_arn = topic.arn
        self.ready = [workspace, retention]
        self.register_outputs(
            {
                "workspace_arn": self.workspace_arn,
                "query_endpoint": self.query_endpoint,
                "alert_topic_arn": self.alert_topic_arn,
            }
        )

    def _workspace(self) -> tuple[aws.amp.Workspace, aws.amp.WorkspaceConfiguration]:
        # AMP keeps samples 150 days unless told (AMP User Guide, "Amazon Managed Service for
        # Prometheus service quotas": retention); the configuration says how long on purpose.
        child = pulumi.ResourceOptions(parent=self)
        workspace = aws.amp.Workspace(
            f"{self._name}-workspace", alias=self._args.cluster.name, tags=self._tags, opts=child
        )
        retention = aws.amp.WorkspaceConfiguration(
            f"{self._name}-retention",
            workspace_id=workspace.id,
            retention_period_in_days=self._args.retention_days,
            opts=child,
        )
        return workspace, retention

    def _scraper(self, workspace: aws.amp.Workspace) -> aws.amp.Scraper:
        # Agentless: AMP runs it with its service-linked role (AWSServiceRoleForAmazonPrometheusScraper)
        # and, as the cluster authenticates by access entries (authentication mode API), creates the
        # scraper's access entry with its own read-only policy (get/list/watch of nodes, services,
        # endpoints, pods, ingresses, configmaps; GET /metrics) when the scraper is created (AMP User
        # Guide, AMP-collector-how-to.html, "Configure Amazon EKS for scraper access with access
        # entries"). So no access entry or RBAC here: one of ours for the same role would collide with
        # AMP's (docs/decisions/metrics-store.md).
        args = self._args
        return aws.amp.Scraper(
            f"{self._name}-scraper",
            alias=f"{args.cluster.name}-slurm",
            source=aws.amp.ScraperSourceArgs(
                eks=aws.amp.ScraperSourceEksArgs(
                    cluster_arn=pulumi.Output.from_input(args.cluster.account_id).apply(
                        lambda a: eks_cluster_arn(args.cluster.region, a, args.cluster.name)
                    ),
                    subnet_ids=list(args.private_subnet_ids),
                    security_group_ids=[args.cluster.security_group_id],
                )
            ),
            destination=aws.amp.ScraperDestinationArgs(
                amp=aws.amp.ScraperDestinationAmpArgs(workspace_arn=workspace.arn)
            ),
            scrape_configuration=args.scrape_configuration,
            tags=self._tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
        )

    def _rules(self, workspace: aws.amp.Workspace) -> list[aws.amp.RuleGroupNamespace]:
        return [
            aws.amp.RuleGroupNamespace(
                f"{self._name}-rules-{namespace}",
                name=namespace,
                workspace_id=workspace.id,
                data=text,
                tags=self._tags,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for namespace, text in self._args.rule_namespaces.items()
        ]

    def _alert_topic(self, workspace: aws.amp.Workspace) -> aws.sns.Topic:
        args, child = self._args, pulumi.ResourceOptions(parent=self)
        key = aws.kms.Key(
            f"{self._name}-alerts-key",
            description=f"{args.cluster.name}: the metrics alert topic",
            enable_key_rotation=True,
            policy=pulumi.Output.from_input(args.cluster.account_id).apply(key_policy),
            tags=self._tags,
            opts=child,
        )
        topic = aws.sns.Topic(f"{self._name}-alerts", kms_master_key_id=key.arn, tags=self._tags, opts=child)
        policy = aws.sns.TopicPolicy(
            f"{self._name}-alerts-policy",
            arn=topic.arn,
            policy=pulumi.Output.all(topic.arn, workspace.arn, args.cluster.account_id).apply(
                lambda a: topic_policy(*a)
            ),
            opts=child,
        )
        for address in args.alert_emails:
            # Named by the address, so removing one leaves the others. Mail waits for the recipient
            # to confirm; until then SNS holds the subscription as pending.
            aws.sns.TopicSubscription(
                f"{self._name}-alerts-mail-{re.sub(r'[^A-Za-z0-9]+', '-', address)}",
                topic=topic.arn,
                protocol="email",
                endpoint=address,
                opts=child,
            )
        # Created once AMP may publish, so the first alert is not refused.
        aws.amp.AlertManagerDefinition(
            f"{self._name}-alert-manager",
            workspace_id=workspace.id,
            definition=topic.arn.apply(lambda arn: alert_manager_definition(arn, args.cluster.region)),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        return topic
