"""The metrics store (components/metrics_store.py): an AMP workspace with a retention, the managed
scraper in the cluster's private subnets under the cluster security group running model/builders/metrics.py's
configuration, one rule group namespace per alert file, the alert manager to an SNS topic only this
account's workspace may publish to, mail subscriptions from alertEmails; all of it gone with
`metrics: false`."""

import json

import pytest
import yaml

from devkit.offline_run import run_program
from model.builders import metrics as metrics_model
from tests.support.program import rejected

CLUSTER_SG = "sg-0cluster0primary0"  # what the mock answers for the EKS cluster security group
AMP_TYPES = (
    "aws:amp/workspace:Workspace",
    "aws:amp/scraper:Scraper",
    "aws:amp/ruleGroupNamespace:RuleGroupNamespace",
    "aws:amp/alertManagerDefinition:AlertManagerDefinition",
    "aws:sns/topic:Topic",
)


@pytest.fixture(scope="module")
def scraper(dev):
    return dev.named("metrics-scraper")


def _workspace_arn(dev):
    return dev.named("metrics-scraper").inputs["destination"]["amp"]["workspaceArn"]


def test_workspace_keeps_samples_for_the_configured_days(dev):
    retention = dev.named("metrics-retention").inputs
    assert retention["retentionPeriodInDays"] == 150
    assert retention["workspaceId"] == _workspace_arn(dev).rsplit("/", 1)[1]
    graph = run_program("dev", {"metricsRetentionDays": "30"})
    assert graph.named("metrics-retention").inputs["retentionPeriodInDays"] == 30


def test_retention_outside_what_amp_accepts_is_refused():
    assert "metricsRetentionDays" in rejected(metricsRetentionDays="1096")


def test_scraper_runs_the_model_scrape_configuration(scraper):
    assert scraper.inputs["scrapeConfiguration"] == metrics_model.scrape_configuration()


def test_scraper_reads_the_cluster_from_its_private_subnets_under_the_cluster_security_group(dev, scraper):
    eks = scraper.inputs["source"]["eks"]
    assert eks["clusterArn"] == f"arn:aws:eks:us-west-2:123456789012:cluster/{dev.output('clusterName')}"
    assert eks["securityGroupIds"] == [CLUSTER_SG]
    # The cluster's two private subnets, as the accounting database's subnet group has them.
    private = dev.named("accounting-subnets").inputs["subnetIds"]
    assert eks["subnetIds"] == private and len(private) == 2


def test_scraper_writes_to_the_workspace(dev, scraper):
    arn = scraper.inputs["destination"]["amp"]["workspaceArn"]
    assert arn.startswith("arn:aws:aps:us-west-2:123456789012:workspace/ws-")
    assert dev.output("metricsQueryEndpoint") == (
        f"https://aps-workspaces.us-west-2.amazonaws.com/workspaces/{arn.rsplit('/', 1)[1]}/"
    )


def test_scraper_waits_for_the_cluster_and_nothing_in_it(dev, scraper):
    assert dev.depends_on(scraper, dev.named("cluster-eks"))
    for later in ("slurm-release", "nodes-core"):
        found = [r for r in dev.resources if r.name == later]
        assert not found or not dev.depends_on(scraper, found[0]), later


def test_no_access_entry_or_rbac_of_ours_for_the_scraper(dev):
    # AMP creates the scraper's access entry itself (cluster authentication mode API).
    assert not [
        r for r in dev.resources if r.type.startswith("kubernetes:rbac") and "aps" in json.dumps(r.inputs)
    ]
    assert not [
        r for r in dev.of_type("aws:eks/accessEntry:AccessEntry") if "Prometheus" in json.dumps(r.inputs)
    ]


def test_one_rule_group_namespace_per_alert_file(dev):
    namespaces = {
        r.inputs["name"]: r.inputs["data"]
        for r in dev.of_type("aws:amp/ruleGroupNamespace:RuleGroupNamespace")
    }
    files = {p.stem: p.read_text() for p in metrics_model.ALERTS_DIR.glob("*.yaml")}
    assert files and namespaces == files


def test_alert_manager_routes_every_alert_to_the_topic(dev):
    definition = yaml.safe_load(dev.named("metrics-alert-manager").inputs["definition"])
    config = yaml.safe_load(definition["alertmanager_config"])
    receiver = config["route"]["receiver"]
    [entry] = [r for r in config["receivers"] if r["name"] == receiver]
    [sns] = entry["sns_configs"]
    assert sns["topic_arn"] == dev.output("alertTopicArn") == dev.named("metrics-alerts-policy").inputs["arn"]
    assert sns["topic_arn"].startswith("arn:aws:sns:us-west-2:123456789012:")
    assert sns["sigv4"]["region"] == "us-west-2"


def test_topic_is_encrypted_with_a_key_amp_may_use_for_this_account_only(dev):
    key = dev.named("metrics-alerts-key")
    assert (
        dev.named("metrics-alerts")
        .inputs["kmsMasterKeyId"]
        .startswith("arn:aws:kms:us-west-2:123456789012:key/")
    )
    assert dev.depends_on(dev.named("metrics-alerts"), key)
    assert key.inputs["enableKeyRotation"] is True
    [amp] = [
        s
        for s in json.loads(key.inputs["policy"])["Statement"]
        if s.get("Principal") == {"Service": "aps.amazonaws.com"}
    ]
    assert set(amp["Action"]) == {"kms:GenerateDataKey*", "kms:Decrypt"}
    assert amp["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}


def test_only_this_accounts_workspace_may_publish(dev):
    policy = json.loads(dev.named("metrics-alerts-policy").inputs["policy"])
    publishers = [s for s in policy["Statement"] if "sns:Publish" in s["Action"]]
    [amp] = publishers
    assert amp["Principal"] == {"Service": "aps.amazonaws.com"}
    assert amp["Condition"]["ArnEquals"]["aws:SourceArn"] == _workspace_arn(dev)
    assert amp["Condition"]["StringEquals"]["aws:SourceAccount"] == "123456789012"


def test_alert_manager_waits_for_the_topic_policy(dev):
    assert dev.depends_on(dev.named("metrics-alert-manager"), dev.named("metrics-alerts-policy"))


def test_no_mail_subscription_without_alert_emails(dev):
    assert dev.of_type("aws:sns/topicSubscription:TopicSubscription") == []


def test_each_alert_email_is_a_mail_subscription():
    graph = run_program("dev", {"alertEmails": ["oncall@example.com", "gpu-team@example.org"]})
    subs = graph.of_type("aws:sns/topicSubscription:TopicSubscription")
    assert sorted(s.inputs["endpoint"] for s in subs) == ["gpu-team@example.org", "oncall@example.com"]
    assert {s.inputs["protocol"] for s in subs} == {"email"}
    assert {s.inputs["topic"] for s in subs} == {graph.output("alertTopicArn")}


@pytest.mark.parametrize("address", ["oncall", "a@b", "a@example.com,b@example.com", "on call@example.com"])
def test_an_alert_email_that_is_not_one_address_is_refused(address):
    message = rejected(alertEmails=[address])
    assert "alertEmails" in message and address in message


def test_metrics_false_builds_no_store():
    graph = run_program("dev", {"metrics": "false"})
    assert not [r for r in graph.resources if r.type in AMP_TYPES]
    assert not graph.of_type("aws:kms/key:Key") and not graph.of_type("aws:sns/topicPolicy:TopicPolicy")
