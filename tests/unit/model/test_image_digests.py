"""Every image resolved to a digest before anything is created (model/checks/image_digests.py), over
a registry answered here: a tag found is used by its digest, a pinned reference is not asked, a tag
the registry does not hold is refused naming the key that chose it and the tags there are, all
such problems at once; a lookup the deployer may not make leaves the image by tag, with a warning."""

from __future__ import annotations

import hashlib

from model.checks import image_digests
from model.checks.image_digests import (
    IMAGE_LOOKUP_SKIPPED,
    IMAGE_TAG_EXISTS,
    TAGS_SHOWN,
    LookupFailed,
    Wanted,
    resolve,
    slinky_image_tag,
    wanted,
)
from model.checks.preflight import PermissionDenied

DLC = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch"
BASE = "ghcr.io/slinkyproject/slurmd:26.05.5-ubuntu24.04"


def digest_of(reference: str) -> str:
    return "sha256:" + hashlib.sha256(reference.encode()).hexdigest()


class Registry:
    """Holds `tags` (repository -> tags); `listed` are the repositories an invoke can list, and
    `refused` the references the deployer may not look up. Records what it was asked."""

    def __init__(self, tags: dict[str, list[str]], listed=(), refused=(), unreadable=(), answers=None):
        self.tags, self.listed, self.refused = tags, set(listed), set(refused)
        # `unreadable`: references whose registry cannot be read; `answers`: digests answered as given.
        self.unreadable, self.answers = set(unreadable), dict(answers or {})
        self.asked: list[str] = []

    def image_digest(self, reference: str) -> str | None:
        self.asked.append(reference)
        if reference in self.refused:
            raise PermissionDenied("ecr:DescribeImages")
        if reference in self.unreadable:
            raise LookupFailed("https://ghcr.io/token answered b'<html>'..., not JSON")
        if reference in self.answers:
            return self.answers[reference]
        name, tag = reference.rsplit(":", 1)
        return digest_of(reference) if tag in self.tags.get(name, []) else None

    def image_tags(self, reference: str) -> list[str] | None:
        name = reference.rsplit(":", 1)[0]
        if name.startswith("ghcr.io/") and self.unreadable:
            raise LookupFailed("GET https://ghcr.io/v2/x/tags/list: not a tags list")
        return list(self.tags.get(name, [])) if name in self.listed else None


SLINKY_TAGS = ["26.05.4-ubuntu24.04", "26.05.5-ubuntu24.04"]
HOLDS = {
    DLC: ["2.13.0-cu133-amzn2023", "2.13.0-cu130-amzn2023", "2.12.0-cu130-amzn2023"],
    **{
        f"ghcr.io/slinkyproject/{n}": SLINKY_TAGS
        for n in ("slurmd", "slurmctld", "slurmrestd", "slurmdbd", "login-pyxis")
    },
    **{
        f"ghcr.io/slinkyproject/{n}": ["1.2.1", "1.2.2"] for n in ("slurm-operator", "slurm-operator-webhook")
    },
}


def images(base=BASE, chart="1.2.2", dlc="pytorch:2.13.0-cu133-amzn2023"):
    return wanted(base, chart, dlc, "us-west-2")


def test_each_image_is_used_by_the_digest_its_registry_holds_for_its_tag():
    registry, out = Registry(HOLDS), []
    resolved = resolve(registry, images(), out)
    assert out == []
    assert resolved["dlc"] == f"{DLC}:2.13.0-cu133-amzn2023@" + digest_of(f"{DLC}:2.13.0-cu133-amzn2023")
    assert resolved["slurmd-base"] == f"{BASE}@{digest_of(BASE)}"
    ctld = "ghcr.io/slinkyproject/slurmctld:26.05.5-ubuntu24.04"
    assert resolved["slurmctld"] == f"{ctld}@{digest_of(ctld)}"
    operator = "ghcr.io/slinkyproject/slurm-operator:1.2.2"
    assert resolved["slurm-operator"] == f"{operator}@{digest_of(operator)}"


