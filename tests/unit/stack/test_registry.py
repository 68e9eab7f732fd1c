"""A registry read over its HTTP API (stack/registry.py), against the offline account's registry
(devkit/offline_account.py registry_answer): the anonymous token asked once per repository, the
tag's digest from Docker-Content-Digest, None for a tag or repository the registry does not hold,
the tags list, Docker Hub's host; an answer the API does not give is an error."""

from __future__ import annotations

import http.client
import re
import urllib.request

import pytest

from devkit.offline_account import ANONYMOUS_TOKEN, DEV, image_digest, registry_answer
from model.checks.image_digests import LookupFailed
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


CHALLENGE = (
    'Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:slinkyproject/slurmd:pull"'
)
GOOD_DIGEST = "sha256:" + "a" * 64


def answering(monkeypatch, *, challenge=CHALLENGE, token=b'{"token": "t"}', digest=GOOD_DIGEST, tags=None):
    """A registry that challenges once, then answers the token, the manifest and the tags list
    with the bodies given; records every URL asked."""
    asked = []

    def http(method, url, headers):
        asked.append(url)
        if "/token" in url:
            return Response(200, {}, token)
        if "Authorization" not in headers:
            return Response(401, {"www-authenticate": challenge}, b"")
        if "/tags/list" in url:
            return Response(200, {}, tags)
        return Response(200, {"docker-content-digest": digest}, b"")

    monkeypatch.setattr(registry, "http", http)
    return asked


@pytest.mark.parametrize(
    "answer, said",
    [
        ({"token": b"<html><body>Proxy login</body></html>"}, "https://ghcr.io/token answered b'<html>"),
        ({"token": b"[1]"}, "https://ghcr.io/token answered no token"),
        ({"token": b'{"token": 7}'}, "https://ghcr.io/token answered no token"),
        ({"token": b"\xff\xfe"}, "not JSON"),
        ({"challenge": 'Bearer service="ghcr.io"'}, "asked for a token without naming its realm"),
        ({"digest": "sha256:../../x; $(id)"}, "Docker-Content-Digest 'sha256:../../x; $(id)' is not sha256"),
        ({"digest": "sha256:" + "A" * 64}, "is not sha256:<64 hex>"),
    ],
    ids=[
        "token-html",
        "token-list",
        "token-not-string",
        "token-not-utf8",
        "no-realm",
        "digest-shell",
        "digest-case",
    ],
)
def test_an_unexpected_answer_to_a_digest_lookup_is_one_registry_error(monkeypatch, answer, said):
    answering(monkeypatch, **answer)
    with pytest.raises(RegistryError) as e:
        Registry().image_digest(BASE)
    assert said in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "tags, said",
    [
        (b"not json", "answered b'not json'..., not JSON"),
        (b'["1"]', "not a tags list"),
        (b'{"tags": "1"}', "not a tags list"),
        (b'{"tags": ["1", 2]}', "a tag that is not a string"),
    ],
    ids=["not-json", "not-an-object", "tags-not-a-list", "tag-not-a-string"],
)
def test_an_unexpected_tags_list_is_one_registry_error(monkeypatch, tags, said):
    answering(monkeypatch, tags=tags)
    with pytest.raises(RegistryError, match=re.escape(said)):
        Registry().image_tags(BASE)


def test_a_tags_list_of_null_tags_is_no_tags(monkeypatch):
    answering(monkeypatch, tags=b'{"name": "slinkyproject/slurmd", "tags": null}')
    assert Registry().image_tags(BASE) == []


@pytest.mark.parametrize(
    "realm",
    [
        "http://169.254.169.254/latest/meta-data",
        "https://169.254.169.254/token",
        "https://attacker.example/token",
        "https://ghcr.io.attacker.example/token",
        "file:///etc/passwd",
        "/token",
    ],
)
def test_a_token_realm_off_the_registry_s_domain_or_not_https_is_not_followed(monkeypatch, realm):
    asked = answering(monkeypatch, challenge=f'Bearer realm="{realm}",service="ghcr.io"')
    with pytest.raises(RegistryError, match="only an https realm on ghcr.io is followed"):
        Registry().image_digest(BASE)
    assert asked == ["https://ghcr.io/v2/slinkyproject/slurmd/manifests/26.05.5-ubuntu24.04"]


def test_docker_hub_s_token_realm_beside_its_registry_is_followed(monkeypatch):
    asked = answering(
        monkeypatch, challenge='Bearer realm="https://auth.docker.io/token",service="registry.docker.io"'
    )
    assert Registry().image_digest("python:3.13") == GOOD_DIGEST
    assert asked[1].startswith("https://auth.docker.io/token?service=registry.docker.io")


def test_a_next_page_on_another_host_is_not_followed(monkeypatch):
    monkeypatch.setattr(
        registry,
        "http",
        lambda m, url, h: Response(
            200, {"link": '<https://attacker.example/x>; rel="next"'}, b'{"tags": ["1"]}'
        ),
    )
    with pytest.raises(
        RegistryError, match="the next page 'https://attacker.example/x' is not on https://ghcr.io"
    ):
        Registry().image_tags("ghcr.io/a/b:1")


class Body:
    def __init__(self, size: int):
        self.size = size

    def read(self, n: int) -> bytes:
        return b"x" * min(n, self.size)


def test_an_answer_is_read_up_to_one_mebibyte():
    assert registry.capped(Body(registry.MAX_ANSWER_BYTES), "u") == b"x" * (1 << 20)
    with pytest.raises(RegistryError, match="https://ghcr.io/token answered more than 1048576 bytes"):
        registry.capped(Body(10 << 20), "https://ghcr.io/token")


def redirected(frm: str, to: str):
    request = urllib.request.Request(frm, headers={"Authorization": "Bearer t", "Accept": "x"})
    return registry.Redirects().redirect_request(request, None, 307, "Temporary Redirect", {}, to)


def test_a_redirect_to_plain_http_is_refused():
    with pytest.raises(RegistryError, match="redirected to http:, not https: refused"):
        redirected("https://ghcr.io/v2/a/b/tags/list", "http://ghcr.io/v2/a/b/tags/list")


def test_a_redirect_to_another_host_loses_the_authorization_header():
    moved = redirected("https://ghcr.io/v2/a/b/tags/list", "https://pkg-containers.example/list")
    assert not moved.has_header("Authorization") and moved.full_url == "https://pkg-containers.example/list"
    kept = redirected("https://ghcr.io/v2/a/b/tags/list", "https://ghcr.io/v2/a/b/tags/list?n=100")
    assert kept.get_header("Authorization") == "Bearer t"


def test_the_requests_follow_redirects_through_that_handler():
    assert any(isinstance(h, registry.Redirects) for h in registry._OPENER.handlers)


@pytest.mark.parametrize(
    "failure", [http.client.BadStatusLine("garbage"), ValueError("unknown url type: 'None'")], ids=str
)
def test_an_answer_that_is_not_http_or_a_url_urllib_cannot_open_is_one_registry_error(monkeypatch, failure):
    def failing(method, url, headers):
        raise failure

    monkeypatch.setattr(registry, "http", failing)
    with pytest.raises(RegistryError, match="HEAD https://ghcr.io/v2/slinkyproject/slurmd/manifests"):
        Registry().image_digest(BASE)


def test_a_registry_error_is_the_model_s_failed_lookup():
    assert issubclass(RegistryError, LookupFailed)
