"""/shared for the nodes only (components/shared_storage.py): the EFS file system's policy lets the
node groups' roles alone mount, write and act as root, and refuses every access without TLS; the
volume mounts with TLS and IAM, so each mount is signed as the node that makes it."""

import json

from components.shared_storage import CLIENT_ACTIONS, file_system_policy

FS_ARN = "arn:aws:elasticfilesystem:us-west-2:123456789012:file-system/fs-0123456789abcdef0"


def _policy(graph) -> dict:
    (policy,) = graph.of_type("aws:efs/fileSystemPolicy:FileSystemPolicy")
    assert policy.inputs["fileSystemId"] == "fs-0123456789abcdef0"
    return json.loads(policy.inputs["policy"])


def _node_roles(graph) -> set[str]:
    return {g.inputs["nodeRoleArn"] for g in graph.of_type("aws:eks/nodeGroup:NodeGroup")}


def _allows(policy: dict) -> list[dict]:
    return [s for s in policy["Statement"] if s["Effect"] == "Allow"]


def test_only_the_node_roles_may_mount_write_or_act_as_root(dev):
    (allow,) = _allows(_policy(dev))
    assert set(allow["Principal"]["AWS"]) == _node_roles(dev)
    assert set(allow["Action"]) == {
        "elasticfilesystem:ClientMount",
        "elasticfilesystem:ClientWrite",
        "elasticfilesystem:ClientRootAccess",
    }
    assert allow["Resource"] == FS_ARN
    assert allow["Condition"] == {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}}


def test_no_one_is_allowed_anything_by_a_wildcard(dev):
    for statement in _allows(_policy(dev)):
        assert "*" not in json.dumps(statement["Principal"])


def _denies(graph) -> dict[str, dict]:
    return {s["Sid"]: s for s in _policy(graph)["Statement"] if s["Effect"] == "Deny"}


def test_every_client_action_without_tls_is_denied_to_everyone(dev):
    deny = _denies(dev)["TlsOnly"]
    assert (deny["Principal"], set(deny["Action"]), deny["Resource"], deny["Condition"]) == (
        {"AWS": "*"},
        set(CLIENT_ACTIONS),
        FS_ARN,
        {"Bool": {"aws:SecureTransport": "false"}},
    )


def test_every_client_action_of_any_other_principal_is_denied(dev):
    """An identity policy of the account that grants Client* would otherwise be enough."""
    deny = _denies(dev)["NodesOnly"]
    assert (deny["Principal"], set(deny["Action"]), deny["Resource"]) == (
        {"AWS": "*"},
        set(CLIENT_ACTIONS),
        FS_ARN,
    )
    assert deny["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": sorted(_node_roles(dev))}}


def test_a_file_system_kept_on_destroy_keeps_its_policy(dev):
    from devkit.offline_run import run_program

    kept = run_program("dev", {"retainSharedData": "true"})
    assert [p.retain_on_delete for p in kept.of_type("aws:efs/fileSystemPolicy:FileSystemPolicy")] == [True]
    assert [p.retain_on_delete for p in dev.of_type("aws:efs/fileSystemPolicy:FileSystemPolicy")] == [False]


def test_every_node_groups_role_is_a_principal_once():
    policy = file_system_policy(
        FS_ARN, ["arn:aws:iam::1:role/gpu", "arn:aws:iam::1:role/core", "arn:aws:iam::1:role/gpu"]
    )
    (allow,) = _allows(policy)
    assert allow["Principal"]["AWS"] == ["arn:aws:iam::1:role/core", "arn:aws:iam::1:role/gpu"]


def test_the_volume_mounts_with_tls_and_iam(dev):
    """TLS is the EFS CSI driver's default, which only encryptInTransit "false" turns off."""
    spec = dev.named("storage-shared-pv").inputs["spec"]
    assert spec["csi"].get("volumeAttributes", {}).get("encryptInTransit", "true") == "true"
    assert spec["mountOptions"] == ["iam"]


def test_the_volume_waits_for_the_file_system_policy(dev):
    (policy,) = dev.of_type("aws:efs/fileSystemPolicy:FileSystemPolicy")
    assert dev.depends_on(dev.named("storage-shared-pv"), policy)


def test_the_efs_node_plugin_mounts_as_the_node(dev):
    """efs-utils signs a mount with the first credentials it finds: the node role from IMDS while
    the node plugin's service account has no identity of its own (nor has the controller's: a
    static volume needs none)."""
    assert not dev.named("storage-efs-csi").inputs.get("podIdentityAssociations")