def test_the_images_are_the_bases_and_the_slinky_images_of_both_charts():
    assert sorted(images()) == sorted(
        [
            "dlc",
            "slurmd-base",
            "slurmctld",
            "slurmrestd",
            "slurmdbd",
            "login-pyxis",
            "slurm-operator",
            "slurm-operator-webhook",
        ]
    )
    assert images()["login-pyxis"].reference == "ghcr.io/slinkyproject/login-pyxis:26.05.5-ubuntu24.04"
    assert (
        images()["slurm-operator-webhook"].reference == "ghcr.io/slinkyproject/slurm-operator-webhook:1.2.2"
    )


def test_a_reference_pinned_by_digest_is_used_as_given_and_not_asked():
    pinned = f"{BASE}@sha256:{'cd' * 32}"
    registry, out = Registry(HOLDS), []
    resolved = resolve(registry, images(base=pinned), out)
    assert resolved["slurmd-base"] == pinned and pinned not in registry.asked
    assert out == []


def test_a_reference_several_images_share_is_asked_once():
    shared = Wanted("slurmdBaseImage", BASE, BASE)
    registry = Registry(HOLDS)
    resolve(registry, {"a": shared, "b": shared}, [])
    assert registry.asked == [BASE]


def test_a_tag_the_registry_does_not_hold_is_refused_naming_the_key_and_the_tags_it_holds():
    registry, out = Registry(HOLDS, listed=[DLC]), []
    resolve(registry, images(dlc="pytorch:2.13.1-cu133-amzn2023"), out)
    (p,) = out
    assert (p.rule, p.key, p.value) == (IMAGE_TAG_EXISTS, "dlcBaseImage", "pytorch:2.13.1-cu133-amzn2023")
    assert f"{DLC} holds no tag '2.13.1-cu133-amzn2023'" in p.message
    assert "tags it holds: 2.13.0-cu130-amzn2023, 2.13.0-cu133-amzn2023, 2.12.0-cu130-amzn2023" in p.message


def test_the_tags_shown_are_the_nearest_and_at_most_a_dozen():
    many = [f"2.{minor}.0-cu130-amzn2023" for minor in range(30)]
    registry, out = Registry({DLC: many}, listed=[DLC]), []
    resolve(registry, {"dlc": Wanted("dlcBaseImage", "pytorch:2.1.9", f"{DLC}:2.1.9")}, out)
    (p,) = out
    shown = p.message.split("tags it holds: ")[1]
    listed, more = shown.split(" (and ")
    assert listed.split(", ")[:2] == ["2.1.0-cu130-amzn2023", "2.10.0-cu130-amzn2023"]
    assert (len(listed.split(", ")), more) == (TAGS_SHOWN, f"{30 - TAGS_SHOWN} more)")


def test_where_no_invoke_lists_the_tags_the_refusal_names_the_registrys_tags_list():
    registry, out = Registry(HOLDS), []
    resolve(registry, images(base="ghcr.io/slinkyproject/slurmd:26.05.9-ubuntu24.04"), out)
    (base, *_) = [p for p in out if "slurmd holds" in p.message]
    assert "https://ghcr.io/v2/slinkyproject/slurmd/tags/list" in base.message


def test_a_docker_hub_images_tags_list_is_on_its_registry_host():
    registry, out = Registry({}), []
    resolve(registry, {"dlc": Wanted("dlcBaseImage", "myorg/base:1", "myorg/base:1")}, out)
    (p,) = out
    assert "https://registry-1.docker.io/v2/myorg/base/tags/list" in p.message


def test_a_missing_slinky_image_names_the_key_whose_tag_it_carries():
    registry, out = Registry(HOLDS), []
    resolve(registry, images(chart="1.2.9"), out)
    assert sorted((p.key, p.value) for p in out) == [("slinkyChartVersion", "1.2.9")] * 2
    assert all(p.message.startswith("the tag of ghcr.io/slinkyproject/slurm-operator") for p in out)


def test_every_missing_tag_is_reported_at_once():
    registry, out = Registry(HOLDS), []
    resolve(
        registry,
        images(base="ghcr.io/slinkyproject/slurmd:26.05.9-ubuntu24.04", chart="1.2.9", dlc="pytorch:9"),
        out,
    )
    assert (
        sorted(p.key for p in out) == ["dlcBaseImage"] + ["slinkyChartVersion"] * 2 + ["slurmdBaseImage"] * 5
    )
    assert {p.rule for p in out} == {IMAGE_TAG_EXISTS}


