"""The custom slurmd image: an ECR repository and the two-stage build of image/, pushed and
referenced by digest so every node runs exactly what was built."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

from components.image_references import dlc_reference, ecr_registry, registry_host

CACHE_TAG = "buildcache"
# Relative to the project directory, where `pulumi up` runs: an absolute path would differ per
# checkout and show a diff on every machine.
CONTEXT = "image"


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
            # Mutable: docker-build pushes every tag again on any diff of the Image (its Update
            # is a full Create: pulumi-docker-build v0.0.22 provider/internal/image.go), and ECR
            # refuses a push to an existing immutable tag even with the same digest
            # (aws/containers-roadmap#2179). Nodes run the image by digest, never by tag.
            image_tag_mutability="MUTABLE",
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

        dlc_image = dlc_reference(args.dlc_image, args.region)
        own_token = aws.ecr.get_authorization_token_output(registry_id=repo.registry_id)
        own_registry = repo.repository_url.apply(lambda url: url.split("/", 1)[0])
        # Credentials only for the bases on ECR (each from its own region: ECR tokens are
        # regional); any other registry is pulled anonymously.
        base_registries = []
        for host in sorted({h for h in map(registry_host, (dlc_image, args.slurmd_base_image))
                            if ecr_registry(h)}):
            account, region = ecr_registry(host)
            token = aws.ecr.get_authorization_token_output(registry_id=account, region=region)
            base_registries.append(docker_build.RegistryArgs(
                address=host, username=token.user_name, password=pulumi.Output.secret(token.password)))
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
                *base_registries,
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
