"""Container image references: their grammar, which registries are ECR, and where the AWS Deep
Learning Containers live in each region."""

from __future__ import annotations

import re

# The reference grammar of github.com/distribution/reference v0.6.0 (reference.go, regexp.go):
#   reference := name [":" tag] ["@" digest];  name := [domain "/"] path-component ["/" ...]
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(
    rf"^(?P<name>(?:(?P<domain>{_DOMAIN})/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$"
)
NAME_MAX = 255  # RepositoryNameTotalLengthMax
# Parsing also validates the digest (github.com/opencontainers/go-digest v1.0.0 algorithm.go): a
# known algorithm and its length of lower-case hex.
_DIGEST_HEX_LENGTH = {"sha256": 64, "sha384": 96, "sha512": 128}

# ECR registry hosts: <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn] (ECR user guide,
# "Private registry concepts", https://docs.aws.amazon.com/AmazonECR/latest/userguide/Registries.html)
_ECR_HOST = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)"
    r"\.amazonaws\.com(?:\.cn)?$"
)

# The Deep Learning Containers registry account per region: aws/deep-learning-containers
# docs/reference/region_availability.md (commit 19c7d1f1, 2026-08-10; available_images.md points
# there), "Deep Learning Containers" table.
DLC_REGISTRY_ACCOUNTS = {
    **dict.fromkeys(
        (
            "us-east-1",
            "us-east-2",
            "us-west-1",
            "us-west-2",
            "ap-south-1",
            "ap-northeast-1",
            "ap-northeast-2",
            "ap-southeast-1",
            "ap-southeast-2",
            "ca-central-1",
            "eu-central-1",
            "eu-west-1",
            "eu-west-2",
            "eu-west-3",
            "eu-north-1",
            "sa-east-1",
        ),
        "763104351884",
    ),
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "ap-northeast-3": "364406365360",
    "ca-west-1": "204538143572",
    "eu-central-2": "380420809688",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "mx-central-1": "637423239942",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
}


def reference_problem(value: str) -> str | None:
    """Why value is not an image reference, or None."""
    match = _REFERENCE.match(value)
    if not match:
        return (
            "an image reference [registry/]repository[:tag][@sha256:digest] (lower-case "
            "repository path; github.com/distribution/reference grammar)"
        )
    if len(match.group("name")) > NAME_MAX:
        return f"an image reference whose name has at most {NAME_MAX} characters"
    if match.group("digest"):
        algorithm, hex_digest = match.group("digest").split(":", 1)
        if _DIGEST_HEX_LENGTH.get(algorithm) != len(hex_digest) or not re.fullmatch("[a-f0-9]+", hex_digest):
            return (
                "an image reference whose digest is sha256:<64 lower-case hex digits> "
                "(or sha384/sha512 with 96/128)"
            )
    return None


def registry_host(reference: str) -> str | None:
    """The registry host of a reference, or None when it names none (a Docker Hub short name
    or, for dlcBaseImage, a DLC repository). The first path element is a host when it has a '.'
    or ':' or is localhost (distribution/reference normalize.go splitDockerDomain)."""
    head, sep, _ = reference.partition("/")
    if sep and (head == "localhost" or "." in head or ":" in head):
        return head
    return None


def ecr_registry(host: str | None) -> tuple[str, str] | None:
    """(account, region) of an ECR registry host, None for any other registry."""
    match = _ECR_HOST.match(host or "")
    return (match.group("account"), match.group("region")) if match else None


def dlc_registry(region: str) -> str | None:
    account = DLC_REGISTRY_ACCOUNTS.get(region)
    if account is None:
        return None
    suffix = ".cn" if region.startswith("cn-") else ""
    return f"{account}.dkr.ecr.{region}.amazonaws.com{suffix}"


def dlc_reference(image: str, region: str) -> str:
    """A DLC given without a registry host lives in the DLC registry of the stack's region."""
    if registry_host(image) is not None:
        return image
    registry = dlc_registry(region)
    if registry is None:
        raise ValueError(f"no Deep Learning Containers registry is known for {region}")
    return f"{registry}/{image}"


def parts(reference: str) -> tuple[str, str | None, str | None]:
    """(name, tag, digest) of a valid reference; tag and digest None where it has none."""
    match = _REFERENCE.match(reference)
    if not match:
        raise ValueError(f"not an image reference: {reference!r}")
    return match.group("name"), match.group("tag"), match.group("digest")


def by_digest(reference: str, digest: str) -> str:
    """The reference pinned to digest, its tag kept for the reader: name:tag@digest. A container
    runtime pulls by the digest and ignores the tag beside it (distribution/reference: a
    reference with both is Canonical, resolved by its digest)."""
    name, tag, _ = parts(reference)
    return f"{name}:{tag}@{digest}" if tag else f"{name}@{digest}"


def ecr_repository_arn(reference: str) -> str | None:
    """The ARN of the ECR repository a reference names, None for a reference on any other
    registry: arn:<partition>:ecr:<region>:<account>:repository/<name> (Service Authorization
    Reference, Amazon Elastic Container Registry, resource type repository:
    https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerregistry.html),
    the name without the registry host, tag or digest."""
    host = registry_host(reference)
    found = ecr_registry(host)
    match = _REFERENCE.match(reference)
    if found is None or match is None:
        return None
    account, region = found
    partition = "aws-cn" if host.endswith(".cn") else "aws"
    name = match.group("name").split("/", 1)[1]
    return f"arn:{partition}:ecr:{region}:{account}:repository/{name}"
