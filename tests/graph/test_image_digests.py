"""The program resolves every image to a digest before it registers anything (model/checks/image_digests.py
through stack/account.py): the DLC through ECR's DescribeImages, the ghcr.io images through the
registry's own API (stack/registry.py), answered by the offline account as ECR and the registry
answer; the image build and the charts then use the digests, and a tag no registry holds is
refused with the stack's other problems, naming its key."""

import pytest

from devkit import offline_account
from devkit.offline_account import DEV, image_digest
from devkit.offline_run import run_program
from model.facts import versions
from model.facts.contract import LOGINSET
from tests.support.program import rejected

DLC_REPOSITORY = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch"
GET_IMAGE = "aws:ecr/getImage:getImage"
SLINKY = versions.SLINKY_IMAGES
TAG = versions.SLURMD_BASE_IMAGE.rsplit(":", 1)[1]


def by_digest(repository: str, tag: str) -> str:
    return f"{repository}:{tag}@{image_digest(repository, tag)}"


@pytest.fixture
def manifests_asked(monkeypatch) -> list[str]:
    """The references whose manifest the program asks a registry for (HEAD), in a run of a
    configuration this process has not run before (an earlier run's graph is reused)."""
    asked, answer = [], offline_account.registry_answer

    def recording(account, method, url, headers):
        if method == "HEAD" and "Authorization" in headers:
            host, _, rest = url.removeprefix("https://").partition("/v2/")
            name, _, tag = rest.partition("/manifests/")
            asked.append(f"{host}/{name}:{tag}")
        return answer(account, method, url, headers)

    monkeypatch.setattr(offline_account, "registry_answer", recording)
    return asked


def test_the_dlc_is_resolved_through_ecr_in_the_dlc_account_of_the_region(dev):
    asked = [a for t, a in dev.calls if t == GET_IMAGE]
    assert asked == [
        {
            "registryId": "763104351884",
            "repositoryName": "pytorch",
            "imageTag": versions.DLC_IMAGE.split(":")[1],
            "region": "us-west-2",
        }
    ]


def test_the_ghcr_images_are_resolved_through_the_registry(manifests_asked):
    run_program("dev", {"clusterName": "digests"})
    assert sorted(manifests_asked) == sorted(
        [versions.SLURMD_BASE_IMAGE]
        + [f"{SLINKY}/{n}:{TAG}" for n in ("slurmctld", "slurmrestd", "slurmdbd", "login-pyxis")]
        + [
            f"{SLINKY}/{n}:{versions.SLINKY_CHART_VERSION}"
            for n in ("slurm-operator", "slurm-operator-webhook")
        ]
    )


def test_the_image_build_starts_from_the_bases_by_digest(dev):
    args = dev.named("slurmd-build").inputs["environment"]
    assert args["DLC_IMAGE"] == by_digest(DLC_REPOSITORY, versions.DLC_IMAGE.split(":")[1])
    assert args["SLURMD_IMAGE"] == by_digest(f"{SLINKY}/slurmd", TAG)


def test_a_base_pinned_by_digest_is_used_as_given_and_not_asked(manifests_asked):
    pinned = f"{versions.SLURMD_BASE_IMAGE}@sha256:{'ef' * 32}"
    graph = run_program("dev", {"slurmdBaseImage": pinned})
    assert graph.named("slurmd-build").inputs["environment"]["SLURMD_IMAGE"] == pinned
    assert versions.SLURMD_BASE_IMAGE not in manifests_asked
    # Its tag still names the Slinky images, which are asked.
    assert f"{SLINKY}/slurmctld:{TAG}" in manifests_asked


@pytest.fixture(scope="module")
def slurm_objects(rendered):
    return rendered["slurm"]


def _slinky_images(objects) -> set[str]:
    from tests.support import rendered_checks as rc

    return {image for o in objects for _, image in rc.images(o) if image.startswith(f"{SLINKY}/")}


def test_the_slurm_chart_renders_its_slinky_images_by_tag_and_digest(slurm_objects):
    assert _slinky_images(slurm_objects) == {
        by_digest(f"{SLINKY}/{n}", TAG) for n in ("slurmctld", "slurmrestd", "slurmdbd", "login-pyxis")
    }


def test_the_operator_chart_renders_its_images_by_tag_and_digest(rendered):
    version = versions.SLINKY_CHART_VERSION
    assert _slinky_images(rendered["slurm-operator"]) == {
        by_digest(f"{SLINKY}/{n}", version) for n in ("slurm-operator", "slurm-operator-webhook")
    }


def test_the_named_users_init_containers_run_the_slinky_images_by_digest():
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L ada@laptop"
    graph = run_program("dev", {"users": [{"name": "ada", "uid": 2001, "sshPublicKey": key}]})
    values = graph.named("slurm-release").inputs["values"]
    (login,) = values["loginsets"][LOGINSET]["podSpec"]["initContainers"]
    (controller,) = values["controller"]["podSpec"]["initContainers"]
    assert (login["image"], controller["image"]) == (
        by_digest(f"{SLINKY}/login-pyxis", TAG),
        by_digest(f"{SLINKY}/slurmctld", TAG),
    )


