"""The custom slurmd image: an ECR repository and the two-stage build of image/, pushed and
referenced by digest so every node runs exactly what was built. The build runs in the region on
AWS CodeBuild (imageBuilder=codebuild: a bucket for the build context, the project, its role and
log group, and the run that waits for the digest) or on the deployer's Docker (imageBuilder=local)."""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

from components._parts.image_build_run import ImageBuildRun
from components._parts.private_bucket import private_bucket
from model.builders import image_buildspec
from model.facts import image_builder
from model.facts.image_references import dlc_reference, ecr_registry, ecr_repository_arn, registry_host

CACHE_TAG = "buildcache"
# image/ beside the packages (in a checkout, or where the slinky-eks package installed it),
# relative to the directory `pulumi up` runs the program in (its project directory): an absolute
# path would differ per checkout and show a diff on every machine. "image" for this project,
# "../../image" for examples/own-cluster.
CONTEXT = os.path.relpath(pathlib.Path(__file__).resolve().parents[1] / "image")
# The same directory for the content digest, which reads its files wherever the checkout is (the
# digest covers their paths relative to it, never this path).
CONTEXT_DIR = pathlib.Path(__file__).resolve().parents[1] / "image"


@dataclass(frozen=True)
class SlurmdImageArgs:
    """Every field is required (no defaults)."""

    # The ECR repository's name, <clusterName>/slurmd.
    repository_name: str
    # The stack's region: the repository's, and the DLC's registry region (dlc_reference).
    region: str
    # The tag pushed besides the digest (slurmdImageTag).
    tag: str
    # The Slurm release the image asserts it carries (slurmVersion): build arg SLURM_VERSION.
    slurm_version: str
    # The AWS Deep Learning Container the CUDA/NCCL/EFA stack is harvested from (dlcBaseImage).
    dlc_image: str
    # Slinky's slurmd image the result is built on (slurmdBaseImage).
    slurmd_base_image: str
    # Build (and push) during `pulumi preview` too (buildImageOnPreview).
    build_on_preview: bool
    # Where the image is built: image_builder.CODEBUILD or image_builder.LOCAL (imageBuilder).
    builder: str
    # The stack's aws:profile (None without one): the in-region build run starts and watches the
    # build with the same credentials the provider uses.
    aws_profile: Optional[str]


