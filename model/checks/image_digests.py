"""Every image the stack builds on or the cluster runs from a registry by tag, resolved to the digest
the registry holds for that tag before any resource is registered: the DLC and the slurmd base the
image build starts from (dlcBaseImage, slurmdBaseImage) and the Slinky images of the two charts
(slurmctld, slurmrestd, slurmdbd and login at the slurmd base's tag; the operator and its webhook
at slinkyChartVersion). A tag its registry does not hold is refused here, naming the key that chose
it, instead of failing the build or a pod after the network and EKS are up; a tag that moves
later (AWS re-pushes a DLC tag with each patch) cannot change what runs without a new `up`.

Pure: the registries are asked through the Registry protocol (stack/account.py answers it with
pulumi-aws's aws:ecr/getImage and getImages for ECR, and through the registry's own API elsewhere:
stack/registry.py; devkit's offline account answers both). A reference given with @sha256: is used
as given, unasked. A registry that cannot be read from here (unreachable, or answering what its API
does not: a proxy's HTML page, a digest that is not sha256 hex) leaves the image by tag with the same
warning as a lookup the deployer may not make: where the deployer's network cannot read a registry,
the build and the nodes in the region may still pull from it, so the preview is not stopped; the
warning says which answer was refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Protocol

from model.checks.preflight import PermissionDenied
from model.checks.problems import ERROR, WARNING, Problem, error, identify, warning
from model.facts import versions
from model.facts.image_references import by_digest, dlc_reference, ecr_registry, parts, registry_host

IMAGE_TAG_EXISTS = identify(
    "image-tag-exists",
    ERROR,
    "an image tag its registry holds",
    "dlcBaseImage",
    "slurmdBaseImage",
    "slinkyChartVersion",
)
IMAGE_LOOKUP_SKIPPED = identify(
    "image-lookup-skipped",
    WARNING,
    "an image the deployer may not look up is used by its tag",
    "dlcBaseImage",
    "slurmdBaseImage",
    "slinkyChartVersion",
)

# The login pod's image: the pyxis flavour of Slinky's login, so srun and sbatch there load the plugin
# plugstack.conf requires (SlinkyProject/containers schedmd/slurm/docker-bake.hcl, target login_pyxis,
# tagged as the others; docs/decisions/container-runtime.md).
LOGIN_IMAGE = "login-pyxis"
# The Slinky images the slurm chart runs, each tagged as the slurmd base is (SlinkyProject/containers
# docker-bake.hcl: one tag per Slurm build and flavour), under versions.SLINKY_IMAGES; the login
# and slurmctld images also run the identities' init containers (model/builders/identities.py).
CLUSTER_IMAGES = ("slurmctld", "slurmrestd", "slurmdbd", LOGIN_IMAGE)
# The slurm-operator chart's two images, tagged with the chart's version (helm/slurm-operator
# templates/operator/deployment.yaml and webhook/deployment.yaml at v1.2.1: the tag defaults to
# .Chart.Version).
OPERATOR_IMAGES = ("slurm-operator", "slurm-operator-webhook")
# At most this many of a repository's tags in a refusal: the DLC repositories hold thousands.
TAGS_SHOWN = 12


# A digest as it may be pinned into build arguments and chart values: sha256, the one algorithm the
# OCI image-spec v1.1.0 requires (descriptor.md, "Digests": the encoded part lower-case hex).
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class LookupFailed(Exception):
    """The registry could not be read, or answered what its API does not; one line saying which."""


class Registry(Protocol):
    """What a registry answers about one reference (name:tag, with its registry host)."""

    def image_digest(self, reference: str) -> str | None:
        """The sha256:<hex> digest the registry holds for the tag, None when it holds no such tag
        (or no such repository); PermissionDenied naming the IAM action the deployer lacks;
        LookupFailed where the registry could not be read."""
        ...

    def image_tags(self, reference: str) -> list[str] | None:
        """The tags the reference's repository holds, None where no invoke lists them;
        LookupFailed where the registry could not be read."""
        ...


@dataclass(frozen=True)
class Wanted:
    """One image to resolve: the config key that chose it, that key's value, the reference."""

    key: str
    value: str
    reference: str  # with its registry host; @digest where the value pinned one
    # Derived from the value rather than named by it (a Slinky image at the slurmd base's tag).
    derived: bool = False


@dataclass(frozen=True)
class ResolvedImages:
    """Each image by digest (name:tag@sha256:...), or by tag where the lookup was skipped."""

    dlc_base: str
    slurmd_base: str
    slinky: Mapping[str, str]  # a Slinky image's name (CLUSTER_IMAGES, OPERATOR_IMAGES) -> reference


def slinky_image_tag(slurmd_base_image: str) -> str:
    """The tag of the Slinky slurmd base image (e.g. 26.05.5-ubuntu24.04), which every Slinky image
    of that Slurm release carries (SlinkyProject/containers docker-bake.hcl format_tag)."""
    return slurmd_base_image.split("@", 1)[0].rsplit(":", 1)[-1]


# What every image of a ResolvedImages is, as wanted() and resolve() name them.
EVERY_IMAGE = ("dlc", "slurmd-base", *CLUSTER_IMAGES, *OPERATOR_IMAGES)