def test_a_dlc_tag_ecr_does_not_hold_is_refused_with_the_tags_it_holds():
    msg = rejected(dlcBaseImage="pytorch:2.13.1-cu133-amzn2023")
    assert "slinky-eks:dlcBaseImage = 'pytorch:2.13.1-cu133-amzn2023'" in msg
    assert f"{DLC_REPOSITORY} holds no tag '2.13.1-cu133-amzn2023'" in msg
    nearest_first = "2.13.0-cu130-amzn2023, 2.13.0-cu133-amzn2023, 2.12.0-cu130-amzn2023"
    assert f"tags it holds: {nearest_first} [image-tag-exists]" in msg


def test_a_slurm_release_slinky_has_not_published_is_refused_naming_slurmd_base_image():
    release = "26.05.9"
    base = f"{SLINKY}/slurmd:{release}-ubuntu24.04"
    msg = rejected(
        slurmVersion=release, slurmdImageTag=f"{release}-torch2.13-cu133-mpi", slurmdBaseImage=base
    )
    assert msg.startswith("invalid stack configuration (5 problems)")
    for name in ("slurmd", "slurmctld", "slurmrestd", "slurmdbd", "login-pyxis"):
        assert f"{SLINKY}/{name} holds no tag '{release}-ubuntu24.04'" in msg
    assert "tags it holds: 26.05.2-ubuntu24.04, 26.05.2-ubuntu26.04, 26.05.3-ubuntu24.04" in msg
    assert msg.count(f"slinky-eks:slurmdBaseImage = '{base}'") == 5


def test_a_chart_version_without_its_operator_images_is_refused_naming_slinky_chart_version():
    msg = rejected(slinkyChartVersion="1.2.9")
    assert (
        msg.count("slinky-eks:slinkyChartVersion = '1.2.9': the tag of ghcr.io/slinkyproject/slurm-operator")
        == 2
    )


def test_missing_tags_are_refused_with_the_stacks_other_problems_at_once():
    msg = rejected(dlcBaseImage="pytorch:0.0.0", coreNodeCount=0)
    assert "slinky-eks:coreNodeCount = '0'" in msg and "slinky-eks:dlcBaseImage = 'pytorch:0.0.0'" in msg


def test_without_describe_images_the_dlc_is_built_from_its_tag_with_a_warning():
    graph = run_program("dev", account=DEV.but(denied=frozenset({"ecr:DescribeImages"})))
    assert (
        graph.named("slurmd-build").inputs["environment"]["DLC_IMAGE"]
        == f"{DLC_REPOSITORY}:{versions.DLC_IMAGE.split(':')[1]}"
    )
    (said,) = [w for w in graph.warnings if "image-lookup-skipped" in w]
    assert "ecr:DescribeImages" in said and said.startswith("dlcBaseImage")


def test_no_image_of_a_key_already_refused_is_asked_and_the_others_still_are(manifests_asked):
    graph = run_program("dev", {"slurmVersion": "x", "aws:region": "eu-north-9"}, expect_error=True)
    # The DLC's registry is the refused region's, the Slinky cluster images carry the tag of a
    # base checked against the refused slurmVersion; the operator's images depend on neither.
    assert [t for t, _ in graph.calls if t == GET_IMAGE] == []
    assert sorted(manifests_asked) == [
        f"{SLINKY}/{n}:{versions.SLINKY_CHART_VERSION}" for n in ("slurm-operator-webhook", "slurm-operator")
    ]
    assert "[image-tag-exists]" not in str(graph.error)


def test_a_missing_dlc_tag_is_refused_beside_a_refused_slurmd_base_image():
    msg = rejected(dlcBaseImage="pytorch:0.0.0", slurmdBaseImage=f"{SLINKY}/slurmd:25.11.9-ubuntu24.04")
    assert f"slinky-eks:slurmdBaseImage = '{SLINKY}/slurmd:25.11.9-ubuntu24.04'" in msg
    assert f"{DLC_REPOSITORY} holds no tag '0.0.0'" in msg


def test_a_registry_answering_a_proxy_s_page_leaves_its_images_by_tag_with_a_warning(monkeypatch):
    answer = offline_account.registry_answer

    def behind_a_proxy(account, method, url, headers):
        if "/token" in url:
            return offline_account.Response(200, {"content-type": "text/html"}, b"<html>Sign in</html>")
        return answer(account, method, url, headers)

    monkeypatch.setattr(offline_account, "registry_answer", behind_a_proxy)
    graph = run_program("dev", {"clusterName": "behind-a-proxy"})
    said = [w for w in graph.warnings if "image-lookup-skipped" in w]
    assert len(said) == 7  # the slurmd base, four cluster images, two operator images
    assert all(
        "its registry could not be read from here (https://ghcr.io/token answered b'<html>" in w for w in said
    )
    assert graph.named("slurmd-build").inputs["environment"]["SLURMD_IMAGE"] == versions.SLURMD_BASE_IMAGE
