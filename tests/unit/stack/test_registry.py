"""A registry read over its HTTP API (stack/registry.py), against the offline account's registry
(devkit/offline_account.py registry_answer): the anonymous token asked once per repository, the
tag's digest from Docker-Content-Digest, None for a tag or repository the registry does not hold,
the tags list, Docker Hub's host; an answer the API does not give is an error."""

from __future__ import annotations

import pytest

from devkit.offline_account import ANONYMOUS_TOKEN, DEV, image_digest, registry_answer
from stack import registry
from stack.registry import Registry, RegistryError, Response

BASE = "ghcr.io/slinkyproject/slurmd:26.05.5-ubuntu24.04"


@pytest.fixture
def requests(monkeypatch) -> list[tuple[str, str, dict]]:
    sent: list[tuple[str, str, dict]] = []

    def offline(method, url, headers):
        sent.append((method, url, dict(headers)))
        return registry_answer(DEV, method, url, headers)

    monkeypatch.setattr(registry, "http", offline)
    return sent


def test_a_tags_digest_is_read_from_its_manifest_with_an_anonymous_token(requests):
    assert Registry().image_digest(BASE) == image_digest(
        "ghcr.io/slinkyproject/slurmd", "26.05.5-ubuntu24.04"
    )
    (head, token, authorised) = requests
    assert head[:2] == ("HEAD", "https://ghcr.io/v2/slinkyproject/slurmd/manifests/26.05.5-ubuntu24.04")
    assert "application/vnd.oci.image.index.v1+json" in head[2]["Accept"]
    assert (
        token[1] == "https://ghcr.io/token?service=ghcr.io&scope=repository%3Aslinkyproject%2Fslurmd%3Apull"
    )
    assert authorised[2]["Authorization"] == f"Bearer {ANONYMOUS_TOKEN}"


def test_the_token_is_asked_once_per_repository(requests):
    found = Registry()
    found.image_digest(BASE)
    found.image_tags(BASE)
    assert [url for _, url, _ in requests if "/token?" in url] == [
        "https://ghcr.io/token?service=ghcr.io&scope=repository%3Aslinkyproject%2Fslurmd%3Apull"
    ]


@pytest.mark.parametrize(
    "reference", ["ghcr.io/slinkyproject/slurmd:26.05.9-ubuntu24.04", "ghcr.io/slinkyproject/nothing:1"]
)
def test_a_tag_or_repository_the_registry_does_not_hold_has_no_digest(requests, reference):
    assert Registry().image_digest(reference) is None


def test_the_tags_are_the_registrys_tags_list(requests):
    assert Registry().image_tags(BASE) == sorted(DEV.images["ghcr.io/slinkyproject/slurmd"])


def test_the_tags_list_is_followed_across_pages(monkeypatch):
    pages = {
        "https://ghcr.io/v2/a/b/tags/list": (
            b'{"tags": ["1", "2"]}',
            '</v2/a/b/tags/list?last=2>; rel="next"',
        ),
        "https://ghcr.io/v2/a/b/tags/list?last=2": (b'{"tags": ["3"]}', ""),
    }
    monkeypatch.setattr(
        registry, "http", lambda m, url, h: Response(200, {"link": pages[url][1]}, pages[url][0])
    )
    assert Registry().image_tags("ghcr.io/a/b:1") == ["1", "2", "3"]


def test_a_docker_hub_name_is_asked_at_its_registry_host_under_library():
    assert registry.repository("python:3.13") == ("registry-1.docker.io", "library/python")
    assert registry.repository("docker.io/myorg/base:1") == ("registry-1.docker.io", "myorg/base")


def test_a_manifest_answer_without_its_digest_is_an_error(monkeypatch):
    monkeypatch.setattr(registry, "http", lambda m, url, h: Response(200, {}, b""))
    with pytest.raises(RegistryError, match="without a Docker-Content-Digest"):
        Registry().image_digest(BASE)


def test_an_unreachable_registry_is_an_error_naming_the_request(monkeypatch):
    def refused(method, url, headers):
        raise OSError("connection refused")

    monkeypatch.setattr(registry, "http", refused)
    with pytest.raises(RegistryError, match="HEAD https://ghcr.io/v2/slinkyproject/slurmd/manifests"):
        Registry().image_digest(BASE)
