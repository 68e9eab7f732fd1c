"""What the cluster records and for how long (model/facts/audit_logs.py)."""

from model.facts import audit_logs


def test_the_defaults_record_who_called_the_api_and_what_they_did_but_not_the_debugging_logs():
    assert audit_logs.DEFAULT_CONTROL_PLANE_LOG_TYPES == ("api", "audit", "authenticator")
    assert set(audit_logs.DEFAULT_CONTROL_PLANE_LOG_TYPES) < set(audit_logs.CONTROL_PLANE_LOG_TYPES)


def test_the_default_retention_is_one_cloudwatch_accepts():
    assert audit_logs.DEFAULT_RETENTION_DAYS in audit_logs.RETENTION_DAYS


def test_never_expire_is_not_offered_as_a_retention():
    # CloudWatch's "never expire" is 0 or no policy; every period here is a positive number of days.
    assert all(days > 0 for days in audit_logs.RETENTION_DAYS)


def test_the_control_plane_log_group_is_the_one_eks_names():
    assert audit_logs.control_plane_log_group("slinky-dev") == "/aws/eks/slinky-dev/cluster"


def test_the_flow_log_group_names_whose_flow_logs_it_holds():
    assert audit_logs.flow_log_group("slinky-dev") == "/slinky-eks/slinky-dev/vpc-flow-logs"


def test_a_database_log_group_is_the_one_rds_publishes_to():
    assert audit_logs.database_log_group("slurm-db", "audit") == "/aws/rds/instance/slurm-db/audit"


def test_flow_logs_go_to_cloudwatch_to_s3_or_nowhere():
    assert audit_logs.FLOW_LOG_DESTINATIONS == ("cloud-watch-logs", "s3", "off")
