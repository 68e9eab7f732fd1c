"""A container registry read over its own HTTP API, with no Docker and no credentials: the digest a
tag points at and the tags a repository holds, for the images that are not on ECR (ghcr.io's
Slinky images). The OCI distribution-spec v1.1.0
(https://github.com/opencontainers/distribution-spec/blob/v1.1.0/spec.md): "Pulling manifests"
(`HEAD /v2/<name>/manifests/<reference>`, the digest in `Docker-Content-Digest`; 404 with
MANIFEST_UNKNOWN or NAME_UNKNOWN for what the registry does not hold) and "Listing tags"
(`GET /v2/<name>/tags/list`, paged by `Link: <...>; rel="next"`). A registry that wants a token
answers 401 with `WWW-Authenticate: Bearer realm=...,service=...,scope=...`, and its realm gives an
anonymous token for a public repository (the token protocol of distribution/distribution
docs/spec/auth/token.md; ghcr.io does so for public packages).

Why not pulumi-docker's getRegistryImage, which asks the same `HEAD`: its provider's Configure pings
a Docker daemon and fails without one ("failed to connect to any docker daemon":
pulumi/pulumi-docker provider/provider.go dockerNativeProvider.Configure and image.go
configureDockerClient; pulumi/pulumi-docker issue #1106), and `up` runs where there is no Docker;
nor does it list tags. Offline runs answer in the registry's place (devkit/offline_account.py
registry_answer, swapped in for `http` by devkit/offline_run.py).

Nothing a registry answers is trusted as it comes: a digest is used only as `sha256:` and 64
lower-case hex digits (the only algorithm the OCI image-spec v1.1.0 requires, descriptor.md
"Digests"), since it is pinned into build arguments and chart values; a token realm is followed only
over HTTPS to the registry's own domain (ghcr.io's is ghcr.io/token, Docker Hub's auth.docker.io
beside registry-1.docker.io), never to another host or address; each answer is read up to
MAX_ANSWER_BYTES and a tags list up to TAG_PAGES pages; a redirect to plain HTTP is refused and one to
another host loses the Authorization header (urllib's own redirect handler keeps both). Every
answer that breaks one of these, or that is not the JSON the API gives, is a RegistryError of one
line, which the model reports as an image left by its tag (model/checks/image_digests.py).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException

from model.checks.image_digests import DIGEST, LookupFailed
from model.facts.image_references import parts, registry_host

# A manifest, an image index or a Docker manifest list: a multi-platform image answers its index's
# digest, the one every platform's pull resolves through (OCI image-spec v1.1.0 media types;
# Docker's manifest v2 schema 2).
MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
# Docker Hub's registry API host, for a name without one or with docker.io (distribution/reference
# normalize.go); its official images live under library/.
DOCKER_HUB = "registry-1.docker.io"
# How many pages of a tags list are read at most (a registry pages by its own `n`).
TAG_PAGES = 20
# The most of one answer read: a tags list page or a token is kilobytes; more is not a registry's.
MAX_ANSWER_BYTES = 1 << 20
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes


class RegistryError(LookupFailed):
    """The registry answered something the API does not (or could not be reached)."""


class Redirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, but never from HTTPS to anything else, and without the Authorization
    header once the host changes (urllib copies every header but the body's to the new request:
    CPython Lib/urllib/request.py HTTPRedirectHandler.redirect_request)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        target = urllib.parse.urlsplit(urllib.parse.urljoin(req.full_url, newurl))
        if target.scheme != "https":
            raise RegistryError(f"{req.full_url} redirected to {target.scheme}:, not https: refused")
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and target.hostname != urllib.parse.urlsplit(req.full_url).hostname:
            new.remove_header("Authorization")
        return new


_OPENER = urllib.request.build_opener(Redirects())


def capped(stream, url: str) -> bytes:
    """The answer's body, at most MAX_ANSWER_BYTES of it."""
    body = stream.read(MAX_ANSWER_BYTES + 1)
    if len(body) > MAX_ANSWER_BYTES:
        raise RegistryError(f"{url} answered more than {MAX_ANSWER_BYTES} bytes: not a registry's answer")
    return body


def http(method: str, url: str, headers: dict[str, str]) -> Response:
    """One HTTPS request; an error status is a Response too, a failed connection an OSError."""
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with _OPENER.open(request, timeout=30) as r:
            return Response(r.status, {k.lower(): v for k, v in r.headers.items()}, capped(r, url))
    except urllib.error.HTTPError as e:
        return Response(e.code, {k.lower(): v for k, v in e.headers.items()}, capped(e, url))


def repository(reference: str) -> tuple[str, str]:
    """(registry host, repository path) as a client addresses them."""
    name, _, _ = parts(reference)
    host = registry_host(reference)
    path = name.removeprefix(f"{host}/") if host else name
    if host in (None, "docker.io", "index.docker.io"):
        return DOCKER_HUB, path if "/" in path else f"library/{path}"
    return host, path


