"""What the cluster records and for how long: the EKS control plane's log types and the log group
EKS writes them to, the VPC flow logs' destinations, and the retention periods CloudWatch Logs
accepts. The config keys (model/checks/config_schema.py) and the components (components/cluster.py,
components/network.py) read them from here."""

from __future__ import annotations

# The five control-plane log types EKS can send, as its API names them (Amazon EKS user guide,
# "Send control plane logs to CloudWatch Logs":
# https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html; EKS API reference,
# LogSetup.types: https://docs.aws.amazon.com/eks/latest/APIReference/API_LogSetup.html).
CONTROL_PLANE_LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
# On by default: who called the API endpoint (public, from apiAllowedCidrs), what they did, and
# which IAM principal they authenticated as. controllerManager and scheduler are for debugging.
DEFAULT_CONTROL_PLANE_LOG_TYPES = ("api", "audit", "authenticator")

# The retention periods CloudWatch Logs accepts, in days (CloudWatch Logs API reference,
# PutRetentionPolicy, retentionInDays valid values:
# https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html).
# "Never expire" is the absence of a policy, which this program never leaves.
RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
DEFAULT_RETENTION_DAYS = 90

# Where the VPC's flow logs go: the CreateFlowLogs LogDestinationType values this program
# supports (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFlowLogs.html), or
# nowhere.
FLOW_LOGS_CLOUDWATCH = "cloud-watch-logs"
FLOW_LOGS_S3 = "s3"
FLOW_LOGS_OFF = "off"
FLOW_LOG_DESTINATIONS = (FLOW_LOGS_CLOUDWATCH, FLOW_LOGS_S3, FLOW_LOGS_OFF)


def control_plane_log_group(cluster_name: str) -> str:
    """The log group EKS writes the cluster's control-plane logs to; the name is EKS's, not ours
    (user guide above: /aws/eks/<cluster-name>/cluster)."""
    return f"/aws/eks/{cluster_name}/cluster"


def flow_log_group(cluster_name: str) -> str:
    """The log group of the VPC's flow logs (any name works; this one says whose they are)."""
    return f"/slinky-eks/{cluster_name}/vpc-flow-logs"


def database_log_group(instance_identifier: str, log_type: str) -> str:
    """The log group RDS publishes a DB instance's log of one type to; the name is RDS's
    (Amazon RDS User Guide, "Publishing MariaDB logs to Amazon CloudWatch Logs":
    /aws/rds/instance/<instance identifier>/<log type>)."""
    return f"/aws/rds/instance/{instance_identifier}/{log_type}"
