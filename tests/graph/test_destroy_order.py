"""`pulumi destroy` finishes in one pass: the IAM policies a controller or driver calls AWS with
outlive everything that controller still has to delete. The engine deletes a resource only once
everything that depends on it is gone, and deletes whatever has no dependents left at once, side by
side; so a policy nothing depends on goes in the first wave, beside the Service whose load balancer
its controller must then delete without permission (the trap of hashicorp/terraform-provider-aws
issue #9495: a role's policy deleted before what uses the role). The walk below replays that order
on the recorded graph, with one resource held mid-delete, and asks which policies go meanwhile."""

from __future__ import annotations

import copy

import pytest

from devkit.offline_run import Graph, Resource, run_program

POLICY_TYPES = ("aws:iam/rolePolicy:RolePolicy", "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
AUTOSCALING = {"gpuMinNodes": 0, "gpuMaxNodes": 4}
NO_METRICS = {"metrics": False}


def _children(graph: Graph) -> dict[str, list[str]]:
    children: dict[str, list[str]] = {}
    for r in graph.resources:
        children.setdefault(r.parent, []).append(r.urn)
    return children


def _dependencies(resource: Resource, children: dict[str, list[str]]) -> set[str]:
    """What the engine deletes only after `resource`: its explicit and Output-carried dependencies,
    its provider and its parent, and, for a component it depends on, everything under that."""
    edges = set(resource.dependencies) | {u for us in resource.property_dependencies.values() for u in us}
    if resource.provider:
        edges.add(resource.provider.rsplit("::", 1)[0])  # "<provider urn>::<id>"
    if resource.parent:
        edges.add(resource.parent)
    todo = list(edges - {resource.parent})
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in edges:
                edges.add(child)
                todo.append(child)
    return edges


def deleted_while_held(graph: Graph, held: Resource) -> set[str]:
    """The names of what `pulumi destroy` deletes while `held` is still being deleted (a Service
    whose finalizer waits for its controller to remove the load balancer): the delete waves run
    until only `held` and what must wait for it are left."""
    children = _children(graph)
    dependencies = {r.urn: _dependencies(r, children) for r in graph.resources}
    dependents: dict[str, int] = {r.urn: 0 for r in graph.resources}
    for deps in dependencies.values():
        for d in deps:
            if d in dependents:
                dependents[d] += 1
    wave = [u for u, n in dependents.items() if n == 0 and u != held.urn]
    deleted: set[str] = set()
    while wave:
        deleted.update(wave)
        following = []
        for urn in wave:
            for d in dependencies[urn]:
                if d in dependents:
                    dependents[d] -= 1
                    if dependents[d] == 0 and d != held.urn:
                        following.append(d)
        wave = following
    return {graph.by_urn(u).name for u in deleted}


def _role_of_association(graph: Graph, role_arn: str) -> Resource:
    return graph.named(role_arn.rsplit("/", 1)[1])


def controllers(graph: Graph) -> list[tuple[str, Resource, Resource]]:
    """(namespace/service account, role, what hands the role to it) for every Pod Identity
    association: a PodIdentityAssociation of its own, or one an EKS add-on makes (kube-system)."""
    found = []
    for assoc in graph.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation"):
        account = f"{assoc.inputs['namespace']}/{assoc.inputs['serviceAccount']}"
        found.append((account, _role_of_association(graph, assoc.inputs["roleArn"]), assoc))
    for addon in graph.of_type("aws:eks/addon:Addon"):
        for assoc in addon.inputs.get("podIdentityAssociations", []):
            account = f"kube-system/{assoc['serviceAccount']}"
            found.append((account, _role_of_association(graph, assoc["roleArn"]), addon))
    return found


def policies_of(graph: Graph, role: Resource) -> list[Resource]:
    """The inline policies and policy attachments that name `role` (by its name, the role's id)."""
    return [r for t in POLICY_TYPES for r in graph.of_type(t) if r.inputs.get("role") == role.name]


def _provisioned_by(graph: Graph, provisioner: str) -> list[Resource]:
    """The claims whose volume `provisioner` creates, and deletes once the claim is gone, with each
    Deployment such a claim depends on (the state volume guard, which holds destroy until the
    volume is gone: components/state_volume_guard.py)."""
    classes = {
        sc.inputs["metadata"]["name"]
        for sc in graph.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
        if sc.inputs["provisioner"] == provisioner
    }
    claims = [
        c
        for c in graph.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        if c.inputs["spec"].get("storageClassName") in classes
    ]
    guards = [
        graph.by_urn(d)
        for c in claims
        for d in c.dependencies
        if graph.by_urn(d).type == "kubernetes:apps/v1:Deployment"
    ]
    return claims + guards


def cleanup(graph: Graph) -> dict[str, list[Resource]]:
    """What each controller deletes in AWS when its Kubernetes object is deleted, by service
    account: the load balancer controller a LoadBalancer Service's NLB, its target groups and
    security groups (kubernetes-sigs/aws-load-balancer-controller docs/deploy/configurations.md,
    service finalizer `service.k8s.aws/resources`); the EBS CSI driver's controller the volume of
    a claim its StorageClass provisioned (reclaimPolicy Delete)."""
    return {
        "kube-system/aws-load-balancer-controller": [
            s
            for s in graph.of_type("kubernetes:core/v1:Service")
            if s.inputs["spec"].get("type") == "LoadBalancer"
        ],
        "kube-system/ebs-csi-controller-sa": _provisioned_by(graph, "ebs.csi.aws.com"),
    }


def cleanup_problems(graph: Graph) -> list[str]:
    """Each policy destroy can delete while its controller still has to delete something."""
    problems = []
    jobs = cleanup(graph)
    for account, role, _ in controllers(graph):
        for held in jobs.get(account, []):
            gone = deleted_while_held(graph, held)
            for policy in policies_of(graph, role):
                if policy.name in gone:
                    problems.append(f"{policy.name} is deleted while {held.name} still is ({account})")
    return problems


def user_problems(graph: Graph) -> list[str]:
    """Each policy destroy can delete while what hands its role to a controller (the association
    or the add-on, and so the controller's release) is still there."""
    problems = []
    for account, role, user in controllers(graph):
        gone = deleted_while_held(graph, user)
        for policy in policies_of(graph, role):
            if policy.name in gone:
                problems.append(f"{policy.name} is deleted while {user.name} still is ({account})")
    return problems


CONFIGS = {"dev": {}, "autoscaling": AUTOSCALING, "no-metrics": NO_METRICS}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def graph(request) -> Graph:
    return run_program("dev", CONFIGS[request.param])


def test_every_role_policy_names_its_role(graph):
    # A policy whose role is unknown to the engine has no edge to it: nothing orders them.
    for policy in [r for t in POLICY_TYPES for r in graph.of_type(t)]:
        role = policy.inputs.get("role")
        assert role and graph.named(role).type == "aws:iam/role:Role", policy.name


def test_every_controller_has_what_it_calls_aws_with(graph):
    for account, role, _ in controllers(graph):
        assert policies_of(graph, role), account


def test_there_is_something_to_clean_up_for_each_cleaning_controller(graph):
    jobs = cleanup(graph)
    assert [s.name for s in jobs["kube-system/aws-load-balancer-controller"]] == ["slurm-login"]
    assert sorted(r.name for r in jobs["kube-system/ebs-csi-controller-sa"]) == [
        "slurm-state",
        "slurm-state-guard-deployment",
    ]


def test_controller_policies_outlive_what_the_controller_deletes(graph):
    assert cleanup_problems(graph) == []


def test_controller_policies_outlive_what_hands_the_role_over(graph):
    assert user_problems(graph) == []


def test_every_controller_with_a_role_is_walked():
    assert sorted(a for a, _, _ in controllers(run_program("dev", AUTOSCALING))) == [
        "grafana/grafana",
        "keda/keda-operator",
        "kube-system/aws-load-balancer-controller",
        "kube-system/aws-node",
        "kube-system/cluster-autoscaler",
        "kube-system/ebs-csi-controller-sa",
        "slurm/slurmd",
    ]


def test_a_policy_nothing_waits_for_is_found(dev):
    broken = copy.deepcopy(dev)
    policy = broken.named("lbc-policy").urn
    for r in broken.resources:
        r.dependencies = [d for d in r.dependencies if d != policy]
    assert cleanup_problems(broken) == [
        "lbc-policy is deleted while slurm-login still is (kube-system/aws-load-balancer-controller)"
    ]


def test_a_driver_that_does_not_wait_for_its_policy_is_found(dev):
    broken = copy.deepcopy(dev)
    policy = broken.named("storage-ebs-csi-policy-0").urn
    driver = broken.named("storage-ebs-csi")
    driver.dependencies = [d for d in driver.dependencies if d != policy]
    assert cleanup_problems(broken) == [
        "storage-ebs-csi-policy-0 is deleted while slurm-state still is (kube-system/ebs-csi-controller-sa)",
        "storage-ebs-csi-policy-0 is deleted while slurm-state-guard-deployment still is "
        "(kube-system/ebs-csi-controller-sa)",
    ]


def test_the_walk_deletes_dependents_first(dev):
    # The login Service depends on the controller's release: held, it keeps the release.
    gone = deleted_while_held(dev, dev.named("slurm-login"))
    assert "lbc-release" not in gone and "slurm-login" not in gone
    assert "nodes-core" not in gone and "grafana-release" in gone