def wanted(
    slurmd_base_image: str | None,
    chart_version: str | None,
    dlc_base_image: str | None = None,
    region: str | None = None,
) -> dict[str, Wanted]:
    """Every image to resolve, by what it is: slurmd-base and the Slinky cluster images where
    slurmdBaseImage is given, the operator's where slinkyChartVersion is, and dlc where
    dlcBaseImage and the region are (the DLC's registry is the region's). Each key is resolved
    whatever became of the others, so every missing tag is reported at once."""
    dlc = (
        {"dlc": Wanted("dlcBaseImage", dlc_base_image, dlc_reference(dlc_base_image, region))}
        if dlc_base_image and region
        else {}
    )
    slurmd: dict[str, Wanted] = {}
    if slurmd_base_image:
        tag = slinky_image_tag(slurmd_base_image)
        slurmd = {
            "slurmd-base": Wanted("slurmdBaseImage", slurmd_base_image, slurmd_base_image),
            **{
                name: Wanted(
                    "slurmdBaseImage", slurmd_base_image, f"{versions.SLINKY_IMAGES}/{name}:{tag}", True
                )
                for name in CLUSTER_IMAGES
            },
        }
    operator = {
        name: Wanted(
            "slinkyChartVersion", chart_version, f"{versions.SLINKY_IMAGES}/{name}:{chart_version}", True
        )
        for name in (OPERATOR_IMAGES if chart_version else ())
    }
    return {**dlc, **slurmd, **operator}


def resolve(registry: Registry, images: Mapping[str, Wanted], out: list[Problem]) -> dict[str, str]:
    """Each image's reference by digest, by the same keys; every missing tag and every skipped
    lookup is added to `out`, all of them at once. Each reference is asked once, however many
    images share it."""
    answers: dict[str, str | None] = {}
    denied: dict[str, str] = {}  # reference -> why it was not looked up
    for w in images.values():
        if parts(w.reference)[2] or w.reference in answers or w.reference in denied:
            continue
        try:
            answer = registry.image_digest(w.reference)
            if answer is not None and not DIGEST.fullmatch(answer):
                raise LookupFailed(f"it answered the digest {answer[:80]!r}, not sha256:<64 hex>")
            answers[w.reference] = answer
        except PermissionDenied as refused:
            denied[w.reference] = (
                f"the deployer may not run {refused.action} (grant it to resolve the tag before "
                "anything is created)"
            )
        except LookupFailed as failed:
            denied[w.reference] = (
                f"its registry could not be read from here ({failed}); pin it @sha256: to hold it"
            )
    resolved, reported = {}, set()
    for what, w in images.items():
        if parts(w.reference)[2]:
            resolved[what] = w.reference
        elif w.reference in denied:
            resolved[what] = w.reference
            if w.reference not in reported:
                out.append(_skipped(w, denied[w.reference]))
        elif answers[w.reference] is None:
            resolved[what] = w.reference
            if w.reference not in reported:
                out.append(_missing(registry, w))
        else:
            resolved[what] = by_digest(w.reference, answers[w.reference])
        reported.add(w.reference)
    return resolved


def resolved_images(resolved: Mapping[str, str]) -> ResolvedImages | None:
    """The images of a complete resolve(), None where an image's key was left out."""
    if not set(EVERY_IMAGE) <= resolved.keys():
        return None
    return ResolvedImages(
        dlc_base=resolved["dlc"],
        slurmd_base=resolved["slurmd-base"],
        slinky={name: resolved[name] for name in (*CLUSTER_IMAGES, *OPERATOR_IMAGES)},
    )


def _missing(registry: Registry, w: Wanted) -> Problem:
    name, tag, _ = parts(w.reference)
    try:
        tags = registry.image_tags(w.reference)
    except LookupFailed:
        tags = None
    where = (
        f"tags it holds: {_nearest(tag or 'latest', tags)}"
        if tags is not None
        else _tags_elsewhere(w.reference)
    )
    return error(
        IMAGE_TAG_EXISTS,
        w.key,
        w.value,
        f"{'the tag of ' + name + ', ' if w.derived else ''}an image tag its registry holds; "
        f"{name} holds no tag {tag!r}; {where}",
    )


def _tags_elsewhere(reference: str) -> str:
    """Where to read a repository's tags when the registry did not list them here."""
    name, _, _ = parts(reference)
    host = registry_host(reference)
    ecr = ecr_registry(host)
    if ecr is not None:  # the deployer may not call ListImages
        account, region = ecr
        return (
            f"its tags: aws ecr list-images --registry-id {account} --region {region} "
            f"--repository-name {name.removeprefix(f'{host}/')}"
        )
    # A registry that did not list them (it refused the tags list) is named with the address of
    # its list: GET /v2/<name>/tags/list (OCI distribution-spec v1.1.0, "Listing tags",
    # https://github.com/opencontainers/distribution-spec/blob/v1.1.0/spec.md#listing-tags). Docker
    # Hub's registry API is at registry-1.docker.io, its official images under library/
    # (distribution/reference normalize.go).
    path = name.removeprefix(f"{host}/") if host else name
    if host in (None, "docker.io", "index.docker.io"):
        host, path = "registry-1.docker.io", path if "/" in path else f"library/{path}"
    return f"its tags are listed at https://{host}/v2/{path}/tags/list (OCI distribution-spec, Listing tags)"


def _nearest(tag: str, tags: list[str]) -> str:
    """The tags most like the one asked for (the longest common start first), at most TAGS_SHOWN."""

    def common(other: str) -> int:
        n = 0
        while n < min(len(tag), len(other)) and tag[n] == other[n]:
            n += 1
        return n

    if not tags:
        return "none"
    ranked = sorted(set(tags), key=lambda t: (-common(t), t))
    shown = ranked[:TAGS_SHOWN]
    more = len(ranked) - len(shown)
    return ", ".join(shown) + (f" (and {more} more)" if more else "")


def _skipped(w: Wanted, why: str) -> Problem:
    return warning(
        IMAGE_LOOKUP_SKIPPED,
        w.key,
        w.value,
        f"{w.key}: {w.reference} is used by its tag, not resolved to a digest: {why}.",
    )