class SlurmdImage(pulumi.ComponentResource):
    reference: pulumi.Output[str]  # <repository>@sha256:<digest>, what every node runs
    repository_url: pulumi.Output[str]  # <account>.dkr.ecr.<region>.amazonaws.com/<repository_name>
    repository_arn: pulumi.Output[str]  # the repository's ARN: what the node role may pull from
    digest: pulumi.Output[str]  # sha256:<digest> of the pushed image

    def __init__(self, name: str, args: SlurmdImageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:image:SlurmdImage", name, None, opts)
        self._name, self._args = name, args
        repo = self._repository()
        self._lifecycle(repo)
        dlc_image = dlc_reference(args.dlc_image, args.region)
        if args.builder == image_builder.LOCAL:
            self.digest = self._build(repo, dlc_image, self._registries(repo, dlc_image)).digest
        else:
            self.digest = self._build_in_region(repo, dlc_image)
        self.repository_url = repo.repository_url
        self.repository_arn = repo.arn
        self.reference = pulumi.Output.concat(repo.repository_url, "@", self.digest)
        self.register_outputs({"reference": self.reference})

    def _repository(self) -> aws.ecr.Repository:
        return aws.ecr.Repository(
            f"{self._name}-repo",
            name=self._args.repository_name,
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(scan_on_push=True),
            # Mutable: docker-build pushes every tag again on any diff of the Image, which ECR
            # refuses for an existing immutable tag; nodes run the image by digest, never by tag
            # (docs/decisions/mutable-image-tags.md). But the in-region build's ctx-<digest> tags,
            # pushed once per context and never again (the build skips a context already
            # pushed), are immutable: the tag the runner reuses an image by cannot be moved onto
            # another image (ECR User Guide, "Preventing image tags from being overwritten":
            # https://docs.aws.amazon.com/AmazonECR/latest/userguide/image-tag-mutability.html).
            image_tag_mutability="MUTABLE_WITH_EXCLUSION",
            image_tag_mutability_exclusion_filters=[
                aws.ecr.RepositoryImageTagMutabilityExclusionFilterArgs(
                    filter=f"{image_buildspec.CONTEXT_TAG_PREFIX}*", filter_type="WILDCARD"
                )
            ],
            encryption_configurations=[
                aws.ecr.RepositoryEncryptionConfigurationArgs(encryption_type="AES256")
            ],
            # Teardown leaves nothing behind: a repository holding images cannot be deleted otherwise.
            force_delete=True,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _lifecycle(self, repo: aws.ecr.Repository) -> aws.ecr.LifecyclePolicy:
        return aws.ecr.LifecyclePolicy(
            f"{self._name}-lifecycle",
            repository=repo.name,
            policy=json.dumps(lifecycle_policy(self._args.tag)),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _registries(self, repo: aws.ecr.Repository, dlc_image: str) -> list[docker_build.RegistryArgs]:
        own_token = aws.ecr.get_authorization_token_output(registry_id=repo.registry_id)
        own_registry = repo.repository_url.apply(lambda url: url.split("/", 1)[0])
        # Credentials only for the bases on ECR (each from its own region: ECR tokens are
        # regional); any other registry is pulled anonymously.
        base_registries = []
        for host in sorted(
            {h for h in map(registry_host, (dlc_image, self._args.slurmd_base_image)) if ecr_registry(h)}
        ):
            account, region = ecr_registry(host)
            token = aws.ecr.get_authorization_token_output(registry_id=account, region=region)
            base_registries.append(
                docker_build.RegistryArgs(
                    address=host, username=token.user_name, password=pulumi.Output.secret(token.password)
                )
            )
        # Pull the DLC from AWS's account and push to ours, credentials in memory only.
        return [
            *base_registries,
            docker_build.RegistryArgs(
                address=own_registry,
                username=own_token.user_name,
                password=pulumi.Output.secret(own_token.password),
            ),
        ]

    def _build(
        self, repo: aws.ecr.Repository, dlc_image: str, registries: list[docker_build.RegistryArgs]
    ) -> docker_build.Image:
        args = self._args
        cache_ref = pulumi.Output.concat(repo.repository_url, ":", CACHE_TAG)
        return docker_build.Image(
            f"{self._name}-build",
            context=docker_build.BuildContextArgs(location=CONTEXT),
            dockerfile=docker_build.DockerfileArgs(location=f"{CONTEXT}/Dockerfile"),
            platforms=[docker_build.Platform.LINUX_AMD64],
            build_args={
                "DLC_IMAGE": dlc_image,
                "SLURMD_IMAGE": args.slurmd_base_image,
                "SLURM_VERSION": args.slurm_version,
            },
            tags=[pulumi.Output.concat(repo.repository_url, ":", args.tag)],
            push=True,
            registries=registries,
            # ECR needs image-manifest cache exports (docker-build docs).
            cache_from=[
                docker_build.CacheFromArgs(registry=docker_build.CacheFromRegistryArgs(ref=cache_ref))
            ],
            cache_to=[
                docker_build.CacheToArgs(
                    registry=docker_build.CacheToRegistryArgs(
                        ref=cache_ref,
                        image_manifest=True,
                        oci_media_types=True,
                        mode=docker_build.CacheMode.MAX,
                    )
                )
            ],
            # Code review runs `pulumi preview` without Docker.
            build_on_preview=args.build_on_preview,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[repo]),
        )

    # The in-region build (imageBuilder=codebuild). It needs nothing of the network or the cluster:
    # the project runs outside any VPC, so it comes up and builds while they do.

    def _build_in_region(self, repo: aws.ecr.Repository, dlc_image: str) -> pulumi.Output[str]:
        args = self._args
        digest = image_buildspec.context_digest(
            CONTEXT_DIR,
            dlc_image=dlc_image,
            slurmd_image=args.slurmd_base_image,
            slurm_version=args.slurm_version,
            image_tag=args.tag,
        )
        sources, source = self._sources(digest)
        logs = self._build_logs()
        role, policy = self._builder_role(repo, dlc_image, sources, logs)
        project = self._project(role, source, logs)
        run = ImageBuildRun(
            f"{self._name}-build",
            project_name=project.name,
            region=args.region,
            source_location=pulumi.Output.concat(source.bucket, "/", source.key),
            context_digest=digest,
            environment=image_buildspec.build_variables(
                dlc_image=dlc_image,
                slurmd_image=args.slurmd_base_image,
                slurm_version=args.slurm_version,
                image_tag=args.tag,
                repository_url=repo.repository_url,
            ),
            log_group_name=logs.name,
            profile=args.aws_profile,
            # The project exists when CodeBuild can assume its role; a build needs the role's policy.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[project, policy]),
        )
        return run.digest

    def _sources(self, digest: str) -> tuple[aws.s3.Bucket, aws.s3.BucketObjectv2]:
        """A private, encrypted bucket the build reads its context from, TLS only, emptied and
        deleted on destroy; each context is one object named by its digest, so `up` uploads one
        only when the context changes (and deletes the one before)."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        bucket = private_bucket(f"{name}-sources", f"{name}-sources-private", child)
        # SSE-S3, as the repository (AES256): the sources are the image's, no more secret than it.
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-sources-encryption",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    )
                )
            ],
            opts=child,
        )
        # No expiration: the current context object is in the stack's state and must stay (a
        # later StartBuild, or a refresh, reads it); its key changes with the digest and Pulumi
        # deletes the old object when the context changes, so the bucket holds one.
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-sources-expiry",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="abort-incomplete-uploads",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    # An upload `up` gave up on leaves no parts behind.
                    abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                        days_after_initiation=1
                    ),
                )
            ],
            opts=child,
        )
        # Refuses every request not over TLS (Amazon S3 User Guide, "Security best practices for
        # Amazon S3", Enforce encryption of data in transit:
        # https://docs.aws.amazon.com/AmazonS3/latest/userguide/security-best-practices.html).
        aws.s3.BucketPolicy(
            f"{name}-sources-tls-only",
            bucket=bucket.id,
            policy=bucket.arn.apply(
                lambda arn: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Sid": "DenyInsecureTransport",
                                "Effect": "Deny",
                                "Principal": "*",
                                "Action": "s3:*",
                                "Resource": [arn, f"{arn}/*"],
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        ],
                    }
                )
            ),
            opts=child,
        )
        # The zip of the files the build reads (image_buildspec.context_files, the list the digest
        # covers; relative paths: the same object from every checkout), the Dockerfile at its
        # root, where the buildspec builds. The zip carries no file modes: the Dockerfile's COPY
        # --chmod sets them.
        source = aws.s3.BucketObjectv2(
            f"{name}-context",
            bucket=bucket.id,
            key=image_builder.source_key(digest),
            source=pulumi.AssetArchive(
                {
                    file: pulumi.FileAsset(f"{CONTEXT}/{file}")
                    for file in image_buildspec.context_files(CONTEXT_DIR)
                }
            ),
            opts=child,
        )
        return bucket, source

    def _build_logs(self) -> aws.cloudwatch.LogGroup:
        """The builds' log group, the stack's own: with a retention, deleted on destroy."""
        return aws.cloudwatch.LogGroup(
            f"{self._name}-build-logs",
            name=image_builder.build_log_group(image_builder.project_name(self._args.repository_name)),
            retention_in_days=image_builder.BUILD_LOG_RETENTION_DAYS,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _builder_role(
        self,
        repo: aws.ecr.Repository,
        dlc_image: str,
        sources: aws.s3.Bucket,
        logs: aws.cloudwatch.LogGroup,
    ) -> tuple[aws.iam.Role, aws.iam.RolePolicy]:
        """The project's service role: assumed by CodeBuild for this project only, allowed to push
        to and pull from the stack's repository, pull the ECR bases, write its own log group and
        read its own sources."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        project = image_builder.project_name(self._args.repository_name)
        # CodeBuild's confused-deputy guidance: the service may assume the role only for this
        # account's project (CodeBuild User Guide, "Cross-service confused deputy prevention":
        # https://docs.aws.amazon.com/codebuild/latest/userguide/cross-service-confused-deputy-prevention.html).
        role = aws.iam.Role(
            f"{name}-builder-role",
            assume_role_policy=repo.arn.apply(lambda arn: json.dumps(builder_trust_policy(arn, project))),
            opts=child,
        )
        # The bases the build pulls from ECR (the DLC, and the slurmd base where it is on ECR).
        bases = sorted({a for a in map(ecr_repository_arn, (dlc_image, self._args.slurmd_base_image)) if a})
        policy = aws.iam.RolePolicy(
            f"{name}-builder-policy",
            role=role.id,
            policy=pulumi.Output.all(repo.arn, logs.arn, sources.arn).apply(
                lambda a: json.dumps(_builder_policy(a[0], bases, a[1], a[2]))
            ),
            opts=child,
        )
        return role, policy

    def _project(
        self,
        role: aws.iam.Role,
        source: aws.s3.BucketObjectv2,
        logs: aws.cloudwatch.LogGroup,
    ) -> aws.codebuild.Project:
        return aws.codebuild.Project(
            f"{self._name}-builder",
            name=image_builder.project_name(self._args.repository_name),
            description="Builds the slurmd image of the stack from image/ (slinky-eks)",
            service_role=role.arn,
            source=aws.codebuild.ProjectSourceArgs(
                type="S3",
                location=pulumi.Output.concat(source.bucket, "/", source.key),
                buildspec=image_buildspec.BUILDSPEC,
            ),
            artifacts=aws.codebuild.ProjectArtifactsArgs(type="NO_ARTIFACTS"),
            environment=aws.codebuild.ProjectEnvironmentArgs(
                type=image_builder.ENVIRONMENT_TYPE,
                compute_type=image_builder.COMPUTE_TYPE,
                image=image_builder.BUILD_IMAGE,
                image_pull_credentials_type="CODEBUILD",
                # Docker in the build container needs it (CodeBuild User Guide, "Docker in custom
                # image sample" and ProjectEnvironment privilegedMode:
                # https://docs.aws.amazon.com/codebuild/latest/APIReference/API_ProjectEnvironment.html).
                privileged_mode=True,
            ),
            build_timeout=image_builder.BUILD_TIMEOUT_MINUTES,
            queued_timeout=image_builder.QUEUED_TIMEOUT_MINUTES,
            logs_config=aws.codebuild.ProjectLogsConfigArgs(
                cloudwatch_logs=aws.codebuild.ProjectLogsConfigCloudwatchLogsArgs(
                    status="ENABLED", group_name=logs.name
                ),
                s3_logs=aws.codebuild.ProjectLogsConfigS3LogsArgs(status="DISABLED"),
            ),
            # No vpc_config: the build reaches only public endpoints (ECR, S3, CloudWatch Logs,
            # the slurmd base's registry), which CodeBuild's own network reaches without one; in
            # the stack's VPC it would wait for the subnets and the NAT gateway and pay for the
            # DLC's gigabytes through it.
            opts=pulumi.ResourceOptions(parent=self),
        )


# How many images of earlier build contexts (ctx-<digest>) the repository keeps, newest first: a
# return to one of them is a re-tag, not a build; and how many images of other tags (local
# builds, the registry cache).
KEPT_CONTEXT_IMAGES = 10
KEPT_OTHER_IMAGES = 10


def lifecycle_policy(tag: str) -> dict:
    """The repository's lifecycle policy: the image the stack's tag names (what the nodes run:
    every build pushes it, and the runner moves the tag onto an image it reuses) is never expired;
    then untagged images after a week, the newest KEPT_CONTEXT_IMAGES context images and the newest
    KEPT_OTHER_IMAGES others are kept. An image that matches the tag selection of a rule is never
    expired by a rule of lower priority, and a rule of tagStatus "any" comes last (ECR User Guide,
    "Lifecycle policy evaluation rules" and "Lifecycle policy properties":
    https://docs.aws.amazon.com/AmazonECR/latest/userguide/LifecyclePolicies.html,
    https://docs.aws.amazon.com/AmazonECR/latest/userguide/lifecycle_policy_parameters.html), so the
    repository holds at most 1 + KEPT_CONTEXT_IMAGES + KEPT_OTHER_IMAGES tagged images."""
    return {
        "rules": [
            {
                "rulePriority": 1,
                "description": "keep the image the stack's tag names",
                # One image holds a tag, so a count of 1 never expires it; matching this rule's
                # tags keeps the lower rules from expiring it.
                "selection": {
                    "tagStatus": "tagged",
                    "tagPatternList": [tag],
                    "countType": "imageCountMoreThan",
                    "countNumber": 1,
                },
                "action": {"type": "expire"},
            },
            {
                "rulePriority": 2,
                "description": "drop untagged layers after a week",
                "selection": {
                    "tagStatus": "untagged",
                    "countType": "sinceImagePushed",
                    "countUnit": "days",
                    "countNumber": 7,
                },
                "action": {"type": "expire"},
            },
            {
                "rulePriority": 3,
                "description": f"keep the {KEPT_CONTEXT_IMAGES} newest images of build contexts",
                "selection": {
                    "tagStatus": "tagged",
                    "tagPatternList": [f"{image_buildspec.CONTEXT_TAG_PREFIX}*"],
                    "countType": "imageCountMoreThan",
                    "countNumber": KEPT_CONTEXT_IMAGES,
                },
                "action": {"type": "expire"},
            },
            {
                "rulePriority": 4,
                "description": f"keep the {KEPT_OTHER_IMAGES} newest other images",
                "selection": {
                    "tagStatus": "any",
                    "countType": "imageCountMoreThan",
                    "countNumber": KEPT_OTHER_IMAGES,
                },
                "action": {"type": "expire"},
            },
        ]
    }


def builder_trust_policy(repository_arn: str, project: str) -> dict:
    """CodeBuild may assume the builder role for the project `project` of the repository's
    account and region only. Partition, region and account come from the repository's ARN
    (arn:<partition>:ecr:<region>:<account>:repository/<name>), so the project's ARN is right in
    aws-cn and aws-us-gov too (IAM User Guide, "IAM ARNs":
    https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html)."""
    _, partition, _, region, account, _ = repository_arn.split(":", 5)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "codebuild.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": account},
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{partition}:codebuild:{region}:{account}:project/{project}"
                    },
                },
            }
        ],
    }


