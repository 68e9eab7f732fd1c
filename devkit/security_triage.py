"""The security review's triage table, the one home of every finding of checkov and parliament over
the dev stack's plan (devkit/security_review.py) that stays: accepted (a risk the design takes, with
why) or not applicable (the scanner is wrong about this resource). Each names the section of
docs/security.md that explains it; the page's "Accepted findings" table is accepted_findings_table()
(tests/unit/devkit/test_security_triage.py keeps the two equal). A finding this table does not
explain is unexplained: fix it, or add it here with its reason.

Resources are globs over what the scanners name: checkov's `Kind.namespace.name` (a Pod's name
continues with its labels) or `terraform_type.name`; parliament's policy file (devkit/
security_export.py writes iam/<role policy>.json).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.facts.contract import OPERATOR_NAMESPACE, SHARED_MOUNT, SLURM_NAMESPACE, SYSTEM_NAMESPACE

ACCEPTED = "accepted"
NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class Triage:
    tool: str  # checkov | parliament
    check: str  # the check id (checkov) or issue (parliament)
    resources: tuple[str, ...]  # globs over the finding's resource
    verdict: str  # ACCEPTED | NOT_APPLICABLE
    reason: str
    section: str  # the docs/security.md heading anchor that explains it
    detail: str = "*"  # a glob over parliament's detail (the actions or condition named)


# What the upstream charts run, by the names the review sees them under (`Kind.namespace.name`).
_SYSTEM = f"*.{SYSTEM_NAMESPACE}"
_DEVICE_PLUGINS = (f"{_SYSTEM}.aws-efa-k8s-device-plugin*", f"{_SYSTEM}.nvidia-device-plugin*")
_LBC = f"{_SYSTEM}.aws-load-balancer-controller*"
_OPERATOR = f"*.{OPERATOR_NAMESPACE}.slurm-operator*"
_CERT_MANAGER = "*.cert-manager.cert-manager*"
# Grafana (components/grafana.py): uid 472, its image's user; the image by tag (model/facts/versions.py).
_GRAFANA = "*.grafana.grafana*"
# Only where a pool autoscales (docs/scaling.md): reviewed with `--config gpuMinNodes=0 --config gpuMaxNodes=4`.
_CLUSTER_AUTOSCALER = f"{_SYSTEM}.cluster-autoscaler*"
_KEDA = "*.keda.keda-*"
_CHART_WORKLOADS = (_CERT_MANAGER, _LBC, _OPERATOR, *_DEVICE_PLUGINS, _GRAFANA, _KEDA)
# The program's pods that call the Kubernetes API (cluster_programs/): they need their token.
_API_CALLERS = (
    f"*.{SLURM_NAMESPACE}.slurm-state-volume-guard*",
    f"*.{SLURM_NAMESPACE}.slurm-ready-*",
    f"*.{SLURM_NAMESPACE}.accounting-registration-*",
)
_CONTROLLERS = (
    _CERT_MANAGER,
    _LBC,
    _OPERATOR,
    f"{_SYSTEM}.nvidia-device-plugin*",
    _CLUSTER_AUTOSCALER,
    _KEDA,
)
# The charts' own pods, whose requests and limits are their charts' (Grafana's are the program's).
_CHART_CONTROLLERS = (
    _CERT_MANAGER,
    _LBC,
    _OPERATOR,
    *_DEVICE_PLUGINS,
    _CLUSTER_AUTOSCALER,
    _KEDA,
    "DaemonSet.dcgm-exporter.dcgm-exporter",
)
_ALL = ("*",)


def _k8s(check: str, resources: tuple[str, ...], verdict: str, reason: str, section: str) -> Triage:
    return Triage("checkov", check, resources, verdict, reason, section)


TRIAGE: tuple[Triage, ...] = (
    # --- AWS (terraform_plan) ---
    Triage(
        "checkov",
        "CKV_AWS_39",
        ("aws_eks_cluster.*",),
        ACCEPTED,
        "The public API endpoint is how `pulumi up` and kubectl reach the cluster; it admits apiAllowedCidrs only.",
        "the-kubernetes-api-endpoint",
    ),
    Triage(
        "checkov",
        "CKV_AWS_37",
        ("aws_eks_cluster.*",),
        ACCEPTED,
        "api, audit and authenticator logs are on; controllerManager and scheduler are left off by default "
        "for their CloudWatch cost (controlPlaneLogTypes chooses the set).",
        "control-plane-logs",
    ),
    Triage(
        "checkov",
        "CKV_AWS_58",
        ("aws_eks_cluster.*",),
        ACCEPTED,
        "EKS envelope-encrypts all Kubernetes API data with an AWS-owned key; a customer-managed key is "
        "not configured.",
        "encryption-at-rest",
    ),
    Triage(
        "checkov",
        "CKV_AWS_136",
        ("aws_ecr_repository.*",),
        ACCEPTED,
        "The slurmd repository is encrypted with AES256 (S3-managed keys), not a customer-managed KMS key.",
        "encryption-at-rest",
    ),
    # The in-region image build (imageBuilder codebuild, components/slurmd_image.py).
    Triage(
        "checkov",
        "CKV_AWS_316",
        ("aws_codebuild_project.slurmd_builder",),
        ACCEPTED,
        "Docker in a CodeBuild build runs only in privileged mode; the build runs the stack's own buildspec "
        "and image/ on a host CodeBuild discards, with a role scoped to the stack's repository, sources and logs.",
        "the-in-region-build",
    ),
    Triage(
        "checkov",
        "CKV_AWS_145",
        ("aws_s3_bucket.slurmd_sources",),
        ACCEPTED,
        "The build sources (image/, as public as the image built from it) are encrypted with SSE-S3, as the "
        "repository is with AES256, not a customer-managed KMS key.",
        "encryption-at-rest",
    ),
    Triage(
        "checkov",
        "CKV_AWS_21",
        ("aws_s3_bucket.slurmd_sources",),
        ACCEPTED,
        "No object is ever overwritten: each build context is a new object named by its content digest, "
        "and `up` deletes the one before; versions would keep nothing more.",
        "the-in-region-build",
    ),
    Triage(
        "checkov",
        "CKV_AWS_144",
        ("aws_s3_bucket.slurmd_sources",),
        ACCEPTED,
        "The sources are a copy of image/ in the repository, read once by the build in the same region; "
        "a replica in another region would serve no build.",
        "the-in-region-build",
    ),
    Triage(
        "checkov",
        "CKV_AWS_18",
        ("aws_s3_bucket.slurmd_sources",),
        ACCEPTED,
        "Only the deployer writes the sources and only the build role reads them; access logs would need "
        "a second bucket and record no more than who ran `up` and which build ran.",
        "the-in-region-build",
    ),
    Triage(
        "checkov",
        "CKV2_AWS_62",
        ("aws_s3_bucket.slurmd_sources",),
        NOT_APPLICABLE,
        "Nothing acts on a new source object: the build run starts its build itself (StartBuild).",
        "the-in-region-build",
    ),
    Triage(
        "checkov",
        "CKV_AWS_184",
        ("aws_efs_file_system.*",),
        ACCEPTED,
        "The shared file system is encrypted with the AWS-managed EFS key, not a customer-managed one.",
        "encryption-at-rest",
    ),
    Triage(
        "checkov",
        "CKV_AWS_158",
        ("aws_cloudwatch_log_group.*",),
        ACCEPTED,
        "Log groups are encrypted by CloudWatch Logs' own keys, not a customer-managed KMS key.",
        "encryption-at-rest",
    ),
    Triage(
        "checkov",
        "CKV_AWS_338",
        ("aws_cloudwatch_log_group.*",),
        ACCEPTED,
        "Retention is a config choice sized for a development cluster, shorter than the check's one year.",
        "control-plane-logs",
    ),
    Triage(
        "checkov",
        "CKV_AWS_293",
        ("aws_db_instance.accounting_db",),
        ACCEPTED,
        "No deletion protection: with it RDS refuses the delete and `destroy` stops halfway. The records "
        "outlive destroy as a final snapshot unless retainAccountingData is false.",
        "the-accounting-database",
    ),
    Triage(
        "checkov",
        "CKV_AWS_157",
        ("aws_db_instance.accounting_db",),
        ACCEPTED,
        "Single-AZ by default for a development cluster's cost; accountingMultiAz adds the standby. "
        "Meanwhile slurmctld keeps scheduling and queues its records for slurmdbd.",
        "the-accounting-database",
    ),
    Triage(
        "checkov",
        "CKV_AWS_118",
        ("aws_db_instance.accounting_db",),
        ACCEPTED,
        "No enhanced monitoring (an IAM role and per-second OS metrics billed as CloudWatch Logs); RDS's "
        "own CloudWatch metrics and the error log are kept.",
        "the-accounting-database",
    ),
    Triage(
        "checkov",
        "CKV_AWS_51",
        ("aws_ecr_repository.*",),
        ACCEPTED,
        "Tags are mutable so a re-push of the same tag succeeds, but for the in-region build's ctx- tags, "
        "which are immutable; every node runs the image by digest.",
        "images",
    ),
    Triage(
        "checkov",
        "CKV_AWS_355",
        ("aws_iam_role_policy.lbc_policy",),
        ACCEPTED,
        "`*` remains on the load balancer controller's reads, its service-linked role, tagging listeners "
        "and registering targets, as upstream.",
        "the-load-balancer-controllers-policy",
    ),
    Triage(
        "checkov",
        "CKV_AWS_339",
        ("aws_eks_cluster.*",),
        NOT_APPLICABLE,
        "checkov 3.3.30's list of supported EKS versions ends before the default; model/facts/eks_versions.py "
        "holds EKS's own calendar.",
        "what-the-scanners-cannot-see",
    ),
    Triage(
        "checkov",
        "CKV2_AWS_19",
        ("aws_eip.*",),
        NOT_APPLICABLE,
        "The Elastic IP is the NAT gateway's, not an instance's.",
        "what-the-scanners-cannot-see",
    ),
    # --- IAM (parliament) ---
    Triage(
        "parliament",
        "RESOURCE_STAR",
        ("lbc_policy",),
        ACCEPTED,
        "As CKV_AWS_355.",
        "the-load-balancer-controllers-policy",
    ),
    Triage(
        "parliament",
        "RESOURCE_MISMATCH",
        ("lbc_policy",),
        NOT_APPLICABLE,
        "ec2:CreateSecurityGroup authorizes on the VPC and on the new group; parliament 1.6.4 judges the "
        "statement naming only the VPC on its own, and the next statement names the security group.",
        "what-the-scanners-cannot-see",
        detail='*"action": "ec2:CreateSecurityGroup"*',
    ),
    Triage(
        "parliament",
        "RESOURCE_MISMATCH",
        ("lbc_policy",),
        NOT_APPLICABLE,
        "The Service Authorization Reference lets the listener writes name a Network Load Balancer's listener "
        "(listener/net); parliament 1.6.4 reads Elastic Load Balancing's older entry, which has only listener/app.",
        "what-the-scanners-cannot-see",
        detail='*"required_format": "arn:*:elasticloadbalancing:*:*:listener/app/*',
    ),
    Triage(
        "parliament",
        "UNKNOWN_CONDITION_FOR_ACTION",
        ("lbc_policy",),
        NOT_APPLICABLE,
        "elasticloadbalancing:CreateAction is the upstream policy's condition on AddTags (tag on create); "
        "parliament 1.6.4 reads Elastic Load Balancing's older entry, which does not list it.",
        "what-the-scanners-cannot-see",
        detail="*elasticloadbalancing:CreateAction*",
    ),
    Triage(
        "parliament",
        "UNKNOWN_ACTION",
        ("lbc_policy",),
        NOT_APPLICABLE,
        "elasticloadbalancing:ModifyIpPools is in the upstream policy; the Elastic Load Balancing entry "
        "parliament 1.6.4 reads does not list it.",
        "what-the-scanners-cannot-see",
        detail="*ModifyIpPools*",
    ),
    # --- Kubernetes: what the design takes ---
    _k8s(
        "CKV2_K8S_6", _ALL, ACCEPTED, "No NetworkPolicy: every pod can reach every other.", "no-networkpolicy"
    ),
    *(
        _k8s(
            c,
            _DEVICE_PLUGINS,
            ACCEPTED,
            "The device plugins need the node: device files, the kubelet's socket, host network (EFA) or host "
            "PID (NVIDIA MPS), as root.",
            "privileged-pods",
        )
        for c in (
            "CKV_K8S_16",
            "CKV_K8S_17",
            "CKV_K8S_19",
            "CKV_K8S_20",
            "CKV_K8S_22",
            "CKV_K8S_23",
            "CKV_K8S_28",
            "CKV_K8S_29",
            "CKV_K8S_31",
            "CKV_K8S_37",
            "CKV_K8S_40",
        )
    ),
    _k8s(
        "CKV_K8S_38",
        (*_CONTROLLERS, *_API_CALLERS),
        ACCEPTED,
        "These pods call the Kubernetes API: they need their service account token.",
        "privileged-pods",
    ),
    *(
        _k8s(
            c,
            (f"Job.{SLURM_NAMESPACE}.stage-jobs-*",),
            ACCEPTED,
            f"The job-staging Job writes the jobs and the users' work directories onto {SHARED_MOUNT}, the root of "
            "the EFS file system, owned by root with mode 755; it runs as root with every capability dropped but "
            "CHOWN, added only where `users` has entries, to give each user their work directory "
            "(model/builders/pod_hardening.py).",
            "privileged-pods",
        )
        # CKV_K8S_25 (an added capability) only for a stack with `users`.
        for c in ("CKV_K8S_23", "CKV_K8S_25", "CKV_K8S_40")
    ),
    # Only for a stack with `users` (reviewed as the configuration `users`).
    *(
        _k8s(
            c,
            (f"Job.{SLURM_NAMESPACE}.user-homes-*",),
            ACCEPTED,
            f"The homes Job makes each named user's home under {SHARED_MOUNT}/home and gives it to them: a chown "
            "of a directory on the root-owned EFS root, which needs root and CAP_CHOWN; it runs as root with "
            "CHOWN as its only capability and no escalation (model/builders/pod_hardening.py).",
            "privileged-pods",
        )
        for c in ("CKV_K8S_23", "CKV_K8S_25", "CKV_K8S_40")
    ),
    _k8s(
        "CKV2_K8S_2",
        (f"RoleBinding.{SLURM_NAMESPACE}.slurm-accounting-registration",),
        ACCEPTED,
        "The registration Job execs sacctmgr in the one controller pod (resourceNames), so no Slurm key "
        "leaves that pod; the exec reaches what the controller container may do.",
        "privileged-pods",
    ),
    _k8s(
        "CKV_K8S_155",
        ("ClusterRole.*.cert-manager-cainjector",),
        ACCEPTED,
        "cain-injector's job is writing the CA bundle into webhook configurations.",
        "privileged-pods",
    ),
    # Only where a pool autoscales (reviewed as the configuration `autoscaling`).
    _k8s(
        "CKV_K8S_155",
        ("ClusterRole.*.keda-operator-minimal-cluster-role",),
        ACCEPTED,
        "KEDA's operator makes its own certificates (the chart's certificates.autoGenerated) and writes "
        "their CA into its admission webhook's and metrics APIService's configuration; kedacore/charts "
        "v2.20.2 keda/templates/manager/minimal-rbac.yaml grants that only with autoGenerated on.",
        "privileged-pods",
    ),
    _k8s(
        "CKV_K8S_40",
        _CHART_WORKLOADS,
        ACCEPTED,
        "The charts' non-root users have UIDs under 10000 or none; a UID the image does not know breaks "
        "some of them.",
        "upstream-charts",
    ),
    # --- Kubernetes: hygiene checks the design answers otherwise ---
    *(
        _k8s(
            c,
            _CHART_CONTROLLERS,
            ACCEPTED,
            "CPU and memory requests and limits are set where the program writes the pod, Grafana's "
            "included (model/builders/pod_hardening.py unbounded); the charts' controllers, device plugins and "
            "exporter run as their charts set them, and on the core nodes the Slurm daemons, which "
            "request what they use and have a higher priority, are evicted after them.",
            "upstream-charts",
        )
        for c in ("CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13")
    ),
    *(
        _k8s(
            c,
            _ALL,
            ACCEPTED,
            "Jobs and the pre-pull's pause container have nothing to probe; the charts' pods are probed as "
            "their charts decide.",
            "upstream-charts",
        )
        for c in ("CKV_K8S_8", "CKV_K8S_9")
    ),
    _k8s(
        "CKV_K8S_15",
        _ALL,
        ACCEPTED,
        "IfNotPresent is what lets the pre-pull put the slurmd image on the nodes first; the pods the "
        "program writes run images pinned by digest, the Slinky daemons theirs by full release tag, the "
        "charts pull as they decide.",
        "images",
    ),
    _k8s(
        "CKV_K8S_43",
        _CHART_WORKLOADS,
        ACCEPTED,
        "The charts name their images by tag; the pods the program writes run images pinned by digest "
        "(model/facts/versions.py).",
        "images",
    ),
    # The metrics store's GPU source, the DCGM exporter (model/builders/pod_hardening.py has the reasons and sources).
    _k8s(
        "CKV_K8S_43",
        ("DaemonSet.dcgm-exporter.dcgm-exporter",),
        ACCEPTED,
        "The exporter image is the chart's tag (4.5.3-4.8.2-distroless): no stored record gives that nvcr.io "
        "tag's digest to pin it by (model/facts/versions.py DCGM_EXPORTER_IMAGE).",
        "images",
    ),
    *(
        _k8s(
            c,
            ("DaemonSet.dcgm-exporter.dcgm-exporter",),
            ACCEPTED,
            "Root: the exporter reads the kubelet's root-only pod-resources socket to map GPUs to pods; its "
            "image runs as root; no escalation, not privileged (model/builders/pod_hardening.py).",
            "privileged-pods",
        )
        for c in ("CKV_K8S_23", "CKV_K8S_40")
    ),
    _k8s(
        "CKV_K8S_22",
        ("DaemonSet.dcgm-exporter.dcgm-exporter",),
        ACCEPTED,
        "A writable root, as the chart has it: what the exporter writes was not checked on a GPU here "
        "(model/builders/pod_hardening.py).",
        "privileged-pods",
    ),
    _k8s(
        "CKV_K8S_43",
        (_CLUSTER_AUTOSCALER,),
        ACCEPTED,
        "cluster-autoscaler's image is the release of the cluster's Kubernetes minor, by tag "
        "(model/facts/versions.py CLUSTER_AUTOSCALER_FOR_KUBERNETES): no record of registry.k8s.io's digests for "
        "those tags is at hand to pin them by.",
        "images",
    ),
)


def accepted_findings_table(table: tuple[Triage, ...] = TRIAGE) -> str:
    """The page's "Accepted findings" table: one row per check (its resources, verdict, reason and
    section joined where several entries share it)."""
    rows = ["| tool | check | on | verdict | why | section |", "| --- | --- | --- | --- | --- | --- |"]
    grouped: dict[tuple[str, str, str, str, str], list[str]] = {}
    for e in table:
        key = (e.tool, e.check, e.verdict, e.reason, e.section)
        grouped.setdefault(key, []).extend(e.resources)
    for (tool, check, verdict, reason, section), resources in grouped.items():
        on = ", ".join(f"`{r}`" for r in dict.fromkeys(resources))
        rows.append(f"| {tool} | {check} | {on} | {verdict} | {reason} | [{section}](#{section}) |")
    return "\n".join(rows) + "\n"


PAGE = "docs/security.md"
BEGIN, END = "<!-- accepted-findings:begin -->", "<!-- accepted-findings:end -->"


def with_table(page: str, table: tuple[Triage, ...] = TRIAGE) -> str:
    """The page with the text between its markers replaced by accepted_findings_table()."""
    head, found, rest = page.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not (found and found_end):
        raise ValueError(f"{PAGE} has no {BEGIN} ... {END} block")
    return f"{head}{BEGIN}\n{accepted_findings_table(table)}{END}{tail}"


if __name__ == "__main__":
    # Regenerate the page's table after a change to TRIAGE: python -m devkit.security_triage
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / PAGE
    path.write_text(with_table(path.read_text()))
    print(f"{PAGE}: accepted findings table rewritten")
