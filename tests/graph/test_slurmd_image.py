"""The slurmd image: ECR repository settings, both registries' credentials, platform, registry
cache, and the digest-pinned output."""

import fnmatch
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


# The deployer's Docker builds the image (imageBuilder=local): the build these tests read.
LOCAL = {"imageBuilder": "local"}


@pytest.fixture(scope="module")
def local():
    return run_program("dev", LOCAL)


@pytest.fixture(scope="module")
def build(local):
    return local.named("slurmd-build")


def test_repository_scans_on_push(dev):
    assert dev.named("slurmd-repo").inputs["imageScanningConfiguration"] == {"scanOnPush": True}


def test_repository_accepts_a_second_push_of_a_tag_but_not_of_a_context_tag(dev):
    # docker-build pushes every tag again on any diff of the Image; an immutable tag would fail
    # the second `pulumi up` (docs/decisions/mutable-image-tags.md). A ctx-<digest> tag is pushed
    # once per context, and what it names must not move.
    repo = dev.named("slurmd-repo").inputs
    assert repo["imageTagMutability"] == "MUTABLE_WITH_EXCLUSION"
    assert repo["imageTagMutabilityExclusionFilters"] == [{"filter": "ctx-*", "filterType": "WILDCARD"}]


def test_repository_is_deleted_with_its_images_on_destroy(dev):
    assert dev.named("slurmd-repo").inputs["forceDelete"] is True


def _expired(policy: dict, images: list[tuple[str, ...]]) -> set[int]:
    """The indices of `images` (each its tags; listed oldest push first) that ECR's lifecycle
    evaluation expires, by the rules of the ECR User Guide, "Lifecycle policy evaluation rules":
    rules in priority order; imageCountMoreThan counts every image the rule selects, newest first,
    but a rule never expires an image that matched the tag selection of a higher-priority rule;
    sinceImagePushed here expires every image it selects (all are taken as older than its days)."""
    claimed: set[int] = set()
    expired: set[int] = set()
    for rule in sorted(policy["rules"], key=lambda r: r["rulePriority"]):
        selection = rule["selection"]
        matching = [i for i in range(len(images)) if _selects(selection, images[i])]
        chosen = sorted(matching, reverse=True)  # newest first
        if selection["countType"] == "imageCountMoreThan":
            chosen = chosen[selection["countNumber"] :]
        expired |= {i for i in chosen if i not in claimed}
        claimed |= set(matching)
    return expired


def _selects(selection: dict, tags: tuple[str, ...]) -> bool:
    """Whether a rule's tag selection takes an image with `tags`: every pattern matches one of
    them (ECR User Guide, "Lifecycle policy properties", tagPatternList)."""
    if selection["tagStatus"] == "untagged":
        return not tags
    if selection["tagStatus"] == "any":
        return True
    patterns = selection.get("tagPatternList") or [f"{p}*" for p in selection.get("tagPrefixList", [])]
    return bool(tags) and all(any(fnmatch.fnmatchcase(t, p) for t in tags) for p in patterns)


@pytest.fixture(scope="module")
def lifecycle(dev) -> dict:
    return json.loads(dev.named("slurmd-lifecycle").inputs["policy"])


def test_the_image_the_stacks_tag_names_is_never_expired_however_old(lifecycle):
    # A return to earlier inputs reuses an old context's image and moves the tag onto it; twelve
    # newer contexts and local images must not expire it.
    tag = versions.SLURMD_IMAGE_TAG
    images = [(tag, "ctx-" + "0" * 64), *[(f"ctx-{n:064x}",) for n in range(1, 13)], ("buildcache",)]
    images += [(f"old-{n}",) for n in range(12)]
    assert 0 not in _expired(lifecycle, images)