# ECR's push and pull actions on a repository (ECR User Guide, "Private repository policy
# examples" and the Service Authorization Reference's actions with resource type repository:
# https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerregistry.html).
ECR_PULL = ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
ECR_PUSH = ("ecr:CompleteLayerUpload", "ecr:InitiateLayerUpload", "ecr:PutImage", "ecr:UploadLayerPart")


def _builder_policy(repository_arn: str, bases: list[str], logs_arn: str, sources_arn: str) -> dict:
    statements = [
        # GetAuthorizationToken names no resource: the Service Authorization Reference lists it
        # with no resource type, so "*" is the only resource it takes (ECR User Guide, "Private
        # registry authentication":
        # https://docs.aws.amazon.com/AmazonECR/latest/userguide/registry_auth.html).
        {"Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": "*"},
        # The stack's repository: push the image and the registry cache, pull the cache, read
        # the pushed digest.
        {
            "Effect": "Allow",
            "Action": [*ECR_PULL, *ECR_PUSH, "ecr:DescribeImages"],
            "Resource": repository_arn,
        },
        # Its own log group and streams (arn:...:log-group:<name>:log-stream:<stream>).
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": [logs_arn, f"{logs_arn}:log-stream:*"],
        },
        # Its own sources, and where and whose its bucket is (the service role policy of CodeBuild
        # User Guide, "Allow CodeBuild to interact with other AWS services", grants the two bucket
        # reads with the object reads:
        # https://docs.aws.amazon.com/codebuild/latest/userguide/setting-up-service-role.html).
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:GetObjectVersion"],
            "Resource": f"{sources_arn}/{image_builder.SOURCE_PREFIX}*",
        },
        {"Effect": "Allow", "Action": ["s3:GetBucketAcl", "s3:GetBucketLocation"], "Resource": sources_arn},
    ]
    if bases:
        statements.insert(2, {"Effect": "Allow", "Action": list(ECR_PULL), "Resource": bases})
    return {"Version": "2012-10-17", "Statement": statements}
