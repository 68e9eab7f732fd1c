"""The slurmd image: ECR repository settings, both registries' credentials, platform, registry
cache, and the digest-pinned output."""

import json
import re
import subprocess

import pytest

from devkit.offline_account import image_digest
from devkit.offline_run import IMAGE_DIGEST, run_program
from model.facts import versions
from tests.support.paths import REPO

# The pinned Slurm release: the defaults these messages and references are checked against.
R = versions.SLURM_RELEASE

ROOT = REPO
REPO_URL = "123456789012.dkr.ecr.us-west-2.amazonaws.com/slinky-eks-dev/slurmd"
DLC_REGISTRY = "763104351884.dkr.ecr.us-west-2.amazonaws.com"


def held(reference: str) -> str:
    """The reference pinned to the digest the offline registries hold for its tag."""
    name, tag = reference.rsplit(":", 1)
    return f"{reference}@{image_digest(name, tag)}"


@pytest.fixture(scope="module")
def build(dev):
    return dev.named("slurmd-build")


def test_repository_scans_on_push(dev):
    assert dev.named("slurmd-repo").inputs["imageScanningConfiguration"] == {"scanOnPush": True}


def test_repository_accepts_a_second_push_of_a_tag(dev):
    # docker-build pushes every tag again on any diff of the Image; an immutable tag would fail
    # the second `pulumi up` (docs/decisions/mutable-image-tags.md).
    repo = dev.named("slurmd-repo").inputs
    assert repo["imageTagMutability"] == "MUTABLE"
    assert "imageTagMutabilityExclusionFilters" not in repo


def test_repository_is_deleted_with_its_images_on_destroy(dev):
    assert dev.named("slurmd-repo").inputs["forceDelete"] is True


def test_repository_has_a_lifecycle_policy(dev):
    rules = json.loads(dev.named("slurmd-lifecycle").inputs["policy"])["rules"]
    assert {r["selection"]["tagStatus"] for r in rules} == {"untagged", "any"}
    assert all(r["action"]["type"] == "expire" for r in rules)


def test_build_pulls_from_the_dlc_registry_and_pushes_to_ours(build):
    registries = build.inputs["registries"]
    by_address = {r["address"]: r for r in registries}
    assert set(by_address) == {DLC_REGISTRY, REPO_URL.split("/")[0]}
    assert (by_address[DLC_REGISTRY]["password"]) == "token-for-763104351884"
    assert (by_address[REPO_URL.split("/")[0]]["password"]) == "token-for-123456789012"
    assert all(r["username"] == "AWS" for r in registries)


def test_registry_passwords_are_secret(build):
    assert "registries" in build.secret_inputs


def test_build_is_linux_amd64_and_pushed(build):
    assert build.inputs["platforms"] == ["linux/amd64"]
    assert build.inputs["push"] is True


def test_build_uses_an_ecr_registry_cache(build):
    ref = f"{REPO_URL}:buildcache"
    assert build.inputs["cacheFrom"] == [{"registry": {"ref": ref}}]
    (to,) = build.inputs["cacheTo"]
    assert to["registry"]["ref"] == ref
    assert to["registry"]["imageManifest"] is True and to["registry"]["ociMediaTypes"] is True


def test_tag_comes_from_config(build):
    assert build.inputs["tags"] == [f"{REPO_URL}:{versions.SLURMD_IMAGE_TAG}"]


def test_build_args_carry_the_bases_by_the_digests_their_registries_hold_and_slurm_version(build):
    args = build.inputs["buildArgs"]
    assert args["DLC_IMAGE"] == held(f"{DLC_REGISTRY}/{versions.DLC_IMAGE}")
    assert args["SLURMD_IMAGE"] == held(versions.SLURMD_BASE_IMAGE)
    assert args["SLURM_VERSION"] == versions.SLURM_RELEASE


def test_dlc_reference_with_a_registry_host_is_used_as_given():
    other = (
        "871362719292.dkr.ecr.ap-east-1.amazonaws.com/pytorch-training:2.9.0-gpu-py312-cu130-ubuntu22.04-ec2"
    )
    graph = run_program("dev", {"dlcBaseImage": other})
    build = graph.named("slurmd-build")
    assert build.inputs["buildArgs"]["DLC_IMAGE"] == held(other)
    assert "871362719292.dkr.ecr.ap-east-1.amazonaws.com" in {
        r["address"] for r in (build.inputs["registries"])
    }


