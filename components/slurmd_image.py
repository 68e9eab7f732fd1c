"""The custom slurmd image: an ECR repository and the two-stage build of image/, pushed and
referenced by digest so every node runs exactly what was built."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

# The AWS Deep Learning Containers registry account in most regions.
DLC_ACCOUNT = "763104351884"
CACHE_TAG = "buildcache"
# Relative to the project directory, where `pulumi up` runs: an absolute path would differ per
# checkout and show a diff on every machine.
CONTEXT = "image"


def dlc_reference(image: str, region: str) -> tuple[str, str]:
    """(full reference, registry host): a reference without a registry host lives in the DLC
    registry of the stack's region."""
    head = image.split("/", 1)[0]
    if "." in head and "/" in image:
        return image, head
    registry = f"{DLC_ACCOUNT}.dkr.ecr.{region}.amazonaws.com"
    return f"{registry}/{image}", registry


@dataclass(frozen=True)
class SlurmdImageArgs:
    repository_name: str
    region: str
    tag: str
    slurm_version: str
    dlc_image: str
    slurmd_base_image: str
    build_on_preview: bool


class SlurmdImage(pulumi.ComponentResource):
    reference: pulumi.Output[str]   # <repository>@sha256:<digest>
    repository_url: pulumi.Output[str]
    digest: pulumi.Output[str]

    def __init__(self, name: str, args: SlurmdImageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:image:SlurmdImage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        repo = aws.ecr.Repository(
            f"{name}-repo", name=args.repository_name,
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(scan_on_push=True),
            # Released tags never move; only the build cache tag is rewritten on every build.
            image_tag_mutability="IMMUTABLE_WITH_EXCLUSION",
            image_tag_mutability_exclusion_filters=[aws.ecr.RepositoryImageTagMutabilityExclusionFilterArgs(
                filter=CACHE_TAG, filter_type="WILDCARD")],
            encryption_configurations=[aws.ecr.RepositoryEncryptionConfigurationArgs(encryption_type="AES256")],
            # Teardown leaves nothing behind: a repository holding images cannot be deleted otherwise.
            force_delete=True, opts=child)
        aws.ecr.LifecyclePolicy(f"{name}-lifecycle", repository=repo.name, policy=json.dumps({"rules": [
            {"rulePriority": 1, "description": "drop untagged layers after a week",
             "selection": {"tagStatus": "untagged", "countType": "sinceImagePushed",
                           "countUnit": "days", "countNumber": 7},
             "action": {"type": "expire"}},
            {"rulePriority": 2, "description": "keep the 10 newest images",
             "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 10},
             "action": {"type": "expire"}},
        ]}), opts=child)

        dlc_image, dlc_registry = dlc_reference(args.dlc_image, args.region)
        dlc_token = aws.ecr.get_authorization_token_output(registry_id=dlc_registry.split(".")[0])
        own_token = aws.ecr.get_authorization_token_output(registry_id=repo.registry_id)
        own_registry = repo.repository_url.apply(lambda url: url.split("/", 1)[0])
        cache_ref = pulumi.Output.concat(repo.repository_url, ":", CACHE_TAG)
        image = docker_build.Image(
            f"{name}-build",
            context=docker_build.BuildContextArgs(location=CONTEXT),
            dockerfile=docker_build.DockerfileArgs(location=f"{CONTEXT}/Dockerfile"),
            platforms=[docker_build.Platform.LINUX_AMD64],
            build_args={"DLC_IMAGE": dlc_image, "SLURMD_IMAGE": args.slurmd_base_image,
                        "SLURM_VERSION": args.slurm_version},
            tags=[pulumi.Output.concat(repo.repository_url, ":", args.tag)],
            push=True,
            # Pull the DLC from AWS's account and push to ours, credentials in memory only.
            registries=[
                docker_build.RegistryArgs(address=dlc_registry, username=dlc_token.user_name,
                                          password=pulumi.Output.secret(dlc_token.password)),
                docker_build.RegistryArgs(address=own_registry, username=own_token.user_name,
                                          password=pulumi.Output.secret(own_token.password)),
            ],
            # ECR needs image-manifest cache exports (docker-build docs).
            cache_from=[docker_build.CacheFromArgs(registry=docker_build.CacheFromRegistryArgs(ref=cache_ref))],
            cache_to=[docker_build.CacheToArgs(registry=docker_build.CacheToRegistryArgs(
                ref=cache_ref, image_manifest=True, oci_media_types=True,
                mode=docker_build.CacheMode.MAX))],
            # Code review runs `pulumi preview` without Docker.
            build_on_preview=args.build_on_preview,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[repo]))
        self.repository_url = repo.repository_url
        self.digest = image.digest
        self.reference = pulumi.Output.concat(repo.repository_url, "@", image.digest)
        self.register_outputs({"reference": self.reference})
