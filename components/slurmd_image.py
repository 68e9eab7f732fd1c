"""The custom slurmd image: an ECR repository and the two-stage build of image/, pushed and
referenced by digest so every node runs exactly what was built."""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

from model.facts.image_references import dlc_reference, ecr_registry, registry_host

CACHE_TAG = "buildcache"
# image/ beside the packages (in a checkout, or where the slinky-eks package installed it),
# relative to the directory `pulumi up` runs the program in (its project directory): an absolute
# path would differ per checkout and show a diff on every machine. "image" for this project,
# "../../image" for examples/own-cluster.
CONTEXT = os.path.relpath(pathlib.Path(__file__).resolve().parents[1] / "image")


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
        image = self._build(repo, dlc_image, self._registries(repo, dlc_image))
        self.repository_url = repo.repository_url
        self.repository_arn = repo.arn
        self.digest = image.digest
        self.reference = pulumi.Output.concat(repo.repository_url, "@", image.digest)
        self.register_outputs({"reference": self.reference})

    def _repository(self) -> aws.ecr.Repository:
        return aws.ecr.Repository(
            f"{self._name}-repo",
            name=self._args.repository_name,
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(scan_on_push=True),
            # Mutable: docker-build pushes every tag again on any diff of the Image, which ECR
            # refuses for an existing immutable tag; nodes run the image by digest, never by tag
            # (docs/decisions/mutable-image-tags.md).
            image_tag_mutability="MUTABLE",
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
            policy=json.dumps(
                {
                    "rules": [
                        {
                            "rulePriority": 1,
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
                            "rulePriority": 2,
                            "description": "keep the 10 newest images",
                            "selection": {
                                "tagStatus": "any",
                                "countType": "imageCountMoreThan",
                                "countNumber": 10,
                            },
                            "action": {"type": "expire"},
                        },
                    ]
                }
            ),
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
