"""Where the slurmd image is built (the `imageBuilder` key) and the in-region builder's settings:
the AWS CodeBuild environment, its time limits, and how long its sources and logs are kept. The
key (model/checks/config_schema.py) and the component (components/slurmd_image.py) read them here;
docs/decisions/image-builder.md says why CodeBuild."""

from __future__ import annotations

# `codebuild`: AWS CodeBuild builds image/ in the stack's region, next to the DLC registry and the
# stack's repository; `local`: the deployer's Docker builds it and pushes it (the path from before,
# for iterating on the image).
CODEBUILD = "codebuild"
LOCAL = "local"
IMAGE_BUILDERS = (CODEBUILD, LOCAL)
DEFAULT_IMAGE_BUILDER = CODEBUILD

# The on-demand EC2 compute CodeBuild runs the build on (CodeBuild User Guide, "Build environment
# compute modes and types", About environment types:
# https://docs.aws.amazon.com/codebuild/latest/userguide/build-env-ref-compute-types.html):
# LINUX_CONTAINER BUILD_GENERAL1_LARGE has 15 GB of memory, 8 vCPUs and 128 GB of disk. The DLC
# alone is 15-21 GB unpacked (aws/deep-learning-containers PR #3270: 20575 MB; PR #3337: 15.5 GB),
# held twice while it is pulled (compressed layers, then unpacked), beside the slurmd base, both
# build stages and the result: an estimated 40-60 GB, within LARGE's disk with room for the
# registry cache. MEDIUM has the same disk but 7 GB of memory and 4 vCPUs for the compile and the
# layer compression; XLARGE's 36 vCPUs would mostly wait on the pull and the push.
ENVIRONMENT_TYPE = "LINUX_CONTAINER"
COMPUTE_TYPE = "BUILD_GENERAL1_LARGE"
# The curated Amazon Linux 2023 x86_64 standard image, version 5.0, with Docker and buildx, named
# without `2` since 2024-11-22 (CodeBuild User Guide, "Docker images provided by CodeBuild", EC2
# compute images: https://docs.aws.amazon.com/codebuild/latest/userguide/ec2-compute-images.html).
# Naming the major version, not a patch version, lets CodeBuild start it from the image cached on
# its hosts (same guide, "Docker images provided by CodeBuild").
BUILD_IMAGE = "aws/codebuild/amazonlinux-x86_64-standard:5.0"
# A build that has not finished in this long has hung (a local build is modelled at 10 minutes,
# devkit/bench_timeline.py; the DLC pull inside the region takes minutes): CodeBuild stops it and
# `up` fails with its phase and log. CodeBuild accepts 5 to 2160 minutes for timeoutInMinutes and 5
# to 480 for queuedTimeoutInMinutes (CodeBuild API Reference, CreateProject:
# https://docs.aws.amazon.com/codebuild/latest/APIReference/API_CreateProject.html; botocore's
# codebuild 2016-10-06 service model, shapes BuildTimeOut and TimeOut).
BUILD_TIMEOUT_MINUTES = 90
QUEUED_TIMEOUT_MINUTES = 60

# The AWS provider's config keys (Pulumi Registry, AWS provider, "Installation & Configuration",
# Configuration reference: https://www.pulumi.com/registry/packages/aws/installation-configuration/)
# that change who the provider calls AWS as, where, or which accounts it may touch, and that the
# in-region build's runner does not read: it is a dynamic provider calling CodeBuild and ECR with
# boto3 from aws:region and aws:profile only (components/_parts/image_build_run.py). With one of
# these set the runner would act as someone else, elsewhere, or in an account the provider
# refuses; an AWS profile carries credentials, roles (role_arn, source_profile, web identity) and
# endpoints for both (boto3 and the provider read the same shared files).
RUNNER_IGNORED_PROVIDER_KEYS = (
    "aws:accessKey",
    "aws:secretKey",
    "aws:token",
    "aws:assumeRole",
    "aws:assumeRoles",
    "aws:assumeRoleWithWebIdentity",
    "aws:sharedCredentialsFiles",
    "aws:sharedConfigFiles",
    "aws:endpoints",
    "aws:customCaBundle",
    "aws:stsRegion",
    "aws:useFipsEndpoint",
    "aws:httpProxy",
    "aws:httpsProxy",
    "aws:insecure",
    "aws:allowedAccountIds",
    "aws:forbiddenAccountIds",
)

# A build log answers "why did this build fail" or "what went into this image": read within days
# of the build. A month, one of the retentions CloudWatch Logs accepts (audit_logs.RETENTION_DAYS).
BUILD_LOG_RETENTION_DAYS = 30


# Where the source objects lie in the stack's bucket: what the build's role may read.
SOURCE_PREFIX = "image-context/"


def source_key(context_digest: str) -> str:
    """The source object's key: named by the build context's digest, so the object changes only
    when the context does."""
    return f"{SOURCE_PREFIX}{context_digest}.zip"


def project_name(repository_name: str) -> str:
    """The CodeBuild project of the stack's image, named after its repository (<clusterName>/slurmd
    gives <clusterName>-slurmd): fixed before the project exists, so the role's trust policy can
    name the project's ARN. CodeBuild allows letters, digits, '-' and '_' (CodeBuild API Reference,
    CreateProject name: [A-Za-z0-9][A-Za-z0-9\\-_]{1,254}), which a cluster name always is."""
    return repository_name.replace("/", "-")


def build_log_group(project: str) -> str:
    """The log group the project's builds write to, under /aws/codebuild/ beside other projects'
    groups; the stack makes it, with a retention, and the project names it (logsConfig)."""
    return f"/aws/codebuild/{project}"