def test_a_lookup_the_deployer_may_not_make_leaves_the_image_by_tag_with_a_warning():
    dlc = f"{DLC}:2.13.0-cu133-amzn2023"
    registry, out = Registry(HOLDS, refused=[dlc]), []
    resolved = resolve(registry, images(), out)
    (p,) = out
    assert resolved["dlc"] == dlc
    assert (p.rule, p.key, p.is_error) == (IMAGE_LOOKUP_SKIPPED, "dlcBaseImage", False)
    assert "ecr:DescribeImages" in p.message


def test_the_resolved_images_name_each_slinky_image():
    resolved = image_digests.resolved_images(resolve(Registry(HOLDS), images(), []))
    assert set(resolved.slinky) == set(image_digests.CLUSTER_IMAGES) | set(image_digests.OPERATOR_IMAGES)
    assert resolved.dlc_base.startswith(f"{DLC}:2.13.0-cu133-amzn2023@sha256:")


def test_the_slinky_image_tag_is_the_base_images_tag_without_its_digest():
    assert slinky_image_tag(f"{BASE}@sha256:{'a' * 64}") == "26.05.5-ubuntu24.04"


def test_an_ecr_repository_the_deployer_may_not_list_is_named_with_the_command_that_lists_it():
    registry, out = Registry(HOLDS), []  # DLC not in `listed`: ListImages refused
    resolve(registry, images(dlc="pytorch:9"), out)
    (p,) = out
    assert (
        "aws ecr list-images --registry-id 763104351884 --region us-west-2 --repository-name pytorch"
        in p.message
    )


def test_a_registry_that_cannot_be_read_leaves_the_image_by_tag_with_a_warning_saying_why():
    registry, out = Registry(HOLDS, unreadable=[BASE]), []
    resolved = resolve(registry, images(), out)
    (p,) = out
    assert resolved["slurmd-base"] == BASE
    assert (p.rule, p.key, p.is_error) == (IMAGE_LOOKUP_SKIPPED, "slurmdBaseImage", False)
    assert (
        "its registry could not be read from here (https://ghcr.io/token answered b'<html>'..., not JSON)"
        in (p.message)
    )


def test_a_digest_that_is_not_sha256_hex_is_never_pinned():
    dlc = f"{DLC}:2.13.0-cu133-amzn2023"
    registry, out = Registry(HOLDS, answers={dlc: "sha256:../../x; $(id)"}), []
    resolved = resolve(registry, images(), out)
    (p,) = out
    assert resolved["dlc"] == dlc
    assert (p.rule, p.key) == (IMAGE_LOOKUP_SKIPPED, "dlcBaseImage")
    assert "answered the digest 'sha256:../../x; $(id)', not sha256:<64 hex>" in p.message


def test_a_tags_list_that_cannot_be_read_names_where_to_read_it():
    registry, out = Registry(HOLDS, listed=HOLDS, unreadable=["unused"]), []
    resolve(registry, images(base="ghcr.io/slinkyproject/slurmd:26.05.9-ubuntu24.04"), out)
    assert out and all(p.rule == IMAGE_TAG_EXISTS for p in out)
    assert "its tags are listed at https://ghcr.io/v2/slinkyproject/slurmd/tags/list" in out[0].message


def test_each_key_s_images_are_wanted_without_the_others():
    assert sorted(wanted(None, None, "pytorch:2.13.0-cu133-amzn2023", "us-west-2")) == ["dlc"]
    assert sorted(wanted(None, "1.2.2")) == sorted(image_digests.OPERATOR_IMAGES)
    assert sorted(wanted(BASE, None)) == sorted(["slurmd-base", *image_digests.CLUSTER_IMAGES])


def test_no_resolved_images_are_made_while_an_image_s_key_is_left_out():
    assert (
        image_digests.resolved_images(
            resolve(Registry(HOLDS), wanted(None, "1.2.2", "pytorch:2.13.0-cu133-amzn2023", "us-west-2"), [])
        )
        is None
    )