def test_the_repository_stays_bounded(lifecycle):
    from components.slurmd_image import KEPT_CONTEXT_IMAGES, KEPT_OTHER_IMAGES

    tag = versions.SLURMD_IMAGE_TAG
    images = [(tag, "ctx-" + "0" * 64), *[(f"ctx-{n:064x}",) for n in range(1, 30)]]
    images += [(f"old-{n}",) for n in range(30)] + [()] * 5
    kept = len(images) - len(_expired(lifecycle, images))
    assert 0 < kept <= 1 + KEPT_CONTEXT_IMAGES + KEPT_OTHER_IMAGES


def test_the_lifecycle_model_expires_the_oldest_image_under_a_keep_the_newest_rule():
    # The model's own check: a lone "keep the 10 newest" rule expires the stack's oldest image.
    keep_ten = {
        "rules": [
            {
                "rulePriority": 1,
                "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 10},
                "action": {"type": "expire"},
            }
        ]
    }
    assert 0 in _expired(keep_ten, [("a",)] + [(f"ctx-{n}",) for n in range(12)])


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
    graph = run_program("dev", {**LOCAL, "dlcBaseImage": other})
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
    graph = run_program("dev", {**LOCAL, "buildImageOnPreview": True})
    assert graph.named("slurmd-build").inputs["buildOnPreview"] is True


def test_output_is_the_pushed_reference_pinned_by_digest(local):
    assert local.output("slurmdImage") == f"{REPO_URL}@{IMAGE_DIGEST}"


def test_image_builds_while_eks_is_created(local, build):
    for other in ("cluster-eks", "network-vpc", "nodes-gpu"):
        assert not local.depends_on(build, local.named(other))