def test_context_is_relative_so_every_checkout_agrees(build):
    assert build.inputs["context"] == {"location": "image"}
    assert build.inputs["dockerfile"] == {"location": "image/Dockerfile"}


def test_preview_does_not_build_unless_asked(build):
    assert build.inputs["buildOnPreview"] is False
    graph = run_program("dev", {"buildImageOnPreview": True})
    assert graph.named("slurmd-build").inputs["buildOnPreview"] is True


def test_output_is_the_pushed_reference_pinned_by_digest(dev):
    assert dev.output("slurmdImage") == f"{REPO_URL}@{IMAGE_DIGEST}"


def test_image_builds_while_eks_is_created(dev, build):
    for other in ("cluster-eks", "network-vpc", "nodes-gpu"):
        assert not dev.depends_on(build, dev.named(other))


def test_dockerfile_passes_hadolint():
    result = subprocess.run(
        [str(ROOT / ".venv/bin/hadolint"), "--failure-threshold", "error", str(ROOT / "image/Dockerfile")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_scripts_pass_shellcheck():
    scripts = sorted(str(p) for p in (ROOT / "image").glob("*.sh"))
    # -x: the assertions source image/loader.sh, which is checked with them.
    result = subprocess.run(
        [str(ROOT / ".venv/bin/shellcheck"), "-x", "-P", "SCRIPTDIR", *scripts],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_bases_can_be_pinned_by_digest():
    digest = "sha256:" + "cd" * 32
    slurmd = f"ghcr.io/slinkyproject/slurmd:{R}-ubuntu24.04@{digest}"
    dlc = f"{DLC_REGISTRY}/pytorch:2.13.0-cu133-amzn2023@{digest}"
    graph = run_program("dev", {"slurmdBaseImage": slurmd, "dlcBaseImage": dlc})
    args = graph.named("slurmd-build").inputs["buildArgs"]
    assert args["SLURMD_IMAGE"] == slurmd and args["DLC_IMAGE"] == dlc


def test_the_dlc_registry_is_the_regions_from_the_dlc_table():
    # ap-east-1's DLC registry is 871362719292, not the 763104351884 of most regions.
    graph = run_program(
        "dev", {"aws:region": "ap-east-1", "availabilityZone": "ap-east-1a", "gpuInstanceType": "g5.12xlarge"}
    )
    build = graph.named("slurmd-build")
    host = "871362719292.dkr.ecr.ap-east-1.amazonaws.com"
    assert build.inputs["buildArgs"]["DLC_IMAGE"] == held(f"{host}/{versions.DLC_IMAGE}")
    assert host in {r["address"] for r in build.inputs["registries"]}
    assert (
        "aws:ecr/getAuthorizationToken:getAuthorizationToken",
        {"registryId": "871362719292", "region": "ap-east-1"},
    ) in graph.calls


def test_a_region_without_a_dlc_registry_needs_a_full_dlc_reference():
    from tests.support.program import rejected

    msg = rejected(**{"aws:region": "us-gov-west-1", "availabilityZone": "us-gov-west-1a"})
    assert f"dlcBaseImage = '{versions.DLC_IMAGE}'" in msg and "us-gov-west-1" in msg


def test_a_base_image_on_another_registry_gets_no_ecr_credentials():
    graph = run_program("dev", {"dlcBaseImage": "docker.io/myorg/pytorch-training:2.9.0-gpu"})
    build = graph.named("slurmd-build")
    assert build.inputs["buildArgs"][
        "DLC_IMAGE"
    ] == "docker.io/myorg/pytorch-training:2.9.0-gpu@" + image_digest(
        "registry-1.docker.io/myorg/pytorch-training", "2.9.0-gpu"
    )
    assert {r["address"] for r in build.inputs["registries"]} == {REPO_URL.split("/")[0]}
    tokens = [a for t, a in graph.calls if t.endswith("getAuthorizationToken")]
    assert tokens == [{"registryId": "123456789012"}]


def test_a_base_image_on_ecr_gets_credentials_from_its_own_region():
    base = f"210987654321.dkr.ecr.eu-west-1.amazonaws.com/slinky/slurmd:{R}-ubuntu24.04"
    graph = run_program("dev", {"slurmdBaseImage": base})
    registries = {r["address"]: r for r in graph.named("slurmd-build").inputs["registries"]}
    assert registries["210987654321.dkr.ecr.eu-west-1.amazonaws.com"]["password"] == "token-for-210987654321"
    assert (
        "aws:ecr/getAuthorizationToken:getAuthorizationToken",
        {"registryId": "210987654321", "region": "eu-west-1"},
    ) in graph.calls


def _ecr_accepts_push(repo: dict, existing: set[str], pushed: list[str]) -> bool:
    """ECR's rule for a push (ECR user guide, "Preventing image tags from being overwritten",
    https://docs.aws.amazon.com/AmazonECR/latest/userguide/image-tag-mutability.html): a tag that
    exists in an IMMUTABLE repository is refused, whatever the digest; with
    IMMUTABLE_WITH_EXCLUSION only tags matching an exclusion filter may move."""
    import fnmatch

    mode = repo["imageTagMutability"]
    for ref in pushed:
        tag = ref.rsplit(":", 1)[1]
        if tag not in existing or mode == "MUTABLE":
            continue
        excluded = [f["filter"] for f in repo.get("imageTagMutabilityExclusionFilters") or []]
        if mode == "IMMUTABLE_WITH_EXCLUSION" and any(fnmatch.fnmatchcase(tag, f) for f in excluded):
            continue
        return False
    return True


def _pushes(build: dict) -> list[str]:
    # docker-build's Update is a full Create: every tag and the cache ref are pushed again on
    # any diff (pulumi-docker-build v0.0.22 provider/internal/image.go Diff, Update).
    return build["tags"] + [c["registry"]["ref"] for c in build["cacheTo"]]


@pytest.mark.parametrize(
    "second",
    [
        {},
        {"buildImageOnPreview": True},
        {"slurmdBaseImage": f"ghcr.io/slinkyproject/slurmd:{R}-ubuntu24.04@sha256:" + "cd" * 32},
    ],
)
def test_a_second_up_never_fails_on_a_tag(dev, second):
    first = dev.named("slurmd-build").inputs
    existing = {ref.rsplit(":", 1)[1] for ref in _pushes(first)}
    graph = run_program("dev", second)
    again = graph.named("slurmd-build").inputs
    assert _ecr_accepts_push(graph.named("slurmd-repo").inputs, existing, _pushes(again))


def test_the_ecr_push_model_refuses_a_second_push_to_an_immutable_tag(dev):
    build = dev.named("slurmd-build").inputs
    existing = {ref.rsplit(":", 1)[1] for ref in _pushes(build)}
    immutable = {
        "imageTagMutability": "IMMUTABLE_WITH_EXCLUSION",
        "imageTagMutabilityExclusionFilters": [{"filter": "buildcache", "filterType": "WILDCARD"}],
    }
    assert not _ecr_accepts_push(immutable, existing, _pushes(build))
    assert _ecr_accepts_push(immutable, set(), _pushes(build))


def _undocumented_dlc_copies(dockerfile: str, readme: str) -> list[str]:
    """Sources of `COPY --from=dlc` that image/README.md's DLC table does not list."""
    table = readme.split("## DLC", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`(/[^`]+)`", table))
    sources = [m.split()[0] for m in re.findall(r"^COPY --from=dlc (.+)$", dockerfile, re.M)]
    return [s for s in sources if s.rstrip("/") not in {d.rstrip("/") for d in documented}]


def test_dockerfile_copies_from_the_dlc_only_what_its_layout_documents():
    readme = (ROOT / "image/README.md").read_text()
    assert _undocumented_dlc_copies((ROOT / "image/Dockerfile").read_text(), readme) == []
    # The copy that broke the first `pulumi up`: a libpython the DLC of then did not have.
    broken = "COPY --from=dlc /usr/local/lib/libpython3.12.so.1.0 /usr/local/lib/libpython3.12.so.1.0\n"
    assert _undocumented_dlc_copies(broken, readme) == ["/usr/local/lib/libpython3.12.so.1.0"]