def _request(method: str, url: str, headers: dict[str, str], tokens: dict[str, str]) -> Response:
    """The request, again with a bearer token where the registry asks for one (tokens: by realm
    and scope, so each repository asks once)."""
    response = _send(method, url, headers)
    challenge = response.headers.get("www-authenticate", "")
    if response.status != 401 or not challenge.lower().startswith("bearer "):
        return response
    params = dict(_CHALLENGE.findall(challenge))
    realm = _realm(url, params.get("realm"))
    key = f"{realm} {params.get('scope')}"
    if key not in tokens:
        query = urllib.parse.urlencode({k: params[k] for k in ("service", "scope") if k in params})
        answer = _send("GET", f"{realm}?{query}", {"Accept": "application/json"})
        if answer.status != 200:
            raise RegistryError(f"{realm} gave no anonymous token ({answer.status})")
        # The token answer: {"token": ...} or {"access_token": ...} (distribution/distribution
        # docs/spec/auth/token.md, "Token Response Fields").
        body = _json(answer.body, realm)
        token = (body.get("token") or body.get("access_token")) if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryError(f"{realm} answered no token (an object with a token string)")
        tokens[key] = token
    return _send(method, url, {**headers, "Authorization": f"Bearer {tokens[key]}"})


def _realm(url: str, realm: str | None) -> str:
    """The challenge's realm where a client may follow it: HTTPS, on the registry's own domain
    (its host, or a host under the registry host's last two labels)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if not realm:
        raise RegistryError(f"{url} asked for a token without naming its realm")
    target = urllib.parse.urlsplit(realm)
    domain = ".".join(host.split(".")[-2:])
    if target.scheme != "https" or not (
        target.hostname == host or (target.hostname or "").endswith(f".{domain}")
    ):
        raise RegistryError(
            f"{url} names the token realm {realm!r}: only an https realm on {domain} is followed"
        )
    return realm


def _json(body: bytes, url: str):
    try:
        return json.loads(body)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both
        raise RegistryError(f"{url} answered {body[:40]!r}..., not JSON") from None


def _send(method: str, url: str, headers: dict[str, str]) -> Response:
    # urllib raises ValueError for a URL it cannot open, http.client.HTTPException (not an
    # OSError) for an answer that is not HTTP.
    try:
        return http(method, url, headers)
    except (OSError, HTTPException, ValueError) as e:
        raise RegistryError(f"{method} {url}: {' '.join(str(e).split()) or type(e).__name__}") from e


class Registry:
    """The registries of the references asked, anonymously (model.checks.image_digests.Registry
    for the references not on ECR)."""

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}

    def image_digest(self, reference: str) -> str | None:
        host, path = repository(reference)
        _, tag, _ = parts(reference)
        url = f"https://{host}/v2/{path}/manifests/{tag or 'latest'}"
        response = _request("HEAD", url, {"Accept": ", ".join(MANIFEST_TYPES)}, self._tokens)
        if response.status == 404:
            return None
        digest = response.headers.get("docker-content-digest")
        if response.status != 200 or not digest:
            raise RegistryError(f"HEAD {url}: {response.status} without a Docker-Content-Digest")
        if not DIGEST.fullmatch(digest):
            raise RegistryError(f"HEAD {url}: Docker-Content-Digest {digest[:80]!r} is not sha256:<64 hex>")
        return digest

    def image_tags(self, reference: str) -> list[str] | None:
        """Every tag of the repository, or None where the registry does not list them."""
        host, path = repository(reference)
        url, tags = f"https://{host}/v2/{path}/tags/list", []
        for _ in range(TAG_PAGES):
            response = _request("GET", url, {"Accept": "application/json"}, self._tokens)
            if response.status == 404:
                return []
            if response.status != 200:
                return None
            # {"name": ..., "tags": [...]}, tags null for none (distribution-spec, "Listing tags").
            body = _json(response.body, url)
            page = body.get("tags") if isinstance(body, dict) else None
            if not isinstance(body, dict) or not isinstance(page or [], list):
                raise RegistryError(f"GET {url}: not a tags list (an object with a tags array)")
            if not all(isinstance(t, str) for t in page or []):
                raise RegistryError(f"GET {url}: a tags list holding a tag that is not a string")
            tags += page or []
            following = _NEXT.search(response.headers.get("link", ""))
            if not following:
                break
            following_url = urllib.parse.urljoin(url, following.group(1))
            if urllib.parse.urlsplit(following_url)[:2] != ("https", host):
                raise RegistryError(f"GET {url}: the next page {following_url!r} is not on https://{host}")
            url = following_url
        return sorted(set(tags))