def test_dockerfile_passes_hadolint():
    result = subprocess.run(
        [str(ROOT / ".venv/bin/hadolint"), "--failure-threshold", "error", str(ROOT / "image/Dockerfile")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _executed_without_an_executable_mode(dockerfile: str) -> list[str]:
    """Files copied from the context that a RUN executes (a command's first word), with neither COPY --chmod giving an
    executable mode nor a chmod in an earlier RUN."""
    from model.builders.image_buildspec import dockerfile_instructions

    copied, made_executable, unexecutable = {}, set(), []
    for instruction, words in dockerfile_instructions(dockerfile):
        if instruction == "COPY" and not any(w.startswith("--from=") for w in words):
            mode = next((w.split("=", 1)[1] for w in words if w.startswith("--chmod=")), "0644")
            *sources, destination = [w for w in words if not w.startswith("--")]
            for source in sources:
                path = destination + source.rsplit("/", 1)[-1] if destination.endswith("/") else destination
                copied[path] = int(mode, 8) & 0o111 == 0o111
        elif instruction == "RUN":
            text = " ".join(words)
            for path, executable in copied.items():
                if re.search(rf"chmod \S*\s*{re.escape(path)}(?![\w./-])", text):
                    made_executable.add(path)
                elif re.search(rf"(^|&&|\|\||[;|])\s*{re.escape(path)}(?![\w./-])", text) and not (
                    executable or path in made_executable
                ):
                    unexecutable.append(path)
    return unexecutable


def test_every_file_the_dockerfile_executes_is_copied_executable():
    # The in-region build's context is a zip without file modes, so a script is executable in the
    # image only if the Dockerfile makes it so.
    assert _executed_without_an_executable_mode((ROOT / "image/Dockerfile").read_text()) == []


def test_the_mode_check_finds_a_script_copied_without_chmod():
    dockerfile = "FROM a\nCOPY run.sh /usr/local/sbin/\nRUN /usr/local/sbin/run.sh --x\n"
    assert _executed_without_an_executable_mode(dockerfile) == ["/usr/local/sbin/run.sh"]
    chmodded = dockerfile.replace("RUN /usr", "RUN chmod 0755 /usr/local/sbin/run.sh && /usr")
    assert _executed_without_an_executable_mode(chmodded) == []


def test_the_image_scripts_are_executable_in_git():
    # A local build of a checkout copies the modes git gave the files.
    listed = subprocess.run(
        ["git", "ls-files", "-s", "--", "image/*.sh"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert listed and [line.split()[-1] for line in listed if not line.startswith("100755")] == []


def test_image_scripts_pass_shellcheck():
    # rglob: the enroot hooks in image/enroot-hooks/ too.
    scripts = sorted(str(p) for p in (ROOT / "image").rglob("*.sh"))
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
    graph = run_program("dev", {**LOCAL, "slurmdBaseImage": slurmd, "dlcBaseImage": dlc})
    args = graph.named("slurmd-build").inputs["buildArgs"]
    assert args["SLURMD_IMAGE"] == slurmd and args["DLC_IMAGE"] == dlc


def test_the_dlc_registry_is_the_regions_from_the_dlc_table():
    # ap-east-1's DLC registry is 871362719292, not the 763104351884 of most regions.
    graph = run_program(
        "dev",
        {
            **LOCAL,
            "aws:region": "ap-east-1",
            "availabilityZone": "ap-east-1a",
            "gpuInstanceType": "g5.12xlarge",
        },
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
    graph = run_program("dev", {**LOCAL, "dlcBaseImage": "docker.io/myorg/pytorch-training:2.9.0-gpu"})
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
    graph = run_program("dev", {**LOCAL, "slurmdBaseImage": base})
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
    IMMUTABLE_WITH_EXCLUSION only tags matching an exclusion filter may move, with
    MUTABLE_WITH_EXCLUSION all but those."""
    mode = repo["imageTagMutability"]
    excluded = [f["filter"] for f in repo.get("imageTagMutabilityExclusionFilters") or []]
    for ref in pushed:
        tag = ref.rsplit(":", 1)[1]
        if tag not in existing or mode == "MUTABLE":
            continue
        matches = any(fnmatch.fnmatchcase(tag, f) for f in excluded)
        if matches == (mode == "IMMUTABLE_WITH_EXCLUSION") and mode != "IMMUTABLE":
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
def test_a_second_up_never_fails_on_a_tag(local, second):
    first = local.named("slurmd-build").inputs
    existing = {ref.rsplit(":", 1)[1] for ref in _pushes(first)}
    graph = run_program("dev", {**LOCAL, **second})
    again = graph.named("slurmd-build").inputs
    assert _ecr_accepts_push(graph.named("slurmd-repo").inputs, existing, _pushes(again))


def test_the_ecr_push_model_refuses_a_second_push_to_an_immutable_tag(build):
    build = build.inputs
    existing = {ref.rsplit(":", 1)[1] for ref in _pushes(build)}
    immutable = {
        "imageTagMutability": "IMMUTABLE_WITH_EXCLUSION",
        "imageTagMutabilityExclusionFilters": [{"filter": "buildcache", "filterType": "WILDCARD"}],
    }
    assert not _ecr_accepts_push(immutable, existing, _pushes(build))
    assert _ecr_accepts_push(immutable, set(), _pushes(build))
    # And the in-region repository's: a context tag pushed twice is refused.
    contexts = {
        "imageTagMutability": "MUTABLE_WITH_EXCLUSION",
        "imageTagMutabilityExclusionFilters": [{"filter": "ctx-*", "filterType": "WILDCARD"}],
    }
    context_tag = f"{REPO_URL}:ctx-" + "ab" * 32
    assert not _ecr_accepts_push(contexts, {"ctx-" + "ab" * 32}, [context_tag])
    assert _ecr_accepts_push(contexts, existing, _pushes(build))


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


# --- the in-region build (imageBuilder=codebuild, the default) ---------------------------------

ACCOUNT = "123456789012"
PROJECT = "slinky-eks-dev-slurmd"
# Actions whose Service Authorization Reference entry names no resource type: "*" is the only
# resource they take. Any other action on "*" is a grant wider than the stack's own resources.
RESOURCELESS = {"ecr:GetAuthorizationToken"}


def _statements(resource) -> list[dict]:
    return json.loads(resource.inputs["policy"])["Statement"]


def _actions(statement: dict) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else action


def _resources(statement: dict) -> list[str]:
    resource = statement["Resource"]
    return [resource] if isinstance(resource, str) else resource


def wider_than_its_resources(statements: list[dict]) -> list[str]:
    """Each action an Allow grants on "*" although it takes a resource."""
    return sorted(
        action
        for s in statements
        if s["Effect"] == "Allow" and "*" in _resources(s)
        for action in _actions(s)
        if action not in RESOURCELESS
    )


def _granted(statements: list[dict], action: str) -> set[str]:
    return {r for s in statements if s["Effect"] == "Allow" and action in _actions(s) for r in _resources(s)}


@pytest.fixture(scope="module")
def policy(dev):
    return _statements(dev.named("slurmd-builder-policy"))


def test_the_builder_role_grants_nothing_on_star_that_takes_a_resource(policy):
    assert wider_than_its_resources(policy) == []


def test_the_scope_check_finds_a_push_action_on_star(policy):
    broken = [*policy, {"Effect": "Allow", "Action": ["ecr:PutImage"], "Resource": "*"}]
    assert wider_than_its_resources(broken) == ["ecr:PutImage"]


def test_the_builder_pushes_only_to_the_stacks_repository(policy):
    repo = f"arn:aws:ecr:us-west-2:{ACCOUNT}:repository/slinky-eks-dev/slurmd"
    for action in (
        "ecr:PutImage",
        "ecr:InitiateLayerUpload",
        "ecr:UploadLayerPart",
        "ecr:CompleteLayerUpload",
    ):
        assert _granted(policy, action) == {repo}


def test_the_builder_pulls_the_dlc_from_its_regions_dlc_repository_and_no_other(policy):
    repo = f"arn:aws:ecr:us-west-2:{ACCOUNT}:repository/slinky-eks-dev/slurmd"
    dlc = "arn:aws:ecr:us-west-2:763104351884:repository/" + versions.DLC_IMAGE.split(":")[0]
    assert _granted(policy, "ecr:BatchGetImage") == {repo, dlc}
    assert _granted(policy, "ecr:GetDownloadUrlForLayer") == {repo, dlc}


def test_the_builder_writes_only_its_own_log_group(policy):
    group = f"arn:aws:logs:us-west-2:{ACCOUNT}:log-group:/aws/codebuild/{PROJECT}"
    assert _granted(policy, "logs:PutLogEvents") == {group, f"{group}:log-stream:*"}


def test_the_builder_reads_only_its_own_sources(policy):
    assert _granted(policy, "s3:GetObject") == {"arn:aws:s3:::slurmd-sources/image-context/*"}
    assert _granted(policy, "s3:GetBucketLocation") == {"arn:aws:s3:::slurmd-sources"}
    assert all(
        not a.startswith("s3:")
        or a in ("s3:GetObject", "s3:GetObjectVersion", "s3:GetBucketAcl", "s3:GetBucketLocation")
        for s in policy
        for a in _actions(s)
    )


def test_only_codebuild_may_assume_the_builder_role_and_only_for_this_project(dev):
    (trust,) = json.loads(dev.named("slurmd-builder-role").inputs["assumeRolePolicy"])["Statement"]
    assert trust["Principal"] == {"Service": "codebuild.amazonaws.com"}
    assert trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
        "ArnLike": {"aws:SourceArn": f"arn:aws:codebuild:us-west-2:{ACCOUNT}:project/{PROJECT}"},
    }


def test_the_builder_role_trusts_codebuild_in_the_repositorys_partition():
    from components.slurmd_image import builder_trust_policy

    arn = "arn:aws-cn:ecr:cn-north-1:123456789012:repository/slinky-eks-dev/slurmd"
    (trust,) = builder_trust_policy(arn, PROJECT)["Statement"]
    assert trust["Condition"]["ArnLike"] == {
        "aws:SourceArn": f"arn:aws-cn:codebuild:cn-north-1:123456789012:project/{PROJECT}"
    }


def test_the_project_builds_in_a_privileged_amazon_linux_container_with_room_for_the_dlc(dev):
    from model.facts import image_builder

    project = dev.named("slurmd-builder").inputs
    assert project["name"] == PROJECT
    assert project["environment"] == {
        "type": "LINUX_CONTAINER",
        "computeType": "BUILD_GENERAL1_LARGE",
        "image": "aws/codebuild/amazonlinux-x86_64-standard:5.0",
        "imagePullCredentialsType": "CODEBUILD",
        "privilegedMode": True,
    }
    assert project["buildTimeout"] == image_builder.BUILD_TIMEOUT_MINUTES
    assert project["artifacts"] == {"type": "NO_ARTIFACTS"}


def test_the_project_runs_the_buildspec_on_the_context_from_its_bucket(dev):
    from model.builders.image_buildspec import BUILDSPEC

    source = dev.named("slurmd-builder").inputs["source"]
    context = dev.named("slurmd-context").inputs
    assert source == {
        "type": "S3",
        "location": f"{context['bucket']}/{context['key']}",
        "buildspec": BUILDSPEC,
    }


def test_the_project_runs_outside_any_vpc(dev):
    assert "vpcConfig" not in dev.named("slurmd-builder").inputs


def test_the_builds_log_to_the_stacks_group_with_a_retention_and_nowhere_else(dev):
    group = dev.named("slurmd-build-logs").inputs
    assert group == {"name": f"/aws/codebuild/{PROJECT}", "retentionInDays": 30}
    assert dev.named("slurmd-builder").inputs["logsConfig"] == {
        "cloudwatchLogs": {"status": "ENABLED", "groupName": group["name"]},
        "s3Logs": {"status": "DISABLED"},
    }


def test_the_sources_bucket_is_private_encrypted_and_emptied_on_destroy(dev):
    assert dev.named("slurmd-sources").inputs["forceDestroy"] is True
    private = dev.named("slurmd-sources-private").inputs
    assert all(
        private[k] is True
        for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    (rule,) = dev.named("slurmd-sources-encryption").inputs["rules"]
    assert rule["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "AES256"}


def test_the_sources_bucket_refuses_every_request_without_tls(dev):
    (deny,) = _statements(dev.named("slurmd-sources-tls-only"))
    assert deny["Effect"] == "Deny" and deny["Principal"] == "*" and deny["Action"] == "s3:*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert set(deny["Resource"]) == {"arn:aws:s3:::slurmd-sources", "arn:aws:s3:::slurmd-sources/*"}


def test_the_current_source_never_expires_and_abandoned_uploads_are_cleaned_up(dev):
    # The object the state holds must outlive any lifecycle: Pulumi deletes it when the context
    # changes, so no expiration; parts of an upload `up` gave up on go after a day.
    (rule,) = dev.named("slurmd-sources-expiry").inputs["rules"]
    assert rule["status"] == "Enabled"
    assert "expiration" not in rule and "noncurrentVersionExpiration" not in rule
    assert rule["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 1}


def test_the_source_is_the_files_the_build_reads_named_by_its_content_digest(dev):
    from model.builders.image_buildspec import context_files

    context = dev.named("slurmd-context").inputs
    digest = dev.named("slurmd-build").inputs["context_digest"]
    files = context_files(ROOT / "image")
    assert context["source"] == {"assetArchive": {f: {"fileAsset": f"image/{f}"} for f in files}}
    assert "README.md" not in files and "build-image.sh" not in files
    assert context["key"] == f"image-context/{digest}.zip"


def test_a_new_build_context_is_a_new_source_object_and_the_same_one_is_not(dev):
    same = run_program("dev", {"buildImageOnPreview": False})
    other = run_program("dev", {"slurmdImageTag": f"{R}-other"})
    key = dev.named("slurmd-context").inputs["key"]
    assert same.named("slurmd-context").inputs["key"] == key
    assert other.named("slurmd-context").inputs["key"] != key


def test_the_run_builds_this_context_with_the_projects_environment(dev):
    run = dev.named("slurmd-build")
    context = dev.named("slurmd-context").inputs
    assert run.type == "pulumi-python:dynamic:Resource"
    assert run.inputs["project_name"] == PROJECT
    assert run.inputs["region"] == "us-west-2"
    assert run.inputs["source_location"] == f"{context['bucket']}/{context['key']}"
    assert run.inputs["log_group_name"] == f"/aws/codebuild/{PROJECT}"
    assert run.inputs["environment"] == {
        # The bases by the digests the offline registries hold for their tags (StackConfig.images).
        "DLC_IMAGE": held(f"{DLC_REGISTRY}/{versions.DLC_IMAGE}"),
        "SLURMD_IMAGE": held(versions.SLURMD_BASE_IMAGE),
        "SLURM_VERSION": versions.SLURM_RELEASE,
        "IMAGE_REPOSITORY": REPO_URL,
        "IMAGE_TAG": versions.SLURMD_IMAGE_TAG,
        "CONTEXT_DIGEST": run.inputs["context_digest"],
    }


def test_the_run_waits_for_the_project_and_its_permissions(dev):
    run = dev.named("slurmd-build")
    assert dev.depends_on(run, dev.named("slurmd-builder"))
    assert dev.depends_on(run, dev.named("slurmd-builder-policy"))


def test_the_nodes_run_the_image_the_region_built(dev):
    from devkit.offline_run import built_image_digest

    digest = built_image_digest(dev.named("slurmd-build").inputs["context_digest"])
    assert dev.output("slurmdImage") == f"{REPO_URL}@{digest}"


def test_the_in_region_build_waits_for_nothing_of_the_network_or_the_cluster(dev):
    built = [r for r in dev.resources if r.parent == dev.named("slurmd").urn]
    assert {r.name for r in built} >= {
        "slurmd-build",
        "slurmd-builder",
        "slurmd-context",
        "slurmd-builder-role",
    }
    for r in built:
        for other in ("cluster-eks", "network-vpc", "nodes-gpu"):
            assert not dev.depends_on(r, dev.named(other)), (r.name, other)


def test_the_local_builder_makes_none_of_the_in_region_resources(local):
    assert {r.name for r in local.resources if r.name.startswith("slurmd-")} == {
        "slurmd-repo",
        "slurmd-lifecycle",
        "slurmd-build",
    }
    assert local.named("slurmd-build").type == "docker-build:index:Image"


def test_a_preview_with_the_in_region_builder_warns_that_it_does_not_build():
    warned = [
        w
        for w in run_program("dev", {"buildImageOnPreview": True}).warnings
        if "[preview-builds-locally]" in w
    ]
    assert warned and "imageBuilder = local" in warned[0]


@pytest.mark.parametrize("overrides", [{}, {**LOCAL, "buildImageOnPreview": True}])
def test_no_preview_warning_where_the_preview_builds_as_asked(overrides):
    assert not [w for w in run_program("dev", overrides).warnings if "[preview-builds-locally]" in w]


def test_the_run_calls_codebuild_with_the_stacks_aws_profile(dev):
    assert dev.named("slurmd-build").inputs.get("profile") is None
    graph = run_program("dev", {"aws:profile": "team-admin"})
    assert graph.named("slurmd-build").inputs["profile"] == "team-admin"


def test_provider_keys_the_runner_would_not_honour_are_refused_with_the_other_problems():
    from tests.support.program import rejected

    message = rejected(
        **{
            "aws:assumeRoles": '[{"roleArn": "arn:aws:iam::123456789012:role/deployer"}]',
            "aws:allowedAccountIds": '["123456789012"]',
            "gpuNodeCount": "0",
        }
    )
    assert message.startswith("invalid stack configuration (3 problems)")
    for key in ("aws:assumeRoles", "aws:allowedAccountIds"):
        line = next(line for line in message.splitlines() if key in line)
        assert "[runner-provider-keys]" in line and "aws:profile" in line and "imageBuilder to local" in line


def test_the_local_builder_takes_any_provider_key():
    graph = run_program(
        "dev", {**LOCAL, "aws:assumeRoles": '[{"roleArn": "arn:aws:iam::123456789012:role/d"}]'}
    )
    assert graph.error is None
